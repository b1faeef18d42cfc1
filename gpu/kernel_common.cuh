// Shared by the kernel sources: launch geometry, dtype dispatch, block reductions.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "core/backend/elementwise.h"
#include "gpu/cuda_check.h"
#include "gpu/index_math.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, capped so the count
// (and with it every reduction's combination order) depends on n alone.
inline unsigned grid_for(int64_t n, int64_t per_thread = 4, int64_t max_blocks = 8192) {
  int64_t b = (n + kThreads * per_thread - 1) / (kThreads * per_thread);
  if (b < 1) b = 1;
  if (b > max_blocks) b = max_blocks;
  return static_cast<unsigned>(b);
}

// Tensor lists travel as kernel arguments of a fixed size (List::t[Max]): fills `list` with
// descs[first, first + Max) (fewer at the end, none past count) and returns their elements.
template <int Max, typename List, typename Desc>
int64_t fill_launch_list(List& list, const Desc* descs, int count, int first) {
  list.count = count - first < Max ? count - first : Max;
  if (list.count < 0) list.count = 0;
  int64_t n = 0;
  for (int i = 0; i < list.count; ++i) {
    list.t[i] = descs[first + i];
    n += list.t[i].n;
  }
  return n;
}

// Calls f(tag) with the storage tag (ew::F32, ew::F16, ew::BF16) of a runtime dtype.
template <typename F>
void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::F32:
      f(ew::F32{});
      return;
    case DType::F16:
      f(ew::F16{});
      return;
    case DType::BF16:
      f(ew::BF16{});
      return;
  }
}

__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// 16 bytes of one storage type, loaded and stored as one vector access (8 halves or 4 floats)
// instead of 8 or 4 scalar ones. Callers check vec16_ok (gpu/index_math.h) first.
template <typename T>
union Vec16 {
  static constexpr int N = 16 / sizeof(T);
  uint4 raw;
  T v[N];
};

template <typename T>
__device__ __forceinline__ Vec16<T> load16(const T* p, int64_t k) {
  Vec16<T> x;
  x.raw = reinterpret_cast<const uint4*>(p)[k];
  return x;
}

template <typename T>
__device__ __forceinline__ void store16(T* p, int64_t k, const Vec16<T>& x) {
  reinterpret_cast<uint4*>(p)[k] = x.raw;
}

// Tree reduction over a block of kThreads threads in a fixed order (deterministic). Every
// thread must call it; the result is valid in thread 0.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared /* [kThreads] */) {
  const int tid = threadIdx.x;
  shared[tid] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (tid < stride) shared[tid] = shared[tid] + shared[tid + stride];
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();  // shared may be reused by the caller
  return r;
}

}  // namespace ampgan::gpu
