#include "core/train/trainer.h"

#include <cmath>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/nn/class_embedding.h"

namespace ampgan {

namespace {
// How many steps may be in flight before step() waits for the oldest read-back (GPU only; the
// CPU's read-backs are ready at once).
constexpr size_t kMaxInFlight = 3;
}  // namespace

Trainer::Trainer(Backend& backend, const TrainerConfig& cfg)
    : backend_(backend), cfg_(cfg), precision_(cfg.precision), graph_(backend, cfg.use_graphs) {
  cfg_.model.validate();
  // RunConfig's rows check these with the same limits; a TrainerConfig made in code meets them here.
  if (cfg.n_dis < 1 || cfg.n_dis > kMaxDSteps)
    throw Error("n_dis " + std::to_string(cfg.n_dis) + " is out of range", "--n-dis",
                "use 1 (DCGAN) to " + std::to_string(kMaxDSteps) + "; SNGAN uses 5");
  if (cfg.batch < kMinBatch || cfg.batch > kMaxBatch)
    throw Error("batch size " + std::to_string(cfg.batch) + " is out of range", "--batch",
                "use " + std::to_string(kMinBatch) + " (batch norm needs two samples) to " + std::to_string(kMaxBatch));
  GanPair nets = make_gan(backend_, cfg_.family, cfg_.model, cfg_.seed, rng_stream::kInitG, rng_stream::kInitD);
  g_ = std::move(nets.g);
  d_ = std::move(nets.d);
  adam_g_ = std::make_unique<Adam>(backend_, g_->parameters(), cfg_.adam_g);
  if (cfg_.ema_decay > 0.0f)
    for (Parameter* p : g_->parameters()) {  // the EMA starts at the initial weights
      ema_.push_back(backend_.empty(p->shape, DType::F32, MemCategory::Master));
      backend_.copy(p->master, ema_.back());
    }
  adam_d_ = std::make_unique<Adam>(backend_, d_->parameters(), cfg_.adam_d);
  scaler_d_ = std::make_unique<LossScaler>(backend_, cfg_.scaler);
  if (!cfg_.shared_scaler) scaler_g_ = std::make_unique<LossScaler>(backend_, cfg_.scaler);
  const int res = cfg_.model.res, nc = cfg_.model.channels;
  real_f32_ = backend_.empty(Shape{cfg_.batch, res, res, nc}, DType::F32, MemCategory::Data);
  dlogits_ = backend_.empty(Shape{cfg_.batch, 1}, DType::F32, MemCategory::Activation);
  if (cfg_.model.classes > 0) {
    real_labels_ = backend_.empty(Shape{cfg_.batch, cfg_.model.classes}, DType::F32, MemCategory::Data);
    fake_labels_ = backend_.empty(Shape{cfg_.batch, cfg_.model.classes}, DType::F32, MemCategory::Data);
  }
  for (auto [net, seq] : {std::pair<const char*, Sequential*>{"D", d_.get()}, {"G", g_.get()}})
    for (Parameter* p : seq->parameters()) {
      const size_t dot = p->name.rfind('.');
      const std::string layer = dot == std::string::npos ? p->name : p->name.substr(0, dot);
      const std::string tensor = dot == std::string::npos ? p->name : p->name.substr(dot + 1);
      tensor_names_.push_back({net, std::string(net) + "." + layer, tensor, p->shape.numel()});
    }
  for (const TensorName& t : tensor_names_) tensor_numel_.push_back(t.numel);
  layout_ = StepScalarsLayout(static_cast<int>(tensor_names_.size()), static_cast<int>(d_->parameters().size()),
                              cfg_.n_dis - 1);
  d_net_ = {d_.get(), adam_d_.get(), scaler_d_.get(), layout_.d()};
  g_net_ = {g_.get(), adam_g_.get(), cfg_.shared_scaler ? scaler_d_.get() : scaler_g_.get(), layout_.g()};
  scalars_ = backend_.empty(Shape{layout_.size()}, DType::F32, MemCategory::Data);
  scalars_head_ = scalars_.view(Shape{layout_.head()});
  counter_ = backend_.empty(Shape{2}, DType::F32, MemCategory::Data);  // [lo, hi]: see ew::count_load
  hist_ = backend_.empty(Shape{ew::kHistBins}, DType::F32, MemCategory::Workspace);
  allocate_extra_real();
  backend_.fill(counter_, 0.0f);
  apply_layer_policy(*g_, *d_, cfg_.layer_policy);
  set_precision(cfg_.precision);
  started_ = std::chrono::steady_clock::now();
}

Trainer::~Trainer() {
  try {
    backend_.synchronize();
    backend_.drop_capture();
  } catch (...) {}
}

void Trainer::set_precision(Precision p) {
  precision_ = p;
  const DType dt = compute_dtype(p);
  g_->set_precision(backend_, dt);
  d_->set_precision(backend_, dt);
  const bool scaling = uses_loss_scaling(cfg_.amp_strategy, p, cfg_.bf16_loss_scaling);
  scaler_d_->set_enabled(scaling);
  if (scaler_g_) scaler_g_->set_enabled(scaling);
  backend_.set_allow_tf32(p == Precision::TF32);
  const Shape img{cfg_.batch, cfg_.model.res, cfg_.model.res, cfg_.model.channels};
  if (dt == DType::F32) {
    real_ = real_f32_;
  } else if (!real_.defined() || real_.dtype() != dt || real_.same_storage(real_f32_)) {
    real_ = backend_.empty(img, dt, MemCategory::Data);
  }
  set_extra_real_dtype(dt);
  if (!z_.defined() || z_.dtype() != dt)
    z_ = backend_.empty(Shape{cfg_.batch, 1, 1, cfg_.model.latent}, dt, MemCategory::Data);
  graph_.invalidate();
}

void Trainer::set_layer_policy(const LayerPolicy& policy) {
  apply_layer_policy(*g_, *d_, policy);
  cfg_.layer_policy = policy;
  set_precision(precision_);  // working copies and gradients in each layer's new dtype
}

void Trainer::set_learning_rates(float lr_g, float lr_d) {
  adam_g_->set_lr(lr_g);
  adam_d_->set_lr(lr_d);
  cfg_.adam_g.lr = lr_g;
  cfg_.adam_d.lr = lr_d;
  graph_.invalidate();  // learning rates are baked into a captured graph
}

void Trainer::set_iteration(int64_t it) {
  iteration_ = it;
  float c[2];
  ew::count_store(c, static_cast<uint64_t>(it));
  backend_.upload(counter_, c, sizeof c);
}

void Trainer::forward_backward_d(const Tensor& images, const Tensor* labels, LossRole role, int loss_slot,
                                 int prob_slot) {
  // D's weight gradients: the fake batch's are added to the real batch's.
  Context ctx{.backend = backend_,
              .dtype = compute_dtype(precision_),
              .mode = Mode::Train,
              .param_grads = true,
              .accumulate = role == LossRole::DFake,
              .staged_running_stats = true,
              .labels = labels};
  const Tensor& logits = d_->forward(ctx, images);
  backend_.gan_loss(cfg_.loss, role, logits, scaler_d_->active_state(), dlogits_, scalars_, loss_slot, prob_slot);
  d_->backward(ctx, dlogits_, InputGrad::Skip);
}

void Trainer::d_step(const Tensor& real, const Tensor* real_labels, const Tensor& fake, const Tensor* fake_labels) {
  // Discriminator: real and generated batches separately (each with its own batch-norm
  // statistics, as in the peer), weight gradients accumulated across the two. First one power
  // iteration of each spectrally normalised weight (the ResNet's D; nothing for the DCGAN).
  d_->update_spectral_norm(backend_);
  forward_backward_d(real, real_labels, LossRole::DReal, kSlotLossDReal, kSlotDReal);
  forward_backward_d(fake, fake_labels, LossRole::DFake, kSlotLossDFake, kSlotDFake);
  check_gradients(d_net_, 0, 0);
  d_->commit_running_stats(backend_, scalars_, {kSlotFoundInfD});
  optimizer_step(d_net_);
  if (!cfg_.shared_scaler) d_net_.scaler->update(backend_, scalars_, {kSlotFoundInfD});
}

void Trainer::g_step(Context& gctx, const Tensor& fake) {
  // Through the updated D, without D's weight gradients.
  Context dctx{.backend = backend_,
               .dtype = gctx.dtype,
               .mode = Mode::Train,
               .param_grads = false,
               .accumulate = false,
               .staged_running_stats = true,
               .labels = gctx.labels};  // the classes G was asked for
  const Tensor& logits = d_->forward(dctx, fake);
  backend_.gan_loss(cfg_.loss, LossRole::G, logits, g_net_.scaler->active_state(), dlogits_, scalars_, kSlotLossG,
                    kSlotDFakeG);
  const Tensor& dfake = d_->backward(dctx, dlogits_, InputGrad::Return);
  g_->backward(gctx, dfake, InputGrad::Skip);
  check_gradients(g_net_, kSlotLossDReal, kSlotDFakeG + 1);
  // D's statistics from this pass count only if both networks' steps do (D's was taken above).
  d_->commit_running_stats(backend_, scalars_, {kSlotFoundInfD, kSlotFoundInfG});
  g_->commit_running_stats(backend_, scalars_, {kSlotFoundInfG});
  optimizer_step(g_net_);
  if (!ema_.empty()) {
    std::vector<Tensor> masters;
    for (Parameter* p : g_->parameters()) masters.push_back(p->master);
    backend_.ema_update(ema_, masters, cfg_.ema_decay, cfg_.ema_rampup, adam_g_->step_count(), scalars_,
                        kSlotFoundInfG);
  }
  if (cfg_.shared_scaler)
    g_net_.scaler->update(backend_, scalars_, {kSlotFoundInfD, kSlotFoundInfG});
  else
    g_net_.scaler->update(backend_, scalars_, {kSlotFoundInfG});
}

void Trainer::check_gradients(const NetworkStep& n, int sync_first, int sync_last) {
  const Tensor& scale = n.scaler->active_state();
  backend_.copy_scalar(scale, 0, scalars_, n.slot.scale);
  if (sync_) sync_->before_check(n.model->gradients());
  backend_.grad_stats(n.model->gradients(), scale, scalars_,
                      {n.slot.found_inf, n.slot.sum_sq, n.slot.zeros, n.slot.subnormals, n.slot.count,
                       cfg_.tensor_stats ? n.slot.tensors : -1});
  if (sync_) sync_->after_check(scalars_, n.slot.found_inf, sync_first, sync_last);
  if (cfg_.amp_strategy == AmpStrategy::NanToNum)  // StyleGAN2-ADA: repair the gradients, never skip
    backend_.nan_to_num(n.model->gradients(), kNanToNumBound, scalars_, n.slot.replaced, n.slot.found_inf);
}

void Trainer::optimizer_step(const NetworkStep& n) {
  n.adam->step(backend_, n.scaler->active_state(), scalars_, n.slot.found_inf);
}

void Trainer::enqueue_step_body() {
  const DType dt = compute_dtype(precision_);
  // Batch-norm running statistics are staged and committed only for networks whose step counts:
  // a skipped step changes no weight and no running average.
  Context gctx{.backend = backend_,
               .dtype = dt,
               .mode = Mode::Train,
               .param_grads = true,
               .accumulate = false,
               .staged_running_stats = true};
  backend_.fill(scalars_, 0.0f);
  enqueue_extra_d_steps(gctx);  // n_dis > 1 only; they clear scalars_head_ before the last D step

  backend_.fill_normal(z_, cfg_.seed, rng_stream::kTrainLatentBase, counter_, 1.0f);
  gctx.labels = labels_or_null(fake_labels_);
  const Tensor& fake = g_->forward(gctx, z_);

  d_step(real_, labels_or_null(real_labels_), fake, gctx.labels);
  g_step(gctx, fake);
  backend_.count_increment(counter_);
}

void Trainer::step(const float* real_batches) {
  const size_t per_batch = real_f32_.numel();
  int k = 0;
  step([&] { return real_batches + per_batch * k++; });
}

void Trainer::step(const std::function<const float*()>& next_batch) {
  step_batches([&] { return RealBatch{next_batch(), nullptr}; });
}

void Trainer::step_batches(const std::function<RealBatch()>& next_batch) {
  const auto start = std::chrono::steady_clock::now();
  for (size_t k = 0; k < extra_real_f32_.size(); ++k) {  // the extra D steps' batches come first
    const RealBatch r = next_batch();
    backend_.upload(extra_real_f32_[k], r.images, extra_real_f32_[k].nbytes());
    if (!extra_real_[k].same_storage(extra_real_f32_[k])) backend_.cast(extra_real_f32_[k], extra_real_[k]);
    if (!extra_real_labels_.empty()) upload_labels(extra_real_labels_[k], r.labels);
  }
  const RealBatch r = next_batch();
  backend_.upload(real_f32_, r.images, real_f32_.nbytes());
  if (!real_.same_storage(real_f32_)) backend_.cast(real_f32_, real_);
  if (real_labels_.defined()) upload_labels(real_labels_, r.labels);
  draw_fake_labels();

  graph_.run([this] { enqueue_step_body(); });  // replayed as a graph where the backend captures
  ++iteration_;
  pending_.push_back({iteration_, precision_, backend_.read_async(scalars_), start});
  // Back-pressure: never run more than kMaxInFlight steps ahead of what the host has seen.
  if (pending_.size() > kMaxInFlight) pending_[pending_.size() - kMaxInFlight - 1].readback->wait();
}

double Trainer::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

std::vector<std::string> Trainer::take_warnings() { return graph_.take_warnings(); }

std::vector<StepMetrics> Trainer::collect(bool wait) {
  std::vector<StepMetrics> out;
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    if (!wait && !p.readback->ready()) break;
    const float* s = p.readback->wait();
    const auto done = std::chrono::steady_clock::now();
    StepMetrics m;
    m.step = p.step;
    m.precision = p.precision;
    layout_.decode(s, cfg_.tensor_stats ? &tensor_numel_ : nullptr, m);
    // Step time: from the step's start, or from the previous step's completion when steps
    // overlapped on the device (then the interval between completions is the throughput).
    auto from = p.start;
    if (have_last_done_ && last_done_ > from) from = last_done_;
    m.step_ms = std::chrono::duration<double, std::milli>(done - from).count();
    m.images_per_s = m.step_ms > 0 ? cfg_.batch * 1000.0 / m.step_ms : 0.0;
    m.memory_mb = backend_.memory_stats().current_total / 1048576.0;
    m.time_s = std::chrono::duration<double>(done - started_).count();
    last_done_ = done;
    have_last_done_ = true;
    out.push_back(m);
    pending_.pop_front();
  }
  return out;
}

