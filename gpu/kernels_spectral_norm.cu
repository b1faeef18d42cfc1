// Spectral norm on the GPU: power iteration, normalisation, backward. Mirrors
// core/backend/cpu/cpu_spectral_norm.cpp: FP32 storage, double accumulation (sums in a
// different but fixed order, so results agree with the CPU's to an ulp or two and are
// deterministic run to run).
#include <algorithm>
#include "core/backend/spectral_norm.h"

#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

// out[j] = sum_i W[i, j] u[i], one thread per column (coalesced along a row).
__global__ void wt_u_kernel(const float* w, const float* u, int64_t rows, int64_t cols, float* out) {
  for (int64_t j = global_thread(); j < cols; j += grid_stride()) {
    double s = 0.0;
    for (int64_t i = 0; i < rows; ++i) s += static_cast<double>(w[i * cols + j]) * u[i];
    out[j] = static_cast<float>(s);
  }
}

// out[i] = sum_j W[i, j] v[j] in double, one block per row.
__global__ void w_v_kernel(const float* w, const float* v, int64_t rows, int64_t cols, double* out) {
  __shared__ double sh[kThreads];
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) s += static_cast<double>(w[i * cols + j]) * v[j];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[i] = s;
  }
}

// One block: x = src / max(||src||, eps) (src may be x).
template <typename Src>
__global__ void normalize_kernel(const Src* src, float* x, int64_t n) {
  __shared__ double sh[kThreads];
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    ss += static_cast<double>(static_cast<float>(src[i])) * static_cast<float>(src[i]);
  ss = block_sum(ss, sh);
  const double inv = 1.0 / fmax(sqrt(ss), kSpectralNormEps);
  for (int64_t i = threadIdx.x; i < n; i += kThreads) x[i] = static_cast<float>(static_cast<float>(src[i]) * inv);
}

// One block: sigma = sum_i u[i] wv[i].
__global__ void sigma_kernel(const float* u, const double* wv, int64_t rows, float* sigma) {
  __shared__ double sh[kThreads];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += kThreads) s += static_cast<double>(u[i]) * wv[i];
  s = block_sum(s, sh);
  if (threadIdx.x == 0) sigma[0] = static_cast<float>(s);
}

template <typename S>
__global__ void scale_kernel(const float* w, const float* sigma, typename S::T* out, int64_t n) {
  const float sig = sigma[0];
  for (int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = S::store(w[i] / sig);
}

// partial[block] = part of <g, W / sigma>; then one block adds the partials in block order.
template <typename S>
__global__ void dot_partial_kernel(const typename S::T* g, const float* w, const float* sigma, int64_t n,
                                   double* partial) {
  __shared__ double sh[kThreads];
  const float sig = sigma[0];
  double s = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) s += static_cast<double>(S::load(g[i])) * (w[i] / sig);
  s = block_sum(s, sh);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void dot_final_kernel(const double* partial, int blocks, float* c) {
  __shared__ double sh[kThreads];
  double s = 0.0;
  for (int b = threadIdx.x; b < blocks; b += kThreads) s += partial[b];
  s = block_sum(s, sh);
  if (threadIdx.x == 0) c[0] = static_cast<float>(s);
}

template <typename S>
__global__ void sn_grad_kernel(const typename S::T* g, const float* u, const float* v, const float* sigma,
                               const float* c, int64_t rows, int64_t cols, typename S::T* dw, bool accumulate) {
  const float sig = sigma[0], cc = c[0];
  for (int64_t k = global_thread(); k < rows * cols; k += grid_stride()) {
    const int64_t i = k / cols, j = k % cols;
    const float d = (S::load(g[k]) - cc * u[i] * v[j]) / sig;
    dw[k] = S::store(accumulate ? S::load(dw[k]) + d : d);
  }
}

}  // namespace

size_t spectral_norm_workspace_bytes(int64_t rows) {
  return sizeof(double) * static_cast<size_t>(rows + kSpectralNormDotBlocks) + 2 * sizeof(float);
}

void spectral_norm_power_iteration(cudaStream_t s, const float* w, float* u, float* v, int64_t rows, int64_t cols,
                                   void* ws) {
  double* wv = static_cast<double*>(ws);
  wt_u_kernel<<<grid_for(cols, 1), kThreads, 0, s>>>(w, u, rows, cols, v);
  AMPGAN_LAUNCHED("wt_u_kernel");
  normalize_kernel<float><<<1, kThreads, 0, s>>>(v, v, cols);
  AMPGAN_LAUNCHED("normalize_kernel");
  w_v_kernel<<<static_cast<unsigned>(std::min<int64_t>(rows, 4096)), kThreads, 0, s>>>(w, v, rows, cols, wv);
  AMPGAN_LAUNCHED("w_v_kernel");
  normalize_kernel<double><<<1, kThreads, 0, s>>>(wv, u, rows);
  AMPGAN_LAUNCHED("normalize_kernel");
}

void spectral_norm_forward(cudaStream_t s, DType t, const float* w, const float* u, const float* v, int64_t rows,
                           int64_t cols, float* sigma, void* w_sn, void* ws) {
  double* wv = static_cast<double*>(ws);
  w_v_kernel<<<static_cast<unsigned>(std::min<int64_t>(rows, 4096)), kThreads, 0, s>>>(w, v, rows, cols, wv);
  AMPGAN_LAUNCHED("w_v_kernel");
  sigma_kernel<<<1, kThreads, 0, s>>>(u, wv, rows, sigma);
  AMPGAN_LAUNCHED("sigma_kernel");
  const int64_t n = rows * cols;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    scale_kernel<S><<<grid_for(n), kThreads, 0, s>>>(w, sigma, static_cast<typename S::T*>(w_sn), n);
  });
  AMPGAN_LAUNCHED("scale_kernel");
}

void spectral_norm_backward(cudaStream_t s, DType t, const void* g, const float* w, const float* u, const float* v,
                            const float* sigma, int64_t rows, int64_t cols, void* dw, bool accumulate, void* ws) {
  double* partial = static_cast<double*>(ws) + rows;
  float* c = reinterpret_cast<float*>(partial + kSpectralNormDotBlocks);
  const int64_t n = rows * cols;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    dot_partial_kernel<S><<<kSpectralNormDotBlocks, kThreads, 0, s>>>(static_cast<const T*>(g), w, sigma, n, partial);
    AMPGAN_LAUNCHED("dot_partial_kernel");
    dot_final_kernel<<<1, kThreads, 0, s>>>(partial, kSpectralNormDotBlocks, c);
    AMPGAN_LAUNCHED("dot_final_kernel");
    sn_grad_kernel<S><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(g), u, v, sigma, c, rows, cols,
                                                       static_cast<T*>(dw), accumulate);
  });
  AMPGAN_LAUNCHED("sn_grad_kernel");
}

}  // namespace ampgan::gpu
