#include "core/common/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ampgan {

namespace {

#if defined(__x86_64__)
bool bit(uint32_t r, int b) { return (r >> b) & 1u; }

uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  uint32_t a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = bit(c, 27);
  const uint64_t xs = osxsave ? xcr0() : 0;
  const bool os_avx = (xs & 0x6) == 0x6;           // XMM and YMM state saved by the OS
  const bool os_avx512 = os_avx && (xs & 0xe0) == 0xe0;  // opmask, ZMM0-15 high, ZMM16-31
  const bool os_amx = (xs & 0x60000) == 0x60000;   // tile config and tile data
  f.fma = os_avx && bit(c, 12);
  f.f16c = os_avx && bit(c, 29) && bit(c, 28);
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = os_avx && bit(b, 5);
  f.avx512f = os_avx512 && bit(b, 16);
  f.avx512_fp16 = f.avx512f && bit(d, 23);
  const bool amx_tile = os_amx && bit(d, 24);
  f.amx_bf16 = amx_tile && bit(d, 22);
  const uint32_t max_sub = a;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = f.avx512f && bit(a, 5);
    f.amx_fp16 = amx_tile && bit(a, 21);
  }
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

std::string CpuFeatures::summary() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "AVX2");
  add(fma, "FMA");
  add(f16c, "F16C");
  add(avx512f, "AVX-512");
  add(avx512_bf16, "AVX512-BF16");
  add(avx512_fp16, "AVX512-FP16");
  add(amx_bf16, "AMX-BF16");
  add(amx_fp16, "AMX-FP16");
  return s.empty() ? "no AVX" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

bool cpu_precision_is_hardware(const std::string& precision) {
  // The CPU backend's convolutions and products widen half operands and multiply in FP32
  // (exact, then one rounding), so no precision is faster than FP32 in this build.
  (void)precision;
  return false;
}

std::string cpu_precision_support(const std::string& precision) {
  const CpuFeatures& f = cpu_features();
  if (precision == "fp32" || precision == "tf32") {
    const char* isa = f.avx512f ? "AVX-512" : f.avx2 ? "AVX2" : "SSE";
    std::string s = std::string("hardware: FP32 ") + (f.fma ? "FMA" : "multiply-add") + " (" + isa + ")";
    if (precision == "tf32") s += "; TF32 is a GPU mode, on the CPU it is FP32";
    return s;
  }
  if (precision == "bf16") {
    std::string s = "emulated: stored as BF16 (half the memory), computed in FP32; no speed-up expected";
    s += f.avx512_bf16 || f.amx_bf16
             ? " (this CPU has " + std::string(f.amx_bf16 ? "AMX-BF16" : "AVX512-BF16") +
                   ", which this build's CPU kernels do not use yet)"
             : " (this CPU has no AVX512-BF16 or AMX-BF16)";
    return s;
  }
  if (precision == "fp16") {
    std::string s = "emulated: stored as FP16 (half the memory), computed in FP32";
    s += f.f16c ? " with F16C conversions" : " with software conversions";
    s += "; no speed-up expected";
    s += f.avx512_fp16 || f.amx_fp16 ? " (this CPU has FP16 arithmetic, which this build does not use)"
                                     : " (this CPU has no AVX512-FP16 or AMX-FP16)";
    return s;
  }
  return "unknown precision " + precision;
}

}  // namespace ampgan
