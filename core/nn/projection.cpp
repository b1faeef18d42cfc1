#include "core/nn/projection.h"

#include "core/common/error.h"
#include "core/nn/class_embedding.h"

namespace ampgan {

Projection::Projection(Backend& b, const std::string& prefix, int classes, int64_t features)
    : classes_(classes), features_(features), prefix_(prefix) {
  weight_ = make_parameter(b, prefix + "weight", Shape{classes, features}, false);
}

void Projection::enable_spectral_norm(Backend& b, uint64_t seed, uint64_t stream) {
  sn_ = std::make_unique<SpectralNorm>(b, prefix_, weight_.shape, seed, stream);
}

void Projection::update_spectral_norm(Backend& b) {
  if (sn_) sn_->power_iteration(b, weight_);
}

const Tensor& Projection::forward(Context& ctx, const Tensor& x) {
  const int64_t n = x.shape()[0];
  if (x.numel() != n * features_)
    throw Error("Projection expects " + std::to_string(features_) + " features, got " + x.shape().str());
  check_dtype(x, ctx.dtype, "Projection", "input");
  in_shape_ = x.shape();
  labels_ = class_one_hot(ctx, n, classes_, ctx.dtype, labels_cast_, "Projection");
  w_used_ = sn_ ? sn_->normalized(ctx.backend, weight_, ctx.dtype) : weight_.working;
  ensure(ctx.backend, e_, Shape{n, features_}, ctx.dtype);
  ctx.backend.gemm(false, false, static_cast<int>(n), static_cast<int>(features_), classes_, 1.0f, labels_, w_used_,
                   0.0f, e_);
  h_ = x.view(Shape{n, features_});
  ensure(ctx.backend, out_, output_shape(x.shape()), ctx.dtype);
  ctx.backend.row_dot_forward(h_, e_, out_);
  return out_;
}

const Tensor& Projection::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  const int64_t n = in_shape_[0];
  ensure(ctx.backend, dx_, in_shape_, ctx.dtype);
  ensure(ctx.backend, de_, Shape{n, features_}, ctx.dtype);
  Tensor dh = dx_.view(Shape{n, features_});
  ctx.backend.row_dot_backward(h_, e_, dy, dh, de_);
  if (ctx.param_grads) {
    const int k = classes_, f = static_cast<int>(features_), m = static_cast<int>(n);
    if (sn_) {
      ctx.backend.gemm(true, false, k, f, m, 1.0f, labels_, de_, 0.0f, sn_->grad_buffer(ctx.backend, weight_));
      sn_->backward(ctx.backend, weight_, ctx.accumulate);
    } else {
      ctx.backend.gemm(true, false, k, f, m, 1.0f, labels_, de_, ctx.accumulate ? 1.0f : 0.0f, weight_.grad);
    }
  }
  if (input_grad == InputGrad::Skip) return no_grad();
  return dx_;
}

}  // namespace ampgan
