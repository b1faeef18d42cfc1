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

// What one image may cost to decode and convert at once (its encoded bytes, the decoder's output
// and working buffers, the 8-bit copy): images over it are skipped by name, and the decoders
// together hold at most this much (a budget they share), so no file makes a reader allocate
// more than it honestly needs, one image at a time.
constexpr uint64_t kMaxDecodeBytes = uint64_t{384} << 20;

// Read from an image file's header without decoding it (PNG, JPEG, BMP, WebP, TIFF): the
// size, and the most bytes OpenCV's decoder (IMREAD_UNCHANGED) and our 8-bit conversion hold at
// once for it (output, libjpeg's coefficients for progressive or multi-scan JPEGs as far as the
// bytes given show them, libtiff's strip, libwebp's ARGB plane). nullopt when the format is
// none of those or the header is cut short or damaged: such a file is never decoded, since
// nothing would bound what the decoder allocates. A format is recognised by the test OpenCV's
// imdecode picks its decoder with, so that no other decoder (DICOM, GDAL, ...) sees the bytes.
struct ImageSize {
  uint64_t width = 0, height = 0;
  uint64_t decode_bytes = 0;
};
std::optional<ImageSize> sniff_image_size(const void* data, size_t n);

// Why an image is not decoded, checked from its header and its size in bytes before it is read
// whole (and again once it is).
enum class ImageVerdict : uint8_t {
  Ok,
  Unknown,        // no header sniff_image_size can read: never given to a decoder
  TooManyPixels,  // over kMaxImagePixels
  TooCostly,      // decoding it would take more than kMaxDecodeBytes
  TooManyBytes,   // the file holds far more bytes than an image of its size can need
};
ImageVerdict judge_image(const std::optional<ImageSize>& size, uint64_t file_bytes);
// What the decoders may hold for an image (its bytes plus decode_bytes), for the shared budget.
uint64_t image_cost(const ImageSize& size, uint64_t file_bytes);
// "its header announces 20000 x 20000 pixels, more than ...", for a verdict other than Ok.
std::string verdict_text(ImageVerdict v, const std::optional<ImageSize>& size, uint64_t file_bytes);

// Caps what the image libraries allocate on their own (libjpeg's buffers, through JPEGMEM),
// so that an image whose cost the header understates fails to decode instead of growing.
// Called once before decoding; idempotent.
void limit_decoder_memory();

// Throws Error("image is W x H pixels, more than ...") naming path when w * h > max_pixels.
void check_image_pixels(uint64_t width, uint64_t height, const std::string& path,
                        uint64_t max_pixels = kMaxImagePixels);

// Bytes a loaded dataset may take in memory: half of this machine's physical memory (the rest is
// for the model, the batches and everything else running). budget 0 means this default.
uint64_t dataset_memory_budget(uint64_t budget = 0);

// Throws Error naming source when a dataset would need more than the budget (0: the default):
// "would need 12.3 GiB in memory, more than the 8.0 GiB allowed". what: "4000000 images at 64x64x3".
void check_dataset_bytes(uint64_t bytes, const std::string& what, const std::string& source, uint64_t budget = 0);

// "12.3 GiB", "512 MiB", "870 bytes": for messages.
std::string human_bytes(uint64_t bytes);

}  // namespace ampgan::io
