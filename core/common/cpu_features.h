// What this CPU can do for each precision, read once from CPUID (and the OS's saved-state mask,
// XCR0, so that an instruction set the kernel does not enable counts as absent). What the CPU
// backend makes of it, per precision, is core/backend/cpu/cpu_precision.h.
#pragma once

#include <string>

namespace ampgan {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false;                     // AVX-512 Foundation
  bool avx512_bf16 = false;                 // BF16 dot products (VDPBF16PS): 2x the FP32 rate
  bool avx512_fp16 = false;                 // FP16 arithmetic
  bool amx_bf16 = false, amx_fp16 = false;  // tile matrix units (AMX-TILE plus the type)

  // "AVX2 FMA F16C AVX-512 AVX512-BF16 ..." (only what is present), or "no AVX" on old CPUs.
  std::string summary() const;
};

// Detected once, on first use; AMPGAN_CPU_FEATURES=avx2 hides AVX-512 and what builds on it (the
// engine then runs as on an AVX2-only CPU).
const CpuFeatures& cpu_features();

}  // namespace ampgan
