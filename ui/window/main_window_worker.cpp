// MainWindow's side of the worker's messages: a run started, a batch of rows, samples and events,
// a run finished or failed, a run opened. Each switches or fills the one current run's views.
#include "ui/window/main_window.h"

#include <algorithm>
#include <filesystem>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/common/error.h"
#include "ui/common/amp_glossary.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/run_branch.h"
#include "ui/runs/run_controller.h"
#include "ui/runs/runs_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/settings/precision_actions.h"
#include "ui/views/alert_banner.h"
#include "ui/views/compare_view.h"
#include "ui/views/doctor_view.h"
#include "ui/views/event_log.h"
#include "ui/views/explore_view.h"
#include "ui/views/layers_view.h"
#include "ui/views/model_view.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/app_icon.h"
#include "ui/window/export_dialogs.h"
#include "ui/window/run_exports.h"
#include "ui/window/status_fields.h"
#include "ui/window/status_progress.h"
#include "ui/window/studio_wording.h"

namespace ampgan::ui {

void MainWindow::buildStatusBar() {
  progress_ = new StatusProgress(statusBar(), log_, this);
  connect(progress_, &StatusProgress::cancelRequested, this, &MainWindow::stopTraining);
  connect(progress_, &StatusProgress::skipRequested, this, [this] {
    worker_->requestSkipWork();
    // The evaluation runs inside the step after the last one shown: the next multiple of its interval.
    const int64_t at = eval_every_ > 0 ? (step_ / eval_every_ + 1) * eval_every_ : step_ + 1;
    plots_->setEvaluationInterval(eval_every_, step_, true);
    log_->addNote(QStringLiteral("info"),
                  eval_every_ > 0 ? tr("evaluation at step %1 skipped: training goes on, the next one is at step %2")
                                        .arg(at)
                                        .arg(at + eval_every_)
                                  : tr("evaluation skipped: training goes on"),
                  at);
  });
  branch_ = new BranchCopy(this);
  connect(branch_, &BranchCopy::progress, this, [this](qint64 done, qint64 total) {
    // KiB, so a run of several GiB stays within the bar's int range.
    const int t = static_cast<int>(std::max<qint64>(1, total >> 10));
    progress_->setWork(tr("copying the run into a branch"), std::min(t - 1, static_cast<int>(done >> 10)), t, step_,
                       tr("Cancel the copy: the half-made branch is removed, the run stays as it is"));
  });
  connect(branch_, &BranchCopy::finished, this, &MainWindow::onBranchCopied);
  status_ = new StatusFields(statusBar());
  status_->setState(tr("idle"));
  status_->setDevice(config_->gpuUsable() ? tr("GPU available") : tr("CPU (no usable GPU)"), config_->deviceNote());
}

void MainWindow::connectWorker() {
  // What the views ask of the worker.
  connect(config_, &ConfigPanel::learningRatesEdited, this, [this](float g, float d) {
    if (state_ != TrainingWorker::State::Idle) worker_->requestLearningRates(g, d);
  });
  connect(config_, &ConfigPanel::layerPolicyEdited, this, [this](const LayerPolicy& p) {
    if (state_ != TrainingWorker::State::Idle && !comparing_) worker_->requestLayerPolicy(p);
  });
  connect(config_, &ConfigPanel::stepsEdited, this, [this](qint64 s) {
    if (state_ != TrainingWorker::State::Idle && !comparing_) worker_->requestTotalSteps(s);
  });
  connect(config_, &ConfigPanel::notice, this, [this](const QString& m) {
    statusBar()->showMessage(m, 8000);
    log_->addNote(QStringLiteral("info"), m);
  });
  connect(config_, &ConfigPanel::inputRefused, this, [this](const QString& m) {
    statusBar()->showMessage(m + tr(" — not used until corrected"), 8000);
    log_->addNote(QStringLiteral("warning"), m);
  });
  connect(samples_, &SampleView::sampleNowRequested, this, [this] { worker_->requestSampleNow(); });
  connect(compare_, &CompareView::compareRequested, this, [this] { runComparison(); });
  // And what it answers.
  connect(worker_, &TrainingWorker::stateChanged, this, &MainWindow::onState);
  connect(worker_, &TrainingWorker::runStarted, this, &MainWindow::onRunStarted);
  connect(worker_, &TrainingWorker::modelDescribed, model_, &ModelView::setDescription);
  // Right-click on a layer in the Model or Layers tab: keep it in FP32 (or not), as the settings
  // panel's FP32 layers field would.
  auto layer_menu = [this](const QString& layer, const QPoint& at) {
    QMenu menu(this);
    QAction* keep = menu.addAction(tr("Keep %1 in FP32").arg(layer));
    keep->setObjectName(QStringLiteral("keepLayerInFp32"));
    keep->setCheckable(true);
    keep->setChecked(config_->layerInFp32(layer));
    keep->setEnabled(config_->isEnabled() && !comparing_);
    keep->setToolTip(tr("Compute this layer in FP32 while the rest uses half precision (settings: FP32 layers)"));
    connect(keep, &QAction::toggled, this, [this, layer](bool on) { config_->setLayerInFp32(layer, on); });
    menu.exec(at);
  };
  connect(model_, &ModelView::layerMenuRequested, this, layer_menu);
  connect(layers_, &LayersView::layerMenuRequested, this, layer_menu);
  // Clicking an overflow marker shows where that overflow started in the Layers view.
  connect(plots_, &PlotsPanel::overflowClicked, this, [this](const QString& network, qint64 step) {
    doctor_->setReplayStep(step);  // the Doctor tab's replay: why did this step overflow?
    if (layers_->selectOverflow(network, step))
      tabs_->setCurrentWidget(layers_);
    else
      statusBar()->showMessage(tr("layers.csv has no inf/NaN tensor of %1 at step %2").arg(network).arg(step), 4000);
  });
  connect(worker_, &TrainingWorker::batchReady, this, &MainWindow::onBatch);
  connect(worker_, &TrainingWorker::runFinished, this, &MainWindow::onRunFinished);
  connect(worker_, &TrainingWorker::failed, this, &MainWindow::onFailed);
  connect(worker_, &TrainingWorker::runOpened, this, &MainWindow::onRunOpened);
  connect(worker_, &TrainingWorker::loadingProgress, this, &MainWindow::onLoading);
  connect(worker_, &TrainingWorker::workProgress, this, [this](const QString& what, int done, int total) {
    const bool search = comparing_ && what.startsWith(QStringLiteral("largest batch"));
    if (search) compare_->onWorkProgress(what, done, total);
    // Only an evaluation can be skipped with the run going on; a search ends with Stop.
    const QString stop_tip = search       ? tr("Stop the largest-batch search: the two runs' rows stay as they are")
                             : doctoring_ ? tr("Stop the precision doctor: the best answer so far stands")
                                          : QString();
    progress_->setWork(what, done, total, step_, stop_tip, !search && !doctoring_);
    updateStepText();
  });
  connect(worker_, &TrainingWorker::notice, this,
          [this](const QString& t) { log_->addNote(QStringLiteral("info"), t); });
  connect(worker_, &TrainingWorker::sessionAvailable, this, [this](bool on) {
    has_session_ = on;
    updateActions();
  });
  connect(explore_, &ExploreView::exploreRequested, this,
          [this](const ExploreRequest& r) { worker_->requestExplore(r); });
  connect(explore_, &ExploreView::cancelRequested, this, [this] { worker_->cancelExplore(); });
  connect(worker_, &TrainingWorker::explored, explore_, &ExploreView::onResult);
  connect(worker_, &TrainingWorker::replayed, this, [this](const ReplayResultPtr& r) {
    doctor_->onReplayed(r);
    if (r)
      log_->addNote(QStringLiteral("info"),
                    tr("replay of step %1: %2").arg(r->step).arg(QString::fromStdString(r->verdict)));
    emit replayDone();
  });
  connect(worker_, &TrainingWorker::doctorUpdated, this, [this](const DoctorUpdatePtr& u) {
    doctor_->onUpdate(u);
    if (!u->done) return;
    doctoring_ = false;
    log_->addNote(QStringLiteral("info"), tr("precision doctor: %1").arg(QString::fromStdString(u->result.summary)));
    emit doctorDone();
  });
  connect(worker_, &TrainingWorker::exploreProgress, explore_, &ExploreView::onProgress);
  connect(worker_, &TrainingWorker::generatorClasses, explore_, &ExploreView::setClasses);
  connect(worker_, &TrainingWorker::generatorAvailable, this, [this](bool on, const QString& dir) {
    explore_->setGenerator(on, dir);
    runs_->setGeneratorDir(on ? dir : QString());
    updateActions();
  });
  connect(worker_, &TrainingWorker::exported, this, [this](const QString& what, const QString& path) {
    if (what == QStringLiteral("samples")) {
      log_->addNote(QStringLiteral("export"), tr("samples written to %1").arg(path), step_);
      statusBar()->showMessage(tr("Samples written to %1").arg(path), 5000);
      emit samplesExported(path);
    } else {
      statusBar()->showMessage(tr("Checkpoint written: %1").arg(path), 5000);
    }
  });
  connect(worker_, &TrainingWorker::maxBatchFound, compare_, &CompareView::onMaxBatch);
  connect(worker_, &TrainingWorker::comparisonFinished, this, [this](bool complete) {
    comparing_ = false;
    compare_->onFinished(complete);
    emit comparisonDone(complete);
    maybeScreenshot(true);
  });
}

namespace {

using State = TrainingWorker::State;

QString state_name(State s) {
  switch (s) {
    case State::Idle:
      return QObject::tr("idle");
    case State::Loading:
      return QObject::tr("loading data…");
    case State::Running:
      return QObject::tr("training");
    case State::Paused:
      return QObject::tr("paused");
    case State::Stopping:
      return QObject::tr("stopping: saving…");
  }
  return {};
}

QString tag_label(RunTag t, Precision amp) {
  if (t == RunTag::CompareBaseline) return QString::fromLatin1(precision_label(Precision::FP32));
  if (t == RunTag::CompareAmp) return QString::fromLatin1(precision_label(amp));
  return {};
}

}  // namespace

void MainWindow::onState(int s) {
  state_ = static_cast<State>(s);
  status_->setState(state_name(state_));
  const bool loading = state_ == State::Loading;
  progress_->setLoading(loading);
  if (state_ == State::Idle) {
    statusBar()->clearMessage();
    emit becameIdle();
    if (closing_) QTimer::singleShot(0, this, &QWidget::close);
  }
  updateActions();
}

void MainWindow::onLoading(int done, int total) { progress_->setLoadingProgress(done, total); }

void MainWindow::onRunStarted(const RunStartInfo& info) {
  status_->setDevice(info.backend, info.backend_note.isEmpty()
                                       ? info.backend
                                       : info.backend + QStringLiteral("\n") + info.backend_note);
  total_ = info.config.steps;
  step_ = info.start_step;
  layers_every_ = info.config.layers_every;
  eval_every_ = info.config.eval_every;
  layers_->setRunDir(info.dir);
  alerts_->dismiss();
  ips_ = 0;
  if (info.tag != RunTag::Main) {
    // Each run of a comparison becomes the current run in turn: the Live plots, the Samples
    // dock, the title and the exports all follow it (the Compare tab shows both).
    compare_->onRunStarted(info);
    plots_->clear();
    plots_->setEvaluationInterval(info.config.eval_every);
    samples_->clear();
    runs_->setCurrent(info.dir, RunController::Origin::Compared);
    log_->addNote(QStringLiteral("info"),
                  tr("[%1] run folder: %2").arg(tag_label(info.tag, compare_->ampMode()), info.dir));
    return;
  }
  runs_->setCurrent(info.dir, RunController::Origin::Trained);
  config_->clearOutDir();  // --out named this run's folder only
  // A resumed run's charts name its next evaluation, not its first.
  plots_->setEvaluationInterval(info.config.eval_every, info.start_step);
  if (!info.resumed) {
    plots_->clear();
    samples_->clear();
    log_->clear();
  } else {
    // What the resumed run has up to its checkpoint; later grids were of the dropped history.
    samples_->setShots(RunController::storedGrids(info.dir, info.start_step));
  }
  log_->addNote(QStringLiteral("info"),
                tr("%1 run folder: %2 · %3 · %4")
                    .arg(info.resumed ? tr("resumed") : tr("new"), info.dir, info.dataset, info.backend),
                info.start_step);
  // The folder now exists: claim its runs folder (a warning if another studio uses it).
  if (const QString w = runs_->claimRunsFolder(QFileInfo(info.dir).path()); !w.isEmpty()) {
    log_->addNote(QStringLiteral("warning"), w);
    statusBar()->showMessage(w, 8000);
  }
  emit runStarted(info.dir);
}

void MainWindow::onBatch(const UiBatchPtr& b) {
  if (b->tag == RunTag::Main) {
    if (b->replace_history) {
      plots_->setHistory(b->rows);
      plots_->setHistogramRows(b->hist_history, true);
    } else {
      plots_->appendRows(b->rows);
    }
    for (const SampleShot& s : b->samples)
      if (s.path.isEmpty()) {
        showRequestedGrid(s);  // Sample now
      } else {
        samples_->addShot(s);
        explore_->onTrainingProgressed();
      }
    if (b->has_histograms) plots_->setHistograms(b->hist_step, b->hist_g, b->hist_d);
    log_->addEvents(b->events);
    layers_->onRows(b->rows, layers_every_);
  } else {
    const QString label = tag_label(b->tag, compare_->ampMode());
    compare_->onRows(b->tag, b->rows);
    plots_->appendRows(b->rows);  // the Live tab shows the current (comparison) run too
    if (b->has_histograms) plots_->setHistograms(b->hist_step, b->hist_g, b->hist_d);
    for (SampleShot s : b->samples) {
      compare_->onSample(b->tag, s);
      s.label = label;  // the Samples dock follows the comparison, run by run
      if (s.path.isEmpty())
        showRequestedGrid(s);
      else
        samples_->addShot(s);
    }
    log_->addEvents(b->events, label);
  }
  alerts_->offer(b->events);
  for (const StepMetrics& m : b->rows) ips_ = ips_ == 0 ? m.images_per_s : 0.9 * ips_ + 0.1 * m.images_per_s;
  if (b->step > 0 || !b->rows.empty()) step_ = b->step;
  if (b->total_steps > 0) total_ = b->total_steps;
  if (!b->rows.empty()) {
    const Precision p = b->rows.back().precision;
    status_->setPrecision(p);
    status_->setElapsed(b->rows.back().time_s);
    // Keep the precision controls on what the engine actually trains in.
    if (b->tag == RunTag::Main && p != shown_precision_ && !b->replace_history) {
      shown_precision_ = p;
      precision_->show(p);
    }
  }
  updateStepText();
  if (!b->rows.empty()) status_->setImagesPerSecond(ips_);
  status_->setMemory(b->memory);

  // Demo hooks.
  if (b->tag == RunTag::Main && switch_at_ && step_ >= *switch_at_ && state_ != State::Stopping) {
    switch_at_.reset();
    switchPrecision(switch_to_);
  }
  if (b->tag == RunTag::Main) maybeScreenshot(false);
}

// Sample now answers the same way after training, a comparison or Open run: the grid is shown,
// and the log says whether it is a saved grid (same step, same weights) or one kept only here.
void MainWindow::showRequestedGrid(const SampleShot& s) {
  const QString saved = samples_->addRequested(s);
  const QString who = s.label.isEmpty() ? QString() : QStringLiteral("[%1] ").arg(s.label);
  const QString text =
      saved.isEmpty()
          ? tr("%1Sample now: grid of step %2 from the current weights, shown in the Samples dock; not saved "
               "(File > Export > Sample grid as PNG writes it)")
                .arg(who)
                .arg(s.step)
          : tr("%1Sample now: step %2's weights are those of the saved grid %3, shown in the Samples dock")
                .arg(who)
                .arg(s.step)
                .arg(QDir::toNativeSeparators(saved));
  log_->addNote(QStringLiteral("info"), text, s.step);
  statusBar()->showMessage(saved.isEmpty() ? tr("Sample now: grid of step %1 (not saved)").arg(s.step)
                                           : tr("Sample now: step %1, the saved grid").arg(s.step),
                           5000);
}

void MainWindow::maybeScreenshot(bool run_ended) {
  if (screenshot_.isEmpty()) return;
  const bool at_step = screenshot_step_ > 0 && step_ >= screenshot_step_ && !comparing_;
  if (!at_step && !(run_ended && screenshot_step_ == 0)) return;
  takeScreenshot();
}

void MainWindow::takeScreenshot() {
  if (screenshot_.isEmpty()) return;
  const QString path = screenshot_;
  screenshot_.clear();
  // Let the plots catch up with the last batch first (their replot timer runs every 50 ms).
  QTimer::singleShot(400, this, [this, path] {
    plots_->refreshNow();
    QTimer::singleShot(200, this, [this, path] {
      const bool ok = grabWindow(path);
      log_->addNote(ok ? QStringLiteral("export") : QStringLiteral("error"),
                    ok ? tr("screenshot written to %1").arg(path) : tr("could not write %1").arg(path));
      if (quit_after_screenshot_) close();
    });
  });
}

void MainWindow::onRunFinished(const RunEndInfo& info) {
  if (info.tag != RunTag::Main) {
    compare_->onRunFinished(info);
    return;
  }
  runs_->setResumable(info.ok || info.reason != QStringLiteral("cancelled"));
  const QString text =
      info.reason == QStringLiteral("finished")
          ? tr("run finished at step %1; samples and a checkpoint are in %2").arg(info.step).arg(info.dir)
          : tr("run ended at step %1 (%2); everything up to it is saved in %3")
                .arg(info.step)
                .arg(info.reason, info.dir);
  log_->addNote(info.ok ? QStringLiteral("info") : QStringLiteral("warning"), text, info.step);
  runs_stale_ = true;
  emit runFinished(info.dir, info.reason);
  maybeScreenshot(true);
}

void MainWindow::onFailed(const UiError& failure) {
  const UiError e = studio_wording(failure);  // the settings panel's fields, not the CLI's options
  errors_ << e;
  QString line = e.during.isEmpty() ? e.what : QStringLiteral("%1: %2").arg(e.during, e.what);
  if (!e.subject.isEmpty()) line += QStringLiteral(" (%1)").arg(e.subject);
  if (!e.hint.isEmpty()) line += QStringLiteral(" — %1").arg(e.hint);
  log_->addNote(QStringLiteral("error"), line, step_);
  if (presenter_) presenter_(e);
}

void MainWindow::showError(const UiError& e) {
  // Non-blocking: the window (and a run that continues after a failed export) stays live.
  auto* box = new QMessageBox(e.out_of_memory ? QMessageBox::Warning : QMessageBox::Critical, tr("AMP GAN Studio"),
                              e.during.isEmpty() ? e.what : tr("Error while %1:\n%2").arg(e.during, e.what),
                              QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("errorDialog"));
  QString info;
  if (!e.subject.isEmpty()) info += tr("Concerning: %1\n").arg(e.subject);
  if (!e.hint.isEmpty()) info += tr("What to do: %1\n").arg(e.hint);
  if (runs_->hasRun() && e.during == tr("training"))
    info += tr("\nEverything up to the failing step is saved in %1.").arg(runs_->dir());
  box->setInformativeText(info.trimmed());
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setWindowModality(Qt::NonModal);
  box->show();
}

void MainWindow::onRunOpened(const std::shared_ptr<const OpenedRun>& run) {
  runs_->setCurrent(run->dir, RunController::Origin::Opened);
  runs_->setResumable(!run->checkpoints.isEmpty());
  plots_->setHistory(run->rows);
  plots_->setHistogramRows(run->histograms, true);
  samples_->setShots(run->samples);
  log_->clear();
  log_->addEvents(run->events);
  layers_->setRunDir(run->dir);
  if (run->has_config) {
    RunConfig c = run->config;
    c.out_dir.clear();
    // The precision the run last trained in (it may have been switched mid-run): Resume
    // continues in what the window shows.
    if (!run->rows.empty()) c.precision = run->rows.back().precision;
    config_->setConfig(c);
    precision_->show(c.precision);
  }
  step_ = run->rows.empty() ? 0 : run->rows.back().step;
  total_ = run->has_config ? run->config.steps : step_;
  status_->setStep(step_, total_, false);
  // The status bar describes the opened run too, not the run trained before it.
  const StepMetrics* last = run->rows.empty() ? nullptr : &run->rows.back();
  status_->setDevice(config_->gpuUsable() ? tr("GPU available") : tr("CPU (no usable GPU)"), config_->deviceNote());
  status_->showRow(last);
  ips_ = 0;
  log_->addNote(
      QStringLiteral("info"),
      tr("opened %1: %2 steps, %3 sample grids, %4 checkpoints%5")
          .arg(run->dir)
          .arg(run->rows.size())
          .arg(run->samples.size())
          .arg(run->checkpoints.size())
          .arg(runs_->resumable() ? tr(" — raise Steps and press Resume run (Ctrl+Shift+Return) to continue it")
                                  : QString()));
  if (tabs_->currentWidget() != explore_) tabs_->setCurrentWidget(plots_);  // Explore: the opened run's seeds
  updateActions();
  emit runOpened(run->dir);
}

}  // namespace ampgan::ui
