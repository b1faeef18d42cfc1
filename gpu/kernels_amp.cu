// The mixed-precision passes on the GPU: the fused unscale-and-check over a network's gradients
// with its statistics (norm, underflow counts, per-tensor maximum / non-finite / underflow), the
// gradient exponent histogram, and the one-thread loss-scaler update. The CPU version is
// core/backend/cpu/cpu_amp.cpp.
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
                                          unsigned long long& zeros, unsigned long long& subs, unsigned& bad, float& mx,
                                          unsigned long long& nonfinite) {
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
      case DType::F32:
        stat_loop<ew::F32>(d.ptr, d.n, inv_scale, sq, zeros, subs, bad, mx, nonfinite);
        break;
      case DType::F16:
        stat_loop<ew::F16>(d.ptr, d.n, inv_scale, sq, zeros, subs, bad, mx, nonfinite);
        break;
      case DType::BF16:
        stat_loop<ew::BF16>(d.ptr, d.n, inv_scale, sq, zeros, subs, bad, mx, nonfinite);
        break;
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

__global__ void grad_stats_finalize_kernel(const StatPartial* parts, int nparts, float* scalars, GradStatSlots slots,
                                           uint64_t count) {
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
      case DType::F32:
        hist_loop<ew::F32>(d.ptr, d.n, bins);
        break;
      case DType::F16:
        hist_loop<ew::F16>(d.ptr, d.n, bins);
        break;
      case DType::BF16:
        hist_loop<ew::BF16>(d.ptr, d.n, bins);
        break;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < ew::kHistBins; i += blockDim.x)
    if (bins[i]) atomicAdd(&counts[i], static_cast<unsigned long long>(bins[i]));
}

__global__ void histogram_finalize_kernel(const unsigned long long* counts, float* hist) {
  for (int i = threadIdx.x; i < ew::kHistBins; i += blockDim.x) hist[i] = static_cast<float>(counts[i]);
}

// ---- loss scaler -------------------------------------------------------------------------------

struct SlotList {
  int n;
  int slot[kMaxScalerSlots];
};

__global__ void scaler_update_kernel(float* state, ew::ScalerConfig cfg, const float* scalars, SlotList slots) {
  bool found = false;
  for (int i = 0; i < slots.n; ++i) found |= scalars[slots.slot[i]] != 0.0f;
  ew::scaler_update(state[0], state[1], found, cfg);
}

}  // namespace

// Workspace: the blocks' partial sums, then (with per-tensor statistics) one TensorAcc a tensor.
size_t grad_stats_workspace_bytes(int tensor_count) {
  const int launches = tensor_count <= 0 ? 1 : (tensor_count + kMaxGradTensors - 1) / kMaxGradTensors;
  return static_cast<size_t>(launches) * kStatMaxBlocks * sizeof(StatPartial) +
         static_cast<size_t>(tensor_count > 0 ? tensor_count : 0) * sizeof(TensorAcc);
}

void grad_stats(cudaStream_t s, const GradDesc* grads, int count, const float* scaler_state, float* scalars,
                const GradStatSlots& slots, void* ws) {
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
    const int64_t n = fill_launch_list<kMaxGradTensors>(list, grads, count, first);
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
    const int64_t n = fill_launch_list<kMaxGradTensors>(list, grads, count, first);
    grad_histogram_kernel<<<grid_for(n, 16, 1024), kThreads, 0, s>>>(list, counts);
    AMPGAN_LAUNCHED("grad_histogram_kernel");
  }
  histogram_finalize_kernel<<<1, 128, 0, s>>>(counts, hist);
  AMPGAN_LAUNCHED("histogram_finalize_kernel");
}

void scaler_update(cudaStream_t s, float* state, const ew::ScalerConfig& cfg, const float* scalars, const int* slots,
                   int nslots) {
  SlotList list{};
  list.n = nslots;
  for (int i = 0; i < nslots; ++i) list.slot[i] = slots[i];
  scaler_update_kernel<<<1, 1, 0, s>>>(state, cfg, scalars, list);
  AMPGAN_LAUNCHED("scaler_update_kernel");
}

}  // namespace ampgan::gpu
