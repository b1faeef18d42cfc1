// The class-conditioning kernels. Each mirrors a loop of core/backend/cpu/cpu_conditioning.cpp
// with the same arithmetic and summation order (core/backend/conditioning.h).
#include "core/backend/conditioning.h"
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

template <typename S>
__global__ void modulate_kernel(const typename S::T* x, const float* scale, const float* shift, typename S::T* y,
                                int64_t n, int64_t hw, int64_t c) {
  for (int64_t i = global_thread(); i < n * hw * c; i += grid_stride()) {
    const int64_t nc = (i / (hw * c)) * c + i % c;
    y[i] = S::store(ew::modulate(S::load(x[i]), scale[nc], shift[nc]));
  }
}

// dx = dy * scale, one thread per element.
template <typename S>
__global__ void modulate_dx_kernel(const typename S::T* dy, const float* scale, typename S::T* dx, int64_t n,
                                   int64_t hw, int64_t c) {
  for (int64_t i = global_thread(); i < n * hw * c; i += grid_stride())
    dx[i] = S::store(S::load(dy[i]) * scale[(i / (hw * c)) * c + i % c]);
}

// One thread per (n, c), positions summed in order, as the CPU does. Runs before dx is written
// (dx may alias dy).
template <typename S>
__global__ void modulate_sums_kernel(const typename S::T* x, const typename S::T* dy, float* dscale, float* dshift,
                                     int64_t n, int64_t hw, int64_t c) {
  for (int64_t i = global_thread(); i < n * c; i += grid_stride()) {
    const int64_t b = i / c, ch = i % c;
    float s = 0.0f, t = 0.0f;
    for (int64_t p = 0; p < hw; ++p) {
      const int64_t at = (b * hw + p) * c + ch;
      const float g = S::load(dy[at]);
      s += g * S::load(x[at]);
      t += g;
    }
    dscale[i] = s;
    dshift[i] = t;
  }
}

template <typename S>
__global__ void row_dot_kernel(const typename S::T* a, const typename S::T* b, typename S::T* y, int64_t n, int64_t f) {
  for (int64_t r = global_thread(); r < n; r += grid_stride()) {
    float acc = 0.0f;
    for (int64_t j = 0; j < f; ++j) acc += S::load(a[r * f + j]) * S::load(b[r * f + j]);
    y[r] = S::store(acc);
  }
}

template <typename S>
__global__ void row_dot_grad_kernel(const typename S::T* a, const typename S::T* b, const typename S::T* dy,
                                    typename S::T* da, typename S::T* db, int64_t n, int64_t f) {
  for (int64_t i = global_thread(); i < n * f; i += grid_stride()) {
    const float g = S::load(dy[i / f]), av = S::load(a[i]), bv = S::load(b[i]);
    da[i] = S::store(g * bv);
    db[i] = S::store(g * av);
  }
}

}  // namespace

void modulate_forward(cudaStream_t s, DType t, const void* x, const float* scale, const float* shift, void* y,
                      int64_t n, int64_t hw, int64_t c) {
  if (n * hw * c <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    modulate_kernel<S><<<grid_for(n * hw * c), kThreads, 0, s>>>(static_cast<const T*>(x), scale, shift,
                                                                 static_cast<T*>(y), n, hw, c);
  });
  AMPGAN_LAUNCHED("modulate_kernel");
}

void modulate_backward(cudaStream_t s, DType t, const void* x, const void* dy, const float* scale, void* dx,
                       float* dscale, float* dshift, int64_t n, int64_t hw, int64_t c) {
  if (n * hw * c <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    modulate_sums_kernel<S><<<grid_for(n * c, 1), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                                    dscale, dshift, n, hw, c);
    modulate_dx_kernel<S>
        <<<grid_for(n * hw * c), kThreads, 0, s>>>(static_cast<const T*>(dy), scale, static_cast<T*>(dx), n, hw, c);
  });
  AMPGAN_LAUNCHED("modulate_sums_kernel, modulate_dx_kernel");
}

void row_dot_forward(cudaStream_t s, DType t, const void* a, const void* b, void* y, int64_t n, int64_t f) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    row_dot_kernel<S><<<grid_for(n, 1), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                          static_cast<T*>(y), n, f);
  });
  AMPGAN_LAUNCHED("row_dot_kernel");
}

void row_dot_backward(cudaStream_t s, DType t, const void* a, const void* b, const void* dy, void* da, void* db,
                      int64_t n, int64_t f) {
  if (n * f <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    row_dot_grad_kernel<S><<<grid_for(n * f), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                                static_cast<const T*>(dy), static_cast<T*>(da),
                                                                static_cast<T*>(db), n, f);
  });
  AMPGAN_LAUNCHED("row_dot_grad_kernel");
}

}  // namespace ampgan::gpu
