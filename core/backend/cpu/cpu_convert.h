// Bulk conversions between FP32 and the 16-bit formats for the CPU backend's inner loops.
// On x86-64, FP16 uses F16C and BF16 AVX2 integer arithmetic, 8 values at a time, or 16 with
// AVX-512 (IEEE round-to-nearest-even, bit-identical to core/tensor/half.h --
// tests/test_cpu_convert.cpp checks it, on whichever path this CPU takes: run it with
// AMPGAN_CPU_FEATURES=avx2 too); elsewhere the shared scalar functions are used.
#pragma once

#include <cstdint>

#include "core/tensor/dtype.h"

namespace ampgan::cpu {

// Single-threaded; src/dst point at the first element.
void widen(DType t, const void* src, float* dst, int64_t n);
void narrow(DType t, const float* src, void* dst, int64_t n);
// sum[j] += x[j] in double, j < n: per-channel sums (the bias gradient). Each element's additions
// are the same on every path, so the sums are the same bit for bit whichever one runs.
void add_to_f64(const float* x, double* sum, int64_t n);
// Typed element pointer arithmetic for void* buffers.
inline const void* at(const void* p, DType t, int64_t i) {
  return static_cast<const char*>(p) + i * static_cast<int64_t>(dtype_size(t));
}
inline void* at(void* p, DType t, int64_t i) { return static_cast<char*>(p) + i * static_cast<int64_t>(dtype_size(t)); }
bool has_f16c();
bool has_avx2();

}  // namespace ampgan::cpu
