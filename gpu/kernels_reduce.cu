// Reductions: per-channel sums for batch norm and the bias gradient, and the multi-tensor passes
// over a network's gradients (unscale + check + statistics, exponent histogram, Adam).
//
// Determinism: every partial sum is combined in a fixed order (grid sizes depend only on the
// problem size; block sums are fixed trees; partials are added by one finalising kernel in index
// order), so a result never depends on scheduling, and a replayed graph computes exactly what the
// eager step computed. Differences from the CPU come only from the order of FP32 additions:
// threads accumulate in FP32 like the CPU's chunks, and partials are combined in double as the
// CPU combines its chunks.
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

// ---- per-channel reductions --------------------------------------------------------------------
//
// A (rows, c) tensor, c innermost. Blocks of 32 x 8 threads: x walks 32 consecutive channels
// (coalesced loads), y walks rows with a grid stride. Each block writes two partial sums per
// channel: partial[(block_row * 2 + k) * c + channel], k = 0, 1.

constexpr int kTX = 32, kTY = 8;

struct ChannelPlan {
  int tiles;       // blocks across channels
  int row_blocks;  // blocks across rows
};

ChannelPlan channel_plan(int64_t rows, int64_t c) {
  ChannelPlan p;
  p.tiles = static_cast<int>((c + kTX - 1) / kTX);
  const int64_t want = (rows + kTY * 16 - 1) / (kTY * 16);  // about 16 rows per thread
  int64_t cap = 1024 / p.tiles;
  if (cap < 1) cap = 1;
  int64_t rb = want < cap ? want : cap;
  if (rb < 1) rb = 1;
  if (rb > 65535) rb = 65535;
  p.row_blocks = static_cast<int>(rb);
  return p;
}

enum ChannelMode : int { kSum = 0, kSquaredDeviation = 1, kBnBackward = 2 };

// MODE kSum: sum a. kSquaredDeviation: sum (a - mean)^2. kBnBackward: sum b (= dy) and
// sum b * (a - mean) * invstd (a = x): the CPU's expressions, evaluated in the same order.
template <typename S, int MODE>
__global__ void channel_partial_kernel(const typename S::T* a, const typename S::T* b, int64_t rows,
                                       int c, const float* mean, const float* invstd, float* partial) {
  __shared__ float s0[kTY][kTX + 1], s1[kTY][kTX + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int ch = blockIdx.x * kTX + tx;
  float acc0 = 0.0f, acc1 = 0.0f;
  if (ch < c) {
    const float m = MODE == kSum ? 0.0f : mean[ch];
    const float is = MODE == kBnBackward ? invstd[ch] : 0.0f;
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kTY + ty; r < rows;
         r += static_cast<int64_t>(gridDim.y) * kTY) {
      const int64_t i = r * c + ch;
      if (MODE == kSum) {
        acc0 += S::load(a[i]);
      } else if (MODE == kSquaredDeviation) {
        const float d = S::load(a[i]) - m;
        acc0 += d * d;
      } else {
        const float d = S::load(b[i]);
        acc0 += d;
        acc1 += d * (S::load(a[i]) - m) * is;
      }
    }
  }
  s0[ty][tx] = acc0;
  s1[ty][tx] = acc1;
  __syncthreads();
  if (ty == 0 && ch < c) {
    float t0 = 0.0f, t1 = 0.0f;
    for (int k = 0; k < kTY; ++k) {
      t0 += s0[k][tx];
      t1 += s1[k][tx];
    }
    partial[(static_cast<int64_t>(blockIdx.y) * 2 + 0) * c + ch] = t0;
    partial[(static_cast<int64_t>(blockIdx.y) * 2 + 1) * c + ch] = t1;
  }
}

// Finalising kernels: one block of kTX x kFY threads per kTX channels. Each of the kFY thread
// rows sums every kFY-th row block's partial (in order, in double), then a fixed tree adds the
// kFY sums: deterministic, and kFY times more parallel than one thread walking all row blocks
// (up to 1024 dependent loads, with the GPU otherwise idle). Valid where threadIdx.y == 0.
constexpr int kFY = 16;

