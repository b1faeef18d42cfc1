// Batch norm on the GPU: the per-channel statistics (two passes as the CPU: the mean, then the
// mean squared deviation from it, on gpu/channel_reduce.cuh), the element-wise normalisation and
// its backward, and the running-average commit after the step's skip decision (one launch per
// network and step, its decision taken on the device from the found-inf flags, so it needs no
// host synchronisation and is captured into the step's graph). The CPU version is
// core/backend/cpu/cpu_batchnorm.cpp.
#include "gpu/channel_reduce.cuh"
#include "gpu/kernels_batchnorm.h"

namespace ampgan::gpu {

namespace {

__global__ void bn_mean_kernel(const float* partial, int row_blocks, int64_t rows, int64_t c, float* mean) {
  __shared__ double shared[kFY][kTX + 1];
  const int ch = blockIdx.x * kTX + threadIdx.x;
  const double s = channel_total(partial, row_blocks, c, ch, 0, shared);
  if (threadIdx.y != 0 || ch >= c) return;
  mean[ch] = static_cast<float>(s / static_cast<double>(rows));
}

__global__ void bn_var_kernel(const float* partial, int row_blocks, int64_t rows, int64_t c, float eps,
                              const float* mean, float* invstd, float* running_mean, float* running_var, float momentum,
                              bool update) {
  __shared__ double shared[kFY][kTX + 1];
  const int ch = blockIdx.x * kTX + threadIdx.x;
  const double total = channel_total(partial, row_blocks, c, ch, 0, shared);
  if (threadIdx.y != 0 || ch >= c) return;
  const double var = total / static_cast<double>(rows);
  invstd[ch] = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
  if (update) {
    const double r = static_cast<double>(rows);
    running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * mean[ch];
    running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * static_cast<float>(var * r / (r - 1.0));
  }
}

__global__ void bn_backward_finalize_kernel(const float* partial, int row_blocks, int64_t rows, int64_t c,
                                            float* mean_dy, float* mean_dy_xhat, float* dgamma, float* dbeta,
                                            bool accumulate) {
  __shared__ double shared[kFY][kTX + 1];
  const int ch = blockIdx.x * kTX + threadIdx.x;
  const double sdy = channel_total(partial, row_blocks, c, ch, 0, shared);
  const double sdx = channel_total(partial, row_blocks, c, ch, 1, shared);
  if (threadIdx.y != 0 || ch >= c) return;
  mean_dy[ch] = static_cast<float>(sdy / static_cast<double>(rows));
  mean_dy_xhat[ch] = static_cast<float>(sdx / static_cast<double>(rows));
  dgamma[ch] = static_cast<float>((accumulate ? static_cast<double>(dgamma[ch]) : 0.0) + sdx);
  dbeta[ch] = static_cast<float>((accumulate ? static_cast<double>(dbeta[ch]) : 0.0) + sdy);
}

// The element-wise batch-norm passes. VEC: 16 bytes per access, which needs vec16_ok(n, c);
// then the loop runs over vectors and RowCol over vectors per row (c / N of them). The
// arithmetic per element is the same either way. kFromVar: spread holds the running variance
// and 1 / sqrt(var + eps) is taken per element (evaluation, the CPU's float expression), else
// the batch's saved 1 / std (training).
template <typename S, bool VEC, bool kFromVar>
__global__ void bn_apply_kernel(const typename S::T* x, typename S::T* y, int64_t n, int c, const float* mean,
                                const float* spread, float eps, const float* g, const float* b) {
  using V = Vec16<typename S::T>;
  constexpr int N = VEC ? V::N : 1;
  auto invstd = [&](int j) { return kFromVar ? 1.0f / sqrtf(spread[j] + eps) : spread[j]; };
  RowCol rc(global_thread(), grid_stride(), c / N);
  for (int64_t k = global_thread(); k < n / N; k += grid_stride(), rc.advance()) {
    if (VEC) {
      V v = load16(x, k);
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const int j = rc.j * N + e;
        v.v[e] = S::store(ew::bn_normalize(S::load(v.v[e]), mean[j], invstd(j), g[j], b[j]));
      }
      store16(y, k, v);
    } else {
      const int j = rc.j;
      y[k] = S::store(ew::bn_normalize(S::load(x[k]), mean[j], invstd(j), g[j], b[j]));
    }
  }
}

// y = the normalised x, by channel, vectorised where the sizes and addresses allow.
template <bool kFromVar>
void launch_bn_apply(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t c, const float* mean,
                     const float* spread, float eps, const float* gamma, const float* beta) {
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    const int ci = static_cast<int>(c);
    if (vec16_ok(n, c, sizeof(T), {x, y}))
      bn_apply_kernel<S, true, kFromVar>
          <<<grid_for(n / Vec16<T>::N), kThreads, 0, s>>>(xt, yt, n, ci, mean, spread, eps, gamma, beta);
    else
      bn_apply_kernel<S, false, kFromVar>
          <<<grid_for(n), kThreads, 0, s>>>(xt, yt, n, ci, mean, spread, eps, gamma, beta);
  });
  AMPGAN_LAUNCHED("bn_apply_kernel");
}

