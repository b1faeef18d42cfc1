// ReLU, LeakyReLU and Tanh. The backward pass needs only the output.
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class Activation final : public Layer {
 public:
  explicit Activation(ew::Act act, float alpha = 0.0f) : act_(act), alpha_(alpha) {}
  std::string type() const override;
  Shape output_shape(const Shape& in) const override { return in; }
  float alpha() const { return alpha_; }  // LeakyReLU's negative slope
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;

 private:
  ew::Act act_;
  float alpha_;
};

}  // namespace ampgan
