#include "core/metrics/swd_project.h"

#include "core/common/cpu_features.h"

#include <algorithm>
#include <string>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AMPGAN_SWD_X86 1
#include <immintrin.h>
#endif

namespace ampgan::metrics::detail {

namespace {

static_assert(kProjectRows == 16 && kProjectCols == 32, "the kernels below are written for 16-row, 32-column tiles");

void project_generic(const float* w, int rows, int dim, const float* x, int64_t m0, int64_t m1, float* out, int64_t ldo,
                     float* lo, float* hi) {
  for (int64_t m = m0; m < m1; m += kProjectCols)
    for (int p = 0; p < rows; ++p) {
      float acc[kProjectCols] = {};
      for (int k = 0; k < dim; ++k) {
        const float wk = w[p * dim + k];
        const float* xk = x + (m / kProjectCols * dim + k) * kProjectCols;
        for (int j = 0; j < kProjectCols; ++j) acc[j] += wk * xk[j];
      }
      for (int j = 0; j < kProjectCols; ++j) {
        out[p * ldo + m + j] = acc[j];
        lo[p] = std::min(lo[p], acc[j]);
        hi[p] = std::max(hi[p], acc[j]);
      }
    }
}

#ifdef AMPGAN_SWD_X86
// GCC 12's _mm512_min_ps / _mm512_max_ps pass _mm512_undefined_ps() as the unused merge source,
// which -Wmaybe-uninitialized reports; nothing here is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 directions x 16 patches = 16 zmm accumulators. The weights are first transposed to
// (dim, rows) so that the 16 broadcasts of one k sit at fixed offsets from a single pointer and
// fold into the FMAs as memory operands. The patch panel (dim x 32 floats) stays in L1 while all
// direction tiles pass over it.
__attribute__((target("avx512f"))) void project_avx512(const float* w, int rows, int dim, const float* x, int64_t m0,
                                                       int64_t m1, float* out, int64_t ldo, float* lo, float* hi) {
  std::vector<float> wt(size_t(rows) * dim);  // (dim, rows)
  for (int p = 0; p < rows; ++p)
    for (int k = 0; k < dim; ++k) wt[size_t(k) * rows + p] = w[size_t(p) * dim + k];
  alignas(64) float vlo[kProjectMaxRows][16], vhi[kProjectMaxRows][16];  // per-lane running min / max
  for (int p = 0; p < rows; ++p) {
    _mm512_store_ps(vlo[p], _mm512_set1_ps(lo[p]));
    _mm512_store_ps(vhi[p], _mm512_set1_ps(hi[p]));
  }
  for (int64_t m = m0; m < m1; m += 32) {
    const float* panel = x + m / 32 * dim * 32;
    for (int half = 0; half < 32; half += 16)
      for (int p = 0; p < rows; p += 16) {
        __m512 a[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) a[j] = _mm512_setzero_ps();
        const float* wk = wt.data() + p;
        const float* xk = panel + half;
        for (int k = 0; k < dim; ++k, wk += rows, xk += 32) {
          const __m512 xv = _mm512_loadu_ps(xk);
#pragma GCC unroll 16  // the accumulators must live in registers
          for (int j = 0; j < 16; ++j) a[j] = _mm512_fmadd_ps(_mm512_set1_ps(wk[j]), xv, a[j]);
        }
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          _mm512_storeu_ps(out + (p + j) * ldo + m + half, a[j]);
          _mm512_store_ps(vlo[p + j], _mm512_min_ps(_mm512_load_ps(vlo[p + j]), a[j]));
          _mm512_store_ps(vhi[p + j], _mm512_max_ps(_mm512_load_ps(vhi[p + j]), a[j]));
        }
      }
  }
  for (int p = 0; p < rows; ++p)
    for (int t = 0; t < 16; ++t) {
      lo[p] = std::min(lo[p], vlo[p][t]);
      hi[p] = std::max(hi[p], vhi[p][t]);
    }
}

#pragma GCC diagnostic pop

// 8 directions x 8 patches = 8 ymm accumulators (16 registers in all), weights transposed as above.
__attribute__((target("avx2,fma"))) void project_avx2(const float* w, int rows, int dim, const float* x, int64_t m0,
                                                      int64_t m1, float* out, int64_t ldo, float* lo, float* hi) {
  std::vector<float> wt(size_t(rows) * dim);  // (dim, rows)
  for (int p = 0; p < rows; ++p)
    for (int k = 0; k < dim; ++k) wt[size_t(k) * rows + p] = w[size_t(p) * dim + k];
  alignas(32) float vlo[kProjectMaxRows][8], vhi[kProjectMaxRows][8];  // per-lane running min / max
  for (int p = 0; p < rows; ++p) {
    _mm256_store_ps(vlo[p], _mm256_set1_ps(lo[p]));
    _mm256_store_ps(vhi[p], _mm256_set1_ps(hi[p]));
  }
  for (int64_t m = m0; m < m1; m += 8)
    for (int p = 0; p < rows; p += 8) {
      __m256 a[8];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) a[j] = _mm256_setzero_ps();
      const float* wk = wt.data() + p;
      const float* xk = x + m / 32 * dim * 32 + m % 32;
      for (int k = 0; k < dim; ++k, wk += rows, xk += 32) {
        const __m256 xv = _mm256_loadu_ps(xk);
#pragma GCC unroll 8  // the accumulators must live in registers
        for (int j = 0; j < 8; ++j) a[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(wk + j), xv, a[j]);
      }
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        _mm256_storeu_ps(out + (p + j) * ldo + m, a[j]);
        _mm256_store_ps(vlo[p + j], _mm256_min_ps(_mm256_load_ps(vlo[p + j]), a[j]));
        _mm256_store_ps(vhi[p + j], _mm256_max_ps(_mm256_load_ps(vhi[p + j]), a[j]));
      }
    }
  for (int p = 0; p < rows; ++p)
    for (int t = 0; t < 8; ++t) {
      lo[p] = std::min(lo[p], vlo[p][t]);
      hi[p] = std::max(hi[p], vhi[p][t]);
    }
}
#endif

