// CUDA backend, mixed-precision passes: the fused unscale-and-check with gradient statistics, the
// gradient exponent histogram and the loss-scaler update (gpu/kernels_amp.cu).
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state, Tensor& scalars,
                             const GradStatSlots& slots) {
  require(scalars.dtype() == DType::F32 && scaler_state.dtype() == DType::F32, "grad_stats", "FP32 scalars");
  for (int slot : {slots.found_inf, slots.sum_sq})
    require(slot >= 0 && slot < scalars.numel(), "grad_stats", "slot out of range");
  for (int slot : {slots.zeros, slots.subnormals, slots.count})  // counts: [slot, slot + 1]
    require(slot >= 0 && slot + 1 < scalars.numel(), "grad_stats", "count slot out of range");
  if (slots.per_tensor >= 0)
    require(slots.per_tensor + int64_t{kTensorStatSlots} * static_cast<int64_t>(grads.size()) <= scalars.numel(),
            "grad_stats", "per-tensor slots out of range");
  activate();
  std::vector<GradDesc> d;
  d.reserve(grads.size());
  for (const Tensor& g : grads) d.push_back(grad_desc(g));
  void* ws = workspace(kWsReduce, gpu::grad_stats_workspace_bytes(static_cast<int>(d.size())), "grad_stats");
  gpu::grad_stats(stream_, d.data(), static_cast<int>(d.size()), scaler_state.as<float>(), scalars.as<float>(), slots,
                  ws);
}

void CudaBackend::grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) {
  require(hist.dtype() == DType::F32 && hist.numel() >= ew::kHistBins, "grad_histogram", "hist too small");
  activate();
  std::vector<GradDesc> d;
  d.reserve(grads.size());
  for (const Tensor& g : grads) d.push_back(grad_desc(g));
  void* ws = workspace(kWsHist, gpu::grad_histogram_workspace_bytes(), "grad_histogram");
  gpu::grad_histogram(stream_, d.data(), static_cast<int>(d.size()), hist.as<float>(), ws);
}

void CudaBackend::scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg, const Tensor& scalars,
                                const std::vector<int>& found_inf_slots) {
  require(scaler_state.dtype() == DType::F32 && scaler_state.numel() >= 2 && scalars.dtype() == DType::F32,
          "scaler_update", "FP32 state [scale, growth tracker]");
  require(found_inf_slots.size() <= static_cast<size_t>(gpu::kMaxScalerSlots), "scaler_update",
          "at most " + std::to_string(gpu::kMaxScalerSlots) + " found-inf slots");
  for (int s : found_inf_slots) require(s >= 0 && s < scalars.numel(), "scaler_update", "slot out of range");
  activate();
  gpu::scaler_update(stream_, scaler_state.as<float>(), cfg, scalars.as<float>(), found_inf_slots.data(),
                     static_cast<int>(found_inf_slots.size()));
}

}  // namespace ampgan::gpu
