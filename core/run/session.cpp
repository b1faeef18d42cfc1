#include "core/run/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/common/timestamp.h"
#include "core/dist/data_parallel.h"
#include "core/metrics/evaluator.h"
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
constexpr int kGridSide = 8;

std::string csv_header() {
  std::string h;
  for (const std::string& c : StepMetrics::columns()) h += (h.empty() ? "" : ",") + c;
  return h;
}

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

void refuse_nonempty(const fs::path& dir) {
  const std::string holder = io::run_lock_holder(dir);
  if (!holder.empty())
    throw Error("the output folder is in use: another writer holds its lock (" + holder + ")", dir.string(),
                "choose another --out; one run folder takes one writer at a time");
  throw Error("the output folder already holds files (it was left untouched)", dir.string(),
              RunFolder(dir).has_checkpoint() ? "continue it with 'ampgan resume " + dir.string() + "' or choose another --out"
                                  : "it has no checkpoint to continue from: choose another --out, or remove the "
                                    "folder if you no longer need it");
}

// A checkpoint given to resume must come from the run: the settings that make a run what it is
// must agree (learning rates and targets may differ: they change during a run).
void check_same_run(const RunConfig& ck, const RunConfig& run, const fs::path& file, const RunFolder& folder) {
  const std::pair<const char*, bool> same[] = {
      {"dataset", ck.dataset == run.dataset}, {"res", ck.res == run.res},
      {"width", ck.width == run.width},       {"channels", ck.channels == run.channels},
      {"batch", ck.batch == run.batch},       {"seed", ck.seed == run.seed},
      {"loss", ck.loss == run.loss},          {"scaler", ck.shared_scaler == run.shared_scaler}};
  for (const auto& [key, equal] : same)
    if (!equal)
      throw Error("the checkpoint belongs to another run: its '" + std::string(key) + "' differs from " +
                      folder.config().string(),
                  file.string(), "give a checkpoint of this run (from " + folder.checkpoints_dir().string() + ")");
}

}  // namespace

Session::~Session() = default;

void Session::take_lock(const SessionOptions& opt) {
  lock_ = std::make_unique<io::RunLock>(folder_.dir(), opt.writer.empty() ? io::this_command_line() : opt.writer);
}

void Session::build(const SessionOptions& opt, int channels_override) {
  listener_ = opt.listener;
  data::LoadOptions lo;
  lo.res = cfg_.res;
  lo.channels = channels_override > 0 ? channels_override : cfg_.channels;
  lo.synthetic_count = cfg_.synthetic_count;
  lo.seed = cfg_.seed;
  lo.progress = opt.progress;
  lo.cancel = opt.cancel;
  data_ = std::make_unique<data::ImageSet>(data::load_dataset(cfg_.dataset, lo));
  if (cfg_.batch > data_->count)
    throw Error("batch size " + std::to_string(cfg_.batch) + " is larger than the dataset (" +
                    std::to_string(data_->count) + " images)",
                "--batch", "use a batch of at most " + std::to_string(data_->count) + ", or add images");
  // Ranks on one machine take consecutive GPUs from --gpu.
  backend_ = create_backend(cfg_.backend, &backend_note_, cfg_.gpu + (opt.comm ? opt.comm->local_rank() : 0));
  TrainerConfig tc = cfg_.trainer_config(data_->channels);
  if (opt.comm) parallel_ = std::make_unique<dist::DataParallel>(*opt.comm, *backend_, tc);
  trainer_ = std::make_unique<Trainer>(*backend_, parallel_ ? parallel_->rank_config() : tc);
  if (parallel_) parallel_->attach(*trainer_);
  const int nz = trainer_->config().model.latent;
  fixed_latents_.resize(static_cast<size_t>(kGridSide * kGridSide) * nz);
  for (size_t i = 0; i < fixed_latents_.size(); ++i)
    fixed_latents_[i] = philox_normal(cfg_.seed, rng_stream::kFixedLatents, i);
  if (cfg_.eval_every > 0) {
    metrics::Evaluator::Options eo;
    eo.notice = [this](const std::string& m) { emit_event({trainer_->iteration(), 0, EventType::Info, "", m}); };
    evaluator_ = std::make_unique<metrics::Evaluator>(*data_, cfg_.eval_samples, cfg_.seed, eo);
  }
}

