// CUDA backend, losses: the GAN losses and the classifier's softmax cross-entropy
// (gpu/kernels_elementwise.cu), checked as on the CPU.
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::gan_loss(LossKind kind, LossRole role, const Tensor& logits, const Tensor& scaler_state,
                           Tensor& dlogits, Tensor& scalars, int loss_slot, int prob_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.numel() == dlogits.numel() &&
              logits.numel() > 0,
          "gan_loss", "logits must be FP32");
  require(scalars.dtype() == DType::F32 && loss_slot >= 0 && loss_slot < scalars.numel() &&
              prob_slot < scalars.numel() && scaler_state.dtype() == DType::F32,
          "gan_loss", "slots out of range");
  activate();
  gpu::gan_loss(stream_, kind, role, logits.as<float>(), logits.numel(), scaler_state.as<float>(), dlogits.as<float>(),
                scalars.as<float>(), loss_slot, prob_slot);
}

void CudaBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits, Tensor& scalars,
                                        int loss_slot, int correct_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.shape().rank == 2 &&
              labels.dtype() == DType::F32 && dlogits.numel() == logits.numel(),
          "softmax_cross_entropy", "logits must be FP32 (n, classes)");
  const int64_t n = logits.shape()[0], k = logits.shape()[1];
  require(labels.numel() >= n && n > 0 && k > 0, "softmax_cross_entropy", "labels (n) FP32");
  activate();
  void* ws = workspace(kWsSoftmax, gpu::softmax_ce_workspace_bytes(n), "softmax_cross_entropy");
  gpu::softmax_cross_entropy(stream_, logits.as<float>(), labels.as<float>(), n, k, dlogits.as<float>(),
                             scalars.as<float>(), loss_slot, correct_slot, ws);
}

}  // namespace ampgan::gpu
