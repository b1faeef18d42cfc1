// Image files as a dataset folder reads them: the header sniffer and pixel cap, then the decoder.
#include "core/common/error.h"
#include "core/data/image_set.h"
#include "core/io/image_io.h"
#include "core/io/read_limits.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (const auto s = ampgan::io::sniff_image_size(data, size)) {
    try {
      ampgan::io::check_image_pixels(s->width, s->height, "fuzz input");
    } catch (const ampgan::Error&) {
      return 0;
    }
  }
  // One file in a folder of its own: the whole folder path (listing, decoding, resizing).
  static const auto dir = ampgan::fuzz::scratch_dir() / "folder";
  std::filesystem::create_directories(dir);
  const std::string name = "x.png";
  FILE* f = std::fopen((dir / name).c_str(), "wb");
  if (!f) __builtin_trap();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  ampgan::data::LoadOptions opt;
  opt.res = 8;
  opt.max_bytes = 4u << 20;
  try {
    const auto set = ampgan::data::load_dataset(dir.string(), opt);
    if (set.count != 1) __builtin_trap();
  } catch (const ampgan::Error&) {}
  return 0;
}
