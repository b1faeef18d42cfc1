// Animations from frames of one size: MP4 (H.264, else MPEG-4 Part 2) through OpenCV's
// VideoWriter and its FFmpeg backend, and lossless animated WebP through libwebpmux, which
// browsers and image viewers play. OpenCV 4.6 writes no GIF, so neither do we.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/io/image_io.h"

namespace ampgan::io {

enum class AnimationFormat { Mp4, WebP };

// The format a file name asks for (.mp4, .webp, any case); throws Error naming the file
// otherwise, saying which endings there are.
AnimationFormat animation_format(const std::filesystem::path& path);

// Writes to a temporary file beside `path` and renames it there in finish(), so the path holds a
// whole animation or whatever it held before (a stopped or failed export leaves nothing behind).
class AnimationWriter {
 public:
  // width x height pixels (even: H.264 needs it), fps frames a second. Throws Error naming path
  // if the encoder cannot start (no H.264 or MPEG-4 encoder, an unwritable folder).
  AnimationWriter(const std::filesystem::path& path, int width, int height, double fps);
  ~AnimationWriter();  // without finish(): removes the temporary file
  AnimationWriter(const AnimationWriter&) = delete;
  AnimationWriter& operator=(const AnimationWriter&) = delete;

  // One frame (RGB or grey, width x height), shown for `frames` frame times.
  void add(const Image8& frame, int frames = 1);
  void finish();  // writes the file and renames it over path; throws Error naming path
  int frames() const { return frames_; }
  std::string encoder() const;  // "H.264", "MPEG-4" or "WebP (lossless)", for the user

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::filesystem::path path_, temp_;
  int width_, height_, frames_ = 0;
  double fps_;
  bool finished_ = false;
};

}  // namespace ampgan::io
