// The per-channel reduction over a (rows, c) NHWC tensor that batch norm (kernels_batchnorm.cu)
// and the bias gradient (kernels_linalg.cu) share: partial sums per block, then a finalising
// kernel of the caller's that adds them in a fixed order (channel_total).
//
// Determinism: every partial sum is combined in a fixed order (grid sizes depend only on the
// problem size; block sums are fixed trees; partials are added by one finalising kernel in index
// order), so a result never depends on scheduling, and a replayed graph computes exactly what the
// eager step computed. Differences from the CPU come only from the order of FP32 additions:
// threads accumulate in FP32 like the CPU's chunks, and partials are combined in double as the
// CPU combines its chunks.
//
// Everything here is in an unnamed namespace: each .cu file is its own device module and gets
// its own copy of the kernels it instantiates.
#pragma once

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
__global__ void channel_partial_kernel(const typename S::T* a, const typename S::T* b, int64_t rows, int c,
                                       const float* mean, const float* invstd, float* partial) {
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

template <int MODE>
void launch_partial(cudaStream_t s, DType t, const void* a, const void* b, int64_t rows, int64_t c, const float* mean,
                    const float* invstd, float* partial, const ChannelPlan& p) {
  const dim3 grid(p.tiles, p.row_blocks), block(kTX, kTY);
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    channel_partial_kernel<S, MODE><<<grid, block, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), rows,
                                                           static_cast<int>(c), mean, invstd, partial);
  });
  AMPGAN_LAUNCHED("channel_partial_kernel");
}

// The finalising kernels' launch shape (see channel_total).
const dim3 kFinalizeBlock(kTX, kFY);
unsigned channel_blocks(int64_t c) { return static_cast<unsigned>((c + kTX - 1) / kTX); }

}  // namespace

}  // namespace ampgan::gpu
