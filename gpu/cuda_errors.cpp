// CUDA backend: errors. Every CUDA, cuBLAS and cuDNN status becomes an Error that says where,
// what the device had free, and whether the context is still usable (sticky errors are not).
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"

namespace ampgan::gpu {

namespace {

std::string where(const char* file, int line) {
  std::string f = file;
  const size_t cut = f.rfind("/gpu/");
  if (cut != std::string::npos) f = f.substr(cut + 1);
  return f + ":" + std::to_string(line);
}

// Errors after which the CUDA context cannot be used any more.
bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

std::string mib(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

}  // namespace

namespace {

std::string memory_note() {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return " (" + mib(free_b) + " free of " + mib(total_b) + ")";
}

constexpr const char* kOomHint = "try a smaller batch, width or resolution, or close other programs using the GPU";

}  // namespace

void throw_cuda(cudaError_t status, const char* call, const char* file, int line) {
  const std::string what = std::string("CUDA call failed: ") + call + ": " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation) throw OutOfMemoryError(what + memory_note(), where(file, line), kOomHint);
  std::string hint;
  if (sticky(status))
    hint =
        "the GPU context is no longer usable: restart the application (this is a bug in the CUDA backend, or a "
        "hardware fault; please report it)";
  else if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice)
    hint = "run 'ampgan devices' for details, or use --backend cpu";
  else
    hint = "please report this with the command you ran and the output of 'ampgan devices'";
  throw Error(what, where(file, line), hint);
}

void throw_cublas(int status, const char* call, const char* file, int line) {
  const auto st = static_cast<cublasStatus_t>(status);
  const std::string what = std::string("cuBLAS call failed: ") + call + ": " + cublasGetStatusName(st) + " (" +
                           cublasGetStatusString(st) + ")";
  if (st == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what + memory_note(), where(file, line), kOomHint);
  throw Error(what, where(file, line), "please report this with the command you ran");
}

void throw_cudnn(int status, const char* call, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string what =
      std::string("cuDNN call failed: ") + call + ": " + cudnnGetErrorString(static_cast<cudnnStatus_t>(status));
  if (detail[0]) what += std::string(" (") + detail + ")";
  if (status == CUDNN_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what + memory_note(), where(file, line), kOomHint);
  throw Error(what, where(file, line), "please report this with the command you ran and 'ampgan devices'");
}

void throw_oom(size_t requested, const std::string& what) {
  int dev = 0;
  (void)cudaGetDevice(&dev);
  throw OutOfMemoryError(
      "out of GPU memory allocating " + mib(requested) + " on GPU " + std::to_string(dev) + memory_note(), what,
      kOomHint);
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t st = cudaGetLastError();
  if (st != cudaSuccess && st != cudaErrorNotReady) throw_cuda(st, kernel, file, line);
}

}  // namespace ampgan::gpu
