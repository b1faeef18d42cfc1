#include "core/nn/conditional_batchnorm2d.h"

#include "core/nn/class_embedding.h"

namespace ampgan {

ConditionalBatchNorm2d::ConditionalBatchNorm2d(Backend& b, const std::string& prefix, int channels, int classes)
    : channels_(channels), classes_(classes), bn_(b, prefix, channels) {
  gain_ = make_parameter(b, prefix + "embed_gain.weight", Shape{classes, channels}, true);
  bias_ = make_parameter(b, prefix + "embed_bias.weight", Shape{classes, channels}, true);
}

std::vector<Parameter*> ConditionalBatchNorm2d::parameters() {
  std::vector<Parameter*> p = bn_.parameters();
  p.push_back(&gain_);
  p.push_back(&bias_);
  return p;
}

const Tensor& ConditionalBatchNorm2d::forward(Context& ctx, const Tensor& x) {
  const int64_t n = x.shape()[0];
  Tensor unused;
  labels_ = class_one_hot(ctx, n, classes_, DType::F32, unused, "ConditionalBatchNorm2d");
  normalized_ = &bn_.forward(ctx, x);
  const Shape per{n, channels_};
  ensure(ctx.backend, scale_, per, DType::F32);
  ensure(ctx.backend, shift_, per, DType::F32);
  const int m = static_cast<int>(n);
  ctx.backend.fill(scale_, 1.0f);
  ctx.backend.gemm(false, false, m, channels_, classes_, 1.0f, labels_, gain_.master, 1.0f, scale_);
  ctx.backend.gemm(false, false, m, channels_, classes_, 1.0f, labels_, bias_.master, 0.0f, shift_);
  ensure(ctx.backend, out_, x.shape(), ctx.dtype);
  ctx.backend.modulate_forward(*normalized_, scale_, shift_, out_);
  return out_;
}

const Tensor& ConditionalBatchNorm2d::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  const int64_t n = dy.shape()[0];
  const Shape per{n, channels_};
  ensure(ctx.backend, dbn_, dy.shape(), ctx.dtype);
  ensure(ctx.backend, dscale_, per, DType::F32);
  ensure(ctx.backend, dshift_, per, DType::F32);
  ctx.backend.modulate_backward(*normalized_, dy, scale_, dbn_, dscale_, dshift_);
  if (ctx.param_grads) {
    const float beta = ctx.accumulate ? 1.0f : 0.0f;
    const int m = static_cast<int>(n);
    ctx.backend.gemm(true, false, classes_, channels_, m, 1.0f, labels_, dscale_, beta, gain_.grad);
    ctx.backend.gemm(true, false, classes_, channels_, m, 1.0f, labels_, dshift_, beta, bias_.grad);
  }
  return bn_.backward(ctx, dbn_, input_grad);
}

}  // namespace ampgan
