#include "core/nn/spectral_norm.h"

#include <cmath>
#include <vector>

#include "core/common/rng.h"

namespace ampgan {

namespace {
Tensor unit_vector(Backend& b, int64_t n, uint64_t seed, uint64_t stream, uint64_t offset) {
  std::vector<float> v(static_cast<size_t>(n));
  double ss = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = philox_normal(seed, stream, offset + i);
    ss += double(v[i]) * v[i];
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(ss));
  Tensor t = b.empty(Shape{n}, DType::F32, MemCategory::Master);
  b.upload(t, v.data(), v.size() * sizeof(float));
  return t;
}
}  // namespace

SpectralNorm::SpectralNorm(Backend& b, const std::string& prefix, const Shape& weight_shape, uint64_t seed,
                           uint64_t stream) {
  const int64_t rows = weight_shape[0], cols = weight_shape.numel() / rows;
  u_ = StateBuffer{prefix + "weight_u", unit_vector(b, rows, seed, stream, 0)};
  v_ = StateBuffer{prefix + "weight_v", unit_vector(b, cols, seed, stream, static_cast<uint64_t>(rows))};
  sigma_ = b.empty(Shape{1}, DType::F32, MemCategory::Workspace);
  b.fill(sigma_, 1.0f);
}

void SpectralNorm::power_iteration(Backend& b, const Parameter& w) {
  b.spectral_norm_power_iteration(w.master, u_.value, v_.value);
}

const Tensor& SpectralNorm::normalized(Backend& b, const Parameter& w, DType dtype) {
  if (!w_sn_.defined() || w_sn_.dtype() != dtype)  // the working copy the layer computes with
    w_sn_ = b.empty(w.shape, dtype, dtype == DType::F32 ? MemCategory::Workspace : MemCategory::HalfCopy);
  b.spectral_norm_forward(w.master, u_.value, v_.value, sigma_, w_sn_);
  return w_sn_;
}

Tensor& SpectralNorm::grad_buffer(Backend& b, const Parameter& w) {
  if (!g_sn_.defined() || g_sn_.dtype() != w.grad.dtype())
    g_sn_ = b.empty(w.shape, w.grad.dtype(), MemCategory::Gradient);
  return g_sn_;
}

void SpectralNorm::backward(Backend& b, Parameter& w, bool accumulate) {
  b.spectral_norm_backward(g_sn_, w.master, u_.value, v_.value, sigma_, w.grad, accumulate);
}

}  // namespace ampgan
