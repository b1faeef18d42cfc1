// Helpers shared by the dataset loaders (internal to core/data).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/data/image_set.h"

namespace ampgan::data::detail {

// Resizes a square 8-bit image to res x res into out (res * res * src.channels() bytes):
// INTER_AREA when shrinking (averages, no aliasing), INTER_LINEAR when enlarging (AREA would
// give blocky nearest-like results), a plain copy when the size already matches.
void resize_square(const cv::Mat& src, int res, uint8_t* out);

// Throws ampgan::Error("loading cancelled", subject) when opt.cancel is set.
void check_cancel(const LoadOptions& opt, const std::string& subject);

// Runs fn(begin, end) over [0, n) in parallel, block by block; between blocks (on the calling
// thread) it reports progress and checks for cancellation. Chunking depends only on n.
void for_blocks(int64_t n, const LoadOptions& opt, const std::string& subject,
                const std::function<void(int64_t begin, int64_t end)>& fn);

// Sets set.labels and set.num_classes (the largest label + 1) after checking the labels against
// the images they label: a label is a class number from 0 (Error naming where otherwise), and n
// images hold at most n classes: labels naming more (one huge label would give the FD
// classifier a million classes) are renumbered 0..K-1 over the K classes that occur, in order,
// with a warning. Below kMaxSparseClasses (IDX's byte labels) they are kept as they are.
inline constexpr uint64_t kMaxSparseClasses = 256;
void set_labels(ImageSet& set, std::vector<int32_t> labels, const std::string& where);

// "a, b, c and 4 more": the first few names of a list, for messages.
std::string list_names(const std::vector<std::string>& names, size_t shown = 5);

}  // namespace ampgan::data::detail
