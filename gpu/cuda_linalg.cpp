// CUDA backend: matrix products (cuBLAS) and the bias (a kernel each way).
//
// A product takes inputs of one dtype, accumulates in FP32 and rounds once to the output's dtype,
// as the CPU backend does (core/backend/cpu/cpu_linalg.cpp). FP32 mode forbids TF32
// (CUBLAS_COMPUTE_32F_PEDANTIC) unless set_allow_tf32(true); half modes use tensor cores (FP32
// compute type). The convolutions are in cuda_conv.cpp.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

namespace {

cudaDataType cublas_type(DType t) {
  switch (t) {
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CUDA backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

}  // namespace

// ---- matrix products ----------------------------------------------------------------------------

void CudaBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a, const Tensor& b,
                       float beta, Tensor& c) {
  check(a.dtype() == b.dtype(), "gemm", "A and B must share a dtype");
  check(c.dtype() == DType::F32 || c.dtype() == a.dtype(), "gemm", "C must be FP32 or A's dtype");
  check(m >= 0 && n >= 0 && k >= 0 && a.numel() >= int64_t{m} * k && b.numel() >= int64_t{k} * n &&
            c.numel() >= int64_t{m} * n,
        "gemm", "operand smaller than m, n, k");
  check_device_tensor(a, "gemm", "A");
  check_device_tensor(b, "gemm", "B");
  check_device_tensor(c, "gemm", "C");
  if (m == 0 || n == 0) return;
  activate();
  const cublasComputeType_t compute = a.dtype() != DType::F32 ? CUBLAS_COMPUTE_32F
                                      : allow_tf32_           ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                              : CUBLAS_COMPUTE_32F_PEDANTIC;
  // Row-major C(m, n) is column-major C^T(n, m) = op(B)^T op(A)^T: swap the operands.
  AMPGAN_CUBLAS(cublasGemmEx(cublas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                             &alpha, b.data(), cublas_type(b.dtype()), trans_b ? k : n, a.data(),
                             cublas_type(a.dtype()), trans_a ? m : k, &beta, c.data(), cublas_type(c.dtype()), n,
                             compute, CUBLAS_GEMM_DEFAULT));
}

void CudaBackend::bias_add(Tensor& y, const Tensor& b) {
  require(b.dtype() == DType::F32 && b.numel() > 0 && y.numel() % b.numel() == 0, "bias_add",
          "bias must be FP32 (channels)");
  activate();
  gpu::bias_add(stream_, y.dtype(), y.data(), b.as<float>(), y.numel() / b.numel(), b.numel());
}

void CudaBackend::bias_backward(const Tensor& dy, Tensor& db, bool accumulate) {
  require(db.dtype() == DType::F32 && db.numel() > 0 && dy.numel() % db.numel() == 0, "bias_backward",
          "db must be FP32 (channels)");
  activate();
  const int64_t c = db.numel(), rows = dy.numel() / c;
  void* ws = workspace(kWsReduce, gpu::channel_workspace_bytes(rows, c), "bias_backward");
  gpu::bias_backward(stream_, dy.dtype(), dy.data(), rows, c, db.as<float>(), accumulate, ws);
}

}  // namespace ampgan::gpu
