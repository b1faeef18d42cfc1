// TrainingWorker (ui/worker/training_worker.h): requests from the GUI thread and the commands they
// queue, served on the worker thread between steps.
#include "ui/worker/training_worker.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <QThread>

#include "core/nn/class_embedding.h"
#include "ui/worker/run_sampler.h"

namespace ampgan::ui {

namespace fs = std::filesystem;

// ---- thread-safe requests ----------------------------------------------------------------

void TrainingWorker::requestStop() {
  stop_.store(true);
  cancel_loading_.store(true);
  cv_.notify_all();
}

void TrainingWorker::setPaused(bool paused) {
  paused_.store(paused);
  cv_.notify_all();
}

void TrainingWorker::requestStep() {
  step_requests_.fetch_add(1);
  cv_.notify_all();
}

void TrainingWorker::push(Command c) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    // A newer value of the same setting replaces an unapplied older one.
    if (c.kind == Command::SetPrecision || c.kind == Command::SetLayerPolicy || c.kind == Command::SetLearningRates ||
        c.kind == Command::SetTotalSteps || c.kind == Command::Explore)
      commands_.erase(
          std::remove_if(commands_.begin(), commands_.end(), [&](const Command& o) { return o.kind == c.kind; }),
          commands_.end());
    commands_.push_back(std::move(c));
  }
  cv_.notify_all();
  if (c.kind == Command::Explore) cancel_explore_.store(false);
  // When no loop runs (idle with a finished run, or paused inside one: the loop drains itself),
  // this queued call serves the command on the worker thread.
  QMetaObject::invokeMethod(this, &TrainingWorker::drainIdle, Qt::QueuedConnection);
}

void TrainingWorker::requestPrecision(Precision p) {
  Command c{Command::SetPrecision};
  c.precision = p;
  push(c);
}

void TrainingWorker::requestLayerPolicy(const LayerPolicy& policy) {
  Command c{Command::SetLayerPolicy};
  c.policy = policy;
  push(c);
}

void TrainingWorker::requestLearningRates(float lr_g, float lr_d) {
  Command c{Command::SetLearningRates};
  c.lr_g = lr_g;
  c.lr_d = lr_d;
  push(c);
}

void TrainingWorker::requestTotalSteps(int64_t steps) {
  Command c{Command::SetTotalSteps};
  c.steps = steps;
  push(c);
}

void TrainingWorker::requestCheckpoint() { push(Command{Command::Checkpoint}); }

void TrainingWorker::requestExportSamples(const QString& dir, int n, quint64 seed) {
  Command c{Command::ExportSamples};
  c.dir = dir;
  c.n = n;
  c.seed = seed;
  push(c);
}

void TrainingWorker::requestSampleNow() { push(Command{Command::SampleNow}); }

void TrainingWorker::requestExplore(const ExploreRequest& r) {
  Command c{Command::Explore};
  c.explore = r;
  push(c);
}

bool TrainingWorker::stopRequested() const {
  return stop_.load() || QThread::currentThread()->isInterruptionRequested();
}

// ---- commands on the worker thread --------------------------------------------------------

void TrainingWorker::drainIdle() {
  if (in_loop_) return;  // the loop drains between steps
  drainCommands();
  flush(false);
}

void TrainingWorker::drainCommands() {
  for (;;) {
    Command c;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (commands_.empty()) return;
      c = std::move(commands_.front());
      commands_.pop_front();
    }
    apply(c);
  }
}

namespace {

const char* during(int kind) {
  static const char* const kDuring[] = {"switching precision",
                                        "setting the layer policy",
                                        "setting learning rates",
                                        "setting the step target",
                                        "saving a checkpoint",
                                        "exporting samples",
                                        "sampling",
                                        "exploring the latent space"};
  return kDuring[kind];
}

// A conditional generator's classes for the request: one for all, in turn, or every class (the
// latents again for each, class by class).
void explore_classes(const ExploreRequest& r, int classes, std::vector<float>& z, ExploreResult& res) {
  const int n = res.n;
  if (r.class_choice == ExploreRequest::kEveryClass) {
    const std::vector<float> one = z;
    for (int c = 1; c < classes; ++c) z.insert(z.end(), one.begin(), one.end());
    for (int c = 0; c < classes; ++c) res.classes.insert(res.classes.end(), static_cast<size_t>(n), c);
    res.n = n * classes;
    res.per_row = n;
  } else {
    res.classes = sample_classes(0, n, classes, {});
    if (r.class_choice >= 0) std::fill(res.classes.begin(), res.classes.end(), std::min(r.class_choice, classes - 1));
  }
}

}  // namespace

