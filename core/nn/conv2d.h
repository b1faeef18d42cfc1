// 2-D convolution, NHWC, weights KRSC, optional FP32 bias (DCGAN uses none).
#pragma once

#include <memory>

#include "core/nn/layer.h"
#include "core/nn/spectral_norm.h"

namespace ampgan {

class Conv2d final : public Layer {
 public:
  Conv2d(Backend& b, const std::string& prefix, int in_ch, int out_ch, int kernel, int stride, int pad, bool bias);
  std::string type() const override { return "Conv2d"; }
  Shape output_shape(const Shape& in) const override;
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
  std::vector<Parameter*> parameters() override;
  std::vector<StateBuffer*> buffers() override;
  // From now on compute with W / sigma(W) (core/nn/spectral_norm.h); u, v from Philox (seed, stream).
  void enable_spectral_norm(Backend& b, uint64_t seed, uint64_t stream);
  void update_spectral_norm(Backend& b) override;
  const SpectralNorm* spectral_norm() const { return sn_.get(); }
  double flops(const Shape& in) const override { return geometry(in).flops(); }
  int in_channels() const { return in_ch_; }
  int out_channels() const { return out_ch_; }
  // The geometry, for readers of a trained network (the ONNX export).
  int kernel() const { return kernel_; }
  int stride() const { return stride_; }
  int pad() const { return pad_; }
  bool has_bias() const { return has_bias_; }

 private:
  ConvGeometry geometry(const Shape& in) const;
  int in_ch_, out_ch_, kernel_, stride_, pad_;
  bool has_bias_;
  std::string prefix_;
  Parameter weight_, bias_;
  std::unique_ptr<SpectralNorm> sn_;
  Tensor x_, w_used_;  // the input and the weight the last forward used (for backward)
};

}  // namespace ampgan
