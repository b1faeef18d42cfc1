// A run while it trains: steps, their rows, events and alerts, samples, evaluation, checkpoints,
// changes between steps and the end (opening a run: session_open.cpp).
#include "core/run/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/dist/data_parallel.h"
#include "core/metrics/evaluator.h"
#include "core/nn/class_embedding.h"
#include "core/run/checkpoint.h"
#include "core/run/checkpoint_integrity.h"
#include "core/run/checkpoint_retention.h"
#include "core/run/overflow_locator.h"
#include "core/run/run_folder.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

// A network whose gradients were inf/NaN this many steps in a row has diverged: stop rather than
// burn time. Skipped steps change no weight, but the state may have gone non-finite before
// (see nonfinite_state), so the stop message checks rather than assumes.
constexpr int kMaxConsecutiveSkips = 200;

// Names of the FP32 training-state tensors (weights, Adam moments, batch-norm statistics) that
// hold inf or NaN.
std::vector<std::string> nonfinite_state(Trainer& t) {
  t.backend().synchronize();
  std::vector<std::string> bad;
  std::vector<float> v;
  for (const StateEntry& e : t.state()) {
    if (e.tensor->dtype() != DType::F32) continue;
    v.resize(static_cast<size_t>(e.tensor->numel()));
    t.backend().download(*e.tensor, v.data(), e.tensor->nbytes());
    if (!std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); })) bad.push_back(e.name);
  }
  return bad;
}

}  // namespace

Session::~Session() = default;

