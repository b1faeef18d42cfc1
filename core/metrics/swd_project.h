// Internal to the SWD: projection of patch descriptors on a block of directions.
//
// Why not OpenBLAS: the product is (32 directions) x (49..147) x (hundreds of thousands of
// patches); at that shape OpenBLAS re-packs the whole patch matrix on every call and reached only
// ~40 GFLOP/s on 2 cores here, while this kernel does ~60-75 GFLOP/s per core. The project builds
// for generic x86-64, so the kernel is compiled for AVX-512 and AVX2 with run-time selection.
// Each output is sum_k w[k] * x[k] accumulated in k order (fused multiply-adds on the AVX paths)
// whatever the blocking or the thread count, so results are reproducible on a given machine.
#pragma once

#include <cstdint>

namespace ampgan::metrics::detail {

constexpr int kProjectRows = 16;     // directions per register tile: pass a multiple of this
constexpr int kProjectCols = 32;     // patches per register tile: columns are padded to this
constexpr int kProjectMaxRows = 64;  // directions per call at most

// Patches are stored in panels of kProjectCols: element k of patch m is at
// x[((m / kProjectCols) * dim + k) * kProjectCols + m % kProjectCols], so a register tile reads
// one contiguous dim x kProjectCols block.
inline int64_t panel_index(int64_t m, int k, int dim) {
  return ((m / kProjectCols) * dim + k) * kProjectCols + m % kProjectCols;
}

// out[p * ldo + m] = sum_k w[p * dim + k] * x[panel_index(m, k, dim)] for p < rows (a multiple
// of kProjectRows, at most kProjectMaxRows) and m in [m0, m1) (multiples of kProjectCols); lo[p] and hi[p] are lowered
// / raised to the smallest / largest of those outputs (saves the histogram a pass over them).
void project(const float* w, int rows, int dim, const float* x, int64_t m0, int64_t m1, float* out, int64_t ldo,
             float* lo, float* hi);

// Which kernel project() uses on this machine: "avx512", "avx2" or "generic".
const char* project_kernel();

// project() with a named kernel, for tests; false (and nothing done) if this CPU lacks it.
bool project_with(const char* kernel, const float* w, int rows, int dim, const float* x, int64_t m0, int64_t m1,
                  float* out, int64_t ldo, float* lo, float* hi);

}  // namespace ampgan::metrics::detail
