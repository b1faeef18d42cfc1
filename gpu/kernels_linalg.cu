// The bias gradient: db (c) = sum over rows of dy (rows, c), a per-channel reduction
// (gpu/channel_reduce.cuh). The convolutions and GEMMs themselves are cuDNN's and cuBLAS's
// (gpu/cuda_linalg.cpp). The CPU version is CpuBackend::bias_backward (core/backend/cpu/cpu_linalg.cpp).
#include "gpu/channel_reduce.cuh"

namespace ampgan::gpu {

namespace {

__global__ void bias_finalize_kernel(const float* partial, int row_blocks, int64_t c, float* db, bool accumulate) {
  __shared__ double shared[kFY][kTX + 1];
  const int ch = blockIdx.x * kTX + threadIdx.x;
  const double s = channel_total(partial, row_blocks, c, ch, 0, shared);
  if (threadIdx.y != 0 || ch >= c) return;
  db[ch] = static_cast<float>((accumulate ? static_cast<double>(db[ch]) : 0.0) + s);
}

}  // namespace

void bias_backward(cudaStream_t s, DType t, const void* dy, int64_t rows, int64_t c, float* db, bool accumulate,
                   void* ws) {
  if (c <= 0) return;
  const ChannelPlan p = channel_plan(rows, c);
  float* partial = static_cast<float*>(ws);
  launch_partial<kSum>(s, t, dy, nullptr, rows, c, nullptr, nullptr, partial, p);
  bias_finalize_kernel<<<channel_blocks(c), kFinalizeBlock, 0, s>>>(partial, p.row_blocks, c, db, accumulate);
  AMPGAN_LAUNCHED("bias_finalize_kernel");
}

}  // namespace ampgan::gpu
