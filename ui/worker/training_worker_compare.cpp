// TrainingWorker (ui/worker/training_worker.h): the comparison, FP32 and an AMP mode trained one after
// the other.
#include "ui/worker/training_worker.h"

#include "core/run/checkpoint.h"
#include "core/run/compare.h"
#include "ui/worker/run_sampler.h"

namespace ampgan::ui {

void TrainingWorker::runComparison(const RunConfig& base, Precision amp, bool max_batch) {
  if (in_loop_) return;
  bool complete = true;
  int channels = 0;
  // One folder holds both runs (core/run/compare.h): <root>/fp32 and <root>/<amp>.
  const std::string root = compare_root(base, amp);
  const auto modes = compare_modes(amp);
  for (int i = 0; i < 2 && complete; ++i) {
    const RunTag tag = i == 0 ? RunTag::CompareBaseline : RunTag::CompareAmp;
    const RunConfig cfg = compare_run_config(base, modes[i], root);
    beginRun(tag, false);
    try {
      setSession(Session::create(cfg, sessionOptions()));
      channels = session_->dataset().channels;
      announce(tag, false);
      flush(true);
      const QString reason = loop();
      finishRun(reason);
      if (reason != QStringLiteral("finished")) complete = false;
    } catch (...) {
      complete = false;
      const bool diverged = isDivergence();
      if (cancel_loading_.load() && !run_started_ && isCancel())
        emit notice(QStringLiteral("loading cancelled"));
      else
        fail(QStringLiteral("comparing (%1 run)").arg(QString::fromLatin1(precision_label(modes[i]))));
      if (session_ && run_started_ && !diverged) {
        try {
          session_->finish("error");
        } catch (...) {}
      }
      flush(true);
      if (run_started_) {
        RunEndInfo end;
        end.tag = tag;
        end.dir = dir_;
        end.reason = diverged ? QStringLiteral("diverged") : QStringLiteral("error");
        end.ok = false;
        end.step = session_ ? session_->step_count() : 0;
        if (session_) end.memory = session_->backend().memory_stats();
        emit runFinished(end);
      }
    }
  }
  if (complete && max_batch) complete = findMaxBatch(base, amp, channels);
  emit comparisonFinished(complete);
  setState(State::Idle);
}

bool TrainingWorker::findMaxBatch(const RunConfig& base, Precision amp, int channels) {
  // The finished AMP run's memory goes first: on a GPU its pool would come off the free memory
  // the budget is taken from. Its generator stays available, from the checkpoint it just wrote.
  const QString amp_dir = dir_;
  setSession(nullptr);
  try {
    setSampler(std::make_unique<RunSampler>(newest_checkpoint(amp_dir.toStdString())));
  } catch (...) {
    fail(QStringLiteral("loading the run's generator"));
  }
  setState(State::Running);
  const QString what = QStringLiteral("largest batch");
  emit workProgress(what, 0, 1);
  bool ok = false;
  try {
    auto result = std::make_shared<const MaxBatchResult>(
        compare_max_batch(base, amp, channels, &stop_, [this](const std::string& step, int done, int total) {
          emit workProgress(QString::fromStdString(step), done, total);
        }));
    ok = !result->stopped;
    emit maxBatchFound(result);
    if (result->stopped) emit notice(QStringLiteral("the largest-batch search was stopped"));
  } catch (...) {
    fail(QStringLiteral("finding the largest batch"));
  }
  emit workProgress(what, 1, 1);  // the end, also when stopped
  return ok;
}

}  // namespace ampgan::ui
