#include "core/io/read_limits.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <webp/decode.h>

#include "core/common/error.h"

namespace ampgan::io {

namespace {

const uint8_t* bytes(const void* p) { return static_cast<const uint8_t*>(p); }
uint32_t be16(const uint8_t* p) { return uint32_t{p[0]} << 8 | p[1]; }
uint32_t le16(const uint8_t* p) { return uint32_t{p[1]} << 8 | p[0]; }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }
uint32_t le24(const uint8_t* p) { return uint32_t{p[2]} << 16 | le16(p); }
uint32_t le32(const uint8_t* p) { return le16(p + 2) << 16 | le16(p); }

uint64_t mul_sat(uint64_t a, uint64_t b) { return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b; }

ImageSize sized(uint64_t w, uint64_t h, uint64_t bytes_per_pixel) {
  return {w, h, mul_sat(mul_sat(w, h), bytes_per_pixel)};
}

// Markers are found as libjpeg finds them: bytes other than 0xFF before a marker are skipped
// (libjpeg warns of "extraneous bytes" and goes on), so a stray byte cannot hide the frame
// header from us while the decoder still reads it.
std::optional<ImageSize> jpeg_size(const uint8_t* p, size_t n) {
  size_t i = 2;
  auto next_marker = [&]() -> int {
    while (i < n && p[i] != 0xFF) ++i;
    while (i < n && p[i] == 0xFF) ++i;  // fill bytes
    return i < n ? p[i++] : -1;
  };
  uint64_t w = 0, h = 0, comps = 0;
  bool frame = false, progressive = false;
  int scans = 0;
  for (;;) {
    const int m = next_marker();
    if (m < 0) break;                                                  // the bytes given end here
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // stuffed byte, TEM, RSTn: no length
    if (m == 0xD8) return std::nullopt;                                // a second SOI: libjpeg refuses it
    if (m == 0xD9) break;                                              // EOI
    if (i + 2 > n) break;
    const size_t len = be16(p + i);
    if (len < 2) return std::nullopt;
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof && !frame) {
      if (i + 8 > n) return std::nullopt;
      h = be16(p + i + 3);
      w = be16(p + i + 5);
      comps = p[i + 7];
      progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE;
      frame = true;
    } else if (m == 0xDA) {
      if (!frame) return std::nullopt;  // scan data before any frame header
      // A scan of fewer components than the frame, or a second scan, makes libjpeg keep every
      // coefficient of the image, as progressive files do.
      if (i + 3 <= n && p[i + 2] < comps) scans = 2;
      ++scans;
      i += len;
      continue;  // the entropy-coded data is skipped by next_marker (0xFF in it is stuffed)
    }
    i += len;
  }
  if (!frame) return std::nullopt;
  // Output (grey or BGR) and one 8-bit grey copy; 2 bytes per coefficient when libjpeg buffers them.
  const uint64_t bpp = (comps == 1 ? 1 : 3) + 1 + (progressive || scans > 1 ? 2 * std::max<uint64_t>(comps, 1) : 0);
  return sized(w, h, bpp);
}