__device__ __forceinline__ double channel_total(const float* partial, int row_blocks, int64_t c, int ch, int k,
                                                double (*shared)[kTX + 1]) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  double s = 0.0;
  if (ch < c)
    for (int b = ty; b < row_blocks; b += kFY) s += partial[(static_cast<int64_t>(b) * 2 + k) * c + ch];
  shared[ty][tx] = s;
  __syncthreads();
  for (int stride = kFY / 2; stride > 0; stride >>= 1) {
    if (ty < stride) shared[ty][tx] += shared[ty + stride][tx];
    __syncthreads();
  }
  const double r = shared[0][tx];
  __syncthreads();  // shared may be reused
  return r;
}

__global__ void bias_finalize_kernel(const float* partial, int row_blocks, int64_t c, float* db, bool accumulate) {
  __shared__ double shared[kFY][kTX + 1];
  const int ch = blockIdx.x * kTX + threadIdx.x;
  const double s = channel_total(partial, row_blocks, c, ch, 0, shared);
  if (threadIdx.y != 0 || ch >= c) return;
  db[ch] = static_cast<float>((accumulate ? static_cast<double>(db[ch]) : 0.0) + s);
}

__global__ void bn_mean_kernel(const float* partial, int row_blocks, int64_t rows, int64_t c, float* mean) {
  __shared__ double shared[kFY][kTX + 1];
  const int ch = blockIdx.x * kTX + threadIdx.x;
  const double s = channel_total(partial, row_blocks, c, ch, 0, shared);
  if (threadIdx.y != 0 || ch >= c) return;
  mean[ch] = static_cast<float>(s / static_cast<double>(rows));
}

__global__ void bn_var_kernel(const float* partial, int row_blocks, int64_t rows, int64_t c, float eps,
                              const float* mean, float* invstd, float* running_mean, float* running_var,
                              float momentum, bool update) {
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
                                            float* mean_dy, float* mean_dy_xhat, float* dgamma,
                                            float* dbeta, bool accumulate) {
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
// arithmetic per element is the same either way.
template <typename S, bool VEC>
__global__ void bn_normalize_kernel(const typename S::T* x, typename S::T* y, int64_t n, int c,
                                    const float* mean, const float* invstd, const float* g, const float* b) {
  using V = Vec16<typename S::T>;
  constexpr int N = VEC ? V::N : 1;
  RowCol rc(global_thread(), grid_stride(), c / N);
  for (int64_t k = global_thread(); k < n / N; k += grid_stride(), rc.advance()) {
    if (VEC) {
      V v = load16(x, k);
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const int j = rc.j * N + e;
        v.v[e] = S::store(ew::bn_normalize(S::load(v.v[e]), mean[j], invstd[j], g[j], b[j]));
      }
      store16(y, k, v);
    } else {
      const int j = rc.j;
      y[k] = S::store(ew::bn_normalize(S::load(x[k]), mean[j], invstd[j], g[j], b[j]));
    }
  }
}

template <typename S, bool VEC>
__global__ void bn_eval_kernel(const typename S::T* x, typename S::T* y, int64_t n, int c,
                               const float* mean, const float* var, float eps, const float* g, const float* b) {
  using V = Vec16<typename S::T>;
  constexpr int N = VEC ? V::N : 1;
  RowCol rc(global_thread(), grid_stride(), c / N);
  for (int64_t k = global_thread(); k < n / N; k += grid_stride(), rc.advance()) {
    if (VEC) {
      V v = load16(x, k);
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const int j = rc.j * N + e;
        const float invstd = 1.0f / sqrtf(var[j] + eps);  // the CPU's float expression
        v.v[e] = S::store(ew::bn_normalize(S::load(v.v[e]), mean[j], invstd, g[j], b[j]));
      }
      store16(y, k, v);
    } else {
      const int j = rc.j;
      const float invstd = 1.0f / sqrtf(var[j] + eps);
      y[k] = S::store(ew::bn_normalize(S::load(x[k]), mean[j], invstd, g[j], b[j]));
    }
  }
}

template <typename S, bool VEC>
__global__ void bn_dx_kernel(const typename S::T* x, const typename S::T* dy, typename S::T* dx, int64_t n,
                             int c, const float* mean, const float* invstd, const float* g,
                             const float* mean_dy, const float* mean_dy_xhat) {
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

template <int MODE>
void launch_partial(cudaStream_t s, DType t, const void* a, const void* b, int64_t rows, int64_t c,
                    const float* mean, const float* invstd, float* partial, const ChannelPlan& p) {
  const dim3 grid(p.tiles, p.row_blocks), block(kTX, kTY);
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    channel_partial_kernel<S, MODE><<<grid, block, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                           rows, static_cast<int>(c), mean, invstd, partial);
  });
  AMPGAN_LAUNCHED("channel_partial_kernel");
}

