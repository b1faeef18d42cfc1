// CPU backend, losses: the GAN losses (BCE with logits, hinge) and the classifier's softmax
// cross-entropy, each writing its loss and the scaled gradient of the logits.
#include <cmath>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_dispatch.h"

namespace ampgan {

using cpu::require;

void CpuBackend::gan_loss(LossKind kind, LossRole role, const Tensor& logits, const Tensor& scaler_state,
                          Tensor& dlogits, Tensor& scalars, int loss_slot, int prob_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.numel() == dlogits.numel(),
          "gan_loss", "logits must be FP32");
  const int64_t n = logits.numel();
  const float* x = logits.as<float>();
  float* dx = dlogits.as<float>();
  const float scale = scaler_state.as<float>()[0];
  const float target = role == LossRole::DFake ? 0.0f : 1.0f;
  const ew::HingeRole hr = role == LossRole::DReal   ? ew::HingeRole::DReal
                           : role == LossRole::DFake ? ew::HingeRole::DFake
                                                     : ew::HingeRole::G;
  double loss = 0.0, prob = 0.0;
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) {
    if (kind == LossKind::BCEWithLogits) {
      loss += ew::bce_logits_loss(x[i], target);
      dx[i] = ew::bce_logits_grad(x[i], target) * inv_n * scale;
    } else {
      loss += ew::hinge_loss(hr, x[i]);
      dx[i] = ew::hinge_grad(hr, x[i]) * inv_n * scale;
    }
    prob += ew::sigmoid(x[i]);
  }
  float* s = scalars.as<float>();
  s[loss_slot] += static_cast<float>(loss / n);
  if (prob_slot >= 0) s[prob_slot] = static_cast<float>(prob / n);
}

void CpuBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits, Tensor& scalars,
                                       int loss_slot, int correct_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.shape().rank == 2,
          "softmax_cross_entropy", "logits must be FP32 (n, classes)");
  const int64_t n = logits.shape()[0], k = logits.shape()[1];
  const float* x = logits.as<float>();
  const float* y = labels.as<float>();
  float* dx = dlogits.as<float>();
  double loss = 0.0;
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool right = false;
    loss += ew::softmax_xent_row(x + i * k, k, static_cast<int64_t>(y[i]), static_cast<double>(n), dx + i * k, right);
    correct += right;
  }
  float* s = scalars.as<float>();
  s[loss_slot] = static_cast<float>(loss / n);
  s[correct_slot] = static_cast<float>(correct);
}

}  // namespace ampgan
