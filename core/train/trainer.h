// The training step: n_dis discriminator updates (each on its own real batch + a detached
// generated batch; 1 for DCGAN, 5 in SNGAN's recipe) then one generator update (non-saturating
// or hinge loss), each network with its own loss scaler and Adam, in the chosen precision. This is docs/DESIGN.md's
// "mixed-precision training step" in code:
//
//   z ~ N(0, 1)                      (Philox stream of this iteration, drawn on the device)
//   fake = G(z)
//   D step:  S_D * [loss(D(real), 1) + loss(D(fake), 0)] -> backward -> grad check -> Adam_D
//   G step:  S_G * loss(D(fake), 1) -> backward through D (no D weight grads) and G
//            -> grad check -> Adam_G
//   scalers: back off on inf/NaN (and the step was skipped), grow after clean intervals
//
// Nothing in the step reads device memory on the host: results go to a scalars tensor that is
// read back asynchronously, and a backend with capture replays the whole step as one graph.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "core/amp/loss_scaler.h"
#include "core/amp/precision.h"
#include "core/models/model_family.h"
#include "core/nn/layer_policy.h"
#include "core/optim/adam.h"
#include "core/train/step_graph.h"
#include "core/train/step_metrics.h"
#include "core/train/step_scalars.h"
#include "core/train/step_sync.h"

namespace ampgan {

// The trainer's own limits, which the settings table's rows (--batch, --n-dis) take as their range:
// batch norm needs two samples; past 100 D steps a G step would never come.
constexpr int kMinBatch = 2;
constexpr int kMaxBatch = 65536;
constexpr int kMaxDSteps = 100;

struct TrainerConfig {
  ModelFamily family = ModelFamily::DCGAN;
  DcganSpec model;  // the sizes, for either family
  int batch = 64;
  Precision precision = Precision::FP32;
  LossKind loss = LossKind::BCEWithLogits;
  AdamConfig adam_g, adam_d;
  int n_dis = 1;           // D steps per G step (SNGAN: 5); see extra_d_steps.cpp
  float ema_decay = 0.0f;  // generator EMA (0: off); see Backend::ema_update
  float ema_rampup = 0.0f;
  ew::ScalerConfig scaler;
  LayerPolicy layer_policy;                      // layers kept in FP32 in half modes (core/nn/layer_policy.h)
  AmpStrategy amp_strategy = AmpStrategy::Auto;  // loss scaling, nan_to_num or neither (core/amp/precision.h)
  bool shared_scaler = false;                    // one scaler for both networks (as one GradScaler would)
  bool bf16_loss_scaling = false;                // bf16 trains without scaling unless asked
  bool use_graphs = true;                        // replay the step as a CUDA graph where the backend can
  bool tensor_stats = true;                      // per-tensor gradient statistics (off only to measure their cost)
  uint64_t seed = 0;
};

// One network's half of the step (docs/DESIGN.md: each network has its own loss scaler and Adam):
// its model, optimizer, scaler and slots. D and G differ only in these, so the two halves of
// the step are written alike (Trainer::check_gradients, Trainer::optimizer_step).
struct NetworkStep {
  Sequential* model = nullptr;
  Adam* adam = nullptr;
  LossScaler* scaler = nullptr;  // G's is D's with TrainerConfig::shared_scaler
  NetworkSlots slot{};           // not "slots": Qt defines that word as a macro
};

// One real batch for a step: images (batch, res, res, channels) FP32 and, for a class-conditional
// model, their classes (batch); each pointer need only stay valid until the next batch is asked for.
struct RealBatch {
  const float* images = nullptr;
  const int32_t* labels = nullptr;
};

// A named device tensor of the trainer's state (for checkpoints).
struct StateEntry {
  std::string name;
  Tensor* tensor;
  bool count = false;  // an FP32 [lo, hi] count (ew::count_load); older checkpoints hold one float
};

class Trainer {
 public:
  Trainer(Backend& backend, const TrainerConfig& cfg);
  ~Trainer();

