#include "core/data/image_set.h"

#include <array>

namespace ampgan::data {

namespace {
// x / 127.5 - 1 for every byte value, computed once: exact -1 and +1 at the ends, and the
// conversion of a batch becomes a table lookup.
const std::array<float, 256>& byte_to_unit() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int x = 0; x < 256; ++x) t[x] = static_cast<float>(x) / 127.5f - 1.0f;
    return t;
  }();
  return table;
}
}  // namespace

void ImageSet::to_float(const int* indices, int n, float* out) const {
  const auto& lut = byte_to_unit();
  const size_t size = image_size();
  for (int k = 0; k < n; ++k) {
    const uint8_t* src = image(indices[k]);
    float* dst = out + static_cast<size_t>(k) * size;
    for (size_t j = 0; j < size; ++j) dst[j] = lut[src[j]];
  }
}

}  // namespace ampgan::data
