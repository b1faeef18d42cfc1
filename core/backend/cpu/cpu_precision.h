// What the CPU backend computes each precision with on this machine, for honesty in `ampgan
// devices`, the bench, the status bar and the Compare verdict: whether a precision runs on
// hardware that computes it faster than FP32, or is emulated (stored in 16 bits, multiplied in
// FP32), where mixed precision saves memory but no time.
#pragma once

#include <string>

#include "core/backend/backend.h"

namespace ampgan {

// One line per compute precision ("fp32", "tf32", "fp16" or "bf16") under the given kernel mode,
// e.g. "hardware: BF16 products on AVX512-BF16 (oneDNN 2.6.3, avx512_core_bf16), FP32
// accumulation" or "emulated: stored as FP16 (half the memory), computed in FP32 ...".
std::string cpu_precision_support(const std::string& precision, CpuKernels mode = CpuKernels::Auto);
// True when the CPU backend multiplies that precision faster than FP32 here (BF16 with oneDNN on
// AVX512-BF16); the BF16 kernel is then the candidate every BF16 product is timed against.
bool cpu_precision_is_hardware(const std::string& precision, CpuKernels mode = CpuKernels::Auto);

}  // namespace ampgan
