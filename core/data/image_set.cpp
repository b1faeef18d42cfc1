#include "core/data/image_set.h"

#include <array>
#include <cstdio>
#include <cstring>

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

std::string fingerprint(const ImageSet& set) {
  // FNV-1a over 8-byte words (then the tail byte by byte): fast enough for gigabytes of pixels,
  // and any changed, added or removed image or label changes it.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(set.pixels.data(), set.pixels.size());
  mix(reinterpret_cast<const uint8_t*>(set.labels.data()), set.labels.size() * sizeof(int32_t));
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d images of %dx%dx%d%s, hash %016llx", set.count, set.res, set.res, set.channels,
                set.labels.empty() ? "" : ", labelled", static_cast<unsigned long long>(h));
  return buf;
}

std::string class_name(const ImageSet& set, int c) {
  if (c >= 0 && static_cast<size_t>(c) < set.class_names.size()) return set.class_names[c];
  return "class " + std::to_string(c);
}

}  // namespace ampgan::data
