// MainWindow's watch mode: following a run folder that another process writes (RunWatcher),
// read-only. The rows, events and sample grids it reports go to the same plots, log and Samples
// dock as a run trained here; the status bar says whether a writer still holds the folder.
#include <QFileInfo>
#include <QLabel>
#include <QStatusBar>
#include <QTabWidget>

#include "ui/plots/plots_panel.h"
#include "ui/runs/run_controller.h"
#include "ui/runs/run_watcher.h"
#include "ui/settings/config_panel.h"
#include "ui/settings/precision_actions.h"
#include "ui/views/event_log.h"
#include "ui/views/sample_view.h"
#include "ui/window/main_window.h"
#include "ui/window/status_fields.h"

namespace ampgan::ui {

bool MainWindow::watching() const { return watcher_ && watcher_->watching(); }

void MainWindow::connectWatcher() {
  watcher_ = new RunWatcher(this);
  connect(watcher_, &RunWatcher::configRead, this, [this](const RunConfig& c) {
    RunConfig shown = c;
    shown.out_dir.clear();
    config_->setConfig(shown);
    precision_->show(shown.precision);
    total_ = c.steps;
    plots_->setEvaluationInterval(c.eval_every);
    updateStepText();
  });
  connect(watcher_, &RunWatcher::rowsArrived, this, [this](const std::vector<StepMetrics>& rows, bool replace) {
    if (replace)
      plots_->setHistory(rows);
    else
      plots_->appendRows(rows);
    if (rows.empty()) return;
    const StepMetrics& last = rows.back();
    step_ = last.step;
    status_->showRow(&last);
    if (total_ <= 0) total_ = step_;
    updateStepText();
    maybeScreenshot(false);
  });
  connect(watcher_, &RunWatcher::histogramsArrived, this,
          [this](const std::vector<HistogramRow>& rows, bool replace) { plots_->setHistogramRows(rows, replace); });
  connect(watcher_, &RunWatcher::eventsArrived, this, [this](const std::vector<RunEvent>& ev) { log_->addEvents(ev); });
  connect(watcher_, &RunWatcher::samplesArrived, this, [this](const std::vector<SampleShot>& shots) {
    for (const SampleShot& s : shots) samples_->addShot(s);
  });
  connect(watcher_, &RunWatcher::writerChanged, this, [this](const QString& w) {
    status_->setState(w.isEmpty() ? tr("watching (no writer)") : tr("watching live"),
                      w.isEmpty() ? tr("No process holds the folder: the run ended, or has not started yet")
                                  : tr("Written by %1").arg(w));
    log_->addNote(QStringLiteral("info"),
                  w.isEmpty() ? tr("watched run: no process writes it now") : tr("watched run is written by %1").arg(w),
                  step_);
  });
}

void MainWindow::watchRun(const QString& dir) {
  if (busy()) {
    report(tr("watching a run"), tr("a run is in progress in this window"), tr("stop it first, then watch"));
    return;
  }
  if (dir.isEmpty()) return;
  // The worker's last session must not answer Sample now or Save checkpoint for this run.
  QMetaObject::invokeMethod(worker_, &TrainingWorker::releaseSession, Qt::QueuedConnection);
  plots_->clear();
  samples_->clear();
  log_->clear();
  step_ = total_ = 0;
  status_->clearStep();
  const QString abs = QFileInfo(dir).absoluteFilePath();
  // The panel will show the watched run's settings: the user's own come back after watching and
  // are what the window saves meanwhile.
  if (!watching()) user_config_ = config_->config();
  runs_->setCurrent(abs, RunController::Origin::Watched);
  log_->addNote(
      QStringLiteral("info"),
      tr("watching %1, read-only: its curves, events and samples appear as its writer adds them%2")
          .arg(abs, QFileInfo(abs).isDir() ? QString() : tr(" (the folder does not exist yet: waiting for it)")));
  watcher_->start(abs);
  tabs_->setCurrentWidget(plots_);
  updateActions();
}

void MainWindow::stopWatching() {
  if (!watching()) return;
  log_->addNote(QStringLiteral("info"), tr("stopped watching %1").arg(watcher_->dir()), step_);
  watcher_->stop();
  if (user_config_) {
    config_->setConfig(*user_config_);
    precision_->show(user_config_->precision);
    user_config_.reset();
  }
  status_->setState(tr("idle"));
  updateActions();
}

}  // namespace ampgan::ui