std::unique_ptr<Session> Session::create(const RunConfig& cfg, const SessionOptions& opt) {
  cfg.validate();
  std::unique_ptr<Session> s(new Session());
  s->cfg_ = cfg;
  if (s->cfg_.name.empty()) s->cfg_.name = cfg.default_name();
  s->cfg_.world_size = opt.comm ? opt.comm->size() : 1;
  s->folder_ = RunFolder(cfg.out_dir.empty() ? fs::path(cfg.runs_root) / (local_timestamp() + "-" + s->cfg_.name) : fs::path(cfg.out_dir));
  std::error_code ec;
  if (fs::exists(s->folder_.dir(), ec)) {
    if (!fs::is_directory(s->folder_.dir(), ec))
      throw Error("the output folder is a file", s->folder_.dir().string(), "choose another --out");
    if (s->folder_.holds_files()) refuse_nonempty(s->folder_.dir());
  }
  // Load and check everything before creating the folder, so bad input leaves nothing behind.
  s->build(opt, 0);
  // The ranks agree before anything is written (a mismatch leaves no folder behind).
  const std::vector<std::string> notes = s->parallel_ ? s->start_parallel(0, 0, 1) : std::vector<std::string>();
  io::ensure_writable_dir(s->folder_.dir());
  // Under the lock the emptiness check and the first write are one step: of two writers started
  // at once, one gets the lock and the other an error, and a writer that got the lock after
  // another finished finds its files.
  s->take_lock(opt);
  const auto swept = sweep_stale_temporaries(s->folder_.dir());  // a killed earlier attempt's config.json
  if (s->folder_.holds_files()) {
    if (s->lock_->created_file()) fs::remove(s->lock_->path(), ec);
    refuse_nonempty(s->folder_.dir());
  }
  io::ensure_writable_dir(s->folder_.samples_dir());
  io::ensure_writable_dir(s->folder_.checkpoints_dir());
  s->folder_.write_config(s->cfg_);
  s->metrics_log_ = std::make_unique<io::AppendLog>(s->folder_.metrics());
  s->metrics_log_->append_line(csv_header());
  s->events_log_ = std::make_unique<io::AppendLog>(s->folder_.events());
  s->layers_log_ = std::make_unique<LayersLog>(s->folder_.layers(), s->trainer_->tensor_names());
  s->hist_log_ = std::make_unique<HistogramsLog>(s->folder_.histograms());
  RunEvent e;
  e.type = EventType::Start;
  e.message = "training " + s->data_->name + " (" + std::to_string(s->data_->count) + " images, " +
              std::to_string(s->cfg_.res) + "x" + std::to_string(s->cfg_.res) + "x" +
              std::to_string(s->data_->channels) + ") in " + precision_label(cfg.precision) + " on " +
              s->backend_->name();
  e.data["backend"] = s->backend_->name();
  e.data["dataset_images"] = s->data_->count;
  e.data["channels"] = s->data_->channels;
  e.data["params_g"] = s->trainer_->generator().parameter_count();
  e.data["params_d"] = s->trainer_->discriminator().parameter_count();
  e.data["version"] = AMPGAN_VERSION;
  s->emit_event(e);
  if (!s->backend_note_.empty()) s->emit_event({0, 0, EventType::Warning, "", s->backend_note_});
  for (const std::string& w : s->data_->warnings) s->emit_event({0, 0, EventType::Warning, "", w});
  s->loader_ = std::make_unique<data::BatchLoader>(*s->data_, cfg.batch, cfg.seed, 0);
  s->report_swept(swept, 0);
  for (const std::string& n : notes) s->emit_event({0, 0, EventType::Info, "", n});
  return s;
}

