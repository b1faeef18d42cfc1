// The optimizer: Adam on FP32 masters, and the generator's EMA. Part of the element-wise arithmetic both compilers read
// (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- exponential moving average of weights (the generator's EMA) ----
// The decay at G's t-th applied step: decay itself, or with a ramp-up r > 0 the smaller
// (1 + t) / (r + t), so early averages are not dominated by the random initial weights.
AMPGAN_HD float ema_decay(float decay, float rampup, float t) {
  if (rampup <= 0.0f) return decay;
  const float ramp = (1.0f + t) / (rampup + t);
  return ramp < decay ? ramp : decay;
}
AMPGAN_HD float ema_update(float shadow, float param, float d) { return d * shadow + (1.0f - d) * param; }

// ---- Adam (PyTorch's formulation: bias corrections on the step size and on sqrt(v)) ----------

struct AdamScalars {
  float lr, beta1, beta2, eps;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float inv_scale;     // 1 / loss scale: gradients arrive scaled
};

AMPGAN_HD AdamScalars adam_scalars(float lr, float beta1, float beta2, float eps, float t, float loss_scale) {
  AdamScalars s;
  s.lr = lr;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.eps = eps;
  s.step_size = lr / (1.0f - powf(beta1, t));
  s.inv_sqrt_bc2 = 1.0f / sqrtf(1.0f - powf(beta2, t));
  s.inv_scale = 1.0f / loss_scale;
  return s;
}

// One parameter: reads the scaled gradient, updates FP32 master weight and moments in place.
AMPGAN_HD void adam_update(const AdamScalars& s, float scaled_grad, float& w, float& m, float& v) {
  const float g = scaled_grad * s.inv_scale;
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  const float denom = sqrtf(v) * s.inv_sqrt_bc2 + s.eps;
  w -= s.step_size * m / denom;
}

}  // namespace ampgan::ew
