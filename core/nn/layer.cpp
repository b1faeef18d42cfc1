#include "core/nn/layer.h"

#include "core/common/error.h"

namespace ampgan {

void Parameter::set_precision(Backend& b, DType compute) {
  const DType wd = fp32_only ? DType::F32 : compute;
  if (wd == DType::F32) {
    working = master;
  } else {
    if (!working.defined() || working.dtype() != wd || working.same_storage(master))
      working = b.empty(shape, wd, MemCategory::HalfCopy);
    b.cast(master, working);
  }
  if (!grad.defined() || grad.dtype() != wd) {
    grad = b.empty(shape, wd, MemCategory::Gradient);
    b.fill(grad, 0.0f);
  }
}

void Parameter::refresh_working(Backend& b) {
  if (working.defined() && !working.same_storage(master)) b.cast(master, working);
}

void Layer::ensure(Backend& b, Tensor& buf, const Shape& shape, DType dtype, MemCategory category) {
  const size_t need = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  if (buf.defined() && buf.dtype() == dtype && buf.capacity_bytes() >= need) {
    if (buf.shape() != shape) buf = buf.view(shape);
    return;
  }
  buf = b.empty(shape, dtype, category);
}

Parameter Layer::make_parameter(Backend& b, std::string name, Shape shape, bool fp32_only) {
  Parameter p;
  p.name = std::move(name);
  p.shape = shape;
  p.fp32_only = fp32_only;
  p.master = b.empty(shape, DType::F32, MemCategory::Master);
  b.fill(p.master, 0.0f);
  p.working = p.master;
  return p;
}

void Layer::set_precision(Backend& b, DType compute) {
  for (Parameter* p : parameters()) p->set_precision(b, fp32_ ? DType::F32 : compute);
}

const Tensor& Layer::clamp_output(Context& ctx, const Tensor& y) {
  clamped_ = conv_clamp_ > 0.0f && ctx.dtype != DType::F32;
  if (!clamped_) return y;
  ensure(ctx.backend, clamp_out_, y.shape(), y.dtype());
  ctx.backend.clamp_forward(y, clamp_out_, conv_clamp_);
  return clamp_out_;
}

const Tensor& Layer::clamp_grad(Context& ctx, const Tensor& dy) {
  if (!clamped_) return dy;
  ensure(ctx.backend, clamp_dy_, dy.shape(), dy.dtype());
  ctx.backend.clamp_backward(out_, dy, clamp_dy_, conv_clamp_);  // out_: the values before the clamp
  return clamp_dy_;
}

const Tensor& Layer::as_dtype(Backend& b, const Tensor& t, DType dt, Tensor& buf) {
  if (t.dtype() == dt) return t;
  ensure(b, buf, t.shape(), dt);
  b.cast(t, buf);
  return buf;
}

void Layer::check_dtype(const Tensor& t, DType expected, const char* layer, const char* what) {
  if (t.dtype() != expected)
    throw Error(
        std::string(layer) + ": " + what + " is " + dtype_name(t.dtype()) + ", expected " + dtype_name(expected), "",
        "the network's precision was not set before this pass (a bug)");
}

void Sequential::add(std::unique_ptr<Layer> layer) {
  has_params_.push_back(!layer->parameters().empty());
  layers_.push_back(std::move(layer));
  in_dtype_.push_back(DType::F32);
  run_dtype_.push_back(DType::F32);
  in_cast_.emplace_back();
  dx_cast_.emplace_back();
}

DType Sequential::layer_dtype(size_t i, DType net, DType in) const {
  if (net == DType::F32 || layers_[i]->fp32()) return DType::F32;
  return has_params_[i] ? net : in;
}

const Tensor& Sequential::forward(Context& ctx, const Tensor& x,
                                  const std::function<void(size_t, const Tensor&)>& after) {
  const Tensor* h = &x;
  const DType net = ctx.dtype;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const DType dt = layer_dtype(i, net, h->dtype());
    in_dtype_[i] = h->dtype();
    run_dtype_[i] = dt;
    if (h->dtype() != dt) {
      Layer::ensure(ctx.backend, in_cast_[i], h->shape(), dt);
      ctx.backend.cast(*h, in_cast_[i]);
      h = &in_cast_[i];
    }
    ctx.dtype = dt;
    h = &layers_[i]->forward(ctx, *h);
    if (after) after(i, *h);
  }
  ctx.dtype = net;
  return *h;
}

const Tensor& Sequential::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  const bool need_dx = input_grad == InputGrad::Return;
  const Tensor* g = &dy;
  const DType net = ctx.dtype;
  for (size_t i = layers_.size(); i-- > 0;) {
    const InputGrad want = i > 0 ? InputGrad::Return : input_grad;  // the next layer down needs it
    ctx.dtype = run_dtype_[i];
    g = &layers_[i]->backward(ctx, *g, want);
    if (want == InputGrad::Return && g->dtype() != in_dtype_[i]) {  // back into the dtype the input came in
      Layer::ensure(ctx.backend, dx_cast_[i], g->shape(), in_dtype_[i]);
      ctx.backend.cast(*g, dx_cast_[i]);
      g = &dx_cast_[i];
    }
  }
  ctx.dtype = net;
  return need_dx ? *g : empty_;
}

Shape Sequential::output_shape(Shape in) const {
  for (const auto& l : layers_) in = l->output_shape(in);
  return in;
}

double Sequential::flops(Shape in) const {
  double f = 0.0;
  for (const auto& l : layers_) {
    f += l->flops(in);
    in = l->output_shape(in);
  }
  return f;
}

void Sequential::update_spectral_norm(Backend& b) {
  for (auto& l : layers_) l->update_spectral_norm(b);
}

std::vector<Parameter*> Sequential::parameters() {
  std::vector<Parameter*> out;
  for (auto& l : layers_)
    for (Parameter* p : l->parameters()) out.push_back(p);
  return out;
}

std::vector<StateBuffer*> Sequential::buffers() {
  std::vector<StateBuffer*> out;
  for (auto& l : layers_)
    for (StateBuffer* s : l->buffers()) out.push_back(s);
  return out;
}

void Sequential::staged_pairs(std::vector<Tensor>& running, std::vector<Tensor>& staged) {
  for (auto& l : layers_) l->staged_pairs(running, staged);
}

void Sequential::commit_running_stats(Backend& b, const Tensor& scalars, const std::vector<int>& skip_slots) {
  std::vector<Tensor> running, staged;
  staged_pairs(running, staged);
  if (!running.empty()) b.batchnorm_commit_running(running, staged, scalars, skip_slots);
}

void Sequential::reset_staged_running_stats(Backend& b) {
  std::vector<Tensor> running, staged;
  staged_pairs(running, staged);
  for (size_t i = 0; i < running.size(); ++i) b.copy(running[i], staged[i]);
}

std::vector<Tensor> Sequential::gradients() {
  std::vector<Tensor> out;
  for (Parameter* p : parameters()) out.push_back(p->grad);
  return out;
}

void Sequential::set_precision(Backend& b, DType compute) {
  for (auto& l : layers_) l->set_precision(b, compute);
  dtype_ = compute;
}

int64_t Sequential::parameter_count() {
  int64_t n = 0;
  for (Parameter* p : parameters()) n += p->shape.numel();
  return n;
}

}  // namespace ampgan