std::optional<ImageSize> tiff_size(const uint8_t* p, size_t n) {
  const bool le = p[0] == 'I';
  auto u16 = [&](size_t o) { return le ? le16(p + o) : be16(p + o); };
  auto u32 = [&](size_t o) { return le ? le32(p + o) : be32(p + o); };
  const uint64_t ifd = u32(4);
  if (ifd + 2 > n) return std::nullopt;
  const uint32_t entries = u16(ifd);
  uint64_t width = 0, height = 0, samples = 1, bits = 1;
  bool w = false, h = false, sp = false, bs = false;
  for (uint32_t e = 0; e < entries; ++e) {
    const uint64_t o = ifd + 2 + uint64_t{e} * 12;
    if (o + 12 > n) return std::nullopt;
    const uint32_t tag = u16(o), type = u16(o + 2);
    if (tag != 256 && tag != 257 && tag != 258 && tag != 277) continue;
    if (type != 3 && type != 4) return std::nullopt;
    uint64_t v = type == 3 ? u16(o + 8) : u32(o + 8);
    const uint64_t count = u32(o + 4);
    // BitsPerSample holds one value per sample; more than fit in the entry sit at an offset.
    if (tag == 258 && count * (type == 3 ? 2 : 4) > 4) {
      const uint64_t at = u32(o + 8);
      if (at + 4 > n)
        v = 64;  // not in the bytes given: assume the widest
      else
        v = type == 3 ? u16(at) : u32(at);
    }
    // libtiff keeps the first of a repeated tag.
    if (tag == 256 && !w) width = v, w = true;
    if (tag == 257 && !h) height = v, h = true;
    if (tag == 258 && !bs) bits = v, bs = true;
    if (tag == 277 && !sp) samples = v, sp = true;
  }
  if (!w || !h) return std::nullopt;
  const uint64_t bps = std::clamp<uint64_t>((bits + 7) / 8, 1, 8);
  samples = std::clamp<uint64_t>(samples, 1, 64);
  // Output (at most 4 channels), a strip or tile buffer as large as the image (or libtiff's
  // 4-byte RGBA path), and the 8-bit copy of a deep image.
  const uint64_t bpp = std::min<uint64_t>(samples, 4) * bps + std::max<uint64_t>(4, samples * bps) + (bps > 1 ? 4 : 1);
  return sized(width, height, bpp);
}

std::optional<ImageSize> webp_size(const uint8_t* p, size_t n) {
  if (n < 30) return std::nullopt;
  // Output (BGRA), libwebp's whole ARGB plane for lossless or alpha, and a grey copy.
  constexpr uint64_t kBpp = 4 + 4 + 1;
  // VP8X: canvas width-1 and height-1 are 24-bit fields at 24 and 27; the header ends at 30.
  if (!std::memcmp(p + 12, "VP8X", 4)) return sized(1 + le24(p + 24), 1 + le24(p + 27), kBpp);
  if (!std::memcmp(p + 12, "VP8L", 4) && p[20] == 0x2F) {
    const uint32_t b = le32(p + 21);
    return sized(1 + (b & 0x3FFF), 1 + ((b >> 14) & 0x3FFF), kBpp);
  }
  if (!std::memcmp(p + 12, "VP8 ", 4) && p[23] == 0x9D && p[24] == 0x01 && p[25] == 0x2A)
    return sized(le16(p + 26) & 0x3FFF, le16(p + 28) & 0x3FFF, kBpp);
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
  if (n >= 26 && !std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) && !std::memcmp(p + 12, "IHDR", 4)) {
    // 16 bits per sample: up to 8 bytes a pixel out, and its 8-bit copy; else 4 and a grey copy.
    const bool deep = p[24] == 16;
    return sized(be32(p + 16), be32(p + 20), deep ? 8 + 4 : 4 + 1);
  }
  // Each format is recognised by the very test OpenCV's imdecode uses to pick its decoder, so that
  // the decoder these sizes bound is the one that runs. Bytes that pass a looser test fall through
  // OpenCV's list of decoders to the next that claims them: GDCM's DICOM reader takes any bytes
  // with "DICM" at 128 and aborts the process on a malformed file (an assertion in libgdcm).
  // JPEG: OpenCV asks for FF D8 FF, not only the SOI marker.
  if (n >= 4 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return jpeg_size(p, n);
  if (n >= 26 && p[0] == 'B' && p[1] == 'M') {
    const uint32_t header = le32(p + 14);
    if (header == 12) return sized(le16(p + 18), le16(p + 20), 4 + 1);
    const int32_t w = static_cast<int32_t>(le32(p + 18)), h = static_cast<int32_t>(le32(p + 22));
    // Negative height means top-down rows; the magnitude is the size.
    return sized(static_cast<uint64_t>(w < 0 ? -int64_t{w} : w), static_cast<uint64_t>(h < 0 ? -int64_t{h} : h), 4 + 1);
  }
  // No GIF: OpenCV 4.6 has no GIF decoder, so a GIF's bytes would go to whichever decoder claims them.
  // WebP: OpenCV asks libwebp for the features of the first 32 bytes.
  if (n >= 32 && !std::memcmp(p, "RIFF", 4) && !std::memcmp(p + 8, "WEBP", 4)) {
    WebPBitstreamFeatures features;
    if (WebPGetFeatures(p, 32, &features) != VP8_STATUS_OK) return std::nullopt;
    return webp_size(p, n);
  }
  if (n >= 8 && (!std::memcmp(p, "II*\0", 4) || !std::memcmp(p, "MM\0*", 4))) return tiff_size(p, n);
  return std::nullopt;
}