void TrainingWorker::explore(const ExploreRequest& r) {
  Trainer& t = session_ ? session_->trainer() : sampler_->trainer();
  auto res = std::make_shared<ExploreResult>();
  res->request = r;
  const DcganSpec& m = t.config().model;
  res->res = m.res;
  res->channels = m.channels;
  res->step = session_ ? session_->step_count() : sampler_->step();
  res->ema = t.has_ema();
  res->run = session_ ? QString::fromStdString(session_->dir().string())
                      : QString::fromStdString(sampler_->checkpoint().parent_path().parent_path().string());
  std::vector<float> z = r.interpolate ? interpolate_latents(seed_latent(r.a, m.latent, r.truncation),
                                                             seed_latent(r.b, m.latent, r.truncation), r.frames, r.path)
                                       : seed_latents(r.seeds, m.latent, r.truncation);
  res->n = r.interpolate ? r.frames : static_cast<int>(r.seeds.size());
  if (m.classes > 0) explore_classes(r, m.classes, z, *res);
  auto last = std::chrono::steady_clock::now();
  res->images = explore_images(
      t, z, res->n, r.truncation,
      [&](int done, int total) {
        const auto now = std::chrono::steady_clock::now();
        if (done == total || now - last > std::chrono::milliseconds(100)) {
          last = now;
          emit exploreProgress(r.id, done, total);
        }
        return !cancel_explore_.load() && !stopRequested();
      },
      res->classes);
  emit explored(res);
}

void TrainingWorker::apply(const Command& c) {
  if (c.kind == Command::Explore) {
    if (!session_ && !sampler_) {
      UiError e;
      e.what = QStringLiteral("no generator to explore");
      e.hint = QStringLiteral("start a run, or open one that has a checkpoint");
      e.during = QString::fromLatin1(during(c.kind));
      emit failed(e);
      return;
    }
    try {
      explore(c.explore);
    } catch (const Cancelled&) {
      emit exploreProgress(c.explore.id, -1, 0);  // stopped: the view drops its progress
    } catch (...) {
      emit exploreProgress(c.explore.id, -1, 0);
      fail(QString::fromLatin1(during(c.kind)));
    }
    return;
  }
  if (!session_ && sampler_ && (c.kind == Command::ExportSamples || c.kind == Command::SampleNow)) {
    try {
      if (c.kind == Command::ExportSamples) {
        sampler_->export_samples(c.dir.toStdString(), c.n, c.seed);
        emit exported(QStringLiteral("samples"), c.dir);
      } else {
        SampleShot s;
        s.step = sampler_->step();
        s.image = to_qimage(sampler_->sample_grid());
        pending_->samples.push_back(std::move(s));
        flush(true);
      }
    } catch (...) {
      fail(c.kind == Command::ExportSamples ? QStringLiteral("exporting samples") : QStringLiteral("sampling"));
    }
    return;
  }
  if (!session_) {
    if (c.kind == Command::ExportSamples || c.kind == Command::Checkpoint || c.kind == Command::SampleNow) {
      UiError e;
      e.what = QStringLiteral("no run is loaded");
      e.hint = QStringLiteral("start or resume a run first");
      e.during =
          c.kind == Command::Checkpoint ? QStringLiteral("saving a checkpoint") : QStringLiteral("exporting samples");
      emit failed(e);
    }
    return;  // settings changes with no run: the next run reads them from the panel anyway
  }
  // A failing command (disk full while exporting, say) is reported; training goes on.
  try {
    switch (c.kind) {
      case Command::SetPrecision:
        session_->set_precision(c.precision);
        describeModel();
        break;
      case Command::SetLayerPolicy:
        session_->set_layer_policy(c.policy);
        describeModel();
        break;
      case Command::SetLearningRates:
        session_->set_learning_rates(c.lr_g, c.lr_d);
        break;
      case Command::SetTotalSteps:
        session_->set_total_steps(c.steps);
        break;
      case Command::Checkpoint: {
        const fs::path p = session_->save_checkpoint();
        emit exported(QStringLiteral("checkpoint"), QString::fromStdString(p.string()));
        break;
      }
      case Command::ExportSamples:
        session_->export_samples(c.dir.toStdString(), c.n, c.seed);
        emit exported(QStringLiteral("samples"), c.dir);
        break;
      case Command::SampleNow: {
        SampleShot s;
        s.step = session_->step_count();
        s.image = to_qimage(session_->sample_grid());
        pending_->samples.push_back(std::move(s));
        flush(true);
        break;
      }
      case Command::Explore:  // served above
        break;
    }
  } catch (...) {
    fail(QString::fromLatin1(during(c.kind)));
  }
}

}  // namespace ampgan::ui
