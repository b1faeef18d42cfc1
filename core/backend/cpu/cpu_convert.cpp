#include "core/backend/cpu/cpu_convert.h"

#include <cstring>

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
const bool kF16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#else
const bool kF16c = false;
#endif

}  // namespace

bool has_f16c() { return kF16c; }

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
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(src[i]);
      return;
    }
  }
}

}  // namespace ampgan::cpu
