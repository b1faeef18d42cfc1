// Class-conditional batch norm (de Vries et al. 2017; SNGAN's and BigGAN's generators): batch
// norm, then each sample's channels scaled by 1 + gain(y) and shifted by bias(y), gain and bias
// (classes, channels) embeddings that start at zero (so the network starts as the unconditional
// one). The batch norm keeps its own affine scale and shift, which the class terms then modulate.
// Everything here is FP32 but the feature maps, as batch norm's scale and shift are in every
// mode (autocast keeps batch norm in FP32): the embeddings are batch norm parameters.
#pragma once

#include "core/nn/batchnorm2d.h"

namespace ampgan {

class ConditionalBatchNorm2d final : public Layer {
 public:
  // Parameters "<prefix>weight", "<prefix>bias" (the batch norm's), "<prefix>embed_gain.weight"
  // and "<prefix>embed_bias.weight".
  ConditionalBatchNorm2d(Backend& b, const std::string& prefix, int channels, int classes);
  std::string type() const override { return "ConditionalBatchNorm2d"; }
  Shape output_shape(const Shape& in) const override { return in; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
  std::vector<Parameter*> parameters() override;
  std::vector<StateBuffer*> buffers() override { return bn_.buffers(); }
  void staged_pairs(std::vector<Tensor>& running, std::vector<Tensor>& staged) override {
    bn_.staged_pairs(running, staged);
  }
  BatchNorm2d& batch_norm() { return bn_; }

 private:
  int channels_, classes_;
  BatchNorm2d bn_;
  Parameter gain_, bias_;
  Tensor labels_, scale_, shift_, dscale_, dshift_, dbn_;
  const Tensor* normalized_ = nullptr;  // bn_'s output of the last forward
};

}  // namespace ampgan
