// The decoding half of the image loaders (folders and zip archives, internal to core/data):
// any image OpenCV reads to the model's resolution, 8-bit, grey or RGB, with a count of what
// had to be converted, and the natural channel count of the whole set.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/data/image_set.h"

namespace ampgan::data::detail {

// File names the loaders treat as images (case-insensitive extension), and their list for messages.
bool has_image_extension(const std::string& name);
inline constexpr const char* kImageExtensionList = ".png, .jpg, .jpeg, .bmp, .webp, .tif, .tiff";

// The most bytes of one image file read into memory (an 8192 x 8192 PNG is well below it).
inline constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;

// Where decode_images gets image i's bytes. Both are called from several threads at once (a
// source that is not thread-safe locks inside); an ampgan::Error thrown marks the image unreadable.
struct ImageSource {
  // At least the first `bytes` bytes of image i (all of it if shorter), and its size in bytes.
  std::function<std::string(int64_t i, size_t bytes, uint64_t* size)> head;
  // All of image i: at most max_bytes (more throws Error).
  std::function<std::string(int64_t i, uint64_t max_bytes)> whole;
};

// Bytes of an image's start that hold any header sniff_image_size reads (a JPEG's frame header
// may follow tens of kilobytes of EXIF and thumbnails).
inline constexpr size_t kImageHeadBytes = size_t{256} << 10;

// Decodes images 0..n-1 in parallel. Each image's header is read first: one whose size cannot be
// read (no format io::sniff_image_size knows), that has more than io::kMaxImagePixels, that would
// cost more than io::kMaxDecodeBytes to decode, or whose file is far larger than its size needs
// is skipped before it is read whole; and the images decoded at once hold at most
// io::kMaxDecodeBytes together (they wait for each other). Each is centre-cropped, resized to
// opt.res, scaled to 8 bits (16-bit / 257, float * 255) and stripped of alpha. Fills set.count,
// res, channels and pixels (in order, failed images squeezed out), and set.warnings with the
// images skipped (names[i]) and converted (a count per kind). ok[i] tells which images made it.
// Throws Error naming subject when none could be decoded, or when the set would exceed
// opt.max_bytes (io::check_dataset_bytes).
void decode_images(ImageSet& set, int n, const ImageSource& source, const std::vector<std::string>& names,
                   const LoadOptions& opt, const std::string& subject, std::vector<char>& ok);

}  // namespace ampgan::data::detail