void Session::emit_event(RunEvent e) {
  // The clock of metrics.csv's time_s: seconds trained, continued across resumes.
  if (e.time_s == 0 && trainer_) e.time_s = time_offset_ + trainer_->elapsed_s();
  // Messages may quote file names that are not UTF-8 (a dataset's files, a renamed run folder):
  // JSON can only hold UTF-8, so such bytes become U+FFFD instead of failing the write.
  if (events_log_) events_log_->append_line(e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (listener_) listener_->on_event(e);
}

void Session::step() {
  if (lock_) lock_->refresh();  // a deleted run.lock is written again; a moved folder stops the run
  // Every rank votes at the step boundary: a signal to any of them stops them all here.
  if (parallel_ && parallel_->next_step(true) != dist::DataParallel::Vote::Step) {
    ranks_stopped_ = true;
    return;
  }
  // n_dis batches a step; under data parallelism each rank trains on its slice of each.
  trainer_->step_batches([this] {
    const float* images = loader_->next();
    if (parallel_) return RealBatch{parallel_->slice(images), nullptr};  // unconditional only (build)
    return RealBatch{images, loader_->labels().empty() ? nullptr : loader_->labels().data()};
  });
  const int64_t it = trainer_->iteration();
  for (const std::string& w : trainer_->take_warnings()) emit_event({it, 0, EventType::Warning, "", w});
  const bool eval_now = evaluator_ && cfg_.eval_every > 0 && it % cfg_.eval_every == 0;
  std::vector<StepMetrics> rows = trainer_->collect(eval_now);
  if (eval_now && !rows.empty()) evaluate(rows.back());
  const StepMetrics last = rows.empty() ? StepMetrics{} : rows.back();
  handle_rows(std::move(rows));
  report_kernels(it);
  if (cfg_.hist_every > 0 && it % cfg_.hist_every == 0 && (listener_ || hist_log_ || tb_log_))
    write_histograms(it, last);
  if (cfg_.sample_every > 0 && it % cfg_.sample_every == 0) write_samples();
  if (cfg_.checkpoint_every > 0 && it % cfg_.checkpoint_every == 0) save_checkpoint();
  time_done_ = time_offset_ + trainer_->elapsed_s();
  steps_done_ = it;
}

// The CPU backend chooses a kernel per product when it first meets it (the first step, a new
// precision, an evaluation): each new choice is recorded once, as an Info event with the choices
// as data ("kernels": {product: kernel}), and the count per kernel for people.
void Session::report_kernels(int64_t it) {
  const std::vector<KernelChoice> all = backend_->kernel_choices();
  if (all.size() <= reported_kernels_.size()) return;
  std::map<std::string, int> per_kernel;
  nlohmann::json data = nlohmann::json::object();
  for (const KernelChoice& c : all)
    if (reported_kernels_.insert(c.first).second) {
      data[c.first] = c.second;
      ++per_kernel[c.second];
    }
  std::string msg = "CPU products planned (" + std::to_string(data.size()) + " shapes):";
  for (const auto& [k, n] : per_kernel) msg += " " + k + " " + std::to_string(n);
  RunEvent e{it, 0, EventType::Info, "", msg};
  e.data["kernels"] = data;
  emit_event(e);
}

void Session::write_histograms(int64_t it, const StepMetrics& last) {
  std::vector<float> g, d;
  trainer_->gradient_histograms(g, d);
  // Under the precision and scale of the step they come from (its row; none: the trainer's).
  const Precision p = last.step == it ? last.precision : trainer_->precision();
  if (hist_log_) {
    hist_log_->write({it, 'G', p, last.step == it ? last.scale_g : 1.0, g});
    hist_log_->write({it, 'D', p, last.step == it ? last.scale_d : 1.0, d});
  }
  if (tb_log_) {
    tb_log_->histogram({it, 'G', p, last.step == it ? last.scale_g : 1.0, g});
    tb_log_->histogram({it, 'D', p, last.step == it ? last.scale_d : 1.0, d});
  }
  if (listener_) listener_->on_histograms(it, g, d);
}

void Session::handle_rows(std::vector<StepMetrics> rows) {
  if (rows.empty()) return;
  for (StepMetrics& m : rows) {
    m.time_s += time_offset_;
    if (parallel_) m.images_per_s *= parallel_->size();  // the global batch's
    metrics_log_->append_line(m.csv_row());
    if (tb_log_) tb_log_->scalars(m);
    if (layers_log_ && (m.skipped_d || m.skipped_g || (cfg_.layers_every > 0 && m.step % cfg_.layers_every == 0)))
      layers_log_->write(m);
    ForwardProbe probe;  // once per overflowing step, for the first network that needs it
    bool probed = false;
    auto network_events = [&](const char* net, int skipped, double scale, double& last, int& streak) {
      if (skipped) {
        ++streak;
        // With n_dis > 1 the scale is the last D step's, after any earlier step's back-off.
        const std::string what =
            std::string(net) == "D" && cfg_.n_dis > 1
                ? std::to_string(skipped) + " of " + std::to_string(cfg_.n_dis) + " D steps skipped"
                : "step skipped";
        RunEvent e{m.step, m.time_s, EventType::Overflow, net,
                   std::string(net) + " gradients had inf/NaN at loss scale " + scale_label(scale) + ": " + what};
        e.data["skipped"] = skipped;
        e.data["scale"] = scale;
        locate_overflow(trainer_->tensor_names(), m, net, e);
        if (e.data.contains("layer")) {  // this network's own inf/NaN: did the forward pass make them?
          if (!probed) probe = probe_forward(*trainer_);
          probed = true;
          add_forward_location(probe, e);
        }
        emit_event(e);
      } else {
        streak = 0;
      }
      if (last > 0 && scale != last) {
        RunEvent e{m.step, m.time_s, EventType::ScaleChange, net,
                   std::string(net) + " loss scale " + scale_label(last) + " -> " + scale_label(scale)};
        e.data["from"] = last;
        e.data["to"] = scale;
        emit_event(e);
      }
      last = scale;
    };
    network_events("D", m.skipped_d, m.scale_d, last_scale_d_, consecutive_skips_d_);
    if (!trainer_->shared())
      network_events("G", m.skipped_g, m.scale_g, last_scale_g_, consecutive_skips_g_);
    else if (m.skipped_g)
      network_events("G", true, m.scale_g, last_scale_g_, consecutive_skips_g_);
    else
      consecutive_skips_g_ = 0;
    const bool scaling = m.precision == Precision::FP16 || (m.precision == Precision::BF16 && cfg_.bf16_loss_scaling);
    for (const RunEvent& al : alerts_.observe(m, scaling, cfg_.scaler.min_scale, trainer_->tensor_names()))
      emit_event(al);
  }
  if (listener_) listener_->on_metrics(rows);
  const int worst = std::max(consecutive_skips_d_, consecutive_skips_g_);
  if (worst >= kMaxConsecutiveSkips) {
    const char* net = consecutive_skips_d_ >= consecutive_skips_g_ ? "D" : "G";
    const std::string msg = std::string("training diverged: ") + net + "'s gradients were inf/NaN for " +
                            std::to_string(worst) + " steps in a row (loss scale " +
                            scale_label(std::string(net) == "D" ? rows.back().scale_d : rows.back().scale_g) + ")";
    emit_event({rows.back().step, rows.back().time_s, EventType::Error, net, msg});
    const std::vector<std::string> bad = nonfinite_state(*trainer_);
    finish("diverged");
    if (bad.empty())
      throw Error(msg, folder_.dir().string(),
                  "the weights are intact (skipped steps change nothing) and were saved; lower the learning "
                  "rate, or use fp32/bf16, and resume or start again");
    std::string names;
    for (size_t i = 0; i < bad.size() && i < 4; ++i) names += (i ? ", " : "") + bad[i];
    if (bad.size() > 4) names += " and " + std::to_string(bad.size() - 4) + " more";
    throw Error(msg + "; the weights are NOT intact: " + std::to_string(bad.size()) + " state tensors hold inf/NaN (" +
                    names + ")",
                folder_.dir().string(),
                "this state was not saved (a checkpoint never holds inf/NaN): resume from the newest "
                "checkpoint, or start again, with a lower learning rate or in fp32/bf16");
  }
}

void Session::evaluate(StepMetrics& row) {
  const auto t0 = std::chrono::steady_clock::now();
  const metrics::EvalResult r = evaluator_->evaluate(*trainer_);
  row.swd = r.swd;
  row.fd = r.fd;
  RunEvent e{row.step, row.time_s + time_offset_, EventType::Eval, "", metrics::describe(r)};
  e.data = metrics::to_json(r);
  e.data["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  emit_event(e);
}

io::Image8 Session::sample_grid() {
  const DcganSpec& m = trainer_->config().model;
  const std::vector<float> imgs =
      trainer_->generate(fixed_latents_, kGridSide * kGridSide, grid_row_classes(kGridSide, kGridSide, m.classes));
  return io::make_grid(imgs.data(), kGridSide * kGridSide, m.res, m.channels, kGridSide);
}

void Session::write_samples() {
  const int64_t it = trainer_->iteration();
  const io::Image8 grid = sample_grid();
  io::write_png(folder_.sample_grid(it), grid);
  // The PNG file's own bytes, so that TensorBoard shows exactly the grid in samples/.
  if (tb_log_) tb_log_->image(it, "samples", io::read_file(folder_.sample_grid(it)), grid);
  last_samples_step_ = it;
  if (listener_) listener_->on_samples(it, grid);
}

std::vector<float> Session::generate(int n, uint64_t seed) {
  const int nz = trainer_->config().model.latent;
  std::vector<float> z(static_cast<size_t>(n) * nz);
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(seed, rng_stream::kSampleLatents, i);
  return trainer_->generate(z, n);
}

void Session::export_samples(const fs::path& dir, int n, uint64_t seed) {
  io::ensure_writable_dir(dir);
  const DcganSpec& m = trainer_->config().model;
  const std::vector<float> imgs = generate(n, seed);
  for (int i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "sample_%05d.png", i);
    io::write_png(dir / name, io::to_image8(imgs.data(), i, m.res, m.channels));
  }
}

void Session::report_swept(const std::vector<fs::path>& swept, int64_t step) {
  if (swept.empty()) return;
  std::vector<std::string> names;
  names.reserve(swept.size());
  for (const fs::path& p : swept) names.push_back(p.lexically_relative(folder_.dir()).generic_string());
  RunEvent e{step, 0, EventType::Warning, "",
             "removed " + std::to_string(swept.size()) +
                 " temporary file(s) left by a writer that was killed: " + name_list(names)};
  emit_event(e);
}

fs::path Session::save_checkpoint() {
  const int64_t it = trainer_->iteration();
  handle_rows(trainer_->collect(true));
  fs::path p = folder_.checkpoint(it);
  // A state holding inf/NaN is never saved (ampgan::save_checkpoint refuses it too): the run
  // stops here, and its newest checkpoint stays a finite one.
  if (const std::vector<std::string> bad = nonfinite_state(*trainer_); !bad.empty()) {
    const std::string msg = "training diverged: the weights are NOT intact: " + std::to_string(bad.size()) +
                            " state tensor(s) hold inf/NaN (" + name_list(bad) +
                            "); no checkpoint was written at step " + std::to_string(it);
    emit_event({it, 0, EventType::Error, "", msg});
    metrics_log_->sync();
    events_log_->sync();
    throw Error(msg, folder_.dir().string(),
                last_checkpoint_step_ > 0
                    ? "resume from the newest checkpoint (step " + std::to_string(last_checkpoint_step_) +
                          "), with a lower learning rate or in fp32/bf16"
                    : "start again with a lower learning rate or in fp32/bf16");
  }
  ampgan::save_checkpoint(p, *trainer_, cfg_, loader_->batches_consumed(), dataset_fingerprint_);
  metrics_log_->sync();
  events_log_->sync();
  if (layers_log_) layers_log_->sync();
  if (hist_log_) hist_log_->sync();
  if (tb_log_) tb_log_->sync();
  last_checkpoint_step_ = it;
  checkpoint_done_ = it;
  const auto pruned = prune_checkpoints(folder_.dir(), cfg_.keep_checkpoints, int64_t{10} * cfg_.checkpoint_every, it);
  RunEvent e{it, 0, EventType::Checkpoint, "", "checkpoint " + p.filename().string()};
  e.data["path"] = p.string();
  if (!pruned.empty()) e.data["pruned"] = pruned.size();
  emit_event(e);
  return p;
}

void Session::set_precision(Precision p) {
  if (p == trainer_->precision()) return;
  handle_rows(trainer_->collect(true));
  const Precision old = trainer_->precision();
  trainer_->set_precision(p);
  RunEvent e{trainer_->iteration(), 0, EventType::PrecisionSwitch, "",
             std::string("precision ") + precision_label(old) + " -> " + precision_label(p)};
  e.data["from"] = precision_name(old);
  e.data["to"] = precision_name(p);
  emit_event(e);
  if (tb_log_) tb_log_->text(e.step, "precision/switch", e.message);
}

void Session::set_layer_policy(const LayerPolicy& policy) {
  if (policy == trainer_->layer_policy()) return;
  handle_rows(trainer_->collect(true));
  trainer_->set_layer_policy(policy);
  cfg_.fp32_layers = policy.fp32_layers;
  cfg_.half_blocks = policy.half_blocks;
  cfg_.conv_clamp = policy.conv_clamp;
  folder_.write_config(cfg_);
  const std::string list = policy.fp32_layers.empty() ? "none" : join_layer_list(policy.fp32_layers);
  RunEvent e{trainer_->iteration(), 0, EventType::PolicySwitch, "",
             "FP32 layers: " + list + "; half blocks: " +
                 (policy.half_blocks < 0 ? std::string("all") : std::to_string(policy.half_blocks)) +
                 "; activation clamp: " +
                 (policy.conv_clamp > 0 ? nlohmann::json(policy.conv_clamp).dump() : std::string("off"))};
  e.data["fp32_layers"] = policy.fp32_layers;
  e.data["half_blocks"] = policy.half_blocks;
  e.data["conv_clamp"] = policy.conv_clamp;
  emit_event(e);
}

void Session::set_learning_rates(float lr_g, float lr_d) {
  RunConfig probe = cfg_;
  probe.lr_g = lr_g;
  probe.lr_d = lr_d;
  probe.validate();
  trainer_->set_learning_rates(lr_g, lr_d);
  cfg_.lr_g = lr_g;
  cfg_.lr_d = lr_d;
  emit_event({trainer_->iteration(), 0, EventType::Warning, "",
              "learning rates set to G " + std::to_string(lr_g) + ", D " + std::to_string(lr_d)});
}

void Session::set_total_steps(int64_t steps) {
  // The same range as every other source of a step target (RunConfig's table).
  RunConfig probe = cfg_;
  probe.steps = steps;
  probe.validate();
  cfg_.steps = steps;
  folder_.write_config(cfg_);
}

void Session::run(const std::atomic<bool>* stop) {
  while (!done() && !(stop && stop->load()) && !ranks_stopped_) step();
}

void Session::record_stop(const std::string& reason) noexcept {
  if (stopped_) return;
  try {
    emit_event({trainer_ ? trainer_->iteration() : 0, 0, EventType::Stop, "",
                "stopped at step " + std::to_string(trainer_ ? trainer_->iteration() : 0) + " (" + reason + ")"});
    if (events_log_) events_log_->sync();
  } catch (...) {}
}

std::string Session::report_blocked_stop(const std::string& why) const {
  const int64_t step = steps_done_.load(), ck = checkpoint_done_.load();
  std::string msg = "stopped at step " + std::to_string(step) + " (" + why + "); the newest checkpoint is " +
                    (ck >= 0 ? folder_.checkpoint(ck).filename().string() : std::string("none"));
  try {
    RunEvent e{step, time_done_.load(), EventType::Stop, "", msg};
    io::AppendLog own(folder_.events());  // its own descriptor: the Session's thread may be mid-call
    own.append_line(e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    own.sync();
  } catch (...) {}
  return msg;
}

void Session::finish(const std::string& reason) {
  handle_rows(trainer_->collect(true));
  const int64_t it = trainer_->iteration();
  if (it > 0 && last_samples_step_ != it) write_samples();
  if (it > 0 && last_checkpoint_step_ != it) {
    // A diverged state is not saved (save_checkpoint would refuse it): say which one is kept.
    if (const std::vector<std::string> bad = nonfinite_state(*trainer_); bad.empty())
      save_checkpoint();
    else
      emit_event(
          {it, 0, EventType::Warning, "",
           "no checkpoint written at step " + std::to_string(it) + ": " + std::to_string(bad.size()) +
               " state tensor(s) hold inf/NaN; the newest checkpoint is " +
               (last_checkpoint_step_ > 0 ? "step " + std::to_string(last_checkpoint_step_) : std::string("none"))});
  }
  emit_event({it, 0, EventType::Stop, "", "stopped at step " + std::to_string(it) + " (" + reason + ")"});
  stopped_ = true;
  metrics_log_->sync();
  events_log_->sync();
  if (layers_log_) layers_log_->sync();
  if (hist_log_) hist_log_->sync();
  if (tb_log_) tb_log_->sync();
  // Last: the other ranks wait here while this one writes, so that none ends (and mpirun, which
  // ends a job when one of its ranks does, never kills this one) before the checkpoint is on disk.
  if (parallel_) parallel_->next_step(false, reason != "finished" && reason != "diverged");
}

}  // namespace ampgan
