// The matrix products inside the CPU backend's convolutions and GEMM, each run on the calling
// thread (the backend's thread pool splits the work into tiles; see cpu_linalg.cpp). Three
// kernels can run a product, all with FP32 accumulation into an FP32 C:
//   openblas     OpenBLAS SGEMM on FP32 operands (FP16/BF16 tensors widened exactly first)
//   onednn-f32   oneDNN matmul on the same FP32 operands
//   onednn-bf16  oneDNN matmul on the BF16 operands themselves (VDPBF16PS on AVX512-BF16: BF16
//                products are exact in FP32, so this differs from the FP32 kernels only in the
//                order of the sum and in treating subnormal BF16 inputs as zero)
// Which one runs is decided per product shape and operand dtype by timing the candidates once
// (the KernelPlan), or forced with --cpu-kernels. The plan is recorded in the run and reused on
// resume, and kept per host in the cache folder, so that two runs on one machine agree bit for
// bit (cpu_kernel_plan.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor/dtype.h"

namespace ampgan::cpu {

enum class GemmKernel : uint8_t { OpenBlas, OneDnnF32, OneDnnBf16 };
const char* gemm_kernel_name(GemmKernel k);  // "openblas", "onednn-f32", "onednn-bf16"
bool parse_gemm_kernel(const std::string& s, GemmKernel* out);
// Whether the kernel reads BF16 operands (the caller then passes raw BF16 bits, not FP32).
inline bool reads_bf16(GemmKernel k) { return k == GemmKernel::OneDnnBf16; }

// C(m, n) = alpha op(A) op(B) + beta C, row-major, leading dimensions in elements.
struct GemmShape {
  bool ta = false, tb = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  // "nt 64x128x1024 lda 1024 ldb 1024 ldc 128" (and "alpha A beta B" unless 1 and 0), the
  // plan's key (with the operand dtype).
  std::string key() const;
};

// Whether this build has oneDNN, and what it runs here ("oneDNN 2.6.3, avx512_core_bf16"), or
// why not.
bool onednn_available();
std::string onednn_summary();
// Whether oneDNN has a fast (JIT) implementation of this product on this CPU; false for a
// reference implementation, which would be far slower than OpenBLAS.
bool onednn_supports(GemmKernel k, const GemmShape& s);

// Runs the product on the calling thread. a and b are float* for openblas and onednn-f32, raw
// BF16 bits (uint16_t*) for onednn-bf16. Throws Error when a oneDNN product cannot be created.
void gemm_serial(GemmKernel k, const GemmShape& s, const void* a, const void* b, float* c);

}  // namespace ampgan::cpu
