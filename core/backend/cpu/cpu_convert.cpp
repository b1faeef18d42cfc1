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
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(hi, one))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), nan);
    // 32 -> 16 bits: packus works per 128-bit lane, so gather the two lanes' low halves.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) d[i] = float_to_bf16_bits(s[i]);
}
const bool kF16c = cpu_features().f16c;
const bool kAvx2 = cpu_features().avx2;
#else
const bool kF16c = false;
const bool kAvx2 = false;
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
      if (kF16c) return widen_f16_hw(s, dst, n);
#endif
      return widen_f16_scalar(s, dst, n);
    }
    case DType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
#if defined(__x86_64__)
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
      if (kF16c) return narrow_f16_hw(src, d, n);
#endif
      return narrow_f16_scalar(src, d, n);
    }
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
#if defined(__x86_64__)
      if (kAvx2) return narrow_bf16_hw(src, d, n);
#endif
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(src[i]);
      return;
    }
  }
}

}  // namespace ampgan::cpu
