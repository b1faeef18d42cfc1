// The element-wise arithmetic of the engine, written once. The CPU backend loops over these
// functions and the CUDA kernels call them, so the GPU's arithmetic is unit-tested on the CPU.
// Everything computes in FP32; storage types only decide where values are rounded.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/common/hd.h"
#include "core/tensor/dtype.h"
#include "core/tensor/half.h"

namespace ampgan::ew {

// ---- storage types: load widens to float, store rounds to nearest even ----------------------

struct F32 {
  using T = float;
  static constexpr DType kType = DType::F32;
  static AMPGAN_HD float load(T v) { return v; }
  static AMPGAN_HD T store(float v) { return v; }
  static AMPGAN_HD bool is_zero(T v) { return v == 0.0f; }
  static AMPGAN_HD bool is_subnormal(T v) { return v != 0.0f && fabsf(v) < 1.17549435e-38f; }
  static AMPGAN_HD bool is_finite(T v) { return (float_bits(v) & 0x7f800000u) != 0x7f800000u; }
};

struct F16 {
  using T = uint16_t;
  static constexpr DType kType = DType::F16;
  static AMPGAN_HD float load(T v) { return half_bits_to_float(v); }
  static AMPGAN_HD T store(float v) { return float_to_half_bits(v); }
  static AMPGAN_HD bool is_zero(T v) { return half_bits_is_zero(v); }
  static AMPGAN_HD bool is_subnormal(T v) { return half_bits_is_subnormal(v); }
  static AMPGAN_HD bool is_finite(T v) { return half_bits_is_finite(v); }
};

struct BF16 {
  using T = uint16_t;
  static constexpr DType kType = DType::BF16;
  static AMPGAN_HD float load(T v) { return bf16_bits_to_float(v); }
  static AMPGAN_HD T store(float v) { return float_to_bf16_bits(v); }
  static AMPGAN_HD bool is_zero(T v) { return bf16_bits_is_zero(v); }
  static AMPGAN_HD bool is_subnormal(T v) { return bf16_bits_is_subnormal(v); }
  static AMPGAN_HD bool is_finite(T v) { return bf16_bits_is_finite(v); }
};

// ---- activations: backward passes use the layer's output y, so only y need be kept ----------

enum class Act : uint8_t { ReLU, LeakyReLU, Tanh, Identity };

AMPGAN_HD float act_forward(Act a, float alpha, float x) {
  switch (a) {
    case Act::ReLU: return x > 0.0f ? x : 0.0f;
    case Act::LeakyReLU: return x > 0.0f ? x : alpha * x;
    case Act::Tanh: return tanhf(x);
    default: return x;
  }
}

// dL/dx from dL/dy and y = f(x). For LeakyReLU with alpha > 0, sign(y) = sign(x).
AMPGAN_HD float act_backward(Act a, float alpha, float y, float dy) {
  switch (a) {
    case Act::ReLU: return y > 0.0f ? dy : 0.0f;
    case Act::LeakyReLU: return y > 0.0f ? dy : alpha * dy;
    case Act::Tanh: return dy * (1.0f - y * y);
    default: return dy;
  }
}

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

// ---- losses on FP32 logits ------------------------------------------------------------------

AMPGAN_HD float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

// BCE with logits, stable for any |x|: max(x,0) - x*y + log(1 + exp(-|x|)).
AMPGAN_HD float bce_logits_loss(float x, float y) {
  return fmaxf(x, 0.0f) - x * y + log1pf(expf(-fabsf(x)));
}
AMPGAN_HD float bce_logits_grad(float x, float y) { return sigmoid(x) - y; }

// Hinge loss (Lim & Ye 2017; Miyato et al. 2018): D on real max(0, 1-x), D on fake max(0, 1+x),
// G -x.
enum class HingeRole : uint8_t { DReal, DFake, G };
AMPGAN_HD float hinge_loss(HingeRole r, float x) {
  switch (r) {
    case HingeRole::DReal: return fmaxf(0.0f, 1.0f - x);
    case HingeRole::DFake: return fmaxf(0.0f, 1.0f + x);
    default: return -x;
  }
}
AMPGAN_HD float hinge_grad(HingeRole r, float x) {
  switch (r) {
    case HingeRole::DReal: return x < 1.0f ? -1.0f : 0.0f;
    case HingeRole::DFake: return x > -1.0f ? 1.0f : 0.0f;
    default: return -1.0f;
  }
}

// Softmax cross-entropy of one row of k logits (a classifier's): writes d(loss / n)/d(logits)
// to drow, sets correct when the argmax is the label, returns the row's loss. In double, so the
// classifier's loss does not depend on the order of the k terms.
AMPGAN_HD double softmax_xent_row(const float* row, int64_t k, int64_t label, double n, float* drow,
                                  bool& correct) {
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

// ---- batch norm -----------------------------------------------------------------------------

AMPGAN_HD float bn_normalize(float x, float mean, float invstd, float gamma, float beta) {
  return (x - mean) * invstd * gamma + beta;
}
// dx given the per-channel means of dy and of dy * xhat over the batch.
AMPGAN_HD float bn_backward_dx(float dy, float xhat, float gamma, float invstd, float mean_dy,
                               float mean_dy_xhat) {
  return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

// ---- exponential moving average of weights (the generator's EMA) ----
// The decay at G's t-th applied step: decay itself, or with a ramp-up r > 0 the smaller
// (1 + t) / (r + t), so early averages are not dominated by the random initial weights.
AMPGAN_HD float ema_decay(float decay, float rampup, float t) {
  if (rampup <= 0.0f) return decay;
  const float ramp = (1.0f + t) / (rampup + t);
  return ramp < decay ? ramp : decay;
}
AMPGAN_HD float ema_update(float shadow, float param, float d) { return d * shadow + (1.0f - d) * param; }

// ---- counts in FP32 slots ------------------------------------------------------------------------
// FP32 holds every integer only up to 2^24 = 16,777,216; past it `c += 1` stops counting. Counts
// that can get there -- gradient values per network, Adam's t, the latent stream's step counter --
// take two FP32 slots [lo, hi]: count = hi * 2^24 + lo, 0 <= lo < 2^24, exact up to 2^48. Below
// 2^24, lo is the very float a one-slot count held, so nothing changes for existing runs.
constexpr float kCountRadix = 16777216.0f;  // 2^24

AMPGAN_HD void count_store(float* c, uint64_t n) {
  c[0] = static_cast<float>(static_cast<uint32_t>(n & 0xFFFFFFu));
  c[1] = static_cast<float>(n >> 24);
}

AMPGAN_HD uint64_t count_load(const float* c) {
  return (static_cast<uint64_t>(c[1]) << 24) + static_cast<uint64_t>(c[0]);
}

AMPGAN_HD void count_increment(float* c) {
  const float lo = c[0] + 1.0f;  // exact: c[0] < 2^24
  if (lo < kCountRadix) {
    c[0] = lo;
  } else {
    c[0] = 0.0f;
    c[1] += 1.0f;
  }
}

// ---- Adam (PyTorch's formulation: bias corrections on the step size and on sqrt(v)) ----------

struct AdamScalars {
  float lr, beta1, beta2, eps;
  float step_size;       // lr / (1 - beta1^t)
  float inv_sqrt_bc2;    // 1 / sqrt(1 - beta2^t)
  float inv_scale;       // 1 / loss scale: gradients arrive scaled
};

AMPGAN_HD AdamScalars adam_scalars(float lr, float beta1, float beta2, float eps, float t,
                                   float loss_scale) {
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

// ---- dynamic loss scaling (PyTorch GradScaler's update rule, plus a floor and a ceiling) -----

struct ScalerConfig {
  float init_scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
  float min_scale = 1.0f;          // floor: a scale that collapses to 0 trains nothing
  float max_scale = 16777216.0f;   // ceiling: 2^24
};

// state[0] = scale, state[1] = clean steps since the last change. found_inf: any non-finite
// gradient in this step. Returns nothing; the GPU runs this in a one-thread kernel.
AMPGAN_HD void scaler_update(float& scale, float& growth_tracker, bool found_inf,
                             const ScalerConfig& c) {
  if (found_inf) {
    scale = fmaxf(scale * c.backoff_factor, c.min_scale);
    growth_tracker = 0.0f;
    return;
  }
  const float successful = growth_tracker + 1.0f;
  if (successful >= static_cast<float>(c.growth_interval)) {
    const float grown = scale * c.growth_factor;
    if (grown <= c.max_scale) scale = grown;  // like GradScaler: grow only if it stays in range
    growth_tracker = 0.0f;
  } else {
    growth_tracker = successful;
  }
}

// ---- gradient exponent histogram ------------------------------------------------------------

// Bins of floor(log2|g|) from kHistMinExp to kHistMaxExp, then one for exact zeros and one for
// inf/NaN. Wide enough for FP32 gradients; FP16's ranges sit inside it (subnormal -24..-15,
// normal -14..15).
constexpr int kHistMinExp = -64;
constexpr int kHistMaxExp = 31;
constexpr int kHistZeroBin = kHistMaxExp - kHistMinExp + 1;
constexpr int kHistNonFiniteBin = kHistZeroBin + 1;
constexpr int kHistBins = kHistNonFiniteBin + 1;

AMPGAN_HD int exponent_bin(float g) {
  const uint32_t a = float_bits(g) & 0x7fffffffu;
  if (a >= 0x7f800000u) return kHistNonFiniteBin;
  if (a == 0) return kHistZeroBin;
  int e = static_cast<int>(a >> 23) - 127;
  if (e < kHistMinExp) e = kHistMinExp;
  if (e > kHistMaxExp) e = kHistMaxExp;
  return e - kHistMinExp;
}

}  // namespace ampgan::ew
