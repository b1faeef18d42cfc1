// Element types. Half-precision tensors hold real 16-bit values (IEEE binary16 or bfloat16),
// never floats in disguise, so rounding, underflow and overflow happen on the CPU exactly as
// on a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ampgan {

enum class DType : uint8_t { F32 = 0, F16 = 1, BF16 = 2 };

inline size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }
inline bool is_half(DType t) { return t != DType::F32; }
const char* dtype_name(DType t);  // "f32", "f16", "bf16"

}  // namespace ampgan
