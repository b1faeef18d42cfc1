#include "core/nn/conv_transpose2d.h"

#include "core/common/error.h"

namespace ampgan {

ConvTranspose2d::ConvTranspose2d(Backend& b, const std::string& prefix, int in_ch, int out_ch, int kernel, int stride,
                                 int pad)
    : in_ch_(in_ch), out_ch_(out_ch), kernel_(kernel), stride_(stride), pad_(pad) {
  weight_ = make_parameter(b, prefix + "weight", Shape{in_ch, kernel, kernel, out_ch}, false);
}

ConvGeometry ConvTranspose2d::geometry(const Shape& in) const {
  ConvGeometry g;
  g.n = static_cast<int>(in[0]);
  g.h = static_cast<int>((in[1] - 1) * stride_ - 2 * pad_ + kernel_);
  g.w = static_cast<int>((in[2] - 1) * stride_ - 2 * pad_ + kernel_);
  g.c = out_ch_;
  g.k = in_ch_;
  g.r = g.s = kernel_;
  g.stride = stride_;
  g.pad = pad_;
  return g;
}

Shape ConvTranspose2d::output_shape(const Shape& in) const { return geometry(in).x_shape(); }

const Tensor& ConvTranspose2d::forward(Context& ctx, const Tensor& x) {
  if (x.shape().rank != 4 || x.shape()[3] != in_ch_)
    throw Error("ConvTranspose2d expects (n, h, w, " + std::to_string(in_ch_) + ") input, got " + x.shape().str());
  check_dtype(x, ctx.dtype, "ConvTranspose2d", "input");
  check_dtype(weight_.working, ctx.dtype, "ConvTranspose2d", "weight");
  const ConvGeometry g = geometry(x.shape());
  AMPGAN_CHECK(g.out_h() == x.shape()[1] && g.out_w() == x.shape()[2], "transposed geometry");
  ensure(ctx.backend, out_, g.x_shape(), ctx.dtype);
  ctx.backend.conv2d_backward_data(g, x, weight_.working, out_);
  x_ = x;
  return clamp_output(ctx, out_);
}

const Tensor& ConvTranspose2d::backward(Context& ctx, const Tensor& dy_out, InputGrad input_grad) {
  const Tensor& dy = clamp_grad(ctx, dy_out);
  const ConvGeometry g = geometry(x_.shape());
  if (ctx.param_grads) ctx.backend.conv2d_backward_filter(g, dy, x_, weight_.grad, ctx.accumulate);
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, g.y_shape(), ctx.dtype);
  ctx.backend.conv2d_forward(g, dy, weight_.working, dx_);
  return dx_;
}

}  // namespace ampgan
