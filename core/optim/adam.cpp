#include "core/optim/adam.h"

#include <cmath>

#include "core/common/error.h"

namespace ampgan {

Adam::Adam(Backend& b, std::vector<Parameter*> params, const AdamConfig& cfg) : params_(std::move(params)), cfg_(cfg) {
  if (!(cfg.lr > 0.0f) || !std::isfinite(cfg.lr))
    throw Error("learning rate must be a positive finite number", "--lr", "DCGAN uses 0.0002");
  if (!(cfg.beta1 >= 0.0f && cfg.beta1 < 1.0f && cfg.beta2 >= 0.0f && cfg.beta2 < 1.0f))
    throw Error("Adam betas must lie in [0, 1)", "--beta1/--beta2", "DCGAN uses 0.5 and 0.999");
  for (Parameter* p : params_) {
    m_.push_back(b.empty(p->shape, DType::F32, MemCategory::Optimizer));
    v_.push_back(b.empty(p->shape, DType::F32, MemCategory::Optimizer));
    b.fill(m_.back(), 0.0f);
    b.fill(v_.back(), 0.0f);
  }
  step_count_ = b.empty(Shape{2}, DType::F32, MemCategory::Data);  // [lo, hi]: exact past 2^24 steps
  b.fill(step_count_, 0.0f);
}

void Adam::step(Backend& b, const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) {
  std::vector<AdamTensor> ts;
  ts.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Parameter* p = params_[i];
    AdamTensor t;
    t.master = p->master;
    t.grad = p->grad;
    t.m = m_[i];
    t.v = v_[i];
    if (!p->working.same_storage(p->master)) t.half_copy = p->working;
    ts.push_back(std::move(t));
  }
  b.adam_step(ts, cfg_, step_count_, scaler_state, scalars, found_inf_slot);
}

}  // namespace ampgan