  // One iteration: n_dis real batches, host FP32, NHWC (batch, res, res, channels), in [-1, 1],
  // back to back (n_dis * batch images).
  void step(const float* real_batches);
  // The same with each batch taken from next_batch() (called n_dis times; each pointer need only
  // stay valid until the next call, as BatchLoader::next's).
  void step(const std::function<const float*()>& next_batch);
  // The same with labels: a class-conditional model needs them (Error otherwise), an
  // unconditional one ignores them. Generated batches get classes drawn uniformly from Philox
  // (seed, rng_stream::kFakeClasses), G and D seeing the same ones.
  void step_batches(const std::function<RealBatch()>& next_batch);
  // Metrics of finished steps, oldest first. wait: block until every step is reported.
  std::vector<StepMetrics> collect(bool wait = false);

  int64_t iteration() const { return iteration_; }  // steps taken (enqueued) so far
  double elapsed_s() const;                         // seconds since the trainer was made (time_s)
  void set_iteration(int64_t it);                   // after loading a checkpoint
  Precision precision() const { return precision_; }
  void set_precision(Precision p);  // between steps; nothing is lost
  // Which layers stay FP32 (between steps, like the precision); an unknown layer name throws
  // Error and changes nothing.
  void set_layer_policy(const LayerPolicy& policy);
  const LayerPolicy& layer_policy() const { return cfg_.layer_policy; }
  const TrainerConfig& config() const { return cfg_; }
  void set_learning_rates(float lr_g, float lr_d);
  // Data-parallel training (core/dist): called around each grad_stats; nullptr: one device.
  void set_step_sync(dist::StepSync* s) { sync_ = s; }

  Backend& backend() { return backend_; }
  Sequential& generator() { return *g_; }
  Sequential& discriminator() { return *d_; }
  LossScaler& scaler_d() { return *scaler_d_; }
  LossScaler& scaler_g() { return shared() ? *scaler_d_ : *scaler_g_; }
  bool shared() const { return cfg_.shared_scaler; }

  // Generates images from host latents (n x latent FP32) with batch statistics and no change
  // to any state, in groups of at most the training batch, with the EMA generator when the EMA
  // is on. Returns NHWC FP32 in [-1, 1]. A class-conditional model draws sample i as class
  // classes[i] (classes.size() >= n), or i % classes without them.
  std::vector<float> generate(const std::vector<float>& latents, int n, const std::vector<int32_t>& classes = {});
  int classes() const { return cfg_.model.classes; }  // 0: unconditional
  // The classes generated in D step j (0 .. n_dis - 1; the G step reuses the last) of the step
  // after `steps_done` steps (class_labels.cpp); empty when unconditional.
  std::vector<int32_t> fake_classes(int64_t steps_done, int j) const;

  bool has_ema() const { return !ema_.empty(); }
  // Runs f with G's master weights (and working copies) replaced by the EMA's, then restores
  // them bit for bit; without an EMA just runs f. For sampling, evaluation and export.
  void with_generator_weights(const std::function<void()>& f);

  // Gradient exponent histograms of the last step (ew::kHistBins counts each), synchronous.
  void gradient_histograms(std::vector<float>& g_hist, std::vector<float>& d_hist);

  // Every gradient tensor, D's then G's, each in parameter order: the order of
  // StepMetrics::tensors.
  const std::vector<TensorName>& tensor_names() const { return tensor_names_; }

  // The last step's latents and real batch (in the compute dtype), for the forward probe.
  const Tensor& last_latents() const { return z_; }
  const Tensor& last_real() const { return real_; }
  // ... and a conditional model's classes of both (one-hot FP32; null when unconditional).
  const Tensor* last_real_labels() const { return labels_or_null(real_labels_); }
  const Tensor* last_fake_labels() const { return labels_or_null(fake_labels_); }

  // Things the caller should tell the user (e.g. a step that could not be captured as a graph).
  std::vector<std::string> take_warnings();

  // Every device tensor that defines the training state, by name.
  std::vector<StateEntry> state();
  // After writing state tensors from outside: refresh the half copies from the masters.
  void state_loaded();