ImageVerdict judge_image(const std::optional<ImageSize>& s, uint64_t file_bytes) {
  if (!s || s->width == 0 || s->height == 0) return ImageVerdict::Unknown;
  if (s->height > kMaxImagePixels / s->width) return ImageVerdict::TooManyPixels;
  if (image_cost(*s, file_bytes) > kMaxDecodeBytes) return ImageVerdict::TooCostly;
  // Metadata (ICC profiles, EXIF, XMP) takes some room, but not hundreds of megabytes beside a
  // small picture: such a file is padded or crafted, and is not read whole.
  if (file_bytes > std::max<uint64_t>(uint64_t{16} << 20, mul_sat(s->decode_bytes, 2)))
    return ImageVerdict::TooManyBytes;
  return ImageVerdict::Ok;
}

uint64_t image_cost(const ImageSize& s, uint64_t file_bytes) {
  return s.decode_bytes > UINT64_MAX - file_bytes ? UINT64_MAX : s.decode_bytes + file_bytes;
}

std::string verdict_text(ImageVerdict v, const std::optional<ImageSize>& s, uint64_t file_bytes) {
  const std::string size = s ? std::to_string(s->width) + " x " + std::to_string(s->height) : std::string("?");
  switch (v) {
    case ImageVerdict::Ok:
      return "";
    case ImageVerdict::Unknown:
      return s ? "its header announces no pixels"
               : "its size cannot be read from its header (not a PNG, JPEG, BMP, WebP or TIFF file, or a damaged "
                 "one), so it is not given to a decoder";
    case ImageVerdict::TooManyPixels:
      return "it is " + size + " pixels, more than the " + std::to_string(kMaxImagePixels) +
             " pixels (8192 x 8192) a single image may have";
    case ImageVerdict::TooCostly:
      return "decoding it (" + size + ") would need " + human_bytes(image_cost(*s, file_bytes)) + ", more than the " +
             human_bytes(kMaxDecodeBytes) + " one image may take";
    case ImageVerdict::TooManyBytes:
      return "it holds " + human_bytes(file_bytes) + ", far more than an image of " + size + " needs";
  }
  return "";
}

void limit_decoder_memory() {
  // libjpeg reads JPEGMEM when a decoder is created; beyond it, it fails ("backing store not
  // supported") instead of allocating. Our header estimate stays below it for every image we decode.
  static const bool once = [] {
    ::setenv("JPEGMEM", "320M", 0);
    return true;
  }();
  (void)once;
}

void check_image_pixels(uint64_t width, uint64_t height, const std::string& path, uint64_t max_pixels) {
  const bool over = width != 0 && height > max_pixels / width;
  if (!over) return;
  throw Error("image is " + std::to_string(width) + " x " + std::to_string(height) + " pixels, more than the " +
                  std::to_string(max_pixels) +
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

void check_dataset_bytes(uint64_t bytes_needed, const std::string& what, const std::string& source, uint64_t budget) {
  const uint64_t cap = dataset_memory_budget(budget);
  if (bytes_needed <= cap) return;
  throw Error("the dataset (" + what + ") would need " + human_bytes(bytes_needed) + " in memory, more than the " +
                  human_bytes(cap) + " allowed (half of this machine's memory)",
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
