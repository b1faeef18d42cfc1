// Element-wise kernels: fills, casts, random numbers, activations, bias add, channel padding.
// Each mirrors a loop of the CPU backend (core/backend/cpu/) and calls the same shared functions.
#include "core/common/rng.h"
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

// ---- fill, cast, random ------------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T v) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) p[i] = v;
}

template <typename S, typename D>
__global__ void cast_kernel(const typename S::T* src, typename D::T* dst, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) dst[i] = D::store(S::load(src[i]));
}

template <typename S>
__global__ void fill_normal_kernel(typename S::T* p, int64_t n, uint64_t seed, uint64_t stream, const float* counter,
                                   float stddev) {
  // As the CPU: stream += the count, read on the device so replays draw fresh numbers.
  if (counter) stream += ew::count_load(counter);
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    p[i] = S::store(stddev * philox_normal(seed, stream, static_cast<uint64_t>(i)));
}

__global__ void add_scalar_kernel(float* p, int index, float value) { p[index] += value; }

__global__ void count_increment_kernel(float* count) { ew::count_increment(count); }

// ---- activations, bias -------------------------------------------------------------------------

template <typename S>
__global__ void act_forward_kernel(ew::Act act, float alpha, const typename S::T* x, typename S::T* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    y[i] = S::store(ew::act_forward(act, alpha, S::load(x[i])));
}

// The same arithmetic, 16 bytes per access (vec16_ok); nv = n / Vec16::N.
template <typename S>
__global__ void act_forward_vec_kernel(ew::Act act, float alpha, const typename S::T* x, typename S::T* y, int64_t nv) {
  using V = Vec16<typename S::T>;
  for (int64_t k = global_thread(); k < nv; k += grid_stride()) {
    V v = load16(x, k);
#pragma unroll
    for (int e = 0; e < V::N; ++e) v.v[e] = S::store(ew::act_forward(act, alpha, S::load(v.v[e])));
    store16(y, k, v);
  }
}

template <typename S>
__global__ void act_backward_kernel(ew::Act act, float alpha, const typename S::T* y, const typename S::T* dy,
                                    typename S::T* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    dx[i] = S::store(ew::act_backward(act, alpha, S::load(y[i]), S::load(dy[i])));
}

template <typename S>
__global__ void act_backward_vec_kernel(ew::Act act, float alpha, const typename S::T* y, const typename S::T* dy,
                                        typename S::T* dx, int64_t nv) {
  using V = Vec16<typename S::T>;
  for (int64_t k = global_thread(); k < nv; k += grid_stride()) {
    const V vy = load16(y, k);
    V v = load16(dy, k);
#pragma unroll
    for (int e = 0; e < V::N; ++e) v.v[e] = S::store(ew::act_backward(act, alpha, S::load(vy.v[e]), S::load(v.v[e])));
    store16(dx, k, v);
  }
}

template <typename S>
__global__ void bias_add_kernel(typename S::T* y, const float* b, int64_t n, int c) {
  RowCol rc(global_thread(), grid_stride(), c);
  for (int64_t i = global_thread(); i < n; i += grid_stride(), rc.advance()) y[i] = S::store(S::load(y[i]) + b[rc.j]);
}

// ---- channel padding ---------------------------------------------------------------------------

template <typename U>
__global__ void pad_kernel(const U* src, int64_t rows_src, int c, U* dst, int64_t rows_dst, int cp) {
  const int64_t n = rows_dst * cp;
  RowCol rc(global_thread(), grid_stride(), cp);
  for (int64_t i = global_thread(); i < n; i += grid_stride(), rc.advance())
    dst[i] = (rc.r < rows_src && rc.j < c) ? src[rc.r * c + rc.j] : U(0);
}

template <typename U>
__global__ void slice_kernel(const U* src, int cp, U* dst, int64_t rows, int c) {
  const int64_t n = rows * c;
  RowCol rc(global_thread(), grid_stride(), c);
  for (int64_t i = global_thread(); i < n; i += grid_stride(), rc.advance()) dst[i] = src[rc.r * cp + rc.j];
}

__global__ void fma_probe_kernel(const float* in, float* out) { out[0] = in[0] * in[1] + in[2]; }

}  // namespace

// ---- launchers ---------------------------------------------------------------------------------

void fill(cudaStream_t s, void* p, DType t, int64_t n, float value) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    fill_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(p), n, S::store(value));
  });
  AMPGAN_LAUNCHED("fill_kernel");
}

