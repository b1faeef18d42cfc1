// The GAN losses and softmax cross-entropy on FP32 logits. Part of the element-wise arithmetic both compilers read
// (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- losses on FP32 logits ------------------------------------------------------------------

AMPGAN_HD float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

// BCE with logits, stable for any |x|: max(x,0) - x*y + log(1 + exp(-|x|)).
AMPGAN_HD float bce_logits_loss(float x, float y) { return fmaxf(x, 0.0f) - x * y + log1pf(expf(-fabsf(x))); }
AMPGAN_HD float bce_logits_grad(float x, float y) { return sigmoid(x) - y; }

// Hinge loss (Lim & Ye 2017; Miyato et al. 2018): D on real max(0, 1-x), D on fake max(0, 1+x),
// G -x.
enum class HingeRole : uint8_t { DReal, DFake, G };
AMPGAN_HD float hinge_loss(HingeRole r, float x) {
  switch (r) {
    case HingeRole::DReal:
      return fmaxf(0.0f, 1.0f - x);
    case HingeRole::DFake:
      return fmaxf(0.0f, 1.0f + x);
    default:
      return -x;
  }
}
AMPGAN_HD float hinge_grad(HingeRole r, float x) {
  switch (r) {
    case HingeRole::DReal:
      return x < 1.0f ? -1.0f : 0.0f;
    case HingeRole::DFake:
      return x > -1.0f ? 1.0f : 0.0f;
    default:
      return -1.0f;
  }
}

// Softmax cross-entropy of one row of k logits (a classifier's): writes d(loss / n)/d(logits)
// to drow, sets correct when the argmax is the label, returns the row's loss. In double, so the
// classifier's loss does not depend on the order of the k terms.
AMPGAN_HD double softmax_xent_row(const float* row, int64_t k, int64_t label, double n, float* drow, bool& correct) {
  int64_t arg = 0;
  float mx = row[0];
  for (int64_t j = 1; j < k; ++j)
    if (row[j] > mx) mx = row[j], arg = j;
  double sum = 0.0;
  for (int64_t j = 0; j < k; ++j) sum += exp(static_cast<double>(row[j] - mx));
  for (int64_t j = 0; j < k; ++j) {
    const double p = exp(static_cast<double>(row[j] - mx)) / sum;
    drow[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) / n);
  }
  correct = arg == label;
  return log(sum) - (row[label] - mx);
}

}  // namespace ampgan::ew