std::unique_ptr<Session> Session::resume(const fs::path& run_dir, int64_t total_steps, const SessionOptions& opt,
                                         const fs::path& checkpoint) {
  std::error_code ec;
  const RunFolder folder(run_dir);
  if (!fs::is_directory(run_dir, ec))
    throw Error("no such run folder", run_dir.string(), "give the folder 'ampgan train' created (under runs/)");
  if (!folder.exists())
    throw Error("not a run folder: it has no config.json", run_dir.string(), "give the folder 'ampgan train' created");
  std::unique_ptr<Session> s(new Session());
  s->folder_ = folder;
  s->take_lock(opt);  // before anything is read: what is read must not change under us
  RunConfig cfg = folder.read_config();
  const fs::path ckpt = checkpoint.empty() ? newest_checkpoint(run_dir) : checkpoint;
  CheckpointInfo info;
  const io::StFile file = read_checkpoint(ckpt, &info);
  if (!checkpoint.empty()) check_same_run(info.config, cfg, ckpt, folder);
  // Checkpoints after the chosen one belong to a history that is about to be retrained: they
  // are moved aside (with the logs as they were), not overwritten one by one.
  std::vector<fs::path> newer;
  for (const auto& entry : fs::directory_iterator(folder.checkpoints_dir(), ec)) {
    std::error_code ec2;
    if (entry.is_regular_file(ec2) && step_of_checkpoint_name(entry.path()) > info.step) newer.push_back(entry.path());
  }
  if (total_steps > 0) cfg.steps = total_steps;
  // The policy at the checkpoint (switched mid-run perhaps); config.json then says it.
  cfg.fp32_layers = info.layer_policy.fp32_layers;
  cfg.half_blocks = info.layer_policy.half_blocks;
  cfg.conv_clamp = info.layer_policy.conv_clamp;
  if (cfg.steps <= info.step)
    throw Error("the run is already at step " + std::to_string(info.step), "--steps",
                "give a target above " + std::to_string(info.step));
  cfg.validate();
  const int previous_world_size = cfg.world_size;
  cfg.world_size = opt.comm ? opt.comm->size() : 1;
  s->cfg_ = cfg;
  s->build(opt, info.channels);
  if (s->data_->channels != info.channels)
    throw Error("the dataset now has " + std::to_string(s->data_->channels) + " channels, the checkpoint " +
                    std::to_string(info.channels),
                cfg.dataset, "resume with the same dataset the run was trained on");
  load_checkpoint(file, ckpt, *s->trainer_);
  check_step_matches_name(info, ckpt);
  s->trainer_->set_iteration(info.step);
  s->trainer_->set_precision(info.precision);
  s->last_checkpoint_step_ = info.step;
  s->last_samples_step_ = info.step;
  s->loader_ = std::make_unique<data::BatchLoader>(*s->data_, cfg.batch, cfg.seed, info.batches_consumed);
  const std::vector<std::string> notes = s->start_parallel(info.step, info.batches_consumed, previous_world_size);
  // The first write to the folder: everything fallible above is done.
  fs::path aside;
  if (!newer.empty()) aside = folder.set_aside(newer, info.step);
  const auto swept = sweep_stale_temporaries(run_dir);
  // Rows and events after the checkpoint describe steps that will now be trained again.
  s->time_offset_ = folder.trim_logs(info.step);
  folder.write_config(cfg);
  s->metrics_log_ = std::make_unique<io::AppendLog>(folder.metrics());
  s->events_log_ = std::make_unique<io::AppendLog>(folder.events());
  s->layers_log_ = std::make_unique<LayersLog>(folder.layers(), s->trainer_->tensor_names());
  s->hist_log_ = std::make_unique<HistogramsLog>(folder.histograms());
  RunEvent e;
  e.step = info.step;
  e.type = EventType::Resume;
  e.message = "resumed from " + ckpt.filename().string() + " towards step " + std::to_string(cfg.steps) + " on " +
              s->backend_->name();
  e.data["checkpoint"] = ckpt.string();
  s->emit_event(e);
  if (!s->backend_note_.empty()) s->emit_event({info.step, 0, EventType::Warning, "", s->backend_note_});
  if (!aside.empty())
    s->emit_event({info.step, 0, EventType::Warning, "",
                   std::to_string(newer.size()) + " later checkpoints and the logs as they were moved to " +
                       aside.string()});
  if (!s->lock_->stale_holder().empty())
    s->emit_event({info.step, 0, EventType::Warning, "",
                   "took over the run folder's lock from a writer that ended without releasing it (" +
                       s->lock_->stale_holder() + ")"});
  s->report_swept(swept, info.step);
  for (const std::string& n : notes) s->emit_event({info.step, 0, EventType::Info, "", n});
  return s;
}

