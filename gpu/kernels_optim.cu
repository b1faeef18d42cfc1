// The optimizer family on the GPU: Adam over a network's FP32 master weights (one multi-tensor
// launch per kMaxAdamTensors, skipped on the device when the network's found-inf flag is set,
// writing the half working copies) and the generator's EMA (one launch per parameter tensor, the
// skip and the decay read on the device). Both capture-safe, with the CPU's shared arithmetic
// (ew::adam_update, ew::ema_update). The CPU version is core/backend/cpu/cpu_optim.cpp.
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

struct AdamList {
  int count;
  AdamDesc t[kMaxAdamTensors];
};

struct AdamHyper {
  float lr, beta1, beta2, eps;
};

template <typename G, typename H, bool kHalf>
__device__ __forceinline__ void adam_loop(const AdamDesc& d, const ew::AdamScalars& s) {
  const typename G::T* g = static_cast<const typename G::T*>(d.g);
  typename H::T* h = static_cast<typename H::T*>(d.h);
  for (int64_t i = global_thread(); i < d.n; i += grid_stride()) {
    float w = d.w[i], m = d.m[i], v = d.v[i];
    ew::adam_update(s, G::load(g[i]), w, m, v);
    d.w[i] = w;
    d.m[i] = m;
    d.v[i] = v;
    if (kHalf) h[i] = H::store(w);
  }
}

template <typename G>
__device__ __forceinline__ void adam_tensor(const AdamDesc& d, const ew::AdamScalars& s) {
  if (!d.h)
    adam_loop<G, ew::F32, false>(d, s);
  else if (static_cast<DType>(d.hdtype) == DType::F16)
    adam_loop<G, ew::F16, true>(d, s);
  else if (static_cast<DType>(d.hdtype) == DType::BF16)
    adam_loop<G, ew::BF16, true>(d, s);
  else
    adam_loop<G, ew::F32, true>(d, s);
}

// Skipped entirely when the network's found-inf flag is set. t = step_count + 1 in every block
// (the count itself is incremented afterwards by adam_count_kernel, so no block can see a
// half-updated value).
__global__ void adam_kernel(AdamList list, AdamHyper hp, const float* step_count, const float* scaler_state,
                            const float* scalars, int found_inf_slot) {
  if (scalars[found_inf_slot] != 0.0f) return;  // uniform across the grid
  __shared__ ew::AdamScalars shared;
  if (threadIdx.x == 0)
    shared = ew::adam_scalars(hp.lr, hp.beta1, hp.beta2, hp.eps, static_cast<float>(ew::count_load(step_count) + 1),
                              scaler_state[0]);
  __syncthreads();
  const ew::AdamScalars s = shared;
  for (int t = 0; t < list.count; ++t) {
    const AdamDesc d = list.t[t];
    switch (static_cast<DType>(d.gdtype)) {
      case DType::F32:
        adam_tensor<ew::F32>(d, s);
        break;
      case DType::F16:
        adam_tensor<ew::F16>(d, s);
        break;
      case DType::BF16:
        adam_tensor<ew::BF16>(d, s);
        break;
    }
  }
}

__global__ void adam_count_kernel(float* step_count, const float* scalars, int found_inf_slot) {
  if (scalars[found_inf_slot] == 0.0f) ew::count_increment(step_count);
}

__global__ void ema_kernel(float* shadow, const float* param, int64_t n, float decay, float rampup, const float* count,
                           const float* scalars, int found_inf_slot) {
  if (scalars[found_inf_slot] != 0.0f) return;  // uniform across the grid: G's step was skipped
  const float d = ew::ema_decay(decay, rampup, static_cast<float>(ew::count_load(count)));
  for (int64_t i = global_thread(); i < n; i += grid_stride()) shadow[i] = ew::ema_update(shadow[i], param[i], d);
}
}  // namespace

void adam_step(cudaStream_t s, const AdamDesc* params, int count, const AdamConfig& cfg, float* step_count,
               const float* scaler_state, const float* scalars, int found_inf_slot) {
  const AdamHyper hp{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps};
  for (int first = 0; first < count; first += kMaxAdamTensors) {
    AdamList list{};
    const int64_t n = fill_launch_list<kMaxAdamTensors>(list, params, count, first);
    adam_kernel<<<grid_for(n, 4, 4096), kThreads, 0, s>>>(list, hp, step_count, scaler_state, scalars, found_inf_slot);
    AMPGAN_LAUNCHED("adam_kernel");
  }
  adam_count_kernel<<<1, 1, 0, s>>>(step_count, scalars, found_inf_slot);
  AMPGAN_LAUNCHED("adam_count_kernel");
}

void ema_update(cudaStream_t s, float* shadow, const float* param, int64_t n, float decay, float rampup,
                const float* count, const float* scalars, int found_inf_slot) {
  if (n <= 0) return;
  ema_kernel<<<grid_for(n), kThreads, 0, s>>>(shadow, param, n, decay, rampup, count, scalars, found_inf_slot);
  AMPGAN_LAUNCHED("ema_kernel");
}

}  // namespace ampgan::gpu
