#include "core/nn/linear.h"

#include "core/common/error.h"

namespace ampgan {

Linear::Linear(Backend& b, const std::string& prefix, int in_features, int out_features, bool bias)
    : in_ch_(in_features), out_ch_(out_features), has_bias_(bias), prefix_(prefix) {
  weight_ = make_parameter(b, prefix + "weight", Shape{out_features, in_features}, false);
  if (bias) bias_ = make_parameter(b, prefix + "bias", Shape{out_features}, true);
}

const Tensor& Linear::forward(Context& ctx, const Tensor& x) {
  const int64_t n = x.shape()[0];
  if (x.numel() != n * in_ch_)
    throw Error("Linear expects " + std::to_string(in_ch_) + " features, got " + x.shape().str());
  check_dtype(x, ctx.dtype, "Linear", "input");
  w_used_ = sn_ ? sn_->normalized(ctx.backend, weight_, ctx.dtype) : weight_.working;
  ensure(ctx.backend, out_, Shape{n, out_ch_}, ctx.dtype);
  ctx.backend.gemm(false, true, static_cast<int>(n), out_ch_, in_ch_, 1.0f, x, w_used_, 0.0f, out_);
  if (has_bias_) ctx.backend.bias_add(out_, bias_.working);
  x_ = x.view(Shape{n, in_ch_});
  return out_;
}

const Tensor& Linear::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  const int n = static_cast<int>(x_.shape()[0]);
  if (ctx.param_grads) {
    if (sn_) {
      ctx.backend.gemm(true, false, out_ch_, in_ch_, n, 1.0f, dy, x_, 0.0f, sn_->grad_buffer(ctx.backend, weight_));
      sn_->backward(ctx.backend, weight_, ctx.accumulate);
    } else {
      ctx.backend.gemm(true, false, out_ch_, in_ch_, n, 1.0f, dy, x_, ctx.accumulate ? 1.0f : 0.0f, weight_.grad);
    }
    if (has_bias_) ctx.backend.bias_backward(dy, bias_.grad, ctx.accumulate);
  }
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, Shape{n, in_ch_}, ctx.dtype);
  ctx.backend.gemm(false, false, n, in_ch_, out_ch_, 1.0f, dy, w_used_, 0.0f, dx_);
  return dx_;
}

std::vector<StateBuffer*> Linear::buffers() {
  if (sn_) return sn_->buffers();
  return {};
}

void Linear::enable_spectral_norm(Backend& b, uint64_t seed, uint64_t stream) {
  sn_ = std::make_unique<SpectralNorm>(b, prefix_, weight_.shape, seed, stream);
}

void Linear::update_spectral_norm(Backend& b) {
  if (sn_) sn_->power_iteration(b, weight_);
}

std::vector<Parameter*> Linear::parameters() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

}  // namespace ampgan
