// Zip archives as a dataset reads them (dataset_tool's layout: images and an optional
// dataset.json): entry caps, CRCs, the labels check, then the shared image decoder.
#include "core/common/error.h"
#include "core/data/image_set.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ampgan::fuzz::write_input("x.zip", data, size);
  ampgan::data::LoadOptions opt;
  opt.res = 8;
  opt.max_bytes = 4u << 20;
  try {
    const auto set = ampgan::data::load_dataset(path.string(), opt);
    if (set.count < 1) __builtin_trap();  // a set is never empty: no images is an error
  } catch (const ampgan::Error&) {}
  return 0;
}
