// CUDA backend, optimizer family: Adam on the FP32 master weights (gpu/kernels_optim.cu) and the
// generator's EMA (also gpu/kernels_optim.cu). The CPU version is core/backend/cpu/cpu_optim.cpp.
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg, Tensor& step_count,
                            const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) {
  require(step_count.dtype() == DType::F32 && step_count.numel() == 2 && scaler_state.dtype() == DType::F32 &&
              scalars.dtype() == DType::F32 && found_inf_slot >= 0 && found_inf_slot < scalars.numel(),
          "adam_step", "FP32 [lo, hi] step count, FP32 scaler state and scalars");
  std::vector<AdamDesc> d;
  d.reserve(params.size());
  for (const AdamTensor& p : params) {
    const int64_t n = p.master.numel();
    require(p.master.dtype() == DType::F32 && p.m.dtype() == DType::F32 && p.v.dtype() == DType::F32 &&
                p.grad.numel() == n && p.m.numel() == n && p.v.numel() == n &&
                (!p.half_copy.defined() || p.half_copy.numel() == n),
            "adam_step", "parameter tensors disagree");
    AdamDesc a{};
    a.w = p.master.as<float>();
    a.g = p.grad.data();
    a.m = p.m.as<float>();
    a.v = p.v.as<float>();
    a.h = p.half_copy.defined() ? p.half_copy.data() : nullptr;
    a.n = n;
    a.gdtype = static_cast<int32_t>(p.grad.dtype());
    a.hdtype = static_cast<int32_t>(p.half_copy.defined() ? p.half_copy.dtype() : DType::F32);
    d.push_back(a);
  }
  activate();
  gpu::adam_step(stream_, d.data(), static_cast<int>(d.size()), cfg, step_count.as<float>(), scaler_state.as<float>(),
                 scalars.as<float>(), found_inf_slot);
}

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
