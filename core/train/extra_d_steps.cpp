// n_dis: SNGAN trains D n_dis times per G step (5 in its recipe), each D step on its own real
// batch and its own latents. The last D step of an iteration is the one trainer.cpp always ran,
// on the generated batch the G step then reuses, so n_dis = 1 is the DCGAN step bit for bit;
// the n_dis - 1 steps before it live here.
//
// Per D step, as for the one D step of n_dis = 1: one power iteration of each spectral norm; a
// skip on its own overflow (Adam_D and D's batch-norm statistics untouched; Adam_D's t counts
// D steps taken); a scaler update after it, shared or not, so one overflow is not repeated at
// the same scale. The extra forwards of G stage G's batch-norm statistics like the main one, so
// they count only if the G step does. An iteration's metrics row is its last D step's, except
// that skips and nan_to_num's replaced values count every D step: each extra step copies its
// found-inf flag and replaced count into slots of its own past the ones the next step clears.
#include "core/common/rng.h"
#include "core/train/trainer.h"

namespace ampgan {

void Trainer::allocate_extra_real() {
  const Shape img{cfg_.batch, cfg_.model.res, cfg_.model.res, cfg_.model.channels};
  for (int k = 1; k < cfg_.n_dis; ++k) extra_real_f32_.push_back(backend_.empty(img, DType::F32, MemCategory::Data));
  if (cfg_.model.classes > 0)
    for (int k = 1; k < cfg_.n_dis; ++k)
      for (auto* v : {&extra_real_labels_, &extra_fake_labels_})
        v->push_back(backend_.empty(Shape{cfg_.batch, cfg_.model.classes}, DType::F32, MemCategory::Data));
  extra_real_ = extra_real_f32_;
}

void Trainer::set_extra_real_dtype(DType dt) {
  const Shape img{cfg_.batch, cfg_.model.res, cfg_.model.res, cfg_.model.channels};
  for (size_t k = 0; k < extra_real_.size(); ++k) {
    if (dt == DType::F32)
      extra_real_[k] = extra_real_f32_[k];
    else if (extra_real_[k].dtype() != dt || extra_real_[k].same_storage(extra_real_f32_[k]))
      extra_real_[k] = backend_.empty(img, dt, MemCategory::Data);
  }
}

void Trainer::enqueue_extra_d_steps(Context& gctx) {
  for (size_t k = 0; k < extra_real_.size(); ++k) {
    if (k > 0) backend_.fill(scalars_head_, 0.0f);  // gan_loss adds to its slots
    backend_.fill_normal(z_, cfg_.seed, rng_stream::train_latent_stream(static_cast<int>(k) + 1), counter_, 1.0f);
    gctx.labels = extra_fake_labels_.empty() ? nullptr : &extra_fake_labels_[k];
    const Tensor& fake = g_->forward(gctx, z_);
    d_step(extra_real_[k], extra_real_labels_.empty() ? nullptr : &extra_real_labels_[k], fake, gctx.labels);
    if (cfg_.shared_scaler) scaler_d_->update(backend_, scalars_, {kSlotFoundInfD});
    const int own = layout_.extra_d(static_cast<int>(k));
    backend_.copy_scalar(scalars_, kSlotFoundInfD, scalars_, own + StepScalarsLayout::kExtraFoundInf);
    for (int half = 0; half < 2; ++half)  // a count's [lo, hi]
      backend_.copy_scalar(scalars_, kSlotReplacedD + half, scalars_, own + StepScalarsLayout::kExtraReplaced + half);
  }
  if (!extra_real_.empty()) backend_.fill(scalars_head_, 0.0f);
}

}  // namespace ampgan
