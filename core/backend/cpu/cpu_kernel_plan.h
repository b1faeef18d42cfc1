// Which kernel runs each matrix product and each convolution of the CPU backend. In auto mode
// the first product of a shape times every kernel that can run it here (cpu_gemm.h: on scratch
// operands of that shape, a few milliseconds), and the first convolution of a geometry times its
// two ways, im2col + a product or oneDNN's direct convolution (cpu_conv_onednn.h: on the call's
// own tensors); the fastest is kept. Choices are
//   - reused from a resumed run's record first (a run continues with the kernels it started
//     with, so resume stays bit-identical on the same host),
//   - then from this host's record in the cache folder (cpu-kernels-<host>.txt), so that two
//     runs on one machine make the same choices, and only then measured (and added there).
// The kernels differ only in the order of FP32 sums (and in subnormal BF16 inputs, which the
// BF16 kernels treat as zero), so a choice changes the last bits of a result, never its precision.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_gemm.h"

namespace ampgan::cpu {

// The candidates for operands stored in `dt`: BF16 tensors may also be multiplied as BF16
// (where oneDNN has a JIT kernel for it); FP16 and FP32 as FP32.
std::vector<GemmKernel> gemm_candidates(DType dt);

// The two ways of running a convolution, by their names in the plan.
constexpr const char* kIm2col = "im2col";       // im2col + the product the plan chooses
constexpr const char* kDirect = "onednn-conv";  // oneDNN's direct convolution

class KernelPlan {
 public:
  void set_mode(CpuKernels mode);
  CpuKernels mode() const;
  // One kernel for every product, and optionally one way for every convolution (the tests that
  // compare kernels): onednn-bf16 multiplies BF16 operands and, like onednn-f32, FP32 and FP16
  // ones (widened) in FP32. Throws Error where a product cannot run so.
  void force(GemmKernel k, std::optional<std::string> conv = std::nullopt);

  // The kernel for a product of operands stored in dt; measures it when auto and new.
  GemmKernel choose(const GemmShape& s, DType dt);
  // The way for a convolution (key: direction, geometry, dtype) among candidates (kIm2col first,
  // then kDirect where it can run): time(name) runs the convolution that way and returns its
  // seconds. Called outside any other choice (time() chooses the products it runs).
  std::string choose_conv(const std::string& key, const std::vector<std::string>& candidates,
                          const std::function<double(const std::string&)>& time);

  // Every choice made or reused so far: ("bf16 nt 64x128x1024 lda ...", "onednn-bf16").
  std::vector<std::pair<std::string, std::string>> choices() const;
  // Choices to reuse before measuring (a resumed run's record); kernels this build or CPU cannot
  // run are skipped (and measured again when met).
  void reuse(const std::vector<std::pair<std::string, std::string>>& recorded);

 private:
  GemmKernel forced(const GemmShape& s, DType dt) const;
  // The choice for key among candidates: made, reused, this host's, or measured by fastest().
  std::string choose_among(const std::string& key, const std::vector<std::string>& candidates,
                           const std::function<std::string()>& fastest);
  mutable std::mutex mu_;
  CpuKernels mode_ = CpuKernels::Auto;
  std::optional<GemmKernel> kernel_;             // force()d
  std::optional<std::string> conv_;              // force()d
  std::map<std::string, std::string> chosen_;    // key: dtype + " " + shape key, or a convolution's
  std::map<std::string, std::string> recorded_;  // from reuse(), used when met
};

// Times kernel k on a product of this shape (scratch operands); the best of a few runs, seconds.
double time_gemm(GemmKernel k, const GemmShape& s);

}  // namespace ampgan::cpu
