#include "core/data/decode_images.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/common/error.h"
#include "core/data/preprocess.h"
#include "core/io/read_limits.h"

namespace ampgan::data::detail {

namespace {

const char* const kExtensions[] = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"};

// What decoding had to change, counted for one warning (a dataset of RGBA PNGs is common and
// harmless, but the user should know the alpha was dropped).
struct Conversions {
  std::atomic<int> rgba{0}, grey_alpha{0}, deep{0};
};

// True when the three channels are equal everywhere (a grey image stored as RGB).
bool is_grey(const uint8_t* p, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i)
    if (p[3 * i] != p[3 * i + 1] || p[3 * i] != p[3 * i + 2]) return false;
  return true;
}

// Image at res x res, 8-bit, 1 or 3 channels (RGB order); empty Mat when unusable.
// want: 0 natural (grey sources stay 1 channel), or 1/3 forced. 8-bit colour images are resized
// before their channels are reordered (the two commute exactly), so no full-size copy is made.
cv::Mat prepare(cv::Mat m, int res, int want, Conversions& conv) {
  if (m.empty() || m.dims != 2) return {};
  // Centre crop first: everything after works on fewer pixels.
  const int side = std::min(m.rows, m.cols);
  m = m(cv::Rect((m.cols - side) / 2, (m.rows - side) / 2, side, side));

  // Any depth to 8-bit: 16-bit spans 0..65535 (65535 / 257 = 255), float spans 0..1.
  switch (m.depth()) {
    case CV_8U:
      break;
    case CV_16U:
      m.convertTo(m, CV_8U, 1.0 / 257.0);
      ++conv.deep;
      break;
    case CV_32F:
    case CV_64F:
      m.convertTo(m, CV_8U, 255.0);
      ++conv.deep;
      break;
    default:
      return {};  // signed integer images: no meaningful mapping to pixels
  }

  // Channels: drop alpha, OpenCV's BGR to RGB. OpenCV decodes grey + alpha PNGs as BGRA with
  // equal colours, so those are told apart from RGBA by their colours.
  const int c = m.channels();
  if (c != 1 && c != 2 && c != 3 && c != 4) return {};
  if (c == 2) {
    cv::extractChannel(m, m, 0);
    ++conv.grey_alpha;
  } else if (want == 1 && c >= 3) {
    cv::cvtColor(m, m, c == 3 ? cv::COLOR_BGR2GRAY : cv::COLOR_BGRA2GRAY);  // as BGR -> RGB -> grey
  }
  cv::Mat small(res, res, CV_8UC(m.channels()));
  resize_square(m, res, small.data);
  if (small.channels() == 3) cv::cvtColor(small, small, cv::COLOR_BGR2RGB);
  if (small.channels() == 4) cv::cvtColor(small, small, cv::COLOR_BGRA2RGB);
  if (c == 4) ++(is_grey(small.data, small.total()) ? conv.grey_alpha : conv.rgba);
  if (want == 3 && small.channels() == 1) cv::cvtColor(small, small, cv::COLOR_GRAY2RGB);
  return small;
}

// What the decoders hold at once (encoded bytes, output, working buffers): an image waits
// until its cost fits beside the others', so images decoded in parallel never take more than
// io::kMaxDecodeBytes together. One image alone always fits (larger ones are refused first).
class DecodeBudget {
 public:
  void acquire(uint64_t bytes) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return used_ == 0 || used_ + bytes <= io::kMaxDecodeBytes; });
    used_ += bytes;
  }
  void release(uint64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(m_);
      used_ -= bytes;
    }
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t used_ = 0;
};

// Holds `bytes` of a budget for its lifetime.
class BudgetShare {
 public:
  BudgetShare(DecodeBudget& b, uint64_t bytes) : b_(b), bytes_(bytes) { b_.acquire(bytes_); }
  ~BudgetShare() { b_.release(bytes_); }
  // Grows the share (released first, so two growing shares never wait for each other).
  void resize(uint64_t bytes) {
    b_.release(bytes_);
    bytes_ = 0;
    b_.acquire(bytes);
    bytes_ = bytes;
  }
  BudgetShare(const BudgetShare&) = delete;
  BudgetShare& operator=(const BudgetShare&) = delete;

