// IDX reader (raw and gzip): headers, counts, truncation, trailing bytes, corrupt streams. The
// memory budget is small so that no input can make the fuzzer allocate much.
#include "core/common/error.h"
#include "core/data/idx_dataset.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte picks a resolution and channel count, the rest is the file.
  if (size < 1) return 0;
  ampgan::data::LoadOptions opt;
  opt.res = (data[0] & 1) ? 8 : 16;
  opt.channels = (data[0] & 2) ? 3 : 0;
  opt.max_bytes = 4u << 20;
  const auto p = ampgan::fuzz::write_input("f-images-idx3-ubyte", data + 1, size - 1);
  try {
    const ampgan::data::ImageSet s = ampgan::data::load_idx(p.string(), "", opt);
    if (s.pixels.size() != size_t(s.count) * s.image_size()) __builtin_trap();
  } catch (const ampgan::Error&) {}
  return 0;
}
