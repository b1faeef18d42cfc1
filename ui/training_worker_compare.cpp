// TrainingWorker (ui/training_worker.h): the comparison, FP32 and an AMP mode trained one after
// the other.
#include "ui/training_worker.h"

#include "core/run/compare.h"

namespace ampgan::ui {

void TrainingWorker::runComparison(const RunConfig& base, Precision amp) {
  if (in_loop_) return;
  bool complete = true;
  // One folder holds both runs (core/run/compare.h): <root>/fp32 and <root>/<amp>.
  const std::string root = compare_root(base, amp);
  const auto modes = compare_modes(amp);
  for (int i = 0; i < 2 && complete; ++i) {
    const RunTag tag = i == 0 ? RunTag::CompareBaseline : RunTag::CompareAmp;
    const RunConfig cfg = compare_run_config(base, modes[i], root);
    beginRun(tag, false);
    try {
      setSession(Session::create(cfg, sessionOptions()));
      announce(tag, false);
      flush(true);
      const QString reason = loop();
      finishRun(reason);
      if (reason != QStringLiteral("finished")) complete = false;
    } catch (...) {
      complete = false;
      const bool diverged = isDivergence();
      if (cancel_loading_.load() && !run_started_ && isCancel()) emit notice(QStringLiteral("loading cancelled"));
      else fail(QStringLiteral("comparing (%1 run)").arg(QString::fromLatin1(precision_label(modes[i]))));
      if (session_ && run_started_ && !diverged) {
        try {
          session_->finish("error");
        } catch (...) {
        }
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
  emit comparisonFinished(complete);
  setState(State::Idle);
}

}  // namespace ampgan::ui
