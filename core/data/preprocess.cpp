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
    throw Cancelled("loading cancelled", subject, "nothing was written; start it again when you want to");
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

void set_labels(ImageSet& set, std::vector<int32_t> labels, const std::string& where) {
  set.labels.clear();
  set.num_classes = 0;
  if (labels.empty()) return;
  const auto [lo, hi] = std::minmax_element(labels.begin(), labels.end());
  if (*lo < 0)
    throw Error("a label is " + std::to_string(*lo) + ", not a class number from 0", where,
                "number the classes from 0 up (dataset_tool does)");
  const int32_t top = *hi;
  const uint64_t classes = uint64_t(top) + 1;
  if (classes > std::max<uint64_t>(labels.size(), kMaxSparseClasses)) {
    // More classes than images: the numbers are not a dense 0..K-1. The classifier gets the
    // classes that occur, numbered in order, instead of a million empty ones.
    std::vector<int32_t> values = labels;
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (int32_t& l : labels)
      l = static_cast<int32_t>(std::lower_bound(values.begin(), values.end(), l) - values.begin());
    set.warnings.push_back("the labels in " + where + " name class " + std::to_string(top) + " for " +
                           std::to_string(labels.size()) + " images: the " + std::to_string(values.size()) +
                           " classes that occur are numbered 0 to " + std::to_string(values.size() - 1) +
                           " in their order");
    set.num_classes = static_cast<int>(values.size());
  } else {
    set.num_classes = static_cast<int>(classes);
  }
  set.labels = std::move(labels);
}

std::string list_names(const std::vector<std::string>& names, size_t shown) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

}  // namespace ampgan::data::detail
