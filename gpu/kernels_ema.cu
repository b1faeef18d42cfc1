// The generator's EMA on the GPU: one launch per parameter tensor, the skip and the decay read
// on the device (capture-safe), the same shared arithmetic as the CPU (ew::ema_decay/update).
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {
__global__ void ema_kernel(float* shadow, const float* param, int64_t n, float decay, float rampup, const float* count,
                           const float* scalars, int found_inf_slot) {
  if (scalars[found_inf_slot] != 0.0f) return;  // uniform across the grid: G's step was skipped
  const float d = ew::ema_decay(decay, rampup, static_cast<float>(ew::count_load(count)));
  for (int64_t i = global_thread(); i < n; i += grid_stride()) shadow[i] = ew::ema_update(shadow[i], param[i], d);
}
}  // namespace

void ema_update(cudaStream_t s, float* shadow, const float* param, int64_t n, float decay, float rampup,
                const float* count, const float* scalars, int found_inf_slot) {
  if (n <= 0) return;
  ema_kernel<<<grid_for(n), kThreads, 0, s>>>(shadow, param, n, decay, rampup, count, scalars, found_inf_slot);
  AMPGAN_LAUNCHED("ema_kernel");
}

}  // namespace ampgan::gpu
