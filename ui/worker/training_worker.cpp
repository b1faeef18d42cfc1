#include "ui/worker/training_worker.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <new>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <QDir>
#include <QThread>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/io/atomic_file.h"
#include "core/metrics/work_hook.h"
#include "core/run/checkpoint.h"
#include "core/run/run_folder.h"
#include "ui/worker/run_sampler.h"

namespace ampgan::ui {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TrainingWorker::TrainingWorker(QObject* parent) : QObject(parent), pending_(std::make_shared<UiBatch>()) {}

// Here, where RunSampler is a complete type. The hook installed by initThread refers to this
// object: it goes with it.
TrainingWorker::~TrainingWorker() { metrics::work_hook() = nullptr; }

// ---- listener ------------------------------------------------------------------------------

void TrainingWorker::on_metrics(const std::vector<StepMetrics>& rows) {
  pending_->rows.insert(pending_->rows.end(), rows.begin(), rows.end());
}

void TrainingWorker::on_event(const RunEvent& e) { pending_->events.push_back(e); }

void TrainingWorker::on_samples(int64_t step, const io::Image8& grid) {
  SampleShot s;
  s.step = step;
  s.image = to_qimage(grid);
  s.path = QDir(dir_).filePath(QStringLiteral("samples/step_%1.png").arg(step, 6, 10, QChar('0')));
  pending_->samples.push_back(std::move(s));
}

void TrainingWorker::on_histograms(int64_t step, const std::vector<float>& g, const std::vector<float>& d) {
  pending_->has_histograms = true;
  pending_->hist_step = step;
  pending_->hist_g = g;
  pending_->hist_d = d;
}

void TrainingWorker::flush(bool force) {
  const UiBatch& p = *pending_;
  const bool empty = p.rows.empty() && p.events.empty() && p.samples.empty() && !p.has_histograms;
  if (empty && !force) return;
  pending_->tag = tag_;
  if (session_) {
    pending_->step = session_->step_count();
    pending_->total_steps = session_->config().steps;
    pending_->memory = session_->backend().memory_stats();
  }
  if (!p.rows.empty()) pending_->elapsed_s = p.rows.back().time_s;
  emit batchReady(std::move(pending_));
  pending_ = std::make_shared<UiBatch>();
  last_flush_ = Clock::now();
}

void TrainingWorker::setState(State s) {
  if (state_.exchange(static_cast<int>(s)) != static_cast<int>(s)) emit stateChanged(static_cast<int>(s));
}

void TrainingWorker::setSession(std::unique_ptr<Session> s) {
  session_ = std::move(s);
  if (session_) sampler_.reset();
  has_session_.store(session_ != nullptr);
  emit sessionAvailable(session_ != nullptr);
  announceClasses();
  emit generatorAvailable(session_ != nullptr, session_ ? QString::fromStdString(session_->dir().string()) : QString());
}

void TrainingWorker::setSampler(std::unique_ptr<RunSampler> s) {
  sampler_ = std::move(s);
  if (!session_) announceClasses();
  if (!session_)
    emit generatorAvailable(
        sampler_ != nullptr,
        sampler_ ? QString::fromStdString(sampler_->checkpoint().parent_path().parent_path().string()) : QString());
}

void TrainingWorker::announceClasses() {
  const Trainer* t = session_ ? &session_->trainer() : sampler_ ? &sampler_->trainer() : nullptr;
  QStringList names;
  const std::vector<std::string> none;
  for (const std::string& n : session_ ? session_->config().class_names : sampler_ ? sampler_->class_names() : none)
    names << QString::fromStdString(n);
  emit generatorClasses(t ? t->classes() : 0, names);
}

// ---- runs ----------------------------------------------------------------------------------

void TrainingWorker::beginRun(RunTag tag, bool paused, int steps) {
  setSession(nullptr);  // the previous run's memory goes before the next dataset loads
  setSampler(nullptr);
  stop_.store(false);
  cancel_loading_.store(false);
  paused_.store(paused);
  step_requests_.store(steps);
  tag_ = tag;
  dir_.clear();
  run_started_ = false;
  pending_ = std::make_shared<UiBatch>();
  setState(State::Loading);
}

SessionOptions TrainingWorker::sessionOptions() {
  SessionOptions opt;
  opt.listener = this;
  opt.cancel = &cancel_loading_;
  opt.progress = [this](int done, int total) {
    const auto now = Clock::now();
    if (done < total && now - last_progress_ < std::chrono::milliseconds(100)) return;
    last_progress_ = now;
    emit loadingProgress(done, total);
  };
  return opt;
}

void TrainingWorker::announce(RunTag tag, bool resumed) {
  dir_ = QString::fromStdString(session_->dir().string());
  run_started_ = true;
  RunStartInfo info;
  info.tag = tag;
  info.dir = dir_;
  info.config = session_->config();
  info.backend = QString::fromStdString(session_->backend().name());
  info.backend_note = QString::fromStdString(session_->backend_note());
  const data::ImageSet& ds = session_->dataset();
  info.dataset = QStringLiteral("%1 (%2 images, %3x%3x%4)")
                     .arg(QString::fromStdString(ds.name))
                     .arg(ds.count)
                     .arg(ds.res)
                     .arg(ds.channels);
  info.start_step = session_->step_count();
  info.resumed = resumed;
  emit runStarted(info);
  describeModel();
}

void TrainingWorker::describeModel() {
  Trainer& t = session_->trainer();
  ModelDescription d;
  d.precision = t.precision();
  const DType net = compute_dtype(t.precision());
  for (auto [seq, name] : {std::pair<Sequential*, const char*>{&t.generator(), "G"}, {&t.discriminator(), "D"}})
    for (const LayerInfo& l : named_layers(*seq, name)) {
      ModelLayerRow r;
      r.network = QString::fromLatin1(name);
      r.name = QString::fromStdString(l.name);
      r.type = QString::fromStdString(l.type);
      r.block = l.block;
      r.parameters = l.parameters;
      r.dtype = QString::fromLatin1(dtype_name(layer_compute_dtype(l, net)));
      r.fp32_by_policy = l.fp32 && net != DType::F32;
      d.layers.push_back(r);
    }
  const LayerPolicy& p = t.layer_policy();
  d.policy =
      QStringLiteral("FP32 layers: %1; half blocks: %2; activation clamp: %3; AMP strategy: %4")
          .arg(p.fp32_layers.empty() ? QStringLiteral("none") : QString::fromStdString(join_layer_list(p.fp32_layers)),
               p.half_blocks < 0 ? QStringLiteral("all") : QString::number(p.half_blocks),
               p.conv_clamp > 0 ? QString::number(p.conv_clamp) : QStringLiteral("off"),
               QString::fromLatin1(amp_strategy_name(t.config().amp_strategy)));
  emit modelDescribed(d);
}

QString TrainingWorker::loop() {
  in_loop_ = true;
  struct Exit {
    bool& flag;
    ~Exit() { flag = false; }
  } exit{in_loop_};
  setState(paused_.load() ? State::Paused : State::Running);
  for (;;) {
    drainCommands();
    if (stopRequested()) return QStringLiteral("stopped");
    if (session_->done()) return QStringLiteral("finished");
    bool single = false;
    if (paused_.load()) {
      if (step_requests_.load() <= 0) {
        setState(State::Paused);
        flush(false);
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_for(lk, std::chrono::milliseconds(100), [&] {
          return stop_.load() || !paused_.load() || step_requests_.load() > 0 || !commands_.empty();
        });
        continue;
      }
      step_requests_.fetch_sub(1);
      single = true;
    } else {
      step_requests_.store(0);  // Step while running means nothing
      setState(State::Running);
    }
    session_->step();
    if (single || Clock::now() - last_flush_ >= std::chrono::milliseconds(flush_ms_.load())) flush(single);
  }
}

void TrainingWorker::finishRun(const QString& reason) {
  setState(State::Stopping);
  session_->finish(reason.toStdString());
  flush(true);
  RunEndInfo end;
  end.tag = tag_;
  end.dir = dir_;
  end.reason = reason;
  end.step = session_->step_count();
  end.memory = session_->backend().memory_stats();
  emit runFinished(end);
}

void TrainingWorker::fail(const QString& during) {
  UiError e;
  e.during = during;
  try {
    throw;
  } catch (const OutOfMemoryError& x) {
    e.what = QString::fromStdString(x.what_failed());
    e.subject = QString::fromStdString(x.subject());
    e.hint = QString::fromStdString(x.hint());
    e.out_of_memory = true;
  } catch (const Error& x) {
    e.what = QString::fromStdString(x.what_failed());
    e.subject = QString::fromStdString(x.subject());
    e.hint = QString::fromStdString(x.hint());
  } catch (const std::bad_alloc&) {
    e.what = QStringLiteral("out of memory");
    e.hint = QStringLiteral("use a smaller batch, width or resolution");
    e.out_of_memory = true;
  } catch (const std::exception& x) {
    e.what = QString::fromUtf8(x.what());
  } catch (...) {
    e.what = QStringLiteral("unknown error");
  }
  emit failed(e);
}

namespace {

// A run's histograms.csv; one this build cannot read costs the histograms, not the run.
std::vector<HistogramRow> read_histograms(const std::filesystem::path& dir) {
  try {
    return HistogramsLog::read(RunFolder(dir).histograms());
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

// Session::step finishes a diverged run itself (samples, checkpoint, stop event) before
// throwing; finishing it again would only log a second stop.
bool TrainingWorker::isDivergence() {
  try {
    throw;
  } catch (const Error& x) {
    return x.what_failed().rfind("training diverged", 0) == 0;
  } catch (...) {
    return false;
  }
}

bool TrainingWorker::isCancel() {
  try {
    throw;
  } catch (const Error& x) {
    return x.what_failed().find("cancelled") != std::string::npos;
  } catch (...) {
    return false;
  }
}

void TrainingWorker::startRun(const RunConfig& cfg, bool paused, int steps) {
  if (in_loop_) return;
  beginRun(RunTag::Main, paused, steps);
  try {
    setSession(Session::create(cfg, sessionOptions()));
    announce(RunTag::Main, false);
    flush(true);
    finishRun(loop());
  } catch (...) {
    runFailed(QStringLiteral("starting the run"));
  }
  setState(State::Idle);
}

void TrainingWorker::resumeRun(const QString& run_dir, qint64 steps, const QString& checkpoint, bool paused,
                               std::optional<MidRunSettings> mid) {
  if (in_loop_) return;
  beginRun(RunTag::Main, paused);
  try {
    setSession(Session::resume(run_dir.toStdString(), steps, sessionOptions(), checkpoint.toStdString()));
    announce(RunTag::Main, true);
    // What the window shows wins over what the checkpoint was saved with (FP16 chosen: FP16
    // rows); a change is logged and marked like any mid-run switch.
    if (mid) {
      if (mid->precision != session_->trainer().precision()) session_->set_precision(mid->precision);
      if (mid->policy) session_->set_layer_policy(*mid->policy);
      describeModel();
      const RunConfig& rc = session_->config();
      if (mid->lr_g > 0 && mid->lr_d > 0 && (mid->lr_g != rc.lr_g || mid->lr_d != rc.lr_d))
        session_->set_learning_rates(mid->lr_g, mid->lr_d);
    }
    // The history up to the checkpoint (the engine dropped rows after it: they are retrained).
    pending_->replace_history = true;
    std::vector<StepMetrics> history = RunFolder(session_->dir()).read_metrics();
    pending_->rows.insert(pending_->rows.begin(), history.begin(), history.end());
    pending_->hist_history = read_histograms(session_->dir());
    flush(true);
    finishRun(loop());
  } catch (...) {
    runFailed(QStringLiteral("resuming the run"));
  }
  setState(State::Idle);
}

void TrainingWorker::runFailed(const QString& before_start) {
  const bool cancelled = cancel_loading_.load() && !run_started_ && isCancel();
  const bool diverged = isDivergence();
  if (cancelled)
    emit notice(QStringLiteral("loading cancelled"));
  else
    fail(run_started_ ? QStringLiteral("training") : before_start);
  // Keep everything already written: flush the logs and write a checkpoint (unless the engine
  // already did, after a divergence). A second failure here is only reported.
  if (session_ && run_started_ && !diverged) {
    try {
      session_->finish("error");
    } catch (...) {
      fail(QStringLiteral("saving the run after an error"));
    }
  }
  flush(true);
  if (!run_started_) {
    setSession(nullptr);
    return;
  }
  RunEndInfo end;
  end.tag = tag_;
  end.dir = dir_;
  end.reason = diverged ? QStringLiteral("diverged") : QStringLiteral("error");
  end.ok = false;
  if (session_) {
    end.step = session_->step_count();
    end.memory = session_->backend().memory_stats();
  }
  emit runFinished(end);
}

void TrainingWorker::openRun(const QString& run_dir) {
  if (in_loop_) return;
  // The opened run becomes the current one: the previous run's generator must not answer
  // Sample now or Export single samples any more.
  setSession(nullptr);
  setSampler(nullptr);
  tag_ = RunTag::Main;  // its Sample now grids are the opened run's, not a comparison's
  try {
    auto run = std::make_shared<OpenedRun>();
    run->dir = run_dir;
    const fs::path dir = run_dir.toStdString();
    if (!fs::is_directory(dir))
      throw Error("no such run folder", dir.string(), "choose a folder under your runs folder");
    if (fs::exists(RunFolder(dir).config())) {
      run->config = RunConfig::from_json(nlohmann::json::parse(io::read_file(RunFolder(dir).config())),
                                         RunFolder(dir).config().string());
      run->has_config = true;
    }
    run->rows = RunFolder(dir).read_metrics();
    run->histograms = read_histograms(dir);
    run->events = RunFolder(dir).read_events();
    const QDir samples(QDir(run_dir).filePath(QString::fromLatin1(RunFolder::kSamples)));
    for (const QString& f : samples.entryList({QStringLiteral("step_*.png")}, QDir::Files, QDir::Name)) {
      SampleShot s;
      s.step = f.mid(5, f.size() - 9).toLongLong();
      s.path = samples.filePath(f);
      run->samples.push_back(std::move(s));
    }
    const QDir ckpts(QDir(run_dir).filePath(QString::fromLatin1(RunFolder::kCheckpoints)));
    for (const QString& f : ckpts.entryList({QStringLiteral("*.safetensors")}, QDir::Files, QDir::Name))
      run->checkpoints << ckpts.filePath(f);
    emit runOpened(run);
    if (!run->checkpoints.isEmpty()) {
      try {
        setSampler(std::make_unique<RunSampler>(newest_checkpoint(dir)));
      } catch (...) {
        fail(QStringLiteral("loading the run's generator"));  // the curves stay shown
      }
    }
  } catch (const nlohmann::json::exception& x) {
    UiError e;
    e.what = QStringLiteral("config.json is not valid JSON");
    e.subject = run_dir;
    e.hint = QString::fromUtf8(x.what());
    e.during = QStringLiteral("opening the run");
    emit failed(e);
  } catch (...) {
    fail(QStringLiteral("opening the run"));
  }
}

int TrainingWorker::initThread() {
  int nice_value = 5;
  if (const char* env = std::getenv("AMPGAN_WORKER_NICE")) nice_value = std::atoi(env);
#ifdef __linux__
  // Per-thread on Linux (threads are tasks); threads created from here inherit it.
  if (nice_value != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice_value);
#else
  nice_value = 0;
#endif
  (void)cpu_threads();  // creates the pool now, on this thread
  // Long evaluation work inside a step reports here: the GUI shows it (a frozen step counter
  // for minutes looks like a hang) and Stop cancels it.
  metrics::work_hook() = [this](const std::string& what, int done, int total) {
    const auto now = Clock::now();
    const bool start = !in_work_ || what != work_what_, end = done >= total;
    if (start || end) skip_work_.store(false);  // a skip is for the work it was asked during
    if (start) {
      in_work_ = true;
      work_what_ = what;
      flush(true);  // the engine's notice ("training the feature classifier…") reaches the log now
    }
    if (start || end || now - last_work_ >= std::chrono::milliseconds(100)) {
      last_work_ = now;
      emit workProgress(QString::fromStdString(what), done, total);
    }
    if (end) in_work_ = false;
    return !stopRequested() && !skip_work_.load();
  };
  return nice_value;
}

void TrainingWorker::releaseSession() {
  if (in_loop_) return;
  setSession(nullptr);
}

}  // namespace ampgan::ui
