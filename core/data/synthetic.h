// A built-in dataset that needs no files: coloured shapes on dark backgrounds.
#pragma once

#include <cstdint>

#include "core/data/image_set.h"

namespace ampgan::data {

// count images of res x res with 1-3 filled shapes (circle, square, triangle) each, of random
// size, position and colour on a dark random background. channels: 0 or 3 -> RGB, 1 -> grey.
// Labels: kind of the largest shape (0 circle, 1 square, 2 triangle; num_classes 3).
// Drawn from Philox only, so the same seed gives identical pixels on every machine.
ImageSet make_synthetic(int count, int res, int channels, uint64_t seed);

}  // namespace ampgan::data
