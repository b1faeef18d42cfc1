// Conversions between float and the two 16-bit formats, bit-exact, round-to-nearest-even,
// with subnormals, infinities and NaN. Host and device share these (see core/common/hd.h).
//
// binary16: 1 sign, 5 exponent, 10 mantissa bits. Largest finite 65504; smallest normal 2^-14;
//           smallest subnormal 2^-24. Values >= 65520 round to inf.
// bfloat16: the top 16 bits of a float, rounded: float's range, 8 mantissa bits.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/common/hd.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace ampgan {

AMPGAN_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

AMPGAN_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// On the device, finite values and infinities take the hardware conversions (one instruction,
// the same round-to-nearest-even, subnormals included); NaN keeps the code below, which keeps
// the sign and payload bits where the hardware returns one canonical NaN.
AMPGAN_HD uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
#if defined(__CUDA_ARCH__)
  if ((x & 0x7fffffffu) <= 0x7f800000u) return __half_as_ushort(__float2half_rn(f));
#endif
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf or NaN; NaN stays a quiet NaN with its top payload bits
    return static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? (0x200u | ((a >> 13) & 0x3ffu)) : 0u));
  }
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: overflow
  if (a < 0x38800000u) {                                               // below 2^-14: subnormal
    if (a < 0x33000000u) return sign;                                  // <= 2^-25 rounds to 0
    const uint32_t e = a >> 23;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // value / 2^-24 = m * 2^(e-126)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t base = (a - 0x38000000u) >> 13;  // rebias exponent 127 -> 15
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (base & 1u))) ++base;
  return static_cast<uint16_t>(sign | base);
}

AMPGAN_HD float half_bits_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  if ((h & 0x7fffu) <= 0x7c00u) return __half2float(__ushort_as_half(h));  // not NaN: exact in hardware
#endif
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign ? -v : v;
  }
  // inf, or NaN made quiet with its payload kept (as IEEE conversions and F16C do)
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

AMPGAN_HD uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));  // one cvt.rn.bf16.f32 from Ampere on
#else
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // ties to even; carries into inf
  return static_cast<uint16_t>(rounded >> 16);
#endif
}

AMPGAN_HD float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// Rounds a float to the nearest value of a 16-bit format and back: what storing it costs.
AMPGAN_HD float round_half(float f) { return half_bits_to_float(float_to_half_bits(f)); }
AMPGAN_HD float round_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

AMPGAN_HD bool half_bits_is_zero(uint16_t h) { return (h & 0x7fffu) == 0; }
AMPGAN_HD bool half_bits_is_subnormal(uint16_t h) { return (h & 0x7c00u) == 0 && (h & 0x3ffu) != 0; }
AMPGAN_HD bool half_bits_is_finite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }
AMPGAN_HD bool bf16_bits_is_zero(uint16_t b) { return (b & 0x7fffu) == 0; }
AMPGAN_HD bool bf16_bits_is_subnormal(uint16_t b) { return (b & 0x7f80u) == 0 && (b & 0x7fu) != 0; }
AMPGAN_HD bool bf16_bits_is_finite(uint16_t b) { return (b & 0x7f80u) != 0x7f80u; }

}  // namespace ampgan
