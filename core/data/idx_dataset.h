// IDX files (the MNIST family's format), gzip-compressed or raw.
#pragma once

#include <string>

#include "core/data/image_set.h"

namespace ampgan::data {

// Loads an IDX images file (magic 0x00000803: unsigned bytes, N x H x W) and, when
// labels_path is not empty, its IDX labels file (magic 0x00000801). Each H x W image is padded
// with black, centred, to a square whose side is the next power of two >= max(H, W) (28x28 ->
// 32x32, the classic DCGAN input), then resized to opt.res. Natural channel count is 1.
ImageSet load_idx(const std::string& images_path, const std::string& labels_path, const LoadOptions& opt);

}  // namespace ampgan::data
