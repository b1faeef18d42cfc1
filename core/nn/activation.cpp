#include "core/nn/activation.h"

namespace ampgan {

std::string Activation::type() const {
  switch (act_) {
    case ew::Act::ReLU:
      return "ReLU";
    case ew::Act::LeakyReLU:
      return "LeakyReLU";
    case ew::Act::Tanh:
      return "Tanh";
    default:
      return "Identity";
  }
}

const Tensor& Activation::forward(Context& ctx, const Tensor& x) {
  check_dtype(x, ctx.dtype, "Activation", "input");
  ensure(ctx.backend, out_, x.shape(), ctx.dtype);
  ctx.backend.activation_forward(act_, alpha_, x, out_);
  return out_;
}

const Tensor& Activation::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, out_.shape(), ctx.dtype);
  ctx.backend.activation_backward(act_, alpha_, out_, dy, dx_);
  return dx_;
}

}  // namespace ampgan
