// Batch norm's per-element arithmetic (statistics are FP32). Part of the element-wise arithmetic both compilers read
// (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- batch norm -----------------------------------------------------------------------------

AMPGAN_HD float bn_normalize(float x, float mean, float invstd, float gamma, float beta) {
  return (x - mean) * invstd * gamma + beta;
}
// dx given the per-channel means of dy and of dy * xhat over the batch.
AMPGAN_HD float bn_backward_dx(float dy, float xhat, float gamma, float invstd, float mean_dy, float mean_dy_xhat) {
  return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

}  // namespace ampgan::ew
