// The AMP safeguards' arithmetic: StyleGAN2-ADA's activation clamp and nan_to_num. Part of the element-wise arithmetic
// both compilers read (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- AMP safeguards (StyleGAN2-ADA's conv_clamp and nan_to_num) -----------------------------

// y = clamp(x, -c, c); NaN stays NaN (comparisons with NaN are false), +-inf become +-c.
AMPGAN_HD float clamp_value(float x, float c) { return x > c ? c : (x < -c ? -c : x); }
// The clamp's gradient with respect to its input x: dy where -c <= x <= c (as torch.clamp's), else 0.
AMPGAN_HD float clamp_grad(float x, float dy, float c) { return (x >= -c && x <= c) ? dy : 0.0f; }
// torch.nan_to_num(g, nan=0, posinf=bound, neginf=-bound) for a finite bound; a finite g is
// returned unchanged.
AMPGAN_HD float nan_to_num_value(float g, float bound) {
  if (g != g) return 0.0f;
  if (g > 3.40282347e38f) return bound;
  if (g < -3.40282347e38f) return -bound;
  return g;
}
// The largest finite value of a storage format (the replacement bound is capped there: a
// replacement must itself be finite once stored).
AMPGAN_HD float max_finite(DType t) {
  return t == DType::F16 ? 65504.0f : (t == DType::BF16 ? 3.38953139e38f : 3.40282347e38f);
}

}  // namespace ampgan::ew
