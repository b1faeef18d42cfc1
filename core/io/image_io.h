// 8-bit images for sample grids (PNG), the GUI's history and previews, and image-folder data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ampgan::io {

// 8-bit image, HWC, 1 or 3 channels (RGB order in memory). pixels.size() == h * w * c.
struct Image8 {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

// Image `index` of an FP32 NHWC batch in [-1, 1] (res x res x channels) as 8 bits:
// round((x + 1) * 127.5), halves up, so -1 -> 0, 0 -> 128, 1 -> 255. Values outside [-1, 1]
// are clamped; NaN becomes 0 (an FP16 generator that overflowed shows black, not garbage).
Image8 to_image8(const float* nhwc, int index, int res, int channels);

// A grid of images 0..n-1 of the batch, `cols` per row, rows = ceil(n / cols), with `pad` px of
// pad_value between and around the images: width = c * res + (c + 1) * pad with
// c = min(cols, n) (a batch smaller than a row is not padded out), height likewise with rows.
// Unused cells of the last row are pad_value.
Image8 make_grid(const float* nhwc, int n, int res, int channels, int cols, int pad = 2, uint8_t pad_value = 0);

// Width and height of make_grid's result, without making it (in 64 bits: they may not fit an int).
struct GridSize {
  int64_t width = 0, height = 0;
};
GridSize grid_size(int64_t n, int64_t res, int64_t cols, int64_t pad = 2);

// The most pixels per side a PNG may have (libpng refuses more than 1,000,000) and in all
// (io::kMaxImagePixels). Throws Error naming subject, with hint, when width x height is over.
constexpr int64_t kMaxPngSide = 1000000;
void check_png_size(int64_t width, int64_t height, const std::string& subject, const std::string& hint);

// Encodes as PNG (cv::imencode, RGB -> BGR for OpenCV) and writes it with write_file_atomic.
// Throws Error naming path if encoding or writing fails.
void write_png(const std::filesystem::path& path, const Image8& img);

// Any format OpenCV reads (PNG, JPEG, BMP, ...), as 8-bit grey (1 channel) or RGB (3 channels,
// alpha dropped, 16-bit scaled down). Grey files give 1 channel, except grey + alpha PNGs, which
// OpenCV expands to colour (3 equal channels). Throws Error naming path if it cannot be read or
// decoded.
Image8 read_image(const std::filesystem::path& path);

// Each pixel becomes a factor x factor block (nearest neighbour): small grids stay crisp.
Image8 upscale_nearest(const Image8& img, int factor);

}  // namespace ampgan::io
