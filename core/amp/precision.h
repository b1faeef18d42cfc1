// Precision modes. fp32: everything FP32, TF32 forbidden (a fair baseline). tf32: FP32 with
// tensor-core TF32 math allowed (the same as fp32 on the CPU). fp16: FP16 compute with dynamic
// loss scaling. bf16: BF16 compute; its FP32-sized exponent makes loss scaling unnecessary, so
// it is off unless asked for.
#pragma once

#include <string>

#include "core/tensor/dtype.h"

namespace ampgan {

enum class Precision : uint8_t { FP32, TF32, FP16, BF16 };

Precision parse_precision(const std::string& s);  // throws Error naming --precision
const char* precision_name(Precision p);           // "fp32", "tf32", "fp16", "bf16"
const char* precision_label(Precision p);          // "FP32", "TF32", "FP16 AMP", "BF16 AMP"
DType compute_dtype(Precision p);
inline bool is_mixed(Precision p) { return p == Precision::FP16 || p == Precision::BF16; }

}  // namespace ampgan
