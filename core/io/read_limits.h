// Caps on what a reader allocates for what a file claims, shared by every dataset reader (IDX,
// image folders, zip archives): a small file must never be able to make us allocate gigabytes.
// Each check runs before the allocation it guards and throws Error naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ampgan::io {

// Deflate (gzip, zip) cannot expand data more than 1032:1 (a 258-byte match per ~2 bits); the
// most a compressed stream of compressed_bytes can inflate to, with a little slack for headers.
uint64_t max_inflated_size(uint64_t compressed_bytes);

// Pixels of one image a decoder may allocate (width x height): 8192 x 8192. A training image is
// resized to at most 128 px, so larger sources only cost memory (3 bytes per pixel per thread).
constexpr uint64_t kMaxImagePixels = uint64_t{1} << 26;

// Width and height read from an image file's header without decoding it (PNG, JPEG, BMP, GIF,
// WebP, TIFF); nullopt when the format is not one of those or the header is cut short.
struct ImageSize {
  uint64_t width = 0, height = 0;
};
std::optional<ImageSize> sniff_image_size(const void* data, size_t n);

// Throws Error("image is W x H pixels, more than ...") naming path when w * h > max_pixels.
void check_image_pixels(uint64_t width, uint64_t height, const std::string& path,
                        uint64_t max_pixels = kMaxImagePixels);

// Bytes a loaded dataset may take in memory: half of this machine's physical memory (the rest is
// for the model, the batches and everything else running). budget 0 means this default.
uint64_t dataset_memory_budget(uint64_t budget = 0);

// Throws Error naming source when a dataset would need more than the budget (0: the default):
// "would need 12.3 GiB in memory, more than the 8.0 GiB allowed". what: "4000000 images at 64x64x3".
void check_dataset_bytes(uint64_t bytes, const std::string& what, const std::string& source,
                         uint64_t budget = 0);

// "12.3 GiB", "512 MiB", "870 bytes": for messages.
std::string human_bytes(uint64_t bytes);

}  // namespace ampgan::io
