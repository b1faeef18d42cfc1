// The projection discriminator's class term (Miyato & Koyama 2018, "cGANs with Projection
// Discriminator"): logit += <embed(y), h>, h the features the unconditional logit is computed
// from (n, features) and embed (classes, features) spectrally normalised with the rest of D. In
// a model it is the shortcut of a Residual whose main path is the unconditional head, so the
// two terms are summed as a residual block's paths are (core/models/).
#pragma once

#include <memory>

#include "core/nn/layer.h"
#include "core/nn/spectral_norm.h"

namespace ampgan {

class Projection final : public Layer {
 public:
  Projection(Backend& b, const std::string& prefix, int classes, int64_t features);
  std::string type() const override { return "Projection"; }
  // (n, 1, 1, 1) for a feature map (beside a convolution's logit), else (n, 1).
  Shape output_shape(const Shape& in) const override { return in.rank == 4 ? Shape{in[0], 1, 1, 1} : Shape{in[0], 1}; }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
  std::vector<Parameter*> parameters() override { return {&weight_}; }
  std::vector<StateBuffer*> buffers() override { return sn_ ? sn_->buffers() : std::vector<StateBuffer*>{}; }
  void enable_spectral_norm(Backend& b, uint64_t seed, uint64_t stream);
  void update_spectral_norm(Backend& b) override;
  double flops(const Shape& in) const override { return 2.0 * in[0] * features_ * (classes_ + 1); }

 private:
  int classes_;
  int64_t features_;
  std::string prefix_;
  Parameter weight_;
  std::unique_ptr<SpectralNorm> sn_;
  Tensor labels_, labels_cast_, w_used_;
  Tensor h_, e_, de_;  // the features (a view of the input), embed(y) and its gradient
  Shape in_shape_;
};

}  // namespace ampgan
