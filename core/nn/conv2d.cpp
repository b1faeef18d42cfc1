#include "core/nn/conv2d.h"

#include "core/common/error.h"

namespace ampgan {

Conv2d::Conv2d(Backend& b, const std::string& prefix, int in_ch, int out_ch, int kernel, int stride, int pad, bool bias)
    : in_ch_(in_ch), out_ch_(out_ch), kernel_(kernel), stride_(stride), pad_(pad), has_bias_(bias), prefix_(prefix) {
  weight_ = make_parameter(b, prefix + "weight", Shape{out_ch, kernel, kernel, in_ch}, false);
  if (bias) bias_ = make_parameter(b, prefix + "bias", Shape{out_ch}, true);
}

ConvGeometry Conv2d::geometry(const Shape& in) const {
  ConvGeometry g;
  g.n = static_cast<int>(in[0]);
  g.h = static_cast<int>(in[1]);
  g.w = static_cast<int>(in[2]);
  g.c = static_cast<int>(in[3]);
  g.k = out_ch_;
  g.r = g.s = kernel_;
  g.stride = stride_;
  g.pad = pad_;
  return g;
}

Shape Conv2d::output_shape(const Shape& in) const { return geometry(in).y_shape(); }

const Tensor& Conv2d::forward(Context& ctx, const Tensor& x) {
  if (x.shape().rank != 4 || x.shape()[3] != in_ch_)
    throw Error("Conv2d expects (n, h, w, " + std::to_string(in_ch_) + ") input, got " + x.shape().str());
  check_dtype(x, ctx.dtype, "Conv2d", "input");
  w_used_ = sn_ ? sn_->normalized(ctx.backend, weight_, ctx.dtype) : weight_.working;
  check_dtype(w_used_, ctx.dtype, "Conv2d", "weight");
  const ConvGeometry g = geometry(x.shape());
  ensure(ctx.backend, out_, g.y_shape(), ctx.dtype);
  ctx.backend.conv2d_forward(g, x, w_used_, out_);
  if (has_bias_) ctx.backend.bias_add(out_, bias_.working);
  x_ = x;
  return clamp_output(ctx, out_);
}

const Tensor& Conv2d::backward(Context& ctx, const Tensor& dy_out, InputGrad input_grad) {
  const Tensor& dy = clamp_grad(ctx, dy_out);
  const ConvGeometry g = geometry(x_.shape());
  if (ctx.param_grads) {
    if (sn_) {
      // dL/d(W / sigma) first, then through the normalisation into the master's gradient.
      ctx.backend.conv2d_backward_filter(g, x_, dy, sn_->grad_buffer(ctx.backend, weight_), false);
      sn_->backward(ctx.backend, weight_, ctx.accumulate);
    } else {
      ctx.backend.conv2d_backward_filter(g, x_, dy, weight_.grad, ctx.accumulate);
    }
    if (has_bias_) ctx.backend.bias_backward(dy, bias_.grad, ctx.accumulate);
  }
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, g.x_shape(), ctx.dtype);
  ctx.backend.conv2d_backward_data(g, dy, w_used_, dx_);
  return dx_;
}

std::vector<StateBuffer*> Conv2d::buffers() {
  if (sn_) return sn_->buffers();
  return {};
}

void Conv2d::enable_spectral_norm(Backend& b, uint64_t seed, uint64_t stream) {
  sn_ = std::make_unique<SpectralNorm>(b, prefix_, weight_.shape, seed, stream);
}

void Conv2d::update_spectral_norm(Backend& b) {
  if (sn_) sn_->power_iteration(b, weight_);
}

std::vector<Parameter*> Conv2d::parameters() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

}  // namespace ampgan
