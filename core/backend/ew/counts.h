// Counts kept in FP32 slots of the scalars tensor, exact beyond 2^24. Part of the element-wise arithmetic both
// compilers read (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- counts in FP32 slots ------------------------------------------------------------------------
// FP32 holds every integer only up to 2^24 = 16,777,216; past it `c += 1` stops counting. Counts
// that can get there -- gradient values per network, Adam's t, the latent stream's step counter --
// take two FP32 slots [lo, hi]: count = hi * 2^24 + lo, 0 <= lo < 2^24, exact up to 2^48. Below
// 2^24, lo is the very float a one-slot count held, so nothing changes for existing runs.
constexpr float kCountRadix = 16777216.0f;  // 2^24

AMPGAN_HD void count_store(float* c, uint64_t n) {
  c[0] = static_cast<float>(static_cast<uint32_t>(n & 0xFFFFFFu));
  c[1] = static_cast<float>(n >> 24);
}

AMPGAN_HD uint64_t count_load(const float* c) {
  return (static_cast<uint64_t>(c[1]) << 24) + static_cast<uint64_t>(c[0]);
}

AMPGAN_HD void count_increment(float* c) {
  const float lo = c[0] + 1.0f;  // exact: c[0] < 2^24
  if (lo < kCountRadix) {
    c[0] = lo;
  } else {
    c[0] = 0.0f;
    c[1] += 1.0f;
  }
}

}  // namespace ampgan::ew
