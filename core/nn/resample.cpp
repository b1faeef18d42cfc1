#include "core/nn/resample.h"

#include "core/common/error.h"

namespace ampgan {

const Tensor& Upsample2x::forward(Context& ctx, const Tensor& x) {
  check_dtype(x, ctx.dtype, "Upsample2x", "input");
  in_shape_ = x.shape();
  ensure(ctx.backend, out_, output_shape(x.shape()), ctx.dtype);
  ctx.backend.upsample2x_forward(x, out_);
  return out_;
}

const Tensor& Upsample2x::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, in_shape_, ctx.dtype);
  ctx.backend.upsample2x_backward(dy, dx_);
  return dx_;
}

const Tensor& AvgPool2x::forward(Context& ctx, const Tensor& x) {
  check_dtype(x, ctx.dtype, "AvgPool2x", "input");
  if (x.shape()[1] % 2 || x.shape()[2] % 2)
    throw Error("AvgPool2x: input " + x.shape().str() + " has an odd height or width", "",
                "the model must only pool even feature maps (a bug in the model)");
  in_shape_ = x.shape();
  ensure(ctx.backend, out_, output_shape(x.shape()), ctx.dtype);
  ctx.backend.avgpool2x_forward(x, out_);
  return out_;
}

const Tensor& AvgPool2x::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, in_shape_, ctx.dtype);
  ctx.backend.avgpool2x_backward(dy, dx_);
  return dx_;
}

const Tensor& GlobalSumPool::forward(Context& ctx, const Tensor& x) {
  check_dtype(x, ctx.dtype, "GlobalSumPool", "input");
  in_shape_ = x.shape();
  ensure(ctx.backend, out_, output_shape(x.shape()), ctx.dtype);
  ctx.backend.global_sum_pool_forward(x, out_);
  return out_;
}

const Tensor& GlobalSumPool::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, in_shape_, ctx.dtype);
  ctx.backend.global_sum_pool_backward(dy, dx_);
  return dx_;
}

}  // namespace ampgan
