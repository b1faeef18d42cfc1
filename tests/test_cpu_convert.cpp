// The CPU backend's bulk conversions (F16C for FP16, AVX2 integer arithmetic for BF16) must
// give exactly the bits of the scalar reference in core/tensor/half.h, which the GPU kernels
// also use: every 16-bit pattern when widening, and a dense sweep of FP32 patterns (every
// exponent, the rounding ties, subnormals, infinities, NaN payloads) when narrowing.
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_convert.h"
#include "core/tensor/half.h"

using namespace ampgan;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// FP32 patterns where rounding to 16 bits is hard: for every sign and exponent, mantissas just
// below, at and above each tie of both formats, plus a stride through all 2^32 patterns.
std::vector<float> hard_floats() {
  std::vector<float> v;
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t low : {0x0u,     0x1u,     0xfffu,    0x1000u,   0x1001u,   0x1fffu,   0x2000u,
                           0x2001u,  0x7fffu,  0x8000u,   0x8001u,   0xffffu,   0x10000u,  0x17fffu,
                           0x18000u, 0x18001u, 0x7fffffu, 0x400000u, 0x7fe000u, 0x7ff000u, 0x7fefffu})
        v.push_back(from_bits(sign << 31 | e << 23 | (low & 0x7fffffu)));
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4099) v.push_back(from_bits(static_cast<uint32_t>(u)));
  return v;
}

}  // namespace

TEST(CpuConvert, WidenEveryPatternLikeScalar) {
  std::vector<uint16_t> all(65536 + 5);  // +5: a tail shorter than one vector
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> out(all.size());
  cpu::widen(DType::F16, all.data(), out.data(), static_cast<int64_t>(all.size()));
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(bits_of(out[i]), bits_of(half_bits_to_float(all[i]))) << "f16 pattern " << std::hex << all[i];
  cpu::widen(DType::BF16, all.data(), out.data(), static_cast<int64_t>(all.size()));
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(bits_of(out[i]), bits_of(bf16_bits_to_float(all[i]))) << "bf16 pattern " << std::hex << all[i];
}

TEST(CpuConvert, NarrowDenseSweepLikeScalar) {
  const std::vector<float> in = hard_floats();
  std::vector<uint16_t> out(in.size());
  for (DType t : {DType::F16, DType::BF16}) {
    // Unaligned start and an odd length, so the vector loop's tail and offsets are covered too.
    const int64_t n = static_cast<int64_t>(in.size()) - 3;
    cpu::narrow(t, in.data() + 1, out.data() + 1, n);
    for (int64_t i = 1; i <= n; ++i) {
      const float f = in[static_cast<size_t>(i)];
      const uint16_t want = t == DType::F16 ? float_to_half_bits(f) : float_to_bf16_bits(f);
      ASSERT_EQ(out[static_cast<size_t>(i)], want) << dtype_name(t) << " of FP32 pattern " << std::hex << bits_of(f);
    }
  }
}

// The per-channel double sums of the bias gradient: the vector paths add each element exactly as
// the scalar loop does (one double addition per value, in the same order), so every sum is the
// same bit for bit, at every length (vector bodies and scalar tails), whichever path this CPU takes.
TEST(CpuConvert, AddToDoublesLikeScalar) {
  const std::vector<float> hard = hard_floats();
  for (int64_t n : {1, 3, 4, 7, 8, 9, 15, 16, 17, 37, 512}) {
    std::vector<double> want(static_cast<size_t>(n), 0.25), got = want;
    for (size_t row = 0; row < 40; ++row) {
      const float* x = hard.data() + (row * 7919) % (hard.size() - static_cast<size_t>(n));
      cpu::add_to_f64(x, got.data(), n);
      for (int64_t j = 0; j < n; ++j) want[static_cast<size_t>(j)] += x[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      const double a = want[static_cast<size_t>(j)], b = got[static_cast<size_t>(j)];
      ASSERT_TRUE((a != a && b != b) || std::memcmp(&a, &b, sizeof a) == 0) << "n " << n << " at " << j;
    }
  }
}
