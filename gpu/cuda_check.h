// Status checking for the CUDA backend: every CUDA runtime, cuBLAS and cuDNN status that is not
// success becomes an ampgan::Error naming the call, the status and the source line -- never
// exit() or abort(). Host code only (g++ and nvcc both include it).
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "core/common/error.h"

namespace ampgan::gpu {

// Throws Error("CUDA call failed: <call>: <cudaErrorName> (<description>)", "<file>:<line>", hint).
[[noreturn]] void throw_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn(int status, const char* call, const char* file, int line);
// Out of device memory: names the request, the device's free/total memory, and what to do.
[[noreturn]] void throw_oom(size_t requested, const std::string& what);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda(status, call, file, line);
}

// After a kernel launch: configuration errors are reported at once, without synchronising.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace ampgan::gpu

#define AMPGAN_CUDA(call) ::ampgan::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define AMPGAN_CUBLAS(call)                                                                  \
  do {                                                                                       \
    const int ampgan_st_ = static_cast<int>(call);                                           \
    if (ampgan_st_ != 0) ::ampgan::gpu::throw_cublas(ampgan_st_, #call, __FILE__, __LINE__); \
  } while (0)
#define AMPGAN_CUDNN(call)                                                                  \
  do {                                                                                      \
    const int ampgan_st_ = static_cast<int>(call);                                          \
    if (ampgan_st_ != 0) ::ampgan::gpu::throw_cudnn(ampgan_st_, #call, __FILE__, __LINE__); \
  } while (0)
#define AMPGAN_LAUNCHED(name) ::ampgan::gpu::check_launch((name), __FILE__, __LINE__)
