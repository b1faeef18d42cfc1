// Adam over FP32 master weights (Kingma & Ba, 2015; PyTorch's formulation). One fused backend
// call per network reads the scaled gradients, updates master weights and FP32 moments, and
// writes the half working copies; it does nothing on a step whose gradients were not finite.
// The moments are Adam's own (one m and v per parameter, in parameter order), as in an
// optimizer whose state is its own rather than the layers'.
#pragma once

#include <vector>

#include "core/nn/layer.h"

namespace ampgan {

class Adam {
 public:
  Adam(Backend& b, std::vector<Parameter*> params, const AdamConfig& cfg);

  void step(Backend& b, const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot);

  const AdamConfig& config() const { return cfg_; }
  void set_lr(float lr) { cfg_.lr = lr; }
  Tensor& step_count() { return step_count_; }  // FP32 [lo, hi] count: Adam's t, steps actually taken
  // The FP32 moments of parameter i (in the order of the list given to the constructor), each
  // of the parameter's shape: for checkpoints.
  Tensor& m(size_t i) { return m_.at(i); }
  Tensor& v(size_t i) { return v_.at(i); }

 private:
  std::vector<Parameter*> params_;
  AdamConfig cfg_;
  std::vector<Tensor> m_, v_;  // first and second moments, FP32, one per parameter
  Tensor step_count_;
};

}  // namespace ampgan
