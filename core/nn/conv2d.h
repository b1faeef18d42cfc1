// 2-D convolution, NHWC, weights KRSC, optional FP32 bias (DCGAN uses none).
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class Conv2d final : public Layer {
 public:
  Conv2d(Backend& b, const std::string& prefix, int in_ch, int out_ch, int kernel, int stride,
         int pad, bool bias);
  std::string type() const override { return "Conv2d"; }
  Shape output_shape(const Shape& in) const override;
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, bool need_dx) override;
  std::vector<Parameter*> parameters() override;
  double flops(const Shape& in) const override { return geometry(in).flops(); }
  int in_channels() const { return in_ch_; }
  int out_channels() const { return out_ch_; }

 private:
  ConvGeometry geometry(const Shape& in) const;
  int in_ch_, out_ch_, kernel_, stride_, pad_;
  bool has_bias_;
  Parameter weight_, bias_;
  Tensor x_;
};

}  // namespace ampgan
