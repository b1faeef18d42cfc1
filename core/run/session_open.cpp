// Opening a run: a new one in an empty folder (Session::create) or an existing one from one of its
// checkpoints (Session::resume), each checking everything fallible before its first write, and
// the parts both share (the lock; the data, backend, trainer and evaluator).
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/common/timestamp.h"
#include "core/common/utf8.h"
#include "core/dist/data_parallel.h"
#include "core/metrics/evaluator.h"
#include "core/run/checkpoint.h"
#include "core/run/checkpoint_integrity.h"
#include "core/run/checkpoint_retention.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

std::string csv_header() {
  std::string h;
  for (const std::string& c : StepMetrics::columns()) h += (h.empty() ? "" : ",") + c;
  return h;
}

void refuse_nonempty(const fs::path& dir) {
  const std::string holder = io::run_lock_holder(dir);
  if (!holder.empty())
    throw Error("the output folder is in use: another writer holds its lock (" + holder + ")", dir.string(),
                "choose another --out; one run folder takes one writer at a time");
  throw Error("the output folder already holds files (it was left untouched)", dir.string(),
              RunFolder(dir).has_checkpoint()
                  ? "continue it with 'ampgan resume " + dir.string() + "' or choose another --out"
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

void Session::open_logs() {
  metrics_log_ = std::make_unique<io::AppendLog>(folder_.metrics());
  if (metrics_log_->size() == 0) metrics_log_->append_line(csv_header());  // new, or deleted since
  events_log_ = std::make_unique<io::AppendLog>(folder_.events());
  layers_log_ = std::make_unique<LayersLog>(folder_.layers(), trainer_->tensor_names());
  hist_log_ = std::make_unique<HistogramsLog>(folder_.histograms());
  if (cfg_.tensorboard) tb_log_ = std::make_unique<TensorBoardLog>(folder_.new_tensorboard_file());
}

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
  dataset_fingerprint_ = data::fingerprint(*data_);
  if (cfg_.batch > data_->count)
    throw Error("batch size " + std::to_string(cfg_.batch) + " is larger than the dataset (" +
                    std::to_string(data_->count) + " images)",
                "--batch", "use a batch of at most " + std::to_string(data_->count) + ", or add images");
  // Ranks on one machine take consecutive GPUs from --gpu.
  backend_ = opt.make_backend
                 ? opt.make_backend()
                 : create_backend(cfg_.backend, &backend_note_, cfg_.gpu + (opt.comm ? opt.comm->local_rank() : 0));
  backend_->set_cpu_kernels(cfg_.cpu_kernels);
  backend_->reuse_kernel_choices(recorded_kernels_);
  int classes = -1;  // the dataset's, for a conditional run
  if (cfg_.conditional) {
    if (opt.comm)
      throw Error("class-conditional training runs in one process for now", "--conditional",
                  "train it without mpirun, or without --conditional");
    classes = data_->num_classes;
    if (cfg_.classes > 0 && classes != cfg_.classes)
      throw Error(
          "the dataset now has " + std::to_string(classes) + " classes, the run " + std::to_string(cfg_.classes),
          cfg_.dataset, "resume with the dataset the run was trained on");
    cfg_.classes = classes;
    cfg_.class_names.clear();  // JSON holds UTF-8 only: a folder's name in other bytes shows as \xNN
    for (const std::string& n : data_->class_names) cfg_.class_names.push_back(escape_invalid_utf8(n));
  }
  TrainerConfig tc = cfg_.trainer_config(data_->channels, classes);
  if (opt.comm) {
    parallel_ = std::make_unique<dist::DataParallel>(*opt.comm, *backend_, tc);
    parallel_->set_stop_flag(opt.cancel);  // this rank's signals, voted at every step boundary
  }
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
  s->folder_ = RunFolder(cfg.out_dir.empty() ? fs::path(cfg.runs_root) / (local_timestamp() + "-" + s->cfg_.name)
                                             : fs::path(cfg.out_dir));
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
  s->folder_.check_own_files();
  s->folder_.write_config(s->cfg_);
  s->open_logs();
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
  s->take_lock(opt);         // before anything is read: what is read must not change under us
  folder.check_own_files();  // no link leads a write out of the folder; refused before any write
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
  s->recorded_kernels_ = info.kernel_choices;  // before the first product is planned
  s->build(opt, info.channels);
  if (s->data_->channels != info.channels)
    throw Error("the dataset now has " + std::to_string(s->data_->channels) + " channels, the checkpoint " +
                    std::to_string(info.channels),
                cfg.dataset, "resume with the same dataset the run was trained on");
  // Resume promises the run that never stopped: on other data it would not be. The user chooses.
  const bool dataset_changed = !info.dataset_fingerprint.empty() && info.dataset_fingerprint != s->dataset_fingerprint_;
  if (dataset_changed && !opt.allow_changed_dataset)
    throw Error("the dataset changed since the checkpoint was written: it was " + info.dataset_fingerprint +
                    ", it is now " + s->dataset_fingerprint_ + " (nothing was changed)",
                cfg.dataset,
                "restore the dataset the run trained on to continue it exactly, or resume with "
                "--allow-changed-dataset to continue on the data as it is now (the run then differs from one "
                "that never stopped)");
  load_checkpoint(file, ckpt, *s->trainer_);
  check_step_matches_name(info, ckpt);
  s->trainer_->set_iteration(info.step);
  s->steps_done_ = info.step;
  s->checkpoint_done_ = info.step;
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
  const bool had_metrics = fs::exists(folder.metrics(), ec);
  s->time_offset_ = folder.trim_logs(info.step);
  // The older event files lose the steps trained again, so that TensorBoard's union of the files
  // has each step once (the new file starts after info.step).
  // A history set aside keeps its event files whole, as it keeps copies of the other logs.
  if (!aside.empty())
    for (const fs::path& f : folder.tensorboard_files()) fs::copy_file(f, aside / f.filename(), ec);
  const std::vector<fs::path> undecodable = TensorBoardLog::trim(folder.tensorboard_files(), info.step);
  folder.write_config(cfg);
  s->open_logs();
  RunEvent e;
  e.step = info.step;
  e.type = EventType::Resume;
  e.message = "resumed from " + ckpt.filename().string() + " towards step " + std::to_string(cfg.steps) + " on " +
              s->backend_->name();
  e.data["checkpoint"] = ckpt.string();
  s->emit_event(e);
  if (!s->backend_note_.empty()) s->emit_event({info.step, 0, EventType::Warning, "", s->backend_note_});
  if (!aside.empty())
    s->emit_event(
        {info.step, 0, EventType::Warning, "",
         std::to_string(newer.size()) + " later checkpoints and the logs as they were moved to " + aside.string()});
  if (!s->lock_->stale_holder().empty())
    s->emit_event({info.step, 0, EventType::Warning, "",
                   "took over the run folder's lock from a writer that ended without releasing it (" +
                       s->lock_->stale_holder() + ")"});
  if (dataset_changed)
    s->emit_event({info.step, 0, EventType::Warning, "",
                   "the dataset changed since the checkpoint (it was " + info.dataset_fingerprint + ", it is now " +
                       s->dataset_fingerprint_ + "); continued on the new data as asked (--allow-changed-dataset)"});
  if (!had_metrics)
    s->emit_event({info.step, 0, EventType::Warning, "",
                   "metrics.csv was missing: a new one starts after step " + std::to_string(info.step) +
                       " (the rows of the earlier steps are lost)"});
  for (const fs::path& f : undecodable)
    s->emit_event({info.step, 0, EventType::Warning, "",
                   "the TensorBoard event file " + f.filename().string() +
                       " does not decode past some record and was left as it was: TensorBoard may show steps after " +
                       std::to_string(info.step) +
                       " twice; delete it and run 'ampgan tensorboard --replace' to write one again"});
  s->report_swept(swept, info.step);
  for (const std::string& n : notes) s->emit_event({info.step, 0, EventType::Info, "", n});
  return s;
}
}  // namespace ampgan
