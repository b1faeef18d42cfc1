#include "core/io/image_io.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/opencv.h"
#include "core/io/read_limits.h"

namespace ampgan::io {

namespace fs = std::filesystem;

namespace {

void check_args(int res, int channels, const char* fn) {
  if (res <= 0 || (channels != 1 && channels != 3))
    throw Error(std::string(fn) + ": images must be res x res with 1 or 3 channels, got res " + std::to_string(res) +
                    ", " + std::to_string(channels) + " channels",
                {}, "This is a bug; please report it");
}

inline uint8_t to_u8(float x) {
  if (!(x >= -1.0f)) return 0;  // also NaN
  if (x >= 1.0f) return 255;
  // (x + 1) * 127.5 lies in [0, 255); + 0.5 then truncation rounds halves up. lround could differ
  // by one where the float sum rounds up, and every PNG so far was made with this expression.
  // NOLINTNEXTLINE(bugprone-incorrect-roundings)
  return static_cast<uint8_t>((x + 1.0f) * 127.5f + 0.5f);
}

void check_image(const Image8& img, const fs::path& path) {
  if (img.width <= 0 || img.height <= 0 || (img.channels != 1 && img.channels != 3) ||
      img.pixels.size() != size_t(img.width) * img.height * img.channels)
    throw Error("Cannot save an image of " + std::to_string(img.width) + "x" + std::to_string(img.height) + "x" +
                    std::to_string(img.channels) + " with " + std::to_string(img.pixels.size()) + " bytes of pixels",
                path.string(), "This is a bug; please report it");
}

}  // namespace

Image8 to_image8(const float* nhwc, int index, int res, int channels) {
  check_args(res, channels, "to_image8");
  Image8 img;
  img.width = img.height = res;
  img.channels = channels;
  const size_t n = size_t(res) * res * channels;
  img.pixels.resize(n);
  const float* src = nhwc + size_t(index) * n;
  for (size_t i = 0; i < n; ++i) img.pixels[i] = to_u8(src[i]);
  return img;
}

Image8 make_grid(const float* nhwc, int n, int res, int channels, int cols, int pad, uint8_t pad_value) {
  check_args(res, channels, "make_grid");
  if (n <= 0 || cols <= 0 || pad < 0)
    throw Error("make_grid: needs at least one image, one column and padding >= 0", {},
                "This is a bug; please report it");
  const int c = std::min(cols, n);
  const int rows = (n + cols - 1) / cols;
  Image8 g;
  g.channels = channels;
  g.width = c * res + (c + 1) * pad;
  g.height = rows * res + (rows + 1) * pad;
  g.pixels.assign(size_t(g.width) * g.height * channels, pad_value);
  const size_t row_bytes = size_t(res) * channels;  // one image row, contiguous in NHWC
  for (int k = 0; k < n; ++k) {
    const float* src = nhwc + size_t(k) * res * res * channels;
    const int x0 = pad + (k % cols) * (res + pad);
    const int y0 = pad + (k / cols) * (res + pad);
    for (int y = 0; y < res; ++y) {
      uint8_t* dst = g.pixels.data() + (size_t(y0 + y) * g.width + x0) * channels;
      const float* s = src + size_t(y) * row_bytes;
      for (size_t i = 0; i < row_bytes; ++i) dst[i] = to_u8(s[i]);
    }
  }
  return g;
}

GridSize grid_size(int64_t n, int64_t res, int64_t cols, int64_t pad) {
  const int64_t c = std::min(cols, n), rows = (n + cols - 1) / cols;
  return {c * res + (c + 1) * pad, rows * res + (rows + 1) * pad};
}

void check_png_size(int64_t width, int64_t height, const std::string& subject, const std::string& hint) {
  if (width > kMaxPngSide || height > kMaxPngSide)
    throw Error("the image would be " + std::to_string(width) + " x " + std::to_string(height) +
                    " pixels; PNG files may have at most " + std::to_string(kMaxPngSide) + " pixels per side",
                subject, hint);
  if (width > 0 && uint64_t(height) > kMaxImagePixels / uint64_t(width))
    throw Error("the image would be " + std::to_string(width) + " x " + std::to_string(height) +
                    " pixels, more than the " + std::to_string(kMaxImagePixels) + " pixels (8192 x 8192) allowed",
                subject, hint);
}

void write_png(const fs::path& path, const Image8& img) {
  check_image(img, path);
  check_png_size(img.width, img.height, path.string(), "write a smaller image");
  std::vector<uchar> buf;
  try {
    cv::Mat m(img.height, img.width, img.channels == 1 ? CV_8UC1 : CV_8UC3,
              const_cast<uint8_t*>(img.pixels.data()));  // read only
    cv::Mat bgr;
    if (img.channels == 3) cv::cvtColor(m, bgr, cv::COLOR_RGB2BGR);
    if (!cv::imencode(".png", img.channels == 3 ? bgr : m, buf))
      throw Error("Could not encode the image as PNG", path.string(),
                  "OpenCV may lack PNG support; check the libopencv-imgcodecs installation");
  } catch (const cv::Exception& e) {
    throw Error(std::string("Could not encode the image as PNG: ") + e.what(), path.string(),
                "OpenCV may lack PNG support; check the libopencv-imgcodecs installation");
  }
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

Image8 read_image(const fs::path& path) {
  const std::string bytes = read_file(path);
  const char* hint = "The file may be damaged or in a format OpenCV cannot read; try PNG or JPEG";
  // Before the decoder allocates: a small file can announce a huge image, and one whose size
  // cannot be read is not given to a decoder at all.
  const auto size = sniff_image_size(bytes.data(), bytes.size());
  if (const ImageVerdict v = judge_image(size, bytes.size()); v != ImageVerdict::Ok) {
    if (v == ImageVerdict::TooManyPixels) check_image_pixels(size->width, size->height, path.string());
    throw Error("not decoded: " + verdict_text(v, size, bytes.size()), path.string(),
                v == ImageVerdict::Unknown ? hint : "shrink the image (training uses at most 128 x 128 pixels)");
  }
  limit_decoder_memory();
  cv::Mat m;
  try {
    // IMREAD_UNCHANGED so we see grey as grey and can convert depth/alpha ourselves.
    const cv::Mat raw(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
    m = cv::imdecode(raw, cv::IMREAD_UNCHANGED);
    if (m.empty()) throw Error("Could not decode the image", path.string(), hint);
    if (m.dims != 2) throw Error("Not a 2-D image", path.string(), hint);
    if (m.depth() == CV_16U) {
      cv::Mat m8;
      m.convertTo(m8, CV_8U, 1.0 / 257.0);  // 65535 -> 255
      m = m8;
    } else if (m.depth() != CV_8U) {
      throw Error("Unsupported pixel format (only 8- and 16-bit images)", path.string(), hint);
    }
    cv::Mat out;
    switch (m.channels()) {
      case 1:
        out = m;
        break;
      case 2:
        cv::extractChannel(m, out, 0);
        break;  // grey + alpha
      case 3:
        cv::cvtColor(m, out, cv::COLOR_BGR2RGB);
        break;
      case 4:
        cv::cvtColor(m, out, cv::COLOR_BGRA2RGB);
        break;
      default:
        throw Error("Unsupported number of channels: " + std::to_string(m.channels()), path.string(), hint);
    }
    if (!out.isContinuous()) out = out.clone();
    Image8 img;
    img.width = out.cols;
    img.height = out.rows;
    img.channels = out.channels();
    img.pixels.assign(out.data, out.data + out.total() * out.elemSize());
    return img;
  } catch (const cv::Exception& e) {
    throw Error(std::string("Could not decode the image: ") + e.what(), path.string(), hint);
  }
}

Image8 upscale_nearest(const Image8& img, int factor) {
  if (factor < 1)
    throw Error("upscale_nearest: factor must be >= 1, got " + std::to_string(factor), {},
                "This is a bug; please report it");
  Image8 out;
  out.width = img.width * factor;
  out.height = img.height * factor;
  out.channels = img.channels;
  out.pixels.resize(size_t(out.width) * out.height * out.channels);
  const size_t c = size_t(img.channels);
  const size_t out_row = size_t(out.width) * c;
  for (int y = 0; y < img.height; ++y) {
    uint8_t* dst = out.pixels.data() + size_t(y) * factor * out_row;
    const uint8_t* src = img.pixels.data() + size_t(y) * img.width * c;
    for (int x = 0; x < img.width; ++x)
      for (int f = 0; f < factor; ++f) std::memcpy(dst + (size_t(x) * factor + f) * c, src + x * c, c);
    for (int f = 1; f < factor; ++f) std::memcpy(dst + f * out_row, dst, out_row);  // repeat the row
  }
  return out;
}

}  // namespace ampgan::io
