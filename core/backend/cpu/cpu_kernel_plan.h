// Which kernel (cpu_gemm.h) runs each matrix-product shape of the CPU backend. In auto mode the
// first product of a shape times every kernel that can run it here (on scratch operands of that
// shape, a few milliseconds) and keeps the fastest. Choices are
//   - reused from a resumed run's record first (a run continues with the kernels it started
//     with, so resume stays bit-identical on the same host),
//   - then from this host's record in the cache folder (cpu-kernels-<host>.txt), so that two
//     runs on one machine make the same choices, and only then measured (and added there).
// The kernels differ only in the order of FP32 sums (and onednn-bf16 in subnormal BF16 inputs),
// so a choice changes the last bits of a result, never its precision.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_gemm.h"

namespace ampgan::cpu {

// The candidates for operands stored in `dt`, fastest-to-try order: BF16 tensors may also be
// multiplied as BF16 (where oneDNN has a JIT kernel for it); FP16 and FP32 as FP32.
std::vector<GemmKernel> gemm_candidates(DType dt);

class KernelPlan {
 public:
  void set_mode(CpuKernels mode);
  CpuKernels mode() const { return mode_; }
  // One kernel for every product (the op table's oneDNN backends): onednn-bf16 multiplies BF16
  // operands and, like onednn-f32, FP32 and FP16 ones (widened) in FP32. Throws Error where it
  // cannot run a product.
  void force(GemmKernel k);
  // The kernel for a product of operands stored in dt; measures it when auto and new.
  GemmKernel choose(const GemmShape& s, DType dt);
  // Every choice made or reused so far: ("bf16 nt 64x128x1024 lda ...", "onednn-bf16").
  std::vector<std::pair<std::string, std::string>> choices() const;
  // Choices to reuse before measuring (a resumed run's record); kernels this build or CPU cannot
  // run are skipped (and measured again when met).
  void reuse(const std::vector<std::pair<std::string, std::string>>& recorded);

 private:
  GemmKernel forced(const GemmShape& s, DType dt) const;
  mutable std::mutex mu_;
  CpuKernels mode_ = CpuKernels::Auto;
  bool forced_kernel_ = false;
  GemmKernel kernel_ = GemmKernel::OpenBlas;
  std::map<std::string, GemmKernel> chosen_;    // key: dtype + " " + shape key
  std::map<std::string, GemmKernel> recorded_;  // from reuse(), used when met
};

// Times kernel k on a product of this shape (scratch operands); the best of a few runs, seconds.
double time_gemm(GemmKernel k, const GemmShape& s);

}  // namespace ampgan::cpu
