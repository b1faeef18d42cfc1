// Residual sums and the ResNet GAN's resampling kernels. Each mirrors a loop of
// core/backend/cpu/cpu_resample.cpp and uses the same arithmetic (core/backend/resample.h), so
// the results are bit-identical to the CPU's.
#include "core/backend/resample.h"
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

template <typename S>
__global__ void add_kernel(const typename S::T* a, const typename S::T* b, typename S::T* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = S::store(S::load(a[i]) + S::load(b[i]));
}

// One thread per element of the larger tensor (n, 2h, 2w, c): its small-side value, copied bit
// for bit (upsampling) or a quarter of it, rounded once (average pooling's backward pass).
template <typename S, bool kQuarter>
__global__ void spread_kernel(const typename S::T* small, typename S::T* big, int64_t n, int64_t h, int64_t w,
                              int64_t c) {
  const int64_t total = n * 4 * h * w * c;
  for (int64_t i = global_thread(); i < total; i += grid_stride()) {
    const int64_t ch = i % c, p = i / c, ox = p % (2 * w), r = p / (2 * w), oy = r % (2 * h), b = r / (2 * h);
    const typename S::T v = small[((b * h + oy / 2) * w + ox / 2) * c + ch];
    big[i] = kQuarter ? S::store(S::load(v) * 0.25f) : v;
  }
}

// One thread per element of the smaller tensor (n, h, w, c): combines its 2x2 block of big.
template <typename S, bool kMean>
__global__ void block_kernel(const typename S::T* big, typename S::T* small, int64_t n, int64_t h, int64_t w,
                             int64_t c) {
  const int64_t total = n * h * w * c;
  const int64_t row = 2 * w * c;
  for (int64_t i = global_thread(); i < total; i += grid_stride()) {
    const int64_t ch = i % c, p = i / c, x = p % w, r = p / w, y = r % h, b = r / h;
    const typename S::T* b00 = big + ((b * 2 * h + 2 * y) * 2 * w + 2 * x) * c + ch;
    const float v00 = S::load(b00[0]), v01 = S::load(b00[c]), v10 = S::load(b00[row]), v11 = S::load(b00[row + c]);
    small[i] = S::store(kMean ? ew::mean4(v00, v01, v10, v11) : ew::sum4(v00, v01, v10, v11));
  }
}

// One thread per (n, c), positions summed in order, as the CPU does.
template <typename S>
__global__ void sum_pool_kernel(const typename S::T* x, typename S::T* y, int64_t n, int64_t hw, int64_t c) {
  for (int64_t i = global_thread(); i < n * c; i += grid_stride()) {
    const int64_t b = i / c, ch = i % c;
    float acc = 0.0f;
    for (int64_t p = 0; p < hw; ++p) acc += S::load(x[(b * hw + p) * c + ch]);
    y[i] = S::store(acc);
  }
}

template <typename T>
__global__ void broadcast_kernel(const T* dy, T* dx, int64_t n, int64_t hw, int64_t c) {
  for (int64_t i = global_thread(); i < n * hw * c; i += grid_stride()) dx[i] = dy[(i / (hw * c)) * c + i % c];
}

}  // namespace

void add(cudaStream_t s, DType t, const void* a, const void* b, void* y, int64_t n) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    add_kernel<S>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n);
  });
  AMPGAN_LAUNCHED("add_kernel");
}

void upsample2x_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t h, int64_t w, int64_t c) {
  const int64_t total = n * 4 * h * w * c;
  if (total <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    spread_kernel<S, false>
        <<<grid_for(total), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, h, w, c);
  });
  AMPGAN_LAUNCHED("spread_kernel (copy)");
}

void upsample2x_backward(cudaStream_t s, DType t, const void* dy, void* dx, int64_t n, int64_t h, int64_t w,
                         int64_t c) {
  const int64_t total = n * h * w * c;
  if (total <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    block_kernel<S, false>
        <<<grid_for(total), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<T*>(dx), n, h, w, c);
  });
  AMPGAN_LAUNCHED("block_kernel (sum)");
}

void avgpool2x_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t h, int64_t w, int64_t c) {
  const int64_t total = n * h * w * c;
  if (total <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    block_kernel<S, true>
        <<<grid_for(total), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, h, w, c);
  });
  AMPGAN_LAUNCHED("block_kernel (mean)");
}

void avgpool2x_backward(cudaStream_t s, DType t, const void* dy, void* dx, int64_t n, int64_t h, int64_t w, int64_t c) {
  const int64_t total = n * 4 * h * w * c;
  if (total <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    spread_kernel<S, true>
        <<<grid_for(total), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<T*>(dx), n, h, w, c);
  });
  AMPGAN_LAUNCHED("spread_kernel (quarter)");
}

void global_sum_pool_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t hw, int64_t c) {
  if (n * c <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    sum_pool_kernel<S><<<grid_for(n * c, 1), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, hw, c);
  });
  AMPGAN_LAUNCHED("sum_pool_kernel");
}

void global_sum_pool_backward(cudaStream_t s, DType t, const void* dy, void* dx, int64_t n, int64_t hw, int64_t c) {
  if (n * hw * c <= 0) return;
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::T;
    broadcast_kernel<T>
        <<<grid_for(n * hw * c), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<T*>(dx), n, hw, c);
  });
  AMPGAN_LAUNCHED("broadcast_kernel");
}

}  // namespace ampgan::gpu
