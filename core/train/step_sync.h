// What the Trainer calls around each network's unscale-and-check pass (Backend::grad_stats) when
// it trains data-parallel. The per-step engine owns this interface; core/dist/data_parallel.h
// implements it (the run layer plugs into the engine, not the other way). Without one the step is
// as on one device.
#pragma once

#include <vector>

#include "core/tensor/tensor.h"

namespace ampgan::dist {

class StepSync {
 public:
  virtual ~StepSync() = default;
  // Before the check: this rank's gradients (of its slice of the batch) become the mean over all
  // ranks, so the check, Adam and the loss scaler see the same numbers on every rank.
  virtual void before_check(const std::vector<Tensor>& grads) = 0;
  // After it: scalars[found_inf_slot] becomes the MAX over ranks (every rank skips together), and
  // scalars[mean_first, mean_end) (the losses and D outputs the user is shown) the mean.
  virtual void after_check(Tensor& scalars, int found_inf_slot, int mean_first, int mean_end) = 0;
};

}  // namespace ampgan::dist
