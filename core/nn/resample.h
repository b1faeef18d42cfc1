// The ResNet GAN's resampling layers, NHWC: nearest-neighbour upsampling x2 (generator blocks),
// 2x2 average pooling (discriminator blocks) and global sum pooling (the discriminator's head,
// as in SNGAN: a sum, not a mean, over the last feature map).
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class Upsample2x final : public Layer {
 public:
  std::string type() const override { return "Upsample2x"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], 2 * in[1], 2 * in[2], in[3]}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;

 private:
  Shape in_shape_;
};

class AvgPool2x final : public Layer {
 public:
  std::string type() const override { return "AvgPool2x"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], in[1] / 2, in[2] / 2, in[3]}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;

 private:
  Shape in_shape_;
};

// (n, h, w, c) -> (n, c).
class GlobalSumPool final : public Layer {
 public:
  std::string type() const override { return "GlobalSumPool"; }
  Shape output_shape(const Shape& in) const override { return Shape{in[0], in[3]}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;

 private:
  Shape in_shape_;
};

}  // namespace ampgan
