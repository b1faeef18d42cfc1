#include "core/io/read_limits.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/common/error.h"

namespace ampgan::io {

namespace {

const uint8_t* bytes(const void* p) { return static_cast<const uint8_t*>(p); }
uint32_t be16(const uint8_t* p) { return uint32_t{p[0]} << 8 | p[1]; }
uint32_t le16(const uint8_t* p) { return uint32_t{p[1]} << 8 | p[0]; }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }
uint32_t le24(const uint8_t* p) { return uint32_t{p[2]} << 16 | le16(p); }
uint32_t le32(const uint8_t* p) { return le16(p + 2) << 16 | le16(p); }

std::optional<ImageSize> jpeg_size(const uint8_t* p, size_t n) {
  size_t i = 2;
  while (i + 4 <= n) {
    if (p[i] != 0xFF) return std::nullopt;
    const uint8_t m = p[i + 1];
    if (m == 0xFF) { ++i; continue; }  // fill byte
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { i += 2; continue; }  // no length field
    if (m == 0xD9 || m == 0xDA) return std::nullopt;  // end or scan data before any frame header
    const size_t len = be16(p + i + 2);
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (i + 9 > n) return std::nullopt;
      return ImageSize{be16(p + i + 7), be16(p + i + 5)};
    }
    if (len < 2) return std::nullopt;
    i += 2 + len;
  }
  return std::nullopt;
}

std::optional<ImageSize> tiff_size(const uint8_t* p, size_t n) {
  const bool le = p[0] == 'I';
  auto u16 = [&](size_t o) { return le ? le16(p + o) : be16(p + o); };
  auto u32 = [&](size_t o) { return le ? le32(p + o) : be32(p + o); };
  const uint64_t ifd = u32(4);
  if (ifd + 2 > n) return std::nullopt;
  const uint32_t entries = u16(ifd);
  ImageSize s;
  bool w = false, h = false;
  for (uint32_t e = 0; e < entries; ++e) {
    const uint64_t o = ifd + 2 + uint64_t{e} * 12;
    if (o + 12 > n) return std::nullopt;
    const uint32_t tag = u16(o), type = u16(o + 2);
    if (tag != 256 && tag != 257) continue;
    const uint64_t v = type == 3 ? u16(o + 8) : type == 4 ? u32(o + 8) : 0;
    if (type != 3 && type != 4) return std::nullopt;
    (tag == 256 ? s.width : s.height) = v;
    (tag == 256 ? w : h) = true;
  }
  if (!w || !h) return std::nullopt;
  return s;
}

std::optional<ImageSize> webp_size(const uint8_t* p, size_t n) {
  if (n < 30) return std::nullopt;
  // VP8X: canvas width-1 and height-1 are 24-bit fields at 24 and 27; the header ends at 30.
  if (!std::memcmp(p + 12, "VP8X", 4)) return ImageSize{1 + le24(p + 24), 1 + le24(p + 27)};
  if (!std::memcmp(p + 12, "VP8L", 4) && p[20] == 0x2F) {
    const uint32_t b = le32(p + 21);
    return ImageSize{1 + (b & 0x3FFF), 1 + ((b >> 14) & 0x3FFF)};
  }
  if (!std::memcmp(p + 12, "VP8 ", 4) && p[23] == 0x9D && p[24] == 0x01 && p[25] == 0x2A)
    return ImageSize{le16(p + 26) & 0x3FFF, le16(p + 28) & 0x3FFF};
  return std::nullopt;
}

}  // namespace

uint64_t max_inflated_size(uint64_t compressed_bytes) {
  constexpr uint64_t kRatio = 1032;
  if (compressed_bytes > UINT64_MAX / (kRatio + 1)) return UINT64_MAX;
  return compressed_bytes * kRatio + 4096;
}

std::optional<ImageSize> sniff_image_size(const void* data, size_t n) {
  const uint8_t* p = bytes(data);
  if (n >= 24 && !std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) && !std::memcmp(p + 12, "IHDR", 4))
    return ImageSize{be32(p + 16), be32(p + 20)};
  if (n >= 4 && p[0] == 0xFF && p[1] == 0xD8) return jpeg_size(p, n);
  if (n >= 26 && p[0] == 'B' && p[1] == 'M') {
    const uint32_t header = le32(p + 14);
    if (header == 12) return ImageSize{le16(p + 18), le16(p + 20)};
    const int32_t w = static_cast<int32_t>(le32(p + 18)), h = static_cast<int32_t>(le32(p + 22));
    // Negative height means top-down rows; the magnitude is the size.
    return ImageSize{static_cast<uint64_t>(w < 0 ? -int64_t{w} : w),
                     static_cast<uint64_t>(h < 0 ? -int64_t{h} : h)};
  }
  if (n >= 10 && (!std::memcmp(p, "GIF87a", 6) || !std::memcmp(p, "GIF89a", 6)))
    return ImageSize{le16(p + 6), le16(p + 8)};
  if (n >= 16 && !std::memcmp(p, "RIFF", 4) && !std::memcmp(p + 8, "WEBP", 4)) return webp_size(p, n);
  if (n >= 8 && (!std::memcmp(p, "II*\0", 4) || !std::memcmp(p, "MM\0*", 4))) return tiff_size(p, n);
  return std::nullopt;
}

void check_image_pixels(uint64_t width, uint64_t height, const std::string& path, uint64_t max_pixels) {
  const bool over = width != 0 && height > max_pixels / width;
  if (!over) return;
  throw Error("image is " + std::to_string(width) + " x " + std::to_string(height) +
                  " pixels, more than the " + std::to_string(max_pixels) +
                  " pixels (8192 x 8192) a single image may have; decoding it would need " +
                  human_bytes(width * height > UINT64_MAX / 3 ? UINT64_MAX : width * height * 3),
              path, "shrink the image (training uses at most 128 x 128 pixels), or remove it");
}

uint64_t dataset_memory_budget(uint64_t budget) {
  if (budget) return budget;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  uint64_t phys = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t{8} << 30;
  // A container's memory limit (cgroup v2) is what actually bounds us.
  std::ifstream cg("/sys/fs/cgroup/memory.max");
  uint64_t limit = 0;
  if (cg >> limit && limit > 0 && limit < phys) phys = limit;
  return phys / 2;
}

void check_dataset_bytes(uint64_t bytes_needed, const std::string& what, const std::string& source,
                         uint64_t budget) {
  const uint64_t cap = dataset_memory_budget(budget);
  if (bytes_needed <= cap) return;
  throw Error("the dataset (" + what + ") would need " + human_bytes(bytes_needed) +
                  " in memory, more than the " + human_bytes(cap) +
                  " allowed (half of this machine's memory)",
              source,
              "use fewer images or a lower --res; if the file is small, its header is damaged or "
              "hostile (it announces far more data than it holds)");
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(uint64_t{1} << 30));
  else if (b >= (uint64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(uint64_t{1} << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace ampgan::io