 private:
  DecodeBudget& b_;
  uint64_t bytes_;
};

// While alive, the process's stderr goes to /dev/null: OpenCV's decoders (its own "imdecode_:
// can't read header", libpng's and libjpeg's messages) print a line for every damaged file, and
// a folder of thousands would bury the one warning that names them (see decode_images).
class QuietStderr {
 public:
  QuietStderr() {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && null >= 0) ::dup2(null, 2);
    if (null >= 0) ::close(null);
  }
  ~QuietStderr() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      ::dup2(saved_, 2);
      ::close(saved_);
    }
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_ = -1;
};

// Image i's header, then (if it passes) its bytes, decoded; empty when refused (verdict and why
// say why) or unreadable. The budget share is held until the decoder has finished.
cv::Mat decode_one(const ImageSource& source, int64_t i, DecodeBudget& budget, io::ImageVerdict* verdict,
                   std::string* why) {
  try {
    // The header first: the image's size and what decoding it costs decide whether its
    // bytes are read at all, and how much of the budget they take.
    uint64_t file_bytes = 0;
    const std::string head = source.head(i, kImageHeadBytes, &file_bytes);
    auto size = io::sniff_image_size(head.data(), head.size());
    *verdict = io::judge_image(size, file_bytes);
    if (*verdict != io::ImageVerdict::Ok) {
      *why = io::verdict_text(*verdict, size, file_bytes);
      return {};
    }
    BudgetShare share(budget, io::image_cost(*size, file_bytes));
    const std::string bytes = head.size() == file_bytes ? head : source.whole(i, file_bytes);
    // Read whole, the header may tell more (a JPEG's later scans): judged again.
    size = io::sniff_image_size(bytes.data(), bytes.size());
    *verdict = io::judge_image(size, bytes.size());
    if (*verdict != io::ImageVerdict::Ok) {
      *why = io::verdict_text(*verdict, size, bytes.size());
      return {};
    }
    share.resize(io::image_cost(*size, bytes.size()));
    const cv::Mat buf(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
    return cv::imdecode(buf, cv::IMREAD_UNCHANGED);
  } catch (const Error&) {
    return {};  // not readable
  } catch (const cv::Exception&) {
    return {};  // some decoders throw on malformed input instead of returning empty
  } catch (const std::bad_alloc&) {
    return {};  // the decoder's own allocation failed: this image is unreadable here
  }
}

}  // namespace

bool has_image_extension(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return std::any_of(std::begin(kExtensions), std::end(kExtensions), [&](const char* e) { return ext == e; });
}