template <typename S, bool VEC>
__global__ void bn_dx_kernel(const typename S::T* x, const typename S::T* dy, typename S::T* dx, int64_t n, int c,
                             const float* mean, const float* invstd, const float* g, const float* mean_dy,
                             const float* mean_dy_xhat) {
  using V = Vec16<typename S::T>;
  constexpr int N = VEC ? V::N : 1;
  RowCol rc(global_thread(), grid_stride(), c / N);
  for (int64_t k = global_thread(); k < n / N; k += grid_stride(), rc.advance()) {
    if (VEC) {
      const V vx = load16(x, k);
      V v = load16(dy, k);
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const int j = rc.j * N + e;
        const float xhat = (S::load(vx.v[e]) - mean[j]) * invstd[j];
        v.v[e] = S::store(ew::bn_backward_dx(S::load(v.v[e]), xhat, g[j], invstd[j], mean_dy[j], mean_dy_xhat[j]));
      }
      store16(dx, k, v);
    } else {
      const int j = rc.j;
      const float xhat = (S::load(x[k]) - mean[j]) * invstd[j];
      dx[k] = S::store(ew::bn_backward_dx(S::load(dy[k]), xhat, g[j], invstd[j], mean_dy[j], mean_dy_xhat[j]));
    }
  }
}

__global__ void bn_commit_running_kernel(BnCommitList list, const float* scalars) {
  bool skip = false;
  for (int j = 0; j < list.slot_count; ++j) skip |= scalars[list.slots[j]] != 0.0f;
  for (int t = 0; t < list.count; ++t) {
    float* r = list.running[t];
    float* st = list.staged[t];
    for (int64_t i = global_thread(); i < list.n[t]; i += grid_stride()) {
      if (skip)
        st[i] = r[i];
      else
        r[i] = st[i];
    }
  }
}

}  // namespace

size_t channel_workspace_bytes(int64_t rows, int64_t c) {
  const ChannelPlan p = channel_plan(rows, c);
  return (static_cast<size_t>(p.row_blocks) * 2 + 2) * static_cast<size_t>(c) * sizeof(float);
}

void batchnorm_forward_train(cudaStream_t s, DType t, const void* x, int64_t rows, int64_t c, const float* gamma,
                             const float* beta, float* running_mean, float* running_var, float momentum, float eps,
                             bool update_running, void* y, float* save_mean, float* save_invstd, void* ws) {
  const ChannelPlan p = channel_plan(rows, c);
  float* partial = static_cast<float*>(ws);
  // Two passes as the CPU: the mean, then the mean squared deviation from it.
  launch_partial<kSum>(s, t, x, nullptr, rows, c, nullptr, nullptr, partial, p);
  bn_mean_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(partial, p.row_blocks, rows, c, save_mean);
  AMPGAN_LAUNCHED("bn_mean_kernel");
  launch_partial<kSquaredDeviation>(s, t, x, nullptr, rows, c, save_mean, nullptr, partial, p);
  bn_var_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(
      partial, p.row_blocks, rows, c, eps, save_mean, save_invstd, running_mean, running_var, momentum, update_running);
  AMPGAN_LAUNCHED("bn_var_kernel");
  launch_bn_apply<false>(s, t, x, y, rows * c, c, save_mean, save_invstd, eps, gamma, beta);
}

void batchnorm_forward_eval(cudaStream_t s, DType t, const void* x, int64_t rows, int64_t c, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float eps,
                            void* y) {
  if (rows * c <= 0) return;
  launch_bn_apply<true>(s, t, x, y, rows * c, c, running_mean, running_var, eps, gamma, beta);
}

void batchnorm_backward(cudaStream_t s, DType t, const void* x, const void* dy, int64_t rows, int64_t c,
                        const float* gamma, const float* save_mean, const float* save_invstd, void* dx, float* dgamma,
                        float* dbeta, bool accumulate, void* ws) {
  const ChannelPlan p = channel_plan(rows, c);
  float* partial = static_cast<float*>(ws);
  float* mean_dy = partial + static_cast<size_t>(p.row_blocks) * 2 * c;
  float* mean_dy_xhat = mean_dy + c;
  launch_partial<kBnBackward>(s, t, x, dy, rows, c, save_mean, save_invstd, partial, p);
  bn_backward_finalize_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(partial, p.row_blocks, rows, c, mean_dy,
                                                                           mean_dy_xhat, dgamma, dbeta, accumulate);
  AMPGAN_LAUNCHED("bn_backward_finalize_kernel");
  const int64_t n = rows * c;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, c, sizeof(T), {x, dy, dx}))
      bn_dx_kernel<S, true><<<grid_for(n / Vec16<T>::N), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), n, static_cast<int>(c), save_mean,
          save_invstd, gamma, mean_dy, mean_dy_xhat);
    else
      bn_dx_kernel<S, false><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                              static_cast<T*>(dx), n, static_cast<int>(c), save_mean,
                                                              save_invstd, gamma, mean_dy, mean_dy_xhat);
  });
  AMPGAN_LAUNCHED("bn_dx_kernel");
}

void batchnorm_commit_running(cudaStream_t s, const BnCommitList& list, const float* scalars) {
  if (list.count == 0) return;
  int64_t most = 0;
  for (int t = 0; t < list.count; ++t) most = most > list.n[t] ? most : list.n[t];
  bn_commit_running_kernel<<<grid_for(most), kThreads, 0, s>>>(list, scalars);
  AMPGAN_LAUNCHED("bn_commit_running_kernel");
}

}  // namespace ampgan::gpu
