#include "core/nn/batchnorm2d.h"

#include "core/common/error.h"

namespace ampgan {

BatchNorm2d::BatchNorm2d(Backend& b, const std::string& prefix, int channels, float eps, float momentum)
    : channels_(channels), eps_(eps), momentum_(momentum) {
  gamma_ = make_parameter(b, prefix + "weight", Shape{channels}, true);
  beta_ = make_parameter(b, prefix + "bias", Shape{channels}, true);
  b.fill(gamma_.master, 1.0f);
  running_mean_ = {prefix + "running_mean", b.empty(Shape{channels}, DType::F32, MemCategory::Master)};
  running_var_ = {prefix + "running_var", b.empty(Shape{channels}, DType::F32, MemCategory::Master)};
  b.fill(running_mean_.value, 0.0f);
  b.fill(running_var_.value, 1.0f);
  staged_mean_ = b.empty(Shape{channels}, DType::F32, MemCategory::Master);
  staged_var_ = b.empty(Shape{channels}, DType::F32, MemCategory::Master);
  b.fill(staged_mean_, 0.0f);
  b.fill(staged_var_, 1.0f);
  save_mean_ = b.empty(Shape{channels}, DType::F32, MemCategory::Workspace);
  save_invstd_ = b.empty(Shape{channels}, DType::F32, MemCategory::Workspace);
}

const Tensor& BatchNorm2d::forward(Context& ctx, const Tensor& x) {
  if (x.shape().last() != channels_)
    throw Error("BatchNorm2d expects " + std::to_string(channels_) + " channels, got " + x.shape().str());
  check_dtype(x, ctx.dtype, "BatchNorm2d", "input");
  ensure(ctx.backend, out_, x.shape(), ctx.dtype);
  if (ctx.mode == Mode::Eval) {
    ctx.backend.batchnorm_forward_eval(x, gamma_.master, beta_.master, running_mean_.value, running_var_.value, eps_,
                                       out_);
  } else {
    const bool update = ctx.mode == Mode::Train;
    Tensor& mean = ctx.staged_running_stats ? staged_mean_ : running_mean_.value;
    Tensor& var = ctx.staged_running_stats ? staged_var_ : running_var_.value;
    ctx.backend.batchnorm_forward_train(x, gamma_.master, beta_.master, mean, var, momentum_, eps_, update, out_,
                                        save_mean_, save_invstd_);
    if (update) ++batches_tracked_;
  }
  x_ = x;
  return out_;
}

const Tensor& BatchNorm2d::backward(Context& ctx, const Tensor& dy, InputGrad /*input_grad*/) {
  // The backward pass always yields dx (batch norm is never a network's first layer); without
  // weight gradients wanted, dgamma and dbeta go to scratch.
  Tensor* dg = &gamma_.grad;
  Tensor* db = &beta_.grad;
  if (!ctx.param_grads) {
    ensure(ctx.backend, scratch_dgamma_, Shape{channels_}, DType::F32, MemCategory::Workspace);
    ensure(ctx.backend, scratch_dbeta_, Shape{channels_}, DType::F32, MemCategory::Workspace);
    dg = &scratch_dgamma_;
    db = &scratch_dbeta_;
  }
  ensure(ctx.backend, dx_, x_.shape(), ctx.dtype);
  ctx.backend.batchnorm_backward(x_, dy, gamma_.master, save_mean_, save_invstd_, dx_, *dg, *db,
                                 ctx.accumulate && ctx.param_grads);
  return dx_;
}

}  // namespace ampgan