void Trainer::with_generator_weights(const std::function<void()>& f) {
  if (ema_.empty()) return f();
  backend_.synchronize();  // no step may still read the masters being swapped
  const std::vector<Parameter*> ps = g_->parameters();
  std::vector<Tensor> saved;
  for (size_t i = 0; i < ps.size(); ++i) {
    saved.push_back(backend_.empty(ps[i]->shape, DType::F32, MemCategory::Workspace));
    backend_.copy(ps[i]->master, saved.back());
    backend_.copy(ema_[i], ps[i]->master);
    ps[i]->refresh_working(backend_);
  }
  auto restore = [&] {
    for (size_t i = 0; i < ps.size(); ++i) {
      backend_.copy(saved[i], ps[i]->master);
      ps[i]->refresh_working(backend_);
    }
  };
  try {
    f();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

std::vector<float> Trainer::generate(const std::vector<float>& latents, int n, const std::vector<int32_t>& classes) {
  const int nz = cfg_.model.latent, res = cfg_.model.res, nc = cfg_.model.channels;
  AMPGAN_CHECK(static_cast<int64_t>(latents.size()) >= int64_t{n} * nz, "too few latents");
  std::vector<float> out(static_cast<size_t>(n) * res * res * nc);
  const DType dt = compute_dtype(precision_);
  Tensor z32 = backend_.empty(Shape{cfg_.batch, 1, 1, nz}, DType::F32, MemCategory::Data);
  Tensor zc = dt == DType::F32 ? z32 : backend_.empty(Shape{cfg_.batch, 1, 1, nz}, dt, MemCategory::Data);
  Tensor img32;
  Context ctx{.backend = backend_, .dtype = dt, .mode = Mode::Sample, .param_grads = false, .accumulate = false};
  const int k = cfg_.model.classes;
  AMPGAN_CHECK(classes.empty() || static_cast<int64_t>(classes.size()) >= n, "too few classes");
  Tensor one_hot = k > 0 ? backend_.empty(Shape{cfg_.batch, k}, DType::F32, MemCategory::Data) : Tensor();
  with_generator_weights([&] {
    for (int i0 = 0; i0 < n; i0 += cfg_.batch) {
      const int m = std::min(cfg_.batch, n - i0);
      Tensor zv = z32.view(Shape{m, 1, 1, nz});
      backend_.upload(zv, latents.data() + static_cast<size_t>(i0) * nz, static_cast<size_t>(m) * nz * 4);
      Tensor zcv = zc.view(Shape{m, 1, 1, nz});
      if (!zcv.same_storage(zv)) backend_.cast(zv, zcv);
      Tensor labels;
      if (k > 0) {
        const std::vector<int32_t> c = sample_classes(i0, m, k, classes);
        labels = one_hot.view(Shape{m, k});
        upload_labels(labels, c.data());
        ctx.labels = &labels;
      }
      const Tensor& img = g_->forward(ctx, zcv);
      if (img.dtype() == DType::F32) {
        backend_.download(img, out.data() + static_cast<size_t>(i0) * res * res * nc, img.nbytes());
      } else {
        if (!img32.defined() || img32.capacity_bytes() < static_cast<size_t>(img.numel()) * 4u)
          img32 = backend_.empty(img.shape(), DType::F32, MemCategory::Workspace);
        Tensor v = img32.view(img.shape());
        backend_.cast(img, v);
        backend_.download(v, out.data() + static_cast<size_t>(i0) * res * res * nc, v.nbytes());
      }
    }
  });
  return out;
}

void Trainer::gradient_histograms(std::vector<float>& g_hist, std::vector<float>& d_hist) {
  g_hist.resize(ew::kHistBins);
  d_hist.resize(ew::kHistBins);
  backend_.grad_histogram(g_->gradients(), hist_);
  backend_.download(hist_, g_hist.data(), hist_.nbytes());
  backend_.grad_histogram(d_->gradients(), hist_);
  backend_.download(hist_, d_hist.data(), hist_.nbytes());
}

std::vector<StateEntry> Trainer::state() {
  std::vector<StateEntry> out;
  auto add_net = [&](const std::string& net, Sequential& s, Adam& adam) {
    const std::vector<Parameter*> ps = s.parameters();  // Adam's order
    for (size_t i = 0; i < ps.size(); ++i) {
      out.push_back({net + "." + ps[i]->name, &ps[i]->master});
      out.push_back({net + "." + ps[i]->name + ".adam_m", &adam.m(i)});
      out.push_back({net + "." + ps[i]->name + ".adam_v", &adam.v(i)});
    }
    for (StateBuffer* b : s.buffers()) out.push_back({net + "." + b->name, &b->value});
  };
  add_net("G", *g_, *adam_g_);
  add_net("D", *d_, *adam_d_);
  const std::vector<Parameter*> gp = g_->parameters();
  for (size_t i = 0; i < ema_.size(); ++i) out.push_back({"G_ema." + gp[i]->name, &ema_[i]});
  out.push_back({"G.adam_step", &adam_g_->step_count(), true});
  out.push_back({"D.adam_step", &adam_d_->step_count(), true});
  out.push_back({"scaler_d", &scaler_d_->state()});
  if (scaler_g_) out.push_back({"scaler_g", &scaler_g_->state()});
  return out;
}

void Trainer::state_loaded() {
  g_->reset_staged_running_stats(backend_);
  d_->reset_staged_running_stats(backend_);
  for (Parameter* p : g_->parameters()) p->refresh_working(backend_);
  for (Parameter* p : d_->parameters()) p->refresh_working(backend_);
  graph_.invalidate();
}

}  // namespace ampgan
