// MainWindow's precision doctor: the recipe search on the panel's settings and the replay of one
// step of the run on screen, both run by the worker while the window is otherwise idle; the Doctor
// tab shows their progress and results.
#include <filesystem>

#include <QTabWidget>

#include "core/common/error.h"
#include "core/common/timestamp.h"
#include "ui/runs/run_controller.h"
#include "ui/settings/config_panel.h"
#include "ui/views/doctor_view.h"
#include "ui/views/event_log.h"
#include "ui/window/main_window.h"

namespace ampgan::ui {

using State = TrainingWorker::State;

bool MainWindow::diagnosePrecision() {
  if (busy() || refusedWhileWatching()) return false;
  if (!checkRanges(tr("checking the settings"))) return false;
  RunConfig cfg = config_->config();
  if (cfg.precision != Precision::FP16 && cfg.precision != Precision::BF16) {
    report(tr("diagnosing precision"),
           tr("the doctor examines a half precision, and the settings say %1")
               .arg(QString::fromLatin1(precision_label(cfg.precision))),
           tr("choose FP16 AMP or BF16 AMP (toolbar or Precision settings), then Diagnose precision"));
    return false;
  }
  cfg.out_dir = (std::filesystem::path(cfg.runs_root) / (local_timestamp() + "-doctor-" + cfg.default_name())).string();
  cfg.name.clear();
  try {
    cfg.validate();
  } catch (const Error& e) {
    report(tr("checking the settings"), QString::fromStdString(e.what_failed()), QString::fromStdString(e.hint()));
    return false;
  }
  doctoring_ = true;
  doctor_->onStarted(cfg);
  tabs_->setCurrentWidget(doctor_);
  state_ = State::Loading;
  updateActions();
  log_->addNote(QStringLiteral("info"),
                tr("precision doctor: %1 on these settings, report in %2")
                    .arg(QString::fromLatin1(precision_label(cfg.precision)), QString::fromStdString(cfg.out_dir)));
  QMetaObject::invokeMethod(
      worker_, [w = worker_, cfg] { w->runDoctor(cfg); }, Qt::QueuedConnection);
  return true;
}

bool MainWindow::replayStep(qint64 step) {
  if (busy()) {
    report(tr("replaying a step"), tr("the window is busy with a run"), tr("wait until it ends, or stop it"));
    return false;
  }
  if (!runs_->hasRun()) {
    report(tr("replaying a step"), tr("no run is shown"), tr("train a run in FP16 or BF16, or open one"));
    return false;
  }
  doctor_->setReplayStep(step);
  doctor_->onReplayStarted(step);
  tabs_->setCurrentWidget(doctor_);
  state_ = State::Loading;
  updateActions();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, dir = runs_->dir(), step] { w->runReplay(dir, step); }, Qt::QueuedConnection);
  return true;
}

}  // namespace ampgan::ui
