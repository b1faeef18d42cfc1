// Flattens (n, ...) to (n, features). With to_fp32, also casts to FP32: the discriminator's
// logit leaves half precision here, so the loss is computed in FP32 (as autocast does), and the
// scaled gradient re-enters half precision here on the way back -- the first place it can
// overflow.
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class Flatten final : public Layer {
 public:
  explicit Flatten(bool to_fp32) : to_fp32_(to_fp32) {}
  std::string type() const override { return to_fp32_ ? "Flatten(fp32)" : "Flatten"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], in.numel() / in[0]}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;

 private:
  bool to_fp32_;
  Shape in_shape_;
};

// Views (n, features) as (n, h, w, c): the generator's linear layer becomes its first feature map.
class Unflatten final : public Layer {
 public:
  Unflatten(int h, int w, int c) : h_(h), w_(w), c_(c) {}
  std::string type() const override { return "Unflatten"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], h_, w_, c_}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;

 private:
  int h_, w_, c_;
  Shape in_shape_;
};

}  // namespace ampgan