// The finalising kernels' launch shape (see channel_total).
const dim3 kFinalizeBlock(kTX, kFY);
unsigned channel_blocks(int64_t c) { return static_cast<unsigned>((c + kTX - 1) / kTX); }

// ---- multi-tensor passes -----------------------------------------------------------------------

struct GradList {
  int count;
  GradDesc t[kMaxGradTensors];
};

struct StatPartial {
  float sq;
  unsigned int bad;
  unsigned long long zeros, subnormals;
};

constexpr int kStatMaxBlocks = 512;

// One tensor's statistics, combined across blocks with atomics (max of non-negative floats as
// their bits, integer counts): order-independent, so the result is deterministic.
struct TensorAcc {
  unsigned int max_bits;
  unsigned int pad;
  unsigned long long nonfinite, underflow;
};

template <typename S>
__device__ __forceinline__ void stat_loop(const void* p, int64_t n, float inv_scale, float& sq,
                                          unsigned long long& zeros, unsigned long long& subs, unsigned& bad,
                                          float& mx, unsigned long long& nonfinite) {
  const typename S::T* v = static_cast<const typename S::T*>(p);
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const auto raw = v[i];
    if (!S::is_finite(raw)) {
      bad = 1u;
      ++nonfinite;
      continue;
    }
    const float u = S::load(raw) * inv_scale;
    sq += u * u;
    mx = fmaxf(mx, fabsf(u));
    zeros += S::is_zero(raw) ? 1u : 0u;
    subs += S::is_subnormal(raw) ? 1u : 0u;
  }
}

// Tree maximum over a block, as block_sum.
__device__ __forceinline__ unsigned block_max(unsigned v, unsigned* shared /* [kThreads] */) {
  const int tid = threadIdx.x;
  shared[tid] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (tid < stride) shared[tid] = max(shared[tid], shared[tid + stride]);
    __syncthreads();
  }
  const unsigned r = shared[0];
  __syncthreads();
  return r;
}

// acc: per-tensor accumulators for this launch's tensors (zeroed), or null (no per-tensor pass).
__global__ void grad_stats_kernel(GradList list, const float* scaler_state, StatPartial* out, TensorAcc* acc) {
  __shared__ float s_sq[kThreads];
  __shared__ unsigned long long s_cnt[kThreads];
  __shared__ unsigned s_max[kThreads];
  const float inv_scale = 1.0f / scaler_state[0];
  float sq = 0.0f;
  unsigned long long zeros = 0, subs = 0;
  unsigned bad = 0;
  for (int t = 0; t < list.count; ++t) {
    const GradDesc d = list.t[t];
    const unsigned long long zeros0 = zeros, subs0 = subs;
    float mx = 0.0f;
    unsigned long long nonfinite = 0;
    switch (static_cast<DType>(d.dtype)) {
      case DType::F32: stat_loop<ew::F32>(d.ptr, d.n, inv_scale, sq, zeros, subs, bad, mx, nonfinite); break;
      case DType::F16: stat_loop<ew::F16>(d.ptr, d.n, inv_scale, sq, zeros, subs, bad, mx, nonfinite); break;
      case DType::BF16: stat_loop<ew::BF16>(d.ptr, d.n, inv_scale, sq, zeros, subs, bad, mx, nonfinite); break;
    }
    // The same condition for every thread of the block: a block that saw none of this tensor
    // skips its reductions.
    if (acc && static_cast<int64_t>(blockIdx.x) * blockDim.x < d.n) {
      const unsigned m = block_max(__float_as_uint(mx), s_max);
      const unsigned long long nf = block_sum(nonfinite, s_cnt);
      const unsigned long long under = block_sum(zeros - zeros0 + subs - subs0, s_cnt);
      if (threadIdx.x == 0) {
        atomicMax(&acc[t].max_bits, m);
        if (nf) atomicAdd(&acc[t].nonfinite, nf);
        if (under) atomicAdd(&acc[t].underflow, under);
      }
    }
  }
  sq = block_sum(sq, s_sq);
  zeros = block_sum(zeros, s_cnt);
  subs = block_sum(subs, s_cnt);
  const unsigned long long any_bad = block_sum(static_cast<unsigned long long>(bad), s_cnt);
  if (threadIdx.x == 0) {
    StatPartial& p = out[blockIdx.x];
    p.sq = sq;
    p.bad = any_bad ? 1u : 0u;
    p.zeros = zeros;
    p.subnormals = subs;
  }
}