 private:
  void enqueue_step_body();
  // One D update on a real batch and a generated one, its scaler updated unless shared.
  void d_step(const Tensor& real, const Tensor* real_labels, const Tensor& fake, const Tensor* fake_labels);
  // The G update through the updated D on the generated batch fake = G(z) (gctx: G's forward).
  void g_step(Context& gctx, const Tensor& fake);
  // After a network's backward: its loss scale into its slot, the unscale-and-check with the
  // gradient statistics (across ranks with a StepSync, which also sums the slots
  // [sync_first, sync_last)), and under nan_to_num the repair that replaces a skip.
  void check_gradients(const NetworkStep& n, int sync_first, int sync_last);
  // Adam on the network's FP32 masters; nothing when its gradients were not finite.
  void optimizer_step(const NetworkStep& n);
  // n_dis > 1 (extra_d_steps.cpp): the D steps before the one whose generated batch the G step
  // reuses, each on its own real batch and latents.
  void allocate_extra_real();
  void set_extra_real_dtype(DType dt);
  void enqueue_extra_d_steps(Context& gctx);
  void forward_backward_d(const Tensor& images, const Tensor* labels, LossRole role, int loss_slot, int prob_slot);
  // A conditional model's classes for the coming step: the real batches' (one-hot, uploaded)
  // and the generated batches' (drawn here); nothing for an unconditional one.
  void upload_labels(Tensor& one_hot, const int32_t* labels);
  void draw_fake_labels();
  const Tensor* labels_or_null(const Tensor& t) const { return t.defined() ? &t : nullptr; }

  Backend& backend_;
  TrainerConfig cfg_;
  Precision precision_;
  StepGraph graph_;  // capture and replay of enqueue_step_body
  std::unique_ptr<Sequential> g_, d_;
  std::unique_ptr<Adam> adam_g_, adam_d_;
  std::unique_ptr<LossScaler> scaler_d_, scaler_g_;  // scaler_g_ null when shared
  NetworkStep d_net_, g_net_;                        // the two halves of the step, over the owners above
  // The step's buffers. B batch, H = W = res, C image channels, nz latent size, T gradient
  // tensors (D's, then G's); "compute" is the precision's dtype (FP32, FP16 or BF16).
  std::vector<Tensor> ema_;                          // per G parameter, its shape, FP32: G's EMA (empty: off)
  std::vector<Tensor> extra_real_f32_, extra_real_;  // n_dis - 1 of [B,H,W,C], FP32 / compute
  Tensor real_f32_;  // [B,H,W,C] FP32: the last D step's real batch as uploaded, in [-1, 1]
  Tensor real_;      // [B,H,W,C] compute (real_f32_ itself in FP32)
  Tensor z_;         // [B,1,1,nz] compute: latents, drawn on the device from counter_
  Tensor dlogits_;   // [B,1] FP32: d(S * loss)/d(logits), written by each gan_loss
  // Conditional models only, [B,K] FP32 one-hot (K classes): the last D step's real batch's
  // classes and the generated batch's; per extra D step (n_dis > 1) its own pair.
  Tensor real_labels_, fake_labels_;
  std::vector<Tensor> extra_real_labels_, extra_fake_labels_;
  StepScalarsLayout layout_;  // where each result sits in scalars_ (step_scalars.h)
  Tensor scalars_;            // [layout_.size()] FP32: the step's results
  Tensor counter_;            // [2] FP32 [lo, hi] count (ew::count_load): iterations on the device
  Tensor hist_;               // [ew::kHistBins] FP32: a gradient exponent histogram
  int64_t iteration_ = 0;
  std::vector<TensorName> tensor_names_;
  std::vector<int64_t> tensor_numel_;  // each gradient tensor's size, in tensor_names_ order
  // The slots every D step and the G step rewrite (a view of scalars_): the extra D steps of
  // n_dis > 1 clear them before the next D step, keeping what they must in their own slots.
  Tensor scalars_head_;
  dist::StepSync* sync_ = nullptr;

  struct Pending {
    int64_t step;
    Precision precision;
    std::unique_ptr<HostReadback> readback;
    std::chrono::steady_clock::time_point start;
  };
  std::deque<Pending> pending_;
  std::chrono::steady_clock::time_point last_done_;
  bool have_last_done_ = false;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace ampgan
