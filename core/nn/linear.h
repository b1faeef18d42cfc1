// Fully connected layer: y (n, out) = x (n, in) W^T + b, W (out, in), b FP32.
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class Linear final : public Layer {
 public:
  Linear(Backend& b, const std::string& prefix, int in_features, int out_features, bool bias = true);
  std::string type() const override { return "Linear"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], out_ch_}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, bool need_dx) override;
  std::vector<Parameter*> parameters() override;
  double flops(const Shape& in) const override { return 2.0 * in[0] * in_ch_ * out_ch_; }

 private:
  int in_ch_, out_ch_;
  bool has_bias_;
  Parameter weight_, bias_;
  Tensor x_;
};

}  // namespace ampgan
