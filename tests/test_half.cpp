// Half and bfloat16 conversions: every bit pattern, and the boundary cases where rounding,
// overflow and underflow decide what a gradient becomes.
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "core/tensor/half.h"

using namespace ampgan;

namespace {
uint16_t h(float f) { return float_to_half_bits(f); }
float hf(uint16_t b) { return half_bits_to_float(b); }
bool is_nan_half(uint16_t b) { return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0; }
}  // namespace

TEST(Half, EveryBitPatternRoundTrips) {
  int nans = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    const float f = hf(b);
    if (is_nan_half(b)) {
      ASSERT_TRUE(std::isnan(f)) << i;
      ASSERT_TRUE(is_nan_half(h(f))) << i;
      ++nans;
      continue;
    }
    ASSERT_EQ(h(f), b) << "pattern " << i << " -> " << f;
  }
  EXPECT_EQ(nans, 2 * 1023);  // two signs x 1023 non-zero mantissas
}

TEST(Half, KnownValues) {
  EXPECT_EQ(hf(0x3c00), 1.0f);
  EXPECT_EQ(hf(0xc000), -2.0f);
  EXPECT_EQ(hf(0x7bff), 65504.0f);                  // largest finite
  EXPECT_EQ(hf(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(hf(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(hf(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_TRUE(std::isinf(hf(0x7c00)) && hf(0x7c00) > 0);
  EXPECT_TRUE(std::isinf(hf(0xfc00)) && hf(0xfc00) < 0);
  EXPECT_TRUE(std::signbit(hf(0x8000)) && hf(0x8000) == 0.0f);
}

TEST(Half, OverflowBoundary) {
  EXPECT_EQ(h(65504.0f), 0x7bff);
  EXPECT_EQ(h(65519.99f), 0x7bff);  // below the midpoint to the next (virtual) value 65536
  EXPECT_EQ(h(65520.0f), 0x7c00);   // the midpoint ties to even: inf
  EXPECT_EQ(h(-65520.0f), 0xfc00);
  EXPECT_EQ(h(1e10f), 0x7c00);
  EXPECT_EQ(h(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(is_nan_half(h(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Half, UnderflowBoundary) {
  const float tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(h(tiny), 0x0001);
  EXPECT_EQ(h(std::ldexp(1.0f, -25)), 0x0000);                        // exactly half of the smallest: ties to even (0)
  EXPECT_EQ(h(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);  // just above: rounds up
  EXPECT_EQ(h(std::ldexp(3.0f, -25)), 0x0002);                        // 1.5 ulp ties to even: 2
  EXPECT_EQ(h(std::ldexp(5.0f, -26)), 0x0001);                        // 1.25 ulp rounds down
  EXPECT_EQ(h(-std::ldexp(1.0f, -26)), 0x8000);                       // negative underflow keeps the sign
  EXPECT_EQ(h(std::ldexp(1.0f, -14)), 0x0400);
  // Largest subnormal + half an ulp ties to even: 0x3ff is odd, so it rounds up to the smallest normal.
  EXPECT_EQ(h(std::ldexp(1023.5f, -24)), 0x0400);
  EXPECT_EQ(h(std::ldexp(1022.5f, -24)), 0x03fe);
}

TEST(Half, NormalRoundingTiesToEven) {
  // Between 1 and 1 + 2^-10: the midpoint rounds to even (1), just above rounds up.
  EXPECT_EQ(h(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(h(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(h(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // 1.5 ulp: to even
  EXPECT_EQ(h(2047.0f), 0x67ff);
  EXPECT_EQ(h(2049.0f), 0x6800);  // 2049 between 2048 and 2050: ties to even 2048
}

TEST(BFloat16, EveryBitPatternRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    const float f = bf16_bits_to_float(b);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(f)))) << i;
      continue;
    }
    ASSERT_EQ(float_to_bf16_bits(f), b) << i;
  }
}

TEST(BFloat16, RoundingAndRange) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie: to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(float_to_bf16_bits(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  // Largest finite bf16 is (2 - 2^-7) * 2^127; the float max rounds past it to inf.
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bf16_bits_to_float(0x7f7f), std::ldexp(255.0f, 120));
  // bf16 keeps FP32's range: 2^-100 is representable (FP16 would flush it to zero).
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(std::ldexp(1.0f, -100))), std::ldexp(1.0f, -100));
  EXPECT_EQ(h(std::ldexp(1.0f, -100)), 0x0000);
  // Subnormal floats survive as bf16 subnormals.
  const float sub = std::ldexp(1.0f, -130);
  EXPECT_TRUE(bf16_bits_is_subnormal(float_to_bf16_bits(sub)));
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(sub)), sub);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
}

TEST(Half, Classification) {
  EXPECT_TRUE(half_bits_is_zero(0x8000));
  EXPECT_TRUE(half_bits_is_subnormal(0x0001));
  EXPECT_FALSE(half_bits_is_subnormal(0x0400));
  EXPECT_FALSE(half_bits_is_finite(0x7c00));
  EXPECT_FALSE(half_bits_is_finite(0x7e00));
  EXPECT_TRUE(half_bits_is_finite(0x7bff));
}
