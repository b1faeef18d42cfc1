// Batch norm over N, H and W per channel. Statistics, scale and shift are FP32 in every mode;
// input and output are in the compute dtype.
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(Backend& b, const std::string& prefix, int channels, float eps = 1e-5f, float momentum = 0.1f);
  std::string type() const override { return "BatchNorm2d"; }
  Shape output_shape(const Shape& in) const override { return in; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
  std::vector<Parameter*> parameters() override { return {&gamma_, &beta_}; }
  std::vector<StateBuffer*> buffers() override { return {&running_mean_, &running_var_}; }
  void staged_pairs(std::vector<Tensor>& running, std::vector<Tensor>& staged) override {
    running.insert(running.end(), {running_mean_.value, running_var_.value});
    staged.insert(staged.end(), {staged_mean_, staged_var_});
  }
  int64_t batches_tracked() const { return batches_tracked_; }
  float eps() const { return eps_; }
  void set_batches_tracked(int64_t n) { batches_tracked_ = n; }
  // The running averages' weight of a new batch (0.1); core/train/standing_stats.h sets 1/k for
  // batch k, which makes them the plain average of k batches' statistics.
  float momentum() const { return momentum_; }
  void set_momentum(float m) { momentum_ = m; }

 private:
  int channels_;
  float eps_, momentum_;
  Parameter gamma_, beta_;
  StateBuffer running_mean_, running_var_;
  Tensor staged_mean_, staged_var_;  // what a staged training forward updates (equal to the running ones between steps)
  Tensor save_mean_, save_invstd_, x_, scratch_dgamma_, scratch_dbeta_;
  int64_t batches_tracked_ = 0;
};

}  // namespace ampgan