void cast(cudaStream_t s, const void* src, DType st, void* dst, DType dt, int64_t n) {
  if (n <= 0) return;
  dispatch(st, [&](auto stag) {
    dispatch(dt, [&](auto dtag) {
      using S = decltype(stag);
      using D = decltype(dtag);
      cast_kernel<S, D><<<grid_for(n), kThreads, 0, s>>>(static_cast<const typename S::T*>(src),
                                                         static_cast<typename D::T*>(dst), n);
    });
  });
  AMPGAN_LAUNCHED("cast_kernel");
}

void fill_normal(cudaStream_t s, void* p, DType t, int64_t n, uint64_t seed, uint64_t stream, const float* counter,
                 float stddev) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    fill_normal_kernel<S>
        <<<grid_for(n, 2), kThreads, 0, s>>>(static_cast<typename S::T*>(p), n, seed, stream, counter, stddev);
  });
  AMPGAN_LAUNCHED("fill_normal_kernel");
}

void add_scalar(cudaStream_t s, float* p, int index, float value) {
  add_scalar_kernel<<<1, 1, 0, s>>>(p, index, value);
  AMPGAN_LAUNCHED("add_scalar_kernel");
}

void count_increment(cudaStream_t s, float* count) {
  count_increment_kernel<<<1, 1, 0, s>>>(count);
  AMPGAN_LAUNCHED("count_increment_kernel");
}

void activation_forward(cudaStream_t s, DType t, ew::Act act, float alpha, const void* x, void* y, int64_t n) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, n, sizeof(T), {x, y})) {  // one row: activations have no channels
      const int64_t nv = n / Vec16<T>::N;
      act_forward_vec_kernel<S>
          <<<grid_for(nv), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(x), static_cast<T*>(y), nv);
    } else {
      act_forward_kernel<S>
          <<<grid_for(n), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(x), static_cast<T*>(y), n);
    }
  });
  AMPGAN_LAUNCHED("act_forward_kernel");
}

void activation_backward(cudaStream_t s, DType t, ew::Act act, float alpha, const void* y, const void* dy, void* dx,
                         int64_t n) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, n, sizeof(T), {y, dy, dx})) {
      const int64_t nv = n / Vec16<T>::N;
      act_backward_vec_kernel<S><<<grid_for(nv), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(y),
                                                                   static_cast<const T*>(dy), static_cast<T*>(dx), nv);
    } else {
      act_backward_kernel<S><<<grid_for(n), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(y),
                                                              static_cast<const T*>(dy), static_cast<T*>(dx), n);
    }
  });
  AMPGAN_LAUNCHED("act_backward_kernel");
}

void bias_add(cudaStream_t s, DType t, void* y, const float* b, int64_t rows, int64_t c) {
  const int64_t n = rows * c;
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    bias_add_kernel<S><<<grid_for(n), kThreads, 0, s>>>(static_cast<typename S::T*>(y), b, n, static_cast<int>(c));
  });
  AMPGAN_LAUNCHED("bias_add_kernel");
}

void pad_channels(cudaStream_t s, size_t elem_bytes, const void* src, int64_t rows_src, int c, void* dst,
                  int64_t rows_dst, int cp) {
  const int64_t n = rows_dst * cp;
  if (n <= 0) return;
  if (elem_bytes == 2)
    pad_kernel<uint16_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src), rows_src, c,
                                                          static_cast<uint16_t*>(dst), rows_dst, cp);
  else
    pad_kernel<uint32_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src), rows_src, c,
                                                          static_cast<uint32_t*>(dst), rows_dst, cp);
  AMPGAN_LAUNCHED("pad_kernel");
}

void slice_channels(cudaStream_t s, size_t elem_bytes, const void* src, int cp, void* dst, int64_t rows, int c) {
  const int64_t n = rows * c;
  if (n <= 0) return;
  if (elem_bytes == 2)
    slice_kernel<uint16_t>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src), cp, static_cast<uint16_t*>(dst), rows, c);
  else
    slice_kernel<uint32_t>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src), cp, static_cast<uint32_t*>(dst), rows, c);
  AMPGAN_LAUNCHED("slice_kernel");
}

void fma_probe(cudaStream_t s, const float* in, float* out) {
  fma_probe_kernel<<<1, 1, 0, s>>>(in, out);
  AMPGAN_LAUNCHED("fma_probe_kernel");
}

}  // namespace ampgan::gpu
