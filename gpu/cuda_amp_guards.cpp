// CUDA backend: the AMP safeguards (activation clamp, nan_to_num on gradients), checked as on
// the CPU (core/backend/amp_guards.h) and launched from gpu/kernels_amp_guards.cu.
#include "core/backend/amp_guards.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::clamp_forward(const Tensor& x, Tensor& y, float c) {
  check_clamp(x, y, c, "clamp_forward");
  activate();
  gpu::clamp_forward(stream_, x.dtype(), x.data(), y.data(), x.numel(), c);
}

void CudaBackend::clamp_backward(const Tensor& x, const Tensor& dy, Tensor& dx, float c) {
  check_clamp(x, dy, c, "clamp_backward");
  check_clamp(dy, dx, c, "clamp_backward");
  activate();
  gpu::clamp_backward(stream_, x.dtype(), x.data(), dy.data(), dx.data(), x.numel(), c);
}

void CudaBackend::nan_to_num(const std::vector<Tensor>& grads, float bound, Tensor& scalars, int count_slot,
                             int found_inf_slot) {
  check_nan_to_num(scalars, bound, count_slot, found_inf_slot);
  activate();
  std::vector<NanToNumDesc> d;
  d.reserve(grads.size());
  for (const Tensor& g : grads) d.push_back({g.data(), g.numel(), g.dtype()});
  void* ws = workspace(kWsReduce, gpu::nan_to_num_workspace_bytes(), "nan_to_num");
  gpu::nan_to_num(stream_, d.data(), static_cast<int>(d.size()), bound, scalars.as<float>(), count_slot, found_inf_slot,
                  ws);
}

}  // namespace ampgan::gpu
