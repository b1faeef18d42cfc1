// The gradient exponent histogram. Part of the element-wise arithmetic both compilers read
// (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- gradient exponent histogram ------------------------------------------------------------

// Bins of floor(log2|g|) from kHistMinExp to kHistMaxExp, then one for exact zeros and one for
// inf/NaN. Wide enough for FP32 gradients; FP16's ranges sit inside it (subnormal -24..-15,
// normal -14..15).
constexpr int kHistMinExp = -64;
constexpr int kHistMaxExp = 31;
constexpr int kHistZeroBin = kHistMaxExp - kHistMinExp + 1;
constexpr int kHistNonFiniteBin = kHistZeroBin + 1;
constexpr int kHistBins = kHistNonFiniteBin + 1;

AMPGAN_HD int exponent_bin(float g) {
  const uint32_t a = float_bits(g) & 0x7fffffffu;
  if (a >= 0x7f800000u) return kHistNonFiniteBin;
  if (a == 0) return kHistZeroBin;
  int e = static_cast<int>(a >> 23) - 127;
  if (e < kHistMinExp) e = kHistMinExp;
  if (e > kHistMaxExp) e = kHistMaxExp;
  return e - kHistMinExp;
}

}  // namespace ampgan::ew