__global__ void tensor_stats_finalize_kernel(const TensorAcc* acc, int count, float* scalars, int base) {
  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < count; t += gridDim.x * blockDim.x) {
    float* o = scalars + base + kTensorStatSlots * t;
    o[kTensorMaxAbs] = __uint_as_float(acc[t].max_bits);
    ew::count_store(o + kTensorNonFinite, acc[t].nonfinite);
    ew::count_store(o + kTensorUnderflow, acc[t].underflow);
  }
}

__global__ void grad_stats_finalize_kernel(const StatPartial* parts, int nparts, float* scalars,
                                           GradStatSlots slots, uint64_t count) {
  __shared__ double s_d[kThreads];
  __shared__ unsigned long long s_c[kThreads];
  double sq = 0.0;
  unsigned long long zeros = 0, subs = 0, bad = 0;
  for (int i = threadIdx.x; i < nparts; i += kThreads) {
    sq += parts[i].sq;
    zeros += parts[i].zeros;
    subs += parts[i].subnormals;
    bad |= parts[i].bad;
  }
  sq = block_sum(sq, s_d);
  zeros = block_sum(zeros, s_c);
  subs = block_sum(subs, s_c);
  bad = block_sum(bad, s_c);
  if (threadIdx.x == 0) {
    // Overwritten, never accumulated (as the CPU). sum_sq covers the finite values.
    scalars[slots.found_inf] = bad ? 1.0f : 0.0f;
    scalars[slots.sum_sq] = static_cast<float>(sq);
    ew::count_store(scalars + slots.zeros, zeros);
    ew::count_store(scalars + slots.subnormals, subs);
    ew::count_store(scalars + slots.count, count);
  }
}

template <typename S>
__device__ __forceinline__ void hist_loop(const void* p, int64_t n, unsigned* bins) {
  const typename S::T* v = static_cast<const typename S::T*>(p);
  for (int64_t i = global_thread(); i < n; i += grid_stride()) atomicAdd(&bins[ew::exponent_bin(S::load(v[i]))], 1u);
}

// Integer counts: atomics are exact, so the result is deterministic.
__global__ void grad_histogram_kernel(GradList list, unsigned long long* counts) {
  __shared__ unsigned bins[ew::kHistBins];
  for (int i = threadIdx.x; i < ew::kHistBins; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  for (int t = 0; t < list.count; ++t) {
    const GradDesc d = list.t[t];
    switch (static_cast<DType>(d.dtype)) {
      case DType::F32: hist_loop<ew::F32>(d.ptr, d.n, bins); break;
      case DType::F16: hist_loop<ew::F16>(d.ptr, d.n, bins); break;
      case DType::BF16: hist_loop<ew::BF16>(d.ptr, d.n, bins); break;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < ew::kHistBins; i += blockDim.x)
    if (bins[i]) atomicAdd(&counts[i], static_cast<unsigned long long>(bins[i]));
}

__global__ void histogram_finalize_kernel(const unsigned long long* counts, float* hist) {
  for (int i = threadIdx.x; i < ew::kHistBins; i += blockDim.x) hist[i] = static_cast<float>(counts[i]);
}

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
  if (!d.h) adam_loop<G, ew::F32, false>(d, s);
  else if (static_cast<DType>(d.hdtype) == DType::F16) adam_loop<G, ew::F16, true>(d, s);
  else if (static_cast<DType>(d.hdtype) == DType::BF16) adam_loop<G, ew::BF16, true>(d, s);
  else adam_loop<G, ew::F32, true>(d, s);
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
      case DType::F32: adam_tensor<ew::F32>(d, s); break;
      case DType::F16: adam_tensor<ew::F16>(d, s); break;
      case DType::BF16: adam_tensor<ew::BF16>(d, s); break;
    }
  }
}

