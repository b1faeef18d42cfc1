// The step's scalars tensor, named: where the backend writes each result of one training
// iteration (losses, D's outputs, each network's loss scale and gradient check, each gradient
// tensor's statistics, the extra D steps' flags), and how the host decodes a read-back copy into
// a StepMetrics row. Nothing in the step reads it on the host: it comes back asynchronously.
//
//   [0, kSlotCount)                            the StepSlot values (step_metrics.h)
//   [tensor(0), tensor(T))                     kTensorStatSlots per gradient tensor, D's then G's
//   [extra_d(0), extra_d(n_dis - 1))           kExtraDSlots per extra D step (n_dis > 1)
#pragma once

#include <vector>

#include "core/backend/backend.h"
#include "core/train/step_metrics.h"

namespace ampgan {

// Where one network's step writes (Backend::grad_stats and the step around it).
struct NetworkSlots {
  int scale;                                        // the loss scale the step used
  int found_inf, sum_sq, zeros, subnormals, count;  // Backend::grad_stats
  int replaced;                                     // nan_to_num's count (AmpStrategy::NanToNum)
  int tensors;                                      // its first per-tensor statistics slot
};

class StepScalarsLayout {
 public:
  // What an extra D step keeps of its own (the next D step overwrites the StepSlot values).
  enum ExtraDSlot : int { kExtraFoundInf = 0, kExtraReplaced = 1 /* a count: two slots */, kExtraDSlots = 3 };

  StepScalarsLayout() = default;
  // tensors_d of tensors are D's; extra_d_steps = n_dis - 1.
  StepScalarsLayout(int tensors, int tensors_d, int extra_d_steps);

  int tensor(int k) const { return kSlotCount + kTensorStatSlots * k; }  // k-th gradient tensor's first slot
  int extra_d(int k) const { return head() + kExtraDSlots * k; }         // k-th extra D step's first slot
  int head() const { return tensor(tensors_); }  // the slots every D step and the G step rewrite
  int size() const { return extra_d(extra_d_steps_); }
  NetworkSlots d() const;
  NetworkSlots g() const;

  // The row of one iteration from its read-back scalars s (size() values): losses, D's outputs,
  // scales, skips (every D step's), gradient norms (NaN when skipped), underflow, nan_to_num's
  // counts, and with tensor_numel (each tensor's size) the per-tensor statistics. The step,
  // precision, timing and memory are the caller's.
  void decode(const float* s, const std::vector<int64_t>* tensor_numel, StepMetrics& m) const;

 private:
  int tensors_ = 0, tensors_d_ = 0, extra_d_steps_ = 0;
};

}  // namespace ampgan
