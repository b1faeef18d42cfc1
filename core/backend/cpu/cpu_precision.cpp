#include "core/backend/cpu/cpu_precision.h"

#include "core/backend/cpu/cpu_gemm.h"
#include "core/common/cpu_features.h"

namespace ampgan {

namespace {

// Whether oneDNN multiplies BF16 as BF16 here: a JIT kernel for a typical convolution tile.
bool bf16_kernel() {
  static const bool ok = cpu_features().avx512_bf16 &&
                         cpu::onednn_supports(cpu::GemmKernel::OneDnnBf16, {false, true, 64, 64, 576, 576, 576, 64});
  return ok;
}

}  // namespace

bool cpu_precision_is_hardware(const std::string& precision, CpuKernels mode) {
  return precision == "bf16" && mode != CpuKernels::OpenBlas && bf16_kernel();
}

std::string cpu_precision_support(const std::string& precision, CpuKernels mode) {
  const CpuFeatures& f = cpu_features();
  const std::string libs = mode == CpuKernels::OpenBlas ? "OpenBLAS"
                           : !cpu::onednn_available()   ? "OpenBLAS (no oneDNN in this build)"
                           : mode == CpuKernels::OneDnn
                               ? cpu::onednn_summary()
                               : "OpenBLAS or " + cpu::onednn_summary() + ", the faster per layer";
  if (precision == "fp32" || precision == "tf32") {
    const char* isa = f.avx512f ? "AVX-512" : f.avx2 ? "AVX2" : "SSE";
    std::string s = std::string("hardware: FP32 ") + (f.fma ? "FMA" : "multiply-add") + " (" + isa + "), " + libs;
    if (precision == "tf32") s += "; TF32 is a GPU mode, on the CPU it is FP32";
    return s;
  }
  if (precision == "bf16") {
    if (cpu_precision_is_hardware(precision, mode)) {
      // oneDNN takes AMX tiles for the products where it has them (avx512_core_amx), AVX512-BF16 elsewhere.
      const std::string onednn = cpu::onednn_summary();
      const bool amx = f.amx_bf16 && onednn.find("amx") != std::string::npos;
      return std::string("hardware: BF16 products on ") + (amx ? "AMX-BF16 and AVX512-BF16" : "AVX512-BF16") + " (" +
             onednn + "), FP32 accumulation, stored as BF16 (half the memory)" +
             (mode == CpuKernels::Auto ? "; where measured faster than FP32 products, per layer" : "");
    }
    std::string s = "emulated: stored as BF16 (half the memory), computed in FP32; no speed-up expected";
    if (!f.avx512_bf16 && !f.amx_bf16) return s + " (this CPU has no AVX512-BF16 or AMX-BF16)";
    if (mode == CpuKernels::OpenBlas)
      return s + " (--cpu-kernels openblas; this CPU has AVX512-BF16, which oneDNN uses)";
    if (!cpu::onednn_available())
      return s + " (this CPU has AVX512-BF16; this build has no oneDNN, which would use it)";
    return s + " (this CPU has AVX512-BF16, but " + cpu::onednn_summary() + " has no BF16 kernel here)";
  }
  if (precision == "fp16") {
    std::string s = "emulated: stored as FP16 (half the memory), computed in FP32";
    s += f.f16c ? " with F16C conversions" : " with software conversions";
    s += "; no speed-up expected";
    // oneDNN 2.6 (Debian 12's) creates no FP16 matmul or convolution on any CPU, AVX512-FP16 included.
    if (!f.avx512_fp16 && !f.amx_fp16)
      s += " (this CPU has no AVX512-FP16 or AMX-FP16)";
    else if (cpu::onednn_available())
      s += " (this CPU has FP16 arithmetic; " + cpu::onednn_summary() + " has no FP16 products)";
    else
      s += " (this CPU has FP16 arithmetic, which this build does not use)";
    return s;
  }
  return "unknown precision " + precision;
}

}  // namespace ampgan
