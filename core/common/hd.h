// Marks functions that both g++ and nvcc compile: the element-wise math is written once and
// called by the CPU backend's loops and by the CUDA kernels, so the GPU's arithmetic is tested
// on the CPU.
#pragma once

#if defined(__CUDACC__)
#define AMPGAN_HD __host__ __device__ __forceinline__
#else
#define AMPGAN_HD inline
#endif
