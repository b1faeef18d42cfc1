// The storage types: load widens to FP32, store rounds to nearest even. Part of the element-wise arithmetic both
// compilers read (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/common/hd.h"
#include "core/tensor/dtype.h"
#include "core/tensor/half.h"

namespace ampgan::ew {

// ---- storage types: load widens to float, store rounds to nearest even ----------------------

struct F32 {
  using T = float;
  static constexpr DType kType = DType::F32;
  static AMPGAN_HD float load(T v) { return v; }
  static AMPGAN_HD T store(float v) { return v; }
  static AMPGAN_HD bool is_zero(T v) { return v == 0.0f; }
  static AMPGAN_HD bool is_subnormal(T v) { return v != 0.0f && fabsf(v) < 1.17549435e-38f; }
  static AMPGAN_HD bool is_finite(T v) { return (float_bits(v) & 0x7f800000u) != 0x7f800000u; }
};

struct F16 {
  using T = uint16_t;
  static constexpr DType kType = DType::F16;
  static AMPGAN_HD float load(T v) { return half_bits_to_float(v); }
  static AMPGAN_HD T store(float v) { return float_to_half_bits(v); }
  static AMPGAN_HD bool is_zero(T v) { return half_bits_is_zero(v); }
  static AMPGAN_HD bool is_subnormal(T v) { return half_bits_is_subnormal(v); }
  static AMPGAN_HD bool is_finite(T v) { return half_bits_is_finite(v); }
};

struct BF16 {
  using T = uint16_t;
  static constexpr DType kType = DType::BF16;
  static AMPGAN_HD float load(T v) { return bf16_bits_to_float(v); }
  static AMPGAN_HD T store(float v) { return float_to_bf16_bits(v); }
  static AMPGAN_HD bool is_zero(T v) { return bf16_bits_is_zero(v); }
  static AMPGAN_HD bool is_subnormal(T v) { return bf16_bits_is_subnormal(v); }
  static AMPGAN_HD bool is_finite(T v) { return bf16_bits_is_finite(v); }
};

}  // namespace ampgan::ew
