#include "core/common/cpu_features.h"

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/common/error.h"

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
  const bool os_avx = (xs & 0x6) == 0x6;                 // XMM and YMM state saved by the OS
  const bool os_avx512 = os_avx && (xs & 0xe0) == 0xe0;  // opmask, ZMM0-15 high, ZMM16-31
  const bool os_amx = (xs & 0x60000) == 0x60000;         // tile config and tile data
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

// AMPGAN_CPU_FEATURES=avx2 makes the engine behave as on a CPU without AVX-512: its own kernels
// and oneDNN's (cpu_gemm.cpp) take their AVX2 paths. For running the tests as the other host
// kind does (tests/README.md); OpenBLAS has its own switch, OPENBLAS_CORETYPE.
CpuFeatures with_override(CpuFeatures f) {
  const char* env = std::getenv("AMPGAN_CPU_FEATURES");
  if (!env || !*env) return f;
  if (std::string(env) != "avx2")
    throw Error("unknown value '" + std::string(env) + "'", "AMPGAN_CPU_FEATURES", "use avx2, or unset it");
  f.avx512f = f.avx512_bf16 = f.avx512_fp16 = f.amx_bf16 = f.amx_fp16 = false;
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = with_override(detect());
  return f;
}

}  // namespace ampgan
