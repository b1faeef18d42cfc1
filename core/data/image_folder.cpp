#include "core/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/common/error.h"
#include "core/data/preprocess.h"
#include "core/io/atomic_file.h"
#include "core/io/read_limits.h"

namespace fs = std::filesystem;

namespace ampgan::data {

namespace {

const char* const kExtensions[] = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"};
const char* kExtensionList = ".png, .jpg, .jpeg, .bmp, .webp, .tif, .tiff";

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return std::any_of(std::begin(kExtensions), std::end(kExtensions), [&](const char* e) { return ext == e; });
}

// The most bytes of one image file read into memory (an 8192 x 8192 PNG is well below it).
constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;

// Decoded image at res x res, 8-bit, 1 or 3 channels (RGB order); empty Mat when unusable, with
// *too_large set when the header announces more pixels than io::kMaxImagePixels (checked before
// the decoder allocates anything). want: 0 natural (grey sources stay 1 channel), or 1/3 forced.
cv::Mat decode(const std::string& path, int res, int want, bool* too_large) {
  cv::Mat m;
  try {
    const std::string bytes = io::read_file(path, kMaxImageFileBytes);
    if (const auto size = io::sniff_image_size(bytes.data(), bytes.size())) {
      if (size->width == 0 || size->height == 0) return {};
      if (size->height > io::kMaxImagePixels / size->width) {
        *too_large = true;
        return {};
      }
    }
    const cv::Mat raw(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
    m = cv::imdecode(raw, cv::IMREAD_UNCHANGED);
  } catch (const Error&) {
    return {};  // not a regular file, or larger than any image we would decode
  } catch (const cv::Exception&) {
    return {};  // some decoders throw on malformed input instead of returning empty
  }
  if (m.empty() || m.dims != 2) return {};

  // Centre crop first: everything after works on fewer pixels.
  const int side = std::min(m.rows, m.cols);
  m = m(cv::Rect((m.cols - side) / 2, (m.rows - side) / 2, side, side));

  // Any depth to 8-bit: 16-bit spans 0..65535 (65535 / 257 = 255), float spans 0..1.
  switch (m.depth()) {
    case CV_8U: break;
    case CV_16U: m.convertTo(m, CV_8U, 1.0 / 257.0); break;
    case CV_32F:
    case CV_64F: m.convertTo(m, CV_8U, 255.0); break;
    default: return {};  // signed integer images: no meaningful mapping to pixels
  }

  // Channels: drop alpha, OpenCV's BGR to RGB.
  switch (m.channels()) {
    case 1: break;
    case 2: cv::extractChannel(m, m, 0); break;  // grey + alpha
    case 3: cv::cvtColor(m, m, cv::COLOR_BGR2RGB); break;
    case 4: cv::cvtColor(m, m, cv::COLOR_BGRA2RGB); break;
    default: return {};
  }
  if (want == 1 && m.channels() == 3) cv::cvtColor(m, m, cv::COLOR_RGB2GRAY);
  if (want == 3 && m.channels() == 1) cv::cvtColor(m, m, cv::COLOR_GRAY2RGB);

  cv::Mat out(res, res, CV_8UC(m.channels()));
  detail::resize_square(m, res, out.data);
  return out;
}

// True when the three channels are equal everywhere (a grey image stored as RGB).
bool is_grey(const uint8_t* p, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i)
    if (p[3 * i] != p[3 * i + 1] || p[3 * i] != p[3 * i + 2]) return false;
  return true;
}

}  // namespace

