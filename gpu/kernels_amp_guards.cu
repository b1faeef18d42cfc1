// The AMP safeguards' kernels: the activation clamp (conv_clamp) and nan_to_num on gradients.
// Each mirrors a loop of core/backend/cpu/cpu_amp_guards.cpp and calls the same shared functions.
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

template <typename S>
__global__ void clamp_forward_kernel(const typename S::T* x, typename S::T* y, int64_t n, float c) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = S::store(ew::clamp_value(S::load(x[i]), c));
}

template <typename S>
__global__ void clamp_backward_kernel(const typename S::T* x, const typename S::T* dy, typename S::T* dx, int64_t n,
                                      float c) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    dx[i] = S::store(ew::clamp_grad(S::load(x[i]), S::load(dy[i]), c));
}

// In place; each block adds the values it replaced to *replaced (an integer sum: the same in
// any order).
template <typename S>
__global__ void nan_to_num_kernel(typename S::T* g, int64_t n, float bound, unsigned long long* replaced) {
  __shared__ unsigned long long shared[kThreads];
  unsigned long long k = 0;
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    if (!S::is_finite(g[i])) {
      g[i] = S::store(ew::nan_to_num_value(S::load(g[i]), bound));
      ++k;
    }
  const unsigned long long total = block_sum(k, shared);
  if (threadIdx.x == 0 && total) atomicAdd(replaced, total);
}

__global__ void nan_to_num_finish_kernel(const unsigned long long* replaced, float* scalars, int count_slot,
                                         int found_inf_slot) {
  ew::count_store(scalars + count_slot, ew::count_load(scalars + count_slot) + *replaced);
  if (found_inf_slot >= 0) scalars[found_inf_slot] = 0.0f;
}

}  // namespace

void clamp_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, float c) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    clamp_forward_kernel<S><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, c);
  });
  AMPGAN_LAUNCHED("clamp_forward_kernel");
}

void clamp_backward(cudaStream_t s, DType t, const void* x, const void* dy, void* dx, int64_t n, float c) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    clamp_backward_kernel<S><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                              static_cast<T*>(dx), n, c);
  });
  AMPGAN_LAUNCHED("clamp_backward_kernel");
}

size_t nan_to_num_workspace_bytes() { return sizeof(unsigned long long); }

void nan_to_num(cudaStream_t s, const NanToNumDesc* grads, int count, float bound, float* scalars, int count_slot,
                int found_inf_slot, void* ws) {
  auto* replaced = static_cast<unsigned long long*>(ws);
  AMPGAN_CUDA(cudaMemsetAsync(replaced, 0, sizeof(unsigned long long), s));
  for (int k = 0; k < count; ++k) {
    const NanToNumDesc& d = grads[k];
    if (d.n <= 0) continue;
    const float b = bound < ew::max_finite(d.dtype) ? bound : ew::max_finite(d.dtype);
    dispatch(d.dtype, [&](auto tag) {
      using S = decltype(tag);
      nan_to_num_kernel<S><<<grid_for(d.n), kThreads, 0, s>>>(static_cast<typename S::T*>(d.data), d.n, b, replaced);
    });
    AMPGAN_LAUNCHED("nan_to_num_kernel");
  }
  nan_to_num_finish_kernel<<<1, 1, 0, s>>>(replaced, scalars, count_slot, found_inf_slot);
  AMPGAN_LAUNCHED("nan_to_num_finish_kernel");
}

}  // namespace ampgan::gpu
