#include "core/nn/residual.h"

#include "core/common/error.h"

namespace ampgan {

const Tensor& Residual::forward(Context& ctx, const Tensor& x) {
  const Tensor& a0 = main_.forward(ctx, x);
  const Tensor& b0 = shortcut_.size() ? shortcut_.forward(ctx, x) : x;
  a_dtype_ = a0.dtype();
  b_dtype_ = b0.dtype();
  const Tensor& a = as_dtype(ctx.backend, a0, ctx.dtype, a_cast_);
  const Tensor& b = as_dtype(ctx.backend, b0, ctx.dtype, b_cast_);
  if (a.shape() != b.shape())
    throw Error("Residual: the main path gives " + a.shape().str() + " but the shortcut " + b.shape().str(), "",
                "both paths of a residual block must give the same shape (a bug in the model)");
  ensure(ctx.backend, out_, a.shape(), ctx.dtype);
  ctx.backend.add(a, b, out_);
  return out_;
}

const Tensor& Residual::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  // Both paths run their backward (for their weight gradients) even when dx is not needed.
  const Tensor& gm = main_.backward(ctx, as_dtype(ctx.backend, dy, a_dtype_, dya_cast_), input_grad);
  const Tensor& gs =
      shortcut_.size() ? shortcut_.backward(ctx, as_dtype(ctx.backend, dy, b_dtype_, dyb_cast_), input_grad) : dy;
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, gm.shape(), ctx.dtype);
  ctx.backend.add(gm, gs, dx_);
  return dx_;
}

std::vector<Parameter*> Residual::parameters() {
  std::vector<Parameter*> p = main_.parameters();
  for (Parameter* q : shortcut_.parameters()) p.push_back(q);
  return p;
}

std::vector<StateBuffer*> Residual::buffers() {
  std::vector<StateBuffer*> b = main_.buffers();
  for (StateBuffer* q : shortcut_.buffers()) b.push_back(q);
  return b;
}

}  // namespace ampgan
