// What the CPU (core/backend/cpu/cpu_amp_guards.cpp) and CUDA (gpu/kernels_amp_guards.cu)
// versions of the AMP safeguards share: the argument checks. The arithmetic is ew::clamp_value,
// ew::clamp_grad and ew::nan_to_num_value (core/backend/ew/amp_guards.h).
#pragma once

#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/tensor/tensor.h"

namespace ampgan {

inline void check_clamp(const Tensor& a, const Tensor& b, float c, const char* op) {
  if (a.dtype() != b.dtype() || a.numel() != b.numel())
    throw Error(std::string(op) + ": operands differ in dtype or size", "", "this is a bug in the caller");
  if (!(c > 0.0f))
    throw Error(std::string(op) + ": the clamp bound must be positive", "", "this is a bug in the caller");
}

inline void check_nan_to_num(const Tensor& scalars, float bound, int count_slot, int found_inf_slot) {
  if (scalars.dtype() != DType::F32 || count_slot < 0 || count_slot + 1 >= scalars.numel() ||
      found_inf_slot >= scalars.numel())
    throw Error("nan_to_num: slot out of range", "", "this is a bug in the caller");
  if (!(bound > 0.0f))
    throw Error("nan_to_num: the replacement bound must be positive", "", "this is a bug in the caller");
}

}  // namespace ampgan
