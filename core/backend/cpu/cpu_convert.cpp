#include "core/backend/cpu/cpu_convert.h"

#include <cstring>

#include "core/common/cpu_features.h"
#include "core/tensor/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ampgan::cpu {

namespace {

void widen_f16_scalar(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = half_bits_to_float(s[i]);
}
void narrow_f16_scalar(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = float_to_half_bits(s[i]);
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void widen_f16_hw(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  widen_f16_scalar(s + i, d + i, n - i);
}
__attribute__((target("avx,f16c"))) void narrow_f16_hw(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  narrow_f16_scalar(s + i, d + i, n - i);
}
// BF16 with AVX2 integer arithmetic: the same bit operations as core/tensor/half.h (ties to
// even, quiet NaN), 8 values at a time. AVX512-BF16's VCVTNEPS2BF16 is not used: it flushes
// subnormal inputs to zero, which the scalar reference (and a GPU) does not.
__attribute__((target("avx2"))) void widen_bf16_hw(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) d[i] = bf16_bits_to_float(s[i]);
}
__attribute__((target("avx2"))) void narrow_bf16_hw(const float* s, uint16_t* d, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(s + i));
    const __m256i hi = _mm256_srli_epi32(x, 16);
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(hi, one))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), nan);
    // 32 -> 16 bits: packus works per 128-bit lane, so gather the two lanes' low halves.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) d[i] = float_to_bf16_bits(s[i]);
}
// The same conversions 16 values at a time where the CPU has AVX-512 (bit for bit the AVX2
// ones: the same operations on wider registers); the AVX2 ones finish the tail.
__attribute__((target("avx512f"))) void widen_f16_512(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  widen_f16_hw(s + i, d + i, n - i);
}
__attribute__((target("avx512f"))) void narrow_f16_512(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  narrow_f16_hw(s + i, d + i, n - i);
}
__attribute__((target("avx512f"))) void widen_bf16_512(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(w, 16));
  }
  widen_bf16_hw(s + i, d + i, n - i);
}
__attribute__((target("avx512f"))) void narrow_bf16_512(const float* s, uint16_t* d, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_castps_si512(_mm512_loadu_ps(s + i));
    const __m512i hi = _mm512_srli_epi32(x, 16);
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(bias, _mm512_and_si512(hi, one))), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, abs_mask), inf);
    const __m512i r = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(hi, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(r));
  }
  narrow_bf16_hw(s + i, d + i, n - i);
}
__attribute__((target("avx512f"))) void add_to_f64_512(const float* x, double* sum, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm512_storeu_pd(sum + i, _mm512_add_pd(_mm512_loadu_pd(sum + i), _mm512_cvtps_pd(_mm256_loadu_ps(x + i))));
  for (; i < n; ++i) sum[i] += x[i];
}
__attribute__((target("avx2"))) void add_to_f64_256(const float* x, double* sum, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(sum + i, _mm256_add_pd(_mm256_loadu_pd(sum + i), _mm256_cvtps_pd(_mm_loadu_ps(x + i))));
  for (; i < n; ++i) sum[i] += x[i];
}
const bool kF16c = cpu_features().f16c;
const bool kAvx2 = cpu_features().avx2;
const bool kAvx512 = cpu_features().avx512f && kF16c && kAvx2;
#else
const bool kF16c = false;
const bool kAvx2 = false;
const bool kAvx512 = false;
#endif

}  // namespace

bool has_f16c() { return kF16c; }
bool has_avx2() { return kAvx2; }

void widen(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
#if defined(__x86_64__)
      if (kAvx512) return widen_f16_512(s, dst, n);
      if (kF16c) return widen_f16_hw(s, dst, n);
#endif
      return widen_f16_scalar(s, dst, n);
    }
    case DType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
#if defined(__x86_64__)
      if (kAvx512) return widen_bf16_512(s, dst, n);
      if (kAvx2) return widen_bf16_hw(s, dst, n);
#endif
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(s[i]);
      return;
    }
  }
}

void narrow(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
#if defined(__x86_64__)
      if (kAvx512) return narrow_f16_512(src, d, n);
      if (kF16c) return narrow_f16_hw(src, d, n);
#endif
      return narrow_f16_scalar(src, d, n);
    }
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
#if defined(__x86_64__)
      if (kAvx512) return narrow_bf16_512(src, d, n);
      if (kAvx2) return narrow_bf16_hw(src, d, n);
#endif
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(src[i]);
      return;
    }
  }
}

void add_to_f64(const float* x, double* sum, int64_t n) {
#if defined(__x86_64__)
  if (kAvx512) return add_to_f64_512(x, sum, n);
  if (kAvx2) return add_to_f64_256(x, sum, n);
#endif
  for (int64_t i = 0; i < n; ++i) sum[i] += x[i];
}

}  // namespace ampgan::cpu
