// The image header sniffer against the decoder it guards: a size it reads from any bytes must be
// the size OpenCV decodes (turned, for a TIFF's orientation), within the decoding cost it announced, and bytes it
// cannot size are never decoded by the loaders (io::judge_image says Unknown).
#include <opencv2/imgcodecs.hpp>

#include "core/io/read_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ampgan::io;
  for (size_t n = 0; n < size && n < 64; ++n) (void)sniff_image_size(data, n);  // every short prefix
  const auto s = sniff_image_size(data, size);
  if (judge_image(s, size) != ImageVerdict::Ok) return 0;
  limit_decoder_memory();
  cv::Mat m;
  try {
    m = cv::imdecode(cv::Mat(1, int(size), CV_8UC1, const_cast<uint8_t*>(data)), cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception&) {
    return 0;  // refused by the decoder: nothing was allocated for what the header claimed
  }
  if (m.empty()) return 0;
  // A TIFF's orientation tag may turn the image: the same sides, in either order.
  const uint64_t c = uint64_t(m.cols), r = uint64_t(m.rows);
  if (!((c == s->width && r == s->height) || (c == s->height && r == s->width))) __builtin_trap();
  if (uint64_t(m.total()) * m.elemSize() > s->decode_bytes) __builtin_trap();
  return 0;
}
