#include "core/data/preprocess.h"

#include <algorithm>
#include <cstring>

#include <opencv2/imgproc.hpp>

#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan::data::detail {

void resize_square(const cv::Mat& src, int res, uint8_t* out) {
  AMPGAN_CHECK(src.rows == src.cols && src.depth() == CV_8U, "resize_square needs a square 8-bit image");
  const int c = src.channels();
  cv::Mat dst(res, res, CV_8UC(c), out);
  if (src.rows == res) {
    src.copyTo(dst);  // copyTo keeps dst's buffer: same size and type
    return;
  }
  const int interp = src.rows > res ? cv::INTER_AREA : cv::INTER_LINEAR;
  cv::resize(src, dst, dst.size(), 0, 0, interp);
  // resize() writes into dst's buffer only if it did not reallocate; it cannot (same size/type).
  AMPGAN_CHECK(dst.data == out, "cv::resize reallocated its output");
}

void check_cancel(const LoadOptions& opt, const std::string& subject) {
  if (opt.cancel && opt.cancel->load(std::memory_order_relaxed))
    throw Error("loading cancelled", subject);
}

void for_blocks(int64_t n, const LoadOptions& opt, const std::string& subject,
                const std::function<void(int64_t, int64_t)>& fn) {
  // Blocks are small enough for a responsive progress bar and Cancel, large enough that the
  // pool's start-up cost per block does not matter.
  constexpr int64_t kBlock = 512;
  for (int64_t b = 0; b < n; b += kBlock) {
    check_cancel(opt, subject);
    const int64_t e = std::min(n, b + kBlock);
    parallel_for(e - b, 8, [&](int64_t lo, int64_t hi) { fn(b + lo, b + hi); });
    if (opt.progress) opt.progress(static_cast<int>(e), static_cast<int>(n));
  }
}

std::string list_names(const std::vector<std::string>& names, size_t shown) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

}  // namespace ampgan::data::detail