__global__ void adam_count_kernel(float* step_count, const float* scalars, int found_inf_slot) {
  if (scalars[found_inf_slot] == 0.0f) ew::count_increment(step_count);
}

}  // namespace

// ---- launchers ---------------------------------------------------------------------------------

size_t channel_workspace_bytes(int64_t rows, int64_t c) {
  const ChannelPlan p = channel_plan(rows, c);
  return (static_cast<size_t>(p.row_blocks) * 2 + 2) * static_cast<size_t>(c) * sizeof(float);
}

void bias_backward(cudaStream_t s, DType t, const void* dy, int64_t rows, int64_t c, float* db,
                   bool accumulate, void* ws) {
  if (c <= 0) return;
  const ChannelPlan p = channel_plan(rows, c);
  float* partial = static_cast<float*>(ws);
  launch_partial<kSum>(s, t, dy, nullptr, rows, c, nullptr, nullptr, partial, p);
  bias_finalize_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(partial, p.row_blocks, c, db, accumulate);
  AMPGAN_LAUNCHED("bias_finalize_kernel");
}

void batchnorm_forward_train(cudaStream_t s, DType t, const void* x, int64_t rows, int64_t c,
                             const float* gamma, const float* beta, float* running_mean,
                             float* running_var, float momentum, float eps, bool update_running,
                             void* y, float* save_mean, float* save_invstd, void* ws) {
  const ChannelPlan p = channel_plan(rows, c);
  float* partial = static_cast<float*>(ws);
  // Two passes as the CPU: the mean, then the mean squared deviation from it.
  launch_partial<kSum>(s, t, x, nullptr, rows, c, nullptr, nullptr, partial, p);
  bn_mean_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(partial, p.row_blocks, rows, c, save_mean);
  AMPGAN_LAUNCHED("bn_mean_kernel");
  launch_partial<kSquaredDeviation>(s, t, x, nullptr, rows, c, save_mean, nullptr, partial, p);
  bn_var_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(partial, p.row_blocks, rows, c, eps, save_mean,
                                                       save_invstd, running_mean, running_var, momentum,
                                                       update_running);
  AMPGAN_LAUNCHED("bn_var_kernel");
  const int64_t n = rows * c;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, c, sizeof(T), {x, y}))
      bn_normalize_kernel<S, true><<<grid_for(n / Vec16<T>::N), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n, static_cast<int>(c), save_mean, save_invstd, gamma, beta);
    else
      bn_normalize_kernel<S, false><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n, static_cast<int>(c), save_mean, save_invstd, gamma, beta);
  });
  AMPGAN_LAUNCHED("bn_normalize_kernel");
}

void batchnorm_forward_eval(cudaStream_t s, DType t, const void* x, int64_t rows, int64_t c,
                            const float* gamma, const float* beta, const float* running_mean,
                            const float* running_var, float eps, void* y) {
  const int64_t n = rows * c;
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, c, sizeof(T), {x, y}))
      bn_eval_kernel<S, true><<<grid_for(n / Vec16<T>::N), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n, static_cast<int>(c), running_mean, running_var, eps, gamma,
          beta);
    else
      bn_eval_kernel<S, false><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n, static_cast<int>(c), running_mean, running_var, eps, gamma,
          beta);
  });
  AMPGAN_LAUNCHED("bn_eval_kernel");
}

void batchnorm_backward(cudaStream_t s, DType t, const void* x, const void* dy, int64_t rows,
                        int64_t c, const float* gamma, const float* save_mean,
                        const float* save_invstd, void* dx, float* dgamma, float* dbeta,
                        bool accumulate, void* ws) {
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
      bn_dx_kernel<S, false><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), n, static_cast<int>(c), save_mean,
          save_invstd, gamma, mean_dy, mean_dy_xhat);
  });
  AMPGAN_LAUNCHED("bn_dx_kernel");
}

// Workspace: the blocks' partial sums, then (with per-tensor statistics) one TensorAcc a tensor.
size_t grad_stats_workspace_bytes(int tensor_count) {
  const int launches = tensor_count <= 0 ? 1 : (tensor_count + kMaxGradTensors - 1) / kMaxGradTensors;
  return static_cast<size_t>(launches) * kStatMaxBlocks * sizeof(StatPartial) +
         static_cast<size_t>(tensor_count > 0 ? tensor_count : 0) * sizeof(TensorAcc);
}

