// Transposed 2-D convolution (the generator's up-sampling). Its forward pass is the backward-data
// pass of the convolution it transposes, so both backends need only the three convolution
// calls. Weights are stored (in_ch, k, k, out_ch): the KRSC weights of that convolution.
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class ConvTranspose2d final : public Layer {
 public:
  ConvTranspose2d(Backend& b, const std::string& prefix, int in_ch, int out_ch, int kernel, int stride, int pad);
  std::string type() const override { return "ConvTranspose2d"; }
  Shape output_shape(const Shape& in) const override;
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
  std::vector<Parameter*> parameters() override { return {&weight_}; }
  double flops(const Shape& in) const override { return geometry(in).flops(); }
  // The geometry, for readers of a trained network (the ONNX export).
  int kernel() const { return kernel_; }
  int stride() const { return stride_; }
  int pad() const { return pad_; }

 private:
  // The convolution from this layer's output back to its input.
  ConvGeometry geometry(const Shape& in) const;
  int in_ch_, out_ch_, kernel_, stride_, pad_;
  Parameter weight_;
  Tensor x_;
};

}  // namespace ampgan
