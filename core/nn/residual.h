// A residual block: y = main(x) + shortcut(x), the shortcut being the identity when it has no
// layers. The backward pass sends dy down both paths and sums what comes back (gradient
// fan-in), with the backend's add: one rounding in half precision, as the forward sum.
#pragma once

#include "core/nn/layer.h"

namespace ampgan {

class Residual final : public Layer {
 public:
  Residual(Sequential main, Sequential shortcut) : main_(std::move(main)), shortcut_(std::move(shortcut)) {}
  std::string type() const override { return "Residual"; }
  Shape output_shape(const Shape& in) const override { return main_.output_shape(in); }
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, bool need_dx) override;
  std::vector<Parameter*> parameters() override;  // main's, then the shortcut's
  std::vector<StateBuffer*> buffers() override;
  double flops(const Shape& in) const override { return main_.flops(in) + shortcut_.flops(in); }
  void staged_pairs(std::vector<Tensor>& running, std::vector<Tensor>& staged) override {
    main_.staged_pairs(running, staged);
    shortcut_.staged_pairs(running, staged);
  }
  void update_spectral_norm(Backend& b) override {
    main_.update_spectral_norm(b);
    shortcut_.update_spectral_norm(b);
  }
  Sequential& main_path() { return main_; }
  Sequential& shortcut() { return shortcut_; }

 private:
  Sequential main_, shortcut_;
};

}  // namespace ampgan