void Session::emit_event(RunEvent e) {
  // The clock of metrics.csv's time_s: seconds trained, continued across resumes.
  if (e.time_s == 0 && trainer_) e.time_s = time_offset_ + trainer_->elapsed_s();
  // Messages may quote file names that are not UTF-8 (a dataset's files, a renamed run folder):
  // JSON can only hold UTF-8, so such bytes become U+FFFD instead of failing the write.
  if (events_log_)
    events_log_->append_line(e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (listener_) listener_->on_event(e);
}

void Session::step() {
  if (parallel_) parallel_->next_step(true);
  // n_dis batches a step; under data parallelism each rank trains on its slice of each.
  trainer_->step([this] { return parallel_ ? parallel_->slice(loader_->next()) : loader_->next(); });
  const int64_t it = trainer_->iteration();
  for (const std::string& w : trainer_->take_warnings()) emit_event({it, 0, EventType::Warning, "", w});
  const bool eval_now = evaluator_ && cfg_.eval_every > 0 && it % cfg_.eval_every == 0;
  std::vector<StepMetrics> rows = trainer_->collect(eval_now);
  if (eval_now && !rows.empty()) evaluate(rows.back());
  const StepMetrics last = rows.empty() ? StepMetrics{} : rows.back();
  handle_rows(std::move(rows));
  if (cfg_.hist_every > 0 && it % cfg_.hist_every == 0 && (listener_ || hist_log_)) write_histograms(it, last);
  if (cfg_.sample_every > 0 && it % cfg_.sample_every == 0) write_samples();
  if (cfg_.checkpoint_every > 0 && it % cfg_.checkpoint_every == 0) save_checkpoint();
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
  if (listener_) listener_->on_histograms(it, g, d);
}

void Session::handle_rows(std::vector<StepMetrics> rows) {
  if (rows.empty()) return;
  for (StepMetrics& m : rows) {
    m.time_s += time_offset_;
    if (parallel_) m.images_per_s *= parallel_->size();  // the global batch's
    metrics_log_->append_line(m.csv_row());
    if (layers_log_ && (m.skipped_d || m.skipped_g || (cfg_.layers_every > 0 && m.step % cfg_.layers_every == 0)))
      layers_log_->write(m);
    ForwardProbe probe;  // once per overflowing step, for the first network that needs it
    bool probed = false;
    auto network_events = [&](const char* net, int skipped, double scale, double& last, int& streak) {
      if (skipped) {
        ++streak;
        // With n_dis > 1 the scale is the last D step's, after any earlier step's back-off.
        const std::string what = std::string(net) == "D" && cfg_.n_dis > 1
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
    if (!trainer_->shared()) network_events("G", m.skipped_g, m.scale_g, last_scale_g_, consecutive_skips_g_);
    else if (m.skipped_g) network_events("G", true, m.scale_g, last_scale_g_, consecutive_skips_g_);
    else consecutive_skips_g_ = 0;
    const bool scaling = m.precision == Precision::FP16 || (m.precision == Precision::BF16 && cfg_.bf16_loss_scaling);
    for (const RunEvent& al : alerts_.observe(m, scaling, cfg_.scaler.min_scale, trainer_->tensor_names())) emit_event(al);
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
    throw Error(msg + "; the weights are NOT intact: " + std::to_string(bad.size()) +
                    " state tensors hold inf/NaN (" + names + ")",
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
  const std::vector<float> imgs = trainer_->generate(fixed_latents_, kGridSide * kGridSide);
  return io::make_grid(imgs.data(), kGridSide * kGridSide, m.res, m.channels, kGridSide);
}

void Session::write_samples() {
  const int64_t it = trainer_->iteration();
  const io::Image8 grid = sample_grid();
  io::write_png(folder_.sample_grid(it), grid);
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
  for (const fs::path& p : swept) names.push_back(p.lexically_relative(folder_.dir()).generic_string());
  RunEvent e{step, 0, EventType::Warning, "", "removed " + std::to_string(swept.size()) +
                                         " temporary file(s) left by a writer that was killed: " + name_list(names)};
  emit_event(e);
}

fs::path Session::save_checkpoint() {
  const int64_t it = trainer_->iteration();
  handle_rows(trainer_->collect(true));
  const fs::path p = folder_.checkpoint(it);
  // A state holding inf/NaN is never saved (ampgan::save_checkpoint refuses it too): the run
  // stops here, and its newest checkpoint stays a finite one.
  if (const std::vector<std::string> bad = nonfinite_state(*trainer_); !bad.empty()) {
    const std::string msg = "training diverged: the weights are NOT intact: " + std::to_string(bad.size()) +
                            " state tensor(s) hold inf/NaN (" + name_list(bad) + "); no checkpoint was written at step " +
                            std::to_string(it);
    emit_event({it, 0, EventType::Error, "", msg});
    metrics_log_->sync();
    events_log_->sync();
    throw Error(msg, folder_.dir().string(),
                last_checkpoint_step_ > 0
                    ? "resume from the newest checkpoint (step " + std::to_string(last_checkpoint_step_) +
                          "), with a lower learning rate or in fp32/bf16"
                    : "start again with a lower learning rate or in fp32/bf16");
  }
  ampgan::save_checkpoint(p, *trainer_, cfg_, loader_->batches_consumed());
  metrics_log_->sync();
  events_log_->sync();
  if (layers_log_) layers_log_->sync();
  if (hist_log_) hist_log_->sync();
  last_checkpoint_step_ = it;
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
                 "; activation clamp: " + (policy.conv_clamp > 0 ? nlohmann::json(policy.conv_clamp).dump() : std::string("off"))};
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
  emit_event({trainer_->iteration(), 0, EventType::Warning, "", "learning rates set to G " + std::to_string(lr_g) + ", D " + std::to_string(lr_d)});
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
  while (!done() && !(stop && stop->load())) step();
}

void Session::finish(const std::string& reason) {
  if (parallel_) parallel_->next_step(false);  // the other ranks end here
  handle_rows(trainer_->collect(true));
  const int64_t it = trainer_->iteration();
  if (it > 0 && last_samples_step_ != it) write_samples();
  if (it > 0 && last_checkpoint_step_ != it) {
    // A diverged state is not saved (save_checkpoint would refuse it): say which one is kept.
    if (const std::vector<std::string> bad = nonfinite_state(*trainer_); bad.empty())
      save_checkpoint();
    else
      emit_event({it, 0, EventType::Warning, "",
                  "no checkpoint written at step " + std::to_string(it) + ": " + std::to_string(bad.size()) +
                      " state tensor(s) hold inf/NaN; the newest checkpoint is " +
                      (last_checkpoint_step_ > 0 ? "step " + std::to_string(last_checkpoint_step_) : std::string("none"))});
  }
  emit_event({it, 0, EventType::Stop, "", "stopped at step " + std::to_string(it) + " (" + reason + ")"});
  metrics_log_->sync();
  events_log_->sync();
  if (layers_log_) layers_log_->sync();
  if (hist_log_) hist_log_->sync();
}

}  // namespace ampgan