void decode_images(ImageSet& set, int n, const ImageSource& source, const std::vector<std::string>& names,
                   const LoadOptions& opt, const std::string& subject, std::vector<char>& ok) {
  // File i goes to slot i, then failed slots are squeezed out in order, so the result does not
  // depend on the thread count.
  const int res = opt.res;
  const int slot_c = opt.channels == 0 ? 3 : opt.channels;  // natural: RGB until proven grey
  const size_t res2 = size_t(res) * res, slot_size = res2 * slot_c;
  io::check_dataset_bytes(uint64_t(n) * slot_size,
                          std::to_string(n) + " images at " + std::to_string(res) + "x" + std::to_string(res) + "x" +
                              std::to_string(slot_c),
                          subject, opt.max_bytes);
  std::vector<uint8_t> pixels(size_t(n) * slot_size);
  std::vector<char> grey(n, 0);
  std::vector<io::ImageVerdict> verdict(n, io::ImageVerdict::Ok);
  std::vector<std::string> why(n);  // the first refused image's reason, for messages
  ok.assign(n, 0);
  Conversions conv;
  DecodeBudget budget;
  io::limit_decoder_memory();
  std::optional<QuietStderr> quiet;  // restored when decoding ends or throws; the warning below names the files
  quiet.emplace();
  for_blocks(n, opt, subject, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      cv::Mat raw = decode_one(source, i, budget, &verdict[i], &why[i]);
      const cv::Mat img = prepare(raw, res, opt.channels, conv);
      raw.release();
      if (img.empty()) continue;
      uint8_t* dst = pixels.data() + i * slot_size;
      if (img.channels() == slot_c) {
        std::memcpy(dst, img.data, slot_size);
      } else {  // natural mode, grey source: store as RGB for now
        for (size_t p = 0; p < res2; ++p) dst[3 * p] = dst[3 * p + 1] = dst[3 * p + 2] = img.data[p];
      }
      grey[i] = img.channels() == 1 || (slot_c == 3 && is_grey(dst, res2));
      ok[i] = 1;
    }
  });

  quiet.reset();

  std::vector<std::string> failed, large, costly;
  std::string costly_why;
  for (int i = 0; i < n; ++i) {
    if (ok[i]) continue;
    if (verdict[i] == io::ImageVerdict::TooManyPixels) {
      large.push_back(names[i]);
    } else if (verdict[i] == io::ImageVerdict::TooCostly || verdict[i] == io::ImageVerdict::TooManyBytes) {
      if (costly.empty()) costly_why = names[i] + ": " + why[i];
      costly.push_back(names[i]);
    } else {
      failed.push_back(names[i]);
    }
  }
  const int count = n - static_cast<int>(failed.size() + large.size() + costly.size());
  const std::string large_note = std::to_string(large.size()) + " image(s) larger than 8192 x 8192 pixels (" +
                                 std::to_string(io::kMaxImagePixels) + " pixels), not decoded: " + list_names(large);
  const std::string costly_note = std::to_string(costly.size()) +
                                  " image(s) that would take more memory to decode "
                                  "than one image may (" +
                                  list_names(costly) + "; " + costly_why + ")";
  if (count == 0 && failed.empty() && costly.empty())
    throw Error("all " + large_note, subject, "shrink the images (training uses at most 128 x 128 pixels)");
  if (count == 0 && failed.empty())
    throw Error("none of the images could be decoded: " + costly_note, subject,
                "shrink the images (training uses at most 128 x 128 pixels), or save them without padding");
  if (count == 0)
    throw Error("none of the " + std::to_string(n) + " image file(s) could be decoded: " + list_names(failed), subject,
                "check that they are real images (PNG, JPEG, BMP, WebP or TIFF) and not damaged");

  // Natural channel count: grey only when every image is grey.
  bool all_grey = opt.channels == 0;
  for (int i = 0; i < n && all_grey; ++i) all_grey = !ok[i] || grey[i];
  const int c = all_grey ? 1 : slot_c;
  const size_t size = res2 * c;
  // Compact in place: the write position never passes the read position.
  size_t w = 0;
  for (int i = 0; i < n; ++i) {
    if (!ok[i]) continue;
    const uint8_t* src = pixels.data() + i * slot_size;
    uint8_t* dst = pixels.data() + w * size;
    if (c == slot_c)
      std::memmove(dst, src, size);
    else
      for (size_t p = 0; p < res2; ++p) dst[p] = src[3 * p];
    ++w;
  }
  pixels.resize(w * size);
  pixels.shrink_to_fit();
  set.count = count;
  set.res = res;
  set.channels = c;
  set.pixels = std::move(pixels);
  if (!large.empty()) set.warnings.push_back("skipped " + large_note);
  if (!costly.empty()) set.warnings.push_back("skipped " + costly_note);
  if (!failed.empty())
    set.warnings.push_back("skipped " + std::to_string(failed.size()) + " unreadable file(s): " + list_names(failed));
  std::vector<std::string> converted;
  if (conv.rgba) converted.push_back(std::to_string(conv.rgba.load()) + " RGBA (alpha dropped)");
  if (conv.grey_alpha) converted.push_back(std::to_string(conv.grey_alpha.load()) + " grey+alpha (alpha dropped)");
  if (conv.deep) converted.push_back(std::to_string(conv.deep.load()) + " 16-bit or float (scaled to 8 bits)");
  if (!converted.empty()) {
    std::string s = "converted ";
    for (size_t i = 0; i < converted.size(); ++i) s += (i ? ", " : "") + converted[i];
    set.warnings.push_back(s + " image(s)");
  }
}

}  // namespace ampgan::data::detail
