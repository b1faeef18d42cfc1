#include "core/nn/flatten.h"

namespace ampgan {

const Tensor& Flatten::forward(Context& ctx, const Tensor& x) {
  in_shape_ = x.shape();
  const Shape flat = output_shape(x.shape());
  if (!to_fp32_ || x.dtype() == DType::F32) {
    out_ = x.view(flat);
    return out_;
  }
  ensure(ctx.backend, out_, flat, DType::F32);
  ctx.backend.cast(x, out_);
  return out_;
}

const Tensor& Flatten::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  if (input_grad == InputGrad::Skip) return no_grad();
  if (dy.dtype() == ctx.dtype) {
    dx_ = dy.view(in_shape_);
    return dx_;
  }
  ensure(ctx.backend, dx_, in_shape_, ctx.dtype);
  ctx.backend.cast(dy, dx_);
  return dx_;
}

const Tensor& Unflatten::forward(Context& /*ctx*/, const Tensor& x) {
  in_shape_ = x.shape();
  out_ = x.view(output_shape(x.shape()));
  return out_;
}

const Tensor& Unflatten::backward(Context& /*ctx*/, const Tensor& dy, InputGrad input_grad) {
  if (input_grad == InputGrad::Skip) return no_grad();
  dx_ = dy.view(in_shape_);
  return dx_;
}

}  // namespace ampgan
