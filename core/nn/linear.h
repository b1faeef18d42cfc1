// Fully connected layer: y (n, out) = x (n, in) W^T + b, W (out, in), b FP32.
#pragma once

#include <memory>

#include "core/nn/layer.h"
#include "core/nn/spectral_norm.h"

namespace ampgan {

class Linear final : public Layer {
 public:
  Linear(Backend& b, const std::string& prefix, int in_features, int out_features, bool bias = true);
  std::string type() const override { return "Linear"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], out_ch_}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
  std::vector<Parameter*> parameters() override;
  std::vector<StateBuffer*> buffers() override;
  // From now on compute with W / sigma(W) (core/nn/spectral_norm.h).
  void enable_spectral_norm(Backend& b, uint64_t seed, uint64_t stream);
  void update_spectral_norm(Backend& b) override;
  double flops(const Shape& in) const override { return 2.0 * in[0] * in_ch_ * out_ch_; }

 private:
  int in_ch_, out_ch_;
  bool has_bias_;
  std::string prefix_;
  Parameter weight_, bias_;
  std::unique_ptr<SpectralNorm> sn_;
  Tensor x_, w_used_;
};

}  // namespace ampgan