ImageSet load_image_folder(const std::string& dir, const LoadOptions& opt) {
  if (opt.res < 1) throw Error("invalid resolution " + std::to_string(opt.res), "--res", "use 32, 64 or 128");
  if (opt.channels != 0 && opt.channels != 1 && opt.channels != 3)
    throw Error("invalid channel count " + std::to_string(opt.channels), "--channels", "use 1 or 3");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("no such folder", dir, "check the path of the image folder");

  // ---- collect candidate files, sorted so the order does not depend on the file system ----
  std::vector<fs::path> files;
  std::vector<std::string> ignored;  // files without an image extension
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) throw Error("cannot read folder: " + ec.message(), dir, "check its permissions");
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error("cannot read folder: " + ec.message(), dir, "check its permissions");
    const fs::path& p = it->path();
    if (p.filename().string().starts_with(".")) {  // .git, .DS_Store, editor files
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    if (has_image_extension(p))
      files.push_back(p);
    else
      ignored.push_back(p.lexically_relative(dir).generic_string());
  }
  std::sort(files.begin(), files.end());
  std::sort(ignored.begin(), ignored.end());
  if (files.empty()) {
    if (ignored.empty())
      throw Error("the folder holds no images", dir,
                  std::string("put image files (") + kExtensionList + ") in it or its subfolders");
    throw Error("the folder holds no image files, only " + std::to_string(ignored.size()) +
                    " other file(s): " + detail::list_names(ignored),
                dir, std::string("images must have one of the extensions ") + kExtensionList);
  }

  // ---- decode in parallel: file i goes to slot i, then failed slots are squeezed out in
  // order, so the result does not depend on the thread count ----
  const int n = static_cast<int>(files.size());
  const int res = opt.res;
  const int slot_c = opt.channels == 0 ? 3 : opt.channels;  // natural: RGB until proven grey
  const size_t res2 = size_t(res) * res, slot_size = res2 * slot_c;
  io::check_dataset_bytes(uint64_t(n) * slot_size,
                          std::to_string(n) + " images at " + std::to_string(res) + "x" +
                              std::to_string(res) + "x" + std::to_string(slot_c),
                          dir, opt.max_bytes);
  std::vector<uint8_t> pixels(size_t(n) * slot_size);
  std::vector<char> ok(n, 0), grey(n, 0), too_large(n, 0);
  detail::for_blocks(n, opt, dir, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      bool large = false;
      const cv::Mat img = decode(files[i].string(), res, opt.channels, &large);
      too_large[i] = large;
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

  std::vector<std::string> failed, large;
  for (int i = 0; i < n; ++i)
    if (!ok[i]) (too_large[i] ? large : failed).push_back(files[i].lexically_relative(dir).generic_string());
  const int count = n - static_cast<int>(failed.size() + large.size());
  const std::string large_note = std::to_string(large.size()) + " image(s) larger than 8192 x 8192 pixels (" +
                                 std::to_string(io::kMaxImagePixels) + " pixels), not decoded: " +
                                 detail::list_names(large);
  if (count == 0 && failed.empty())
    throw Error("all " + large_note, dir, "shrink the images (training uses at most 128 x 128 pixels)");
  if (count == 0)
    throw Error("none of the " + std::to_string(n) + " image file(s) could be decoded: " +
                    detail::list_names(failed),
                dir, "check that they are real images (PNG, JPEG, BMP, WebP or TIFF) and not damaged");

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

  ImageSet set;
  set.count = count;
  set.res = res;
  set.channels = c;
  set.pixels = std::move(pixels);
  fs::path name = fs::absolute(dir, ec).lexically_normal();  // "." names the real folder
  if (!name.has_filename()) name = name.parent_path();  // "photos/" -> "photos"
  set.name = name.filename().string();
  set.source = dir;
  if (!large.empty()) set.warnings.push_back("skipped " + large_note);
  if (!failed.empty())
    set.warnings.push_back("skipped " + std::to_string(failed.size()) + " unreadable file(s): " +
                           detail::list_names(failed));
  if (!ignored.empty())
    set.warnings.push_back("ignored " + std::to_string(ignored.size()) +
                           " file(s) without an image extension: " + detail::list_names(ignored));
  return set;
}

}  // namespace ampgan::data
