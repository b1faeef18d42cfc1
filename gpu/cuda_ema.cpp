// CUDA backend: the generator's EMA (gpu/kernels_ema.cu); the CPU version is in cpu_backend.cpp
// beside Adam.
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::ema_update(const std::vector<Tensor>& shadow, const std::vector<Tensor>& params, float decay,
                             float rampup, const Tensor& step_count, const Tensor& scalars, int found_inf_slot) {
  if (shadow.size() != params.size() || step_count.dtype() != DType::F32 || step_count.numel() != 2 ||
      found_inf_slot < 0 || found_inf_slot >= scalars.numel())
    throw Error("CUDA backend: ema_update: one shadow per parameter, an FP32 [lo, hi] step count, a valid slot", "",
                "this is a bug in the caller");
  activate();
  for (size_t k = 0; k < params.size(); ++k) {
    if (shadow[k].dtype() != DType::F32 || params[k].dtype() != DType::F32 || shadow[k].numel() != params[k].numel())
      throw Error("CUDA backend: ema_update: shadow and parameter must be FP32 of one size", "",
                  "this is a bug in the caller");
    gpu::ema_update(stream_, shadow[k].as<float>(), params[k].as<float>(), params[k].numel(), decay, rampup,
                    step_count.as<float>(), scalars.as<float>(), found_inf_slot);
  }
}

}  // namespace ampgan::gpu
