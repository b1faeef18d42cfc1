// What this CPU can do for each precision, read once from CPUID (and the OS's saved-state mask,
// XCR0, so that an instruction set the kernel does not enable counts as absent). The point is
// honesty in `ampgan devices`, the status bar and the bench: whether a precision runs on
// hardware that computes it faster, or is emulated (stored in 16 bits, computed in FP32), where
// mixed precision saves memory but no time.
#pragma once

#include <string>

namespace ampgan {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false;       // AVX-512 Foundation
  bool avx512_bf16 = false;   // BF16 dot products (VDPBF16PS): 2x the FP32 rate
  bool avx512_fp16 = false;   // FP16 arithmetic
  bool amx_bf16 = false, amx_fp16 = false;  // tile matrix units (AMX-TILE plus the type)

  // "AVX2 FMA F16C AVX-512 AVX512-BF16 ..." (only what is present), or "no AVX" on old CPUs.
  std::string summary() const;
};

// Detected once, on first use.
const CpuFeatures& cpu_features();

// For the CPU backend, one line per compute dtype: "fp32" -> "hardware FMA (AVX2)",
// "bf16" -> "emulated: stored as BF16, computed in FP32 ... no speed-up expected" etc. The
// engine's own CPU kernels compute half modes in FP32 today whatever the CPU has, so a CPU
// with AVX512-BF16 is named as such but still reported as emulated (what this build does).
// precision: "fp32", "tf32", "fp16" or "bf16".
std::string cpu_precision_support(const std::string& precision);
// True when the CPU backend computes that precision faster than FP32 (none today).
bool cpu_precision_is_hardware(const std::string& precision);

}  // namespace ampgan