using Kernel = void (*)(const float*, int, int, const float*, int64_t, int64_t, float*, int64_t, float*, float*);

Kernel find(const char* name) {
  const std::string n = name;
#ifdef AMPGAN_SWD_X86
  // cpu_features() rather than the compiler's own check: it honours AMPGAN_CPU_FEATURES.
  if (n == "avx512") return cpu_features().avx512f ? project_avx512 : nullptr;
  if (n == "avx2") return cpu_features().avx2 && cpu_features().fma ? project_avx2 : nullptr;
#endif
  if (n == "generic") return project_generic;
  return nullptr;
}

struct Choice {
  Kernel fn;
  const char* name;
};

const Choice& chosen() {
  static const Choice c = [] {
    for (const char* name : {"avx512", "avx2"})
      if (Kernel k = find(name)) return Choice{k, name};
    return Choice{project_generic, "generic"};
  }();
  return c;
}

}  // namespace

void project(const float* w, int rows, int dim, const float* x, int64_t m0, int64_t m1, float* out, int64_t ldo,
             float* lo, float* hi) {
  chosen().fn(w, rows, dim, x, m0, m1, out, ldo, lo, hi);
}

const char* project_kernel() { return chosen().name; }

bool project_with(const char* kernel, const float* w, int rows, int dim, const float* x, int64_t m0, int64_t m1,
                  float* out, int64_t ldo, float* lo, float* hi) {
  const Kernel k = find(kernel);
  if (k) k(w, rows, dim, x, m0, m1, out, ldo, lo, hi);
  return k != nullptr;
}

}  // namespace ampgan::metrics::detail
