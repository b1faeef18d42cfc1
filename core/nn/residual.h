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
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;
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
  std::vector<Sequential*> children() override { return {&main_, &shortcut_}; }
  void set_precision(Backend& b, DType compute) override {
    main_.set_precision(b, fp32() ? DType::F32 : compute);
    shortcut_.set_precision(b, fp32() ? DType::F32 : compute);
  }
  Sequential& main_path() { return main_; }
  Sequential& shortcut() { return shortcut_; }

 private:
  Sequential main_, shortcut_;
  // A path whose last layer is kept in FP32 ends in FP32: its output is cast to the block's
  // dtype for the sum, and dy back to the path's dtype.
  Tensor a_cast_, b_cast_, dya_cast_, dyb_cast_;
  DType a_dtype_ = DType::F32, b_dtype_ = DType::F32;
};

}  // namespace ampgan