void grad_stats(cudaStream_t s, const GradDesc* grads, int count, const float* scaler_state,
                float* scalars, const GradStatSlots& slots, void* ws) {
  StatPartial* parts = static_cast<StatPartial*>(ws);
  const int launches = count <= 0 ? 1 : (count + kMaxGradTensors - 1) / kMaxGradTensors;
  TensorAcc* acc = nullptr;
  if (slots.per_tensor >= 0 && count > 0) {
    acc = reinterpret_cast<TensorAcc*>(parts + static_cast<size_t>(launches) * kStatMaxBlocks);
    AMPGAN_CUDA(cudaMemsetAsync(acc, 0, static_cast<size_t>(count) * sizeof(TensorAcc), s));
  }
  int nparts = 0;
  int64_t total = 0;
  for (int i = 0; i < count; ++i) total += grads[i].n;
  for (int first = 0; first < count || first == 0; first += kMaxGradTensors) {
    GradList list{};
    list.count = count - first < kMaxGradTensors ? count - first : kMaxGradTensors;
    if (list.count < 0) list.count = 0;
    int64_t n = 0;
    for (int i = 0; i < list.count; ++i) {
      list.t[i] = grads[first + i];
      n += list.t[i].n;
    }
    const unsigned blocks = grid_for(n, 16, kStatMaxBlocks);
    grad_stats_kernel<<<blocks, kThreads, 0, s>>>(list, scaler_state, parts + nparts, acc ? acc + first : nullptr);
    AMPGAN_LAUNCHED("grad_stats_kernel");
    nparts += static_cast<int>(blocks);
    if (count == 0) break;
  }
  grad_stats_finalize_kernel<<<1, kThreads, 0, s>>>(parts, nparts, scalars, slots, static_cast<uint64_t>(total));
  AMPGAN_LAUNCHED("grad_stats_finalize_kernel");
  if (acc) {
    tensor_stats_finalize_kernel<<<1, kThreads, 0, s>>>(acc, count, scalars, slots.per_tensor);
    AMPGAN_LAUNCHED("tensor_stats_finalize_kernel");
  }
}

size_t grad_histogram_workspace_bytes() { return ew::kHistBins * sizeof(unsigned long long); }

void grad_histogram(cudaStream_t s, const GradDesc* grads, int count, float* hist, void* ws) {
  auto* counts = static_cast<unsigned long long*>(ws);
  AMPGAN_CUDA(cudaMemsetAsync(counts, 0, grad_histogram_workspace_bytes(), s));
  for (int first = 0; first < count; first += kMaxGradTensors) {
    GradList list{};
    list.count = count - first < kMaxGradTensors ? count - first : kMaxGradTensors;
    int64_t n = 0;
    for (int i = 0; i < list.count; ++i) {
      list.t[i] = grads[first + i];
      n += list.t[i].n;
    }
    grad_histogram_kernel<<<grid_for(n, 16, 1024), kThreads, 0, s>>>(list, counts);
    AMPGAN_LAUNCHED("grad_histogram_kernel");
  }
  histogram_finalize_kernel<<<1, 128, 0, s>>>(counts, hist);
  AMPGAN_LAUNCHED("histogram_finalize_kernel");
}

void adam_step(cudaStream_t s, const AdamDesc* params, int count, const AdamConfig& cfg,
               float* step_count, const float* scaler_state, const float* scalars, int found_inf_slot) {
  const AdamHyper hp{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps};
  for (int first = 0; first < count; first += kMaxAdamTensors) {
    AdamList list{};
    list.count = count - first < kMaxAdamTensors ? count - first : kMaxAdamTensors;
    int64_t n = 0;
    for (int i = 0; i < list.count; ++i) {
      list.t[i] = params[first + i];
      n += list.t[i].n;
    }
    adam_kernel<<<grid_for(n, 4, 4096), kThreads, 0, s>>>(list, hp, step_count, scaler_state, scalars,
                                                            found_inf_slot);
    AMPGAN_LAUNCHED("adam_kernel");
  }
  adam_count_kernel<<<1, 1, 0, s>>>(step_count, scalars, found_inf_slot);
  AMPGAN_LAUNCHED("adam_count_kernel");
}

}  // namespace ampgan::gpu
