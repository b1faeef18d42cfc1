#include "core/io/animation_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <system_error>

#include <webp/encode.h>
#include <webp/mux.h>

#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/opencv.h"

namespace ampgan::io {

namespace fs = std::filesystem;

namespace {

std::string lower_extension(const fs::path& path) {
  std::string e = path.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

}  // namespace

AnimationFormat animation_format(const fs::path& path) {
  const std::string e = lower_extension(path);
  if (e == ".mp4") return AnimationFormat::Mp4;
  if (e == ".webp") return AnimationFormat::WebP;
  throw Error("Cannot write an animation as \"" + e + "\"", path.string(),
              "Name the file .mp4 (a video) or .webp (an animated image browsers show); GIF is not written");
}

struct AnimationWriter::Impl {
  AnimationFormat format;
  cv::VideoWriter video;
  std::string codec;
  WebPAnimEncoder* webp = nullptr;
  WebPConfig webp_config;
  int timestamp_ms = 0;
  ~Impl() {
    if (webp) WebPAnimEncoderDelete(webp);
  }
};

AnimationWriter::AnimationWriter(const fs::path& path, int width, int height, double fps)
    : impl_(std::make_unique<Impl>()), path_(path), width_(width), height_(height), fps_(fps) {
  impl_->format = animation_format(path);
  if (width <= 0 || height <= 0 || width % 2 || height % 2 || !(fps > 0))
    throw Error("An animation needs an even width and height and a positive frame rate, got " + std::to_string(width) +
                    "x" + std::to_string(height) + " at " + std::to_string(fps) + " fps",
                path.string(), "This is a bug; please report it");
  if (impl_->format == AnimationFormat::WebP) {
    WebPAnimEncoderOptions options;
    if (!WebPAnimEncoderOptionsInit(&options) || !WebPConfigInit(&impl_->webp_config))
      throw Error("libwebp's version does not match its headers", path.string(), "Reinstall libwebp7 and libwebpmux3");
    impl_->webp_config.lossless = 1;
    impl_->webp_config.method = 1;  // lossless either way; a low effort keeps long runs' exports quick
    impl_->webp = WebPAnimEncoderNew(width, height, &options);
    if (!impl_->webp) throw Error("libwebp could not start an animation", path.string(), "Is memory short?");
    impl_->codec = "WebP (lossless)";
    return;
  }
  // The container is chosen by the name's ending, so the temporary name keeps ".mp4".
  temp_ = path;
  temp_.replace_filename(path.stem().string() + ".tmp-" + std::to_string(::getpid()) + path.extension().string());
  for (const auto& [fourcc, name] : {std::pair{"avc1", "H.264"}, std::pair{"mp4v", "MPEG-4"}}) {
    impl_->video.open(temp_.string(), cv::CAP_FFMPEG,
                      cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]), fps, cv::Size(width, height),
                      true);
    if (impl_->video.isOpened()) {
      impl_->codec = name;
      return;
    }
  }
  std::error_code ec;
  fs::remove(temp_, ec);
  throw Error("OpenCV could not start an H.264 or MPEG-4 video", path.string(),
              "Check that the folder is writable and that libopencv-videoio406 has its FFmpeg backend; "
              "or write .webp instead");
}

AnimationWriter::~AnimationWriter() {
  if (finished_ || temp_.empty()) return;
  impl_->video.release();
  std::error_code ec;
  fs::remove(temp_, ec);
}

std::string AnimationWriter::encoder() const { return impl_->codec; }

void AnimationWriter::add(const Image8& frame, int frames) {
  AMPGAN_CHECK(!finished_ && frames >= 1 && frame.width == width_ && frame.height == height_ &&
                   (frame.channels == 1 || frame.channels == 3),
               "AnimationWriter::add: a frame of another size");
  const cv::Mat rgb = rgb_mat(frame);
  if (impl_->format == AnimationFormat::Mp4) {
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    for (int i = 0; i < frames; ++i) impl_->video.write(bgr);
  } else {
    WebPPicture pic;
    WebPPictureInit(&pic);
    pic.width = width_;
    pic.height = height_;
    pic.use_argb = 1;
    const bool ok = WebPPictureImportRGB(&pic, rgb.ptr<uint8_t>(), static_cast<int>(rgb.step)) &&
                    WebPAnimEncoderAdd(impl_->webp, &pic, impl_->timestamp_ms, &impl_->webp_config);
    WebPPictureFree(&pic);
    if (!ok)
      throw Error(std::string("libwebp could not encode a frame: ") + WebPAnimEncoderGetError(impl_->webp),
                  path_.string(), "Is memory short?");
    // WebP holds a frame for the time until the next one's timestamp.
    impl_->timestamp_ms += static_cast<int>(std::lround(1000.0 * frames / fps_));
  }
  frames_ += frames;
}

void AnimationWriter::finish() {
  AMPGAN_CHECK(!finished_, "AnimationWriter::finish twice");
  if (frames_ == 0)
    throw Error("An animation needs at least one frame", path_.string(), "This is a bug; please report it");
  if (impl_->format == AnimationFormat::Mp4) {
    impl_->video.release();
    std::error_code ec;
    fs::rename(temp_, path_, ec);
    if (ec)
      throw Error("Cannot move the finished video into place: " + ec.message(), path_.string(), "Check the folder");
  } else {
    WebPData data;
    WebPDataInit(&data);
    const bool ok = WebPAnimEncoderAdd(impl_->webp, nullptr, impl_->timestamp_ms, nullptr) &&
                    WebPAnimEncoderAssemble(impl_->webp, &data);
    if (!ok) {
      WebPDataClear(&data);
      throw Error(std::string("libwebp could not assemble the animation: ") + WebPAnimEncoderGetError(impl_->webp),
                  path_.string(), "Is memory short?");
    }
    try {
      write_file_atomic(path_, std::string_view(reinterpret_cast<const char*>(data.bytes), data.size));
    } catch (...) {
      WebPDataClear(&data);
      throw;
    }
    WebPDataClear(&data);
  }
  finished_ = true;
}

}  // namespace ampgan::io
