#include "ui/main_window.h"

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
#include "ui/alert_banner.h"
#include "ui/amp_glossary.h"
#include "ui/app_icon.h"
#include "ui/compare_view.h"
#include "ui/config_panel.h"
#include "ui/event_log.h"
#include "ui/export_dialogs.h"
#include "ui/layers_view.h"
#include "ui/model_view.h"
#include "ui/plots_panel.h"
#include "ui/precision_actions.h"
#include "ui/run_branch.h"
#include "ui/run_controller.h"
#include "ui/run_exports.h"
#include "ui/runs_panel.h"
#include "ui/sample_view.h"
#include "ui/status_fields.h"
#include "ui/status_progress.h"
#include "ui/window_settings.h"

namespace ampgan::ui {

using State = TrainingWorker::State;


MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent), options_(options) {
  init_resources();
  register_meta_types();
  setWindowTitle(tr("AMP GAN Studio"));
  setWindowIcon(app_icon());
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  runs_ = new RunController(this);
  connect(runs_, &RunController::currentRunChanged, this, [this] {
    setWindowTitle(runs_->title());
    updateActions();
  });

  plots_ = new PlotsPanel;
  compare_ = new CompareView;
  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->addTab(plots_, tr("Live training"));
  tabs_->addTab(compare_, tr("Compare FP32 vs AMP"));
  runs_panel_ = new RunsPanel;
  tabs_->addTab(runs_panel_, tr("Runs"));
  connect(runs_panel_, &RunsPanel::overlaysChanged, plots_, &PlotsPanel::setOverlays);
  connect(runs_panel_, &RunsPanel::openRequested, this, &MainWindow::openRun);
  // The Runs tab reads its folder when first shown and after each run (not at every launch).
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (tabs_->currentWidget() != runs_panel_) return;
    const QString root = QString::fromStdString(config_->config().runs_root);
    if (runs_panel_->runsFolder().isEmpty() && !root.isEmpty()) runs_panel_->setRunsFolder(QFileInfo(root).absoluteFilePath());
    else if (runs_stale_) runs_panel_->rescan();
    runs_stale_ = false;
  });
  layers_ = new LayersView;
  tabs_->addTab(layers_, tr("Layers"));
  model_ = new ModelView;
  tabs_->addTab(model_, tr("Model"));
  alerts_ = new AlertBanner;
  auto* central = new QWidget;
  auto* central_layout = new QVBoxLayout(central);
  central_layout->setContentsMargins(0, 0, 0, 0);
  central_layout->setSpacing(0);
  central_layout->addWidget(alerts_);
  central_layout->addWidget(tabs_, 1);
  setCentralWidget(central);

  config_ = new ConfigPanel;
  config_->loadPresets(QStringLiteral(":/presets.json"));
  settings_dock_ = new QDockWidget(tr("Settings"));
  settings_dock_->setObjectName(QStringLiteral("settingsDock"));
  settings_dock_->setWidget(config_);
  addDockWidget(Qt::LeftDockWidgetArea, settings_dock_);

  samples_ = new SampleView;
  samples_dock_ = new QDockWidget(tr("Samples"));
  samples_dock_->setObjectName(QStringLiteral("samplesDock"));
  samples_dock_->setWidget(samples_);
  addDockWidget(Qt::RightDockWidgetArea, samples_dock_);

  log_ = new EventLog;
  log_dock_ = new QDockWidget(tr("Event log"));
  log_dock_->setObjectName(QStringLiteral("logDock"));
  log_dock_->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, log_dock_);
  // The log spans under the plots only: the settings and samples docks keep the full height.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);

  buildActions();
  buildMenusAndToolbar();
  buildStatusBar();
  RunExports::Parts ex;
  ex.runs = runs_;
  ex.samples = samples_;
  ex.plots = plots_;
  ex.compare = compare_;
  ex.log = log_;
  ex.status = statusBar();
  ex.dialog_parent = this;
  ex.report = [this](const QString& d, const QString& w, const QString& h) { report(d, w, h); };
  ex.busy = [this] { return busy(); };
  exports_ = new RunExports(std::move(ex), this);
  connectWatcher();

  worker_ = new TrainingWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connectWorker();
  thread_.setObjectName(QStringLiteral("training"));
  thread_.start();
  // Before anything else touches the engine (the dataset preview, say): see initThread.
  QMetaObject::invokeMethod(worker_, &TrainingWorker::initThread, Qt::BlockingQueuedConnection);

  presenter_ = [this](const UiError& e) { showError(e); };
  confirmer_ = [this](const QString& title, const QString& text) {
    return QMessageBox::question(this, title, text, QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) ==
           QMessageBox::Yes;
  };

  connect(config_, &ConfigPanel::learningRatesEdited, this, [this](float g, float d) {
    if (busy()) worker_->requestLearningRates(g, d);
  });
  connect(config_, &ConfigPanel::layerPolicyEdited, this, [this](const LayerPolicy& p) {
    if (busy() && !comparing_) worker_->requestLayerPolicy(p);
  });
  connect(config_, &ConfigPanel::stepsEdited, this, [this](qint64 s) {
    if (busy() && !comparing_) worker_->requestTotalSteps(s);
  });
  connect(config_, &ConfigPanel::inputRefused, this, [this](const QString& m) {
    statusBar()->showMessage(m + tr(" — not used until corrected"), 8000);
    log_->addNote(QStringLiteral("warning"), m);
  });
  connect(samples_, &SampleView::sampleNowRequested, this, [this] { worker_->requestSampleNow(); });
  connect(compare_, &CompareView::compareRequested, this, [this] { runComparison(); });

  // 1600x1000 where it fits; on a smaller screen 90% of it (the layout adapts, see PlotsPanel).
  QSize first(1600, 1000);
  if (const QScreen* sc = screen()) first = first.boundedTo(sc->availableGeometry().size() * 0.9);
  resize(first);
  applyDefaultLayout();
  if (options_.restore_settings) restoreSettings();
  updateActions();
}

MainWindow::~MainWindow() {
  // Whatever the path here (close, app quit, a test deleting the window): the run is finished
  // cleanly on the worker thread before the thread goes.
  worker_->requestStop();
  thread_.requestInterruption();
  thread_.quit();
  thread_.wait();
}

void MainWindow::buildStatusBar() {
  progress_ = new StatusProgress(statusBar(), log_, this);
  connect(progress_, &StatusProgress::cancelRequested, this, &MainWindow::stopTraining);
  status_ = new StatusFields(statusBar());
  status_->setState(tr("idle"));
  status_->setDevice(config_->gpuUsable() ? tr("GPU available") : tr("CPU (no usable GPU)"), config_->deviceNote());
}

void MainWindow::connectWorker() {
  connect(worker_, &TrainingWorker::stateChanged, this, &MainWindow::onState);
  connect(worker_, &TrainingWorker::runStarted, this, &MainWindow::onRunStarted);
  connect(worker_, &TrainingWorker::modelDescribed, model_, &ModelView::setDescription);
  // Clicking an overflow marker shows where that overflow started in the Layers view.
  connect(plots_, &PlotsPanel::overflowClicked, this, [this](const QString& network, qint64 step) {
    if (layers_->selectOverflow(network, step)) tabs_->setCurrentWidget(layers_);
    else statusBar()->showMessage(tr("layers.csv has no inf/NaN tensor of %1 at step %2").arg(network).arg(step), 4000);
  });
  connect(worker_, &TrainingWorker::batchReady, this, &MainWindow::onBatch);
  connect(worker_, &TrainingWorker::runFinished, this, &MainWindow::onRunFinished);
  connect(worker_, &TrainingWorker::failed, this, &MainWindow::onFailed);
  connect(worker_, &TrainingWorker::runOpened, this, &MainWindow::onRunOpened);
  connect(worker_, &TrainingWorker::loadingProgress, this, &MainWindow::onLoading);
  connect(worker_, &TrainingWorker::workProgress, this, [this](const QString& what, int done, int total) {
    progress_->setWork(what, done, total, step_);
    updateStepText();
  });
  connect(worker_, &TrainingWorker::notice, this, [this](const QString& t) { log_->addNote(QStringLiteral("info"), t); });
  connect(worker_, &TrainingWorker::sessionAvailable, this, [this](bool on) {
    has_session_ = on;
    updateActions();
  });
  connect(worker_, &TrainingWorker::generatorAvailable, this, [this](bool on, const QString& dir) {
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
  connect(worker_, &TrainingWorker::comparisonFinished, this, [this](bool complete) {
    comparing_ = false;
    compare_->onFinished(complete);
    emit comparisonDone(complete);
    maybeScreenshot(true);
  });
}

QAction* MainWindow::action(const QString& name) const { return findChild<QAction*>(name); }

QString MainWindow::currentRunDir() const { return runs_->dir(); }

void MainWindow::applyDefaultLayout() {
  // First-run sizes in proportion to the window, so the plots get about 60% of the width on a
  // 1280x800 screen as on a 1600x1000 one.
  const int w = width(), h = height();
  resizeDocks({settings_dock_, samples_dock_}, {std::clamp(w * 19 / 100, 250, 340), std::clamp(w / 5, 250, 420)},
              Qt::Horizontal);
  resizeDocks({log_dock_}, {std::clamp(h * 15 / 100, 110, 220)}, Qt::Vertical);
}

// ---- settings (ui/window_settings) ------------------------------------------------------------

void MainWindow::restoreSettings() {
  restored_layout_ = restore_window_settings(settingsParts());
  precision_->show(config_->precision());
}

void MainWindow::saveSettings() {
  if (options_.save_settings) save_window_settings(settingsParts());
}

WindowParts MainWindow::settingsParts() { return {this, config_, plots_, samples_, compare_, tabs_}; }

void MainWindow::applyOptions(const AppOptions& o) {
  RunConfig c = config_->config();
  o.applyTo(c);
  config_->setConfig(c);
  if (o.out) config_->setOutDir(QString::fromStdString(*o.out));
  precision_->show(c.precision);
  if (o.compare) {
    compare_->setAmpMode(o.compare_amp);
    if (o.steps) compare_->setSteps(static_cast<int>(*o.steps));
  }
  switch_at_ = o.switch_at;
  if (o.switch_to) switch_to_ = *o.switch_to;
  screenshot_ = o.screenshot;
  screenshot_step_ = o.screenshot_step;
  quit_after_screenshot_ = o.quit_after_screenshot;
  if (o.size.isValid()) {
    resize(o.size);
    if (!restored_layout_) applyDefaultLayout();
  }
  if (!o.runs.isEmpty()) runs_panel_->setRunsFolder(QFileInfo(o.runs).absoluteFilePath());
  if (!o.overlay.isEmpty()) {
    // Ticked once the folder has been read (on a background thread).
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = connect(runs_panel_, &RunsPanel::scanned, this, [this, once, names = o.overlay, group = o.group_seeds] {
      disconnect(*once);
      runs_panel_->setGroupSeeds(group);
      for (const QString& n : names) runs_panel_->setTicked(n, true);
    });
    if (o.runs.isEmpty())
      runs_panel_->setRunsFolder(QFileInfo(QString::fromStdString(config_->config().runs_root)).absoluteFilePath());
  }
  if (o.tab == QStringLiteral("runs")) tabs_->setCurrentWidget(runs_panel_);
  else if (o.tab == QStringLiteral("layers")) tabs_->setCurrentWidget(layers_);
  else if (o.tab == QStringLiteral("model")) tabs_->setCurrentWidget(model_);
  else if (o.tab == QStringLiteral("compare") || o.compare) tabs_->setCurrentWidget(compare_);
  else if (o.tab == QStringLiteral("live") || o.start) tabs_->setCurrentWidget(plots_);
}

// ---- actions -------------------------------------------------------------------------------------

void MainWindow::report(const QString& during, const QString& what, const QString& hint) {
  UiError e;
  e.during = during;
  e.what = what;
  e.hint = hint;
  onFailed(e);
}

bool MainWindow::checkRanges(const QString& during) {
  const QStringList bad = config_->rangeProblems();
  if (bad.isEmpty()) return true;
  report(during, bad.join(QStringLiteral("; ")), tr("correct the marked field (values are not capped for you)"));
  return false;
}

bool MainWindow::refusedWhileWatching() {
  if (!watching()) return false;
  statusBar()->showMessage(tr("Watching a run read-only: File > Stop watching first"), 5000);
  return true;
}

bool MainWindow::startTraining(bool paused, int steps) {
  if (busy() || refusedWhileWatching()) return false;
  if (!checkRanges(tr("checking the settings"))) return false;
  RunConfig cfg = config_->config();
  try {
    cfg.validate();  // instant feedback; the worker validates again
  } catch (const Error& e) {
    UiError u;
    u.during = tr("checking the settings");
    u.what = QString::fromStdString(e.what_failed());
    u.subject = QString::fromStdString(e.subject());
    u.hint = QString::fromStdString(e.hint());
    onFailed(u);
    return false;
  }
  if (cfg.dataset.empty()) {
    report(tr("checking the settings"), tr("no dataset chosen"), tr("choose a folder of images under Data"));
    return false;
  }
  saveSettings();  // a crash later still leaves the settings of this run
  state_ = State::Loading;
  updateActions();
  QMetaObject::invokeMethod(worker_, [w = worker_, cfg, paused, steps] { w->startRun(cfg, paused, steps); },
                            Qt::QueuedConnection);
  return true;
}

void MainWindow::togglePause() {
  if (state_ == State::Running || state_ == State::Loading) {
    worker_->setPaused(true);
    statusBar()->showMessage(tr("Pausing after this step"), 2000);
  } else if (state_ == State::Paused) {
    worker_->setPaused(false);
  }
}

void MainWindow::stepOnce() {
  if (state_ == State::Idle) {
    // Step works inside a run; starting one here would leave a run folder for a keystroke.
    statusBar()->showMessage(tr("Step trains one iteration of a running or paused run: press Start first"), 4000);
    return;
  }
  if (state_ == State::Running) worker_->setPaused(true);
  worker_->requestStep();
}

void MainWindow::stopTraining() {
  if (!busy()) return;
  worker_->requestStop();
  statusBar()->showMessage(tr("Stopping after the current step: saving metrics, samples and a checkpoint…"));
}

void MainWindow::switchPrecision(Precision p) {
  precision_->show(p);
  if ((state_ == State::Running || state_ == State::Paused) && !comparing_) {
    worker_->requestPrecision(p);
    statusBar()->showMessage(tr("Switching to %1 at the next step").arg(QString::fromLatin1(precision_label(p))), 3000);
  }
}

bool MainWindow::runComparison() {
  if (busy() || refusedWhileWatching()) return false;
  if (!checkRanges(tr("checking the settings"))) return false;
  RunConfig cfg = config_->config();
  cfg.steps = compare_->steps();
  config_->clearOutDir();  // --out, if given, holds this comparison's two runs; later ones go to the runs folder
  try {
    cfg.validate();
  } catch (const Error& e) {
    report(tr("checking the settings"), QString::fromStdString(e.what_failed()), QString::fromStdString(e.hint()));
    return false;
  }
  const Precision amp = compare_->ampMode();
  comparing_ = true;
  compare_->begin(amp);
  samples_->clear();
  tabs_->setCurrentWidget(compare_);
  state_ = State::Loading;
  updateActions();
  log_->addNote(QStringLiteral("info"), tr("comparison: FP32 vs %1, %2 steps each").arg(QString::fromLatin1(precision_label(amp))).arg(cfg.steps));
  QMetaObject::invokeMethod(worker_, [w = worker_, cfg, amp] { w->runComparison(cfg, amp); }, Qt::QueuedConnection);
  return true;
}

bool MainWindow::exportGrid(const QString& path, int factor) { return exports_->exportGrid(path, factor); }

bool MainWindow::exportSamples(const QString& dir, int n, quint64 seed) {
  if (!runs_->canSample()) {
    report(tr("exporting samples"), tr("the current run has no generator loaded"),
           tr("start a run, or open a run that has a checkpoint, then export"));
    return false;
  }
  worker_->requestExportSamples(dir, n, seed);
  return true;
}

bool MainWindow::exportMetricsCsv(const QString& path) { return exports_->exportMetricsCsv(path); }

bool MainWindow::exportPlot(const QString& id, const QString& path) { return exports_->exportPlot(id, path); }

void MainWindow::openRun(const QString& dir) {
  if (busy()) {
    report(tr("opening a run"), tr("a run is in progress"), tr("stop it first"));
    return;
  }
  stopWatching();
  QMetaObject::invokeMethod(worker_, [w = worker_, dir] { w->openRun(dir); }, Qt::QueuedConnection);
}

bool MainWindow::resumeRun(const QString& dir, const QString& checkpoint) {
  if (busy() || dir.isEmpty() || refusedWhileWatching()) return false;
  if (!checkRanges(tr("resuming the run"))) return false;
  // Resuming from an earlier checkpoint retrains the steps after it: their metrics and events
  // are dropped and later checkpoints set aside. Only with the user's yes.
  if (const auto later = RunController::laterHistory(dir, checkpoint)) {
    const QString text =
        tr("Resuming from the checkpoint of step %1 drops the metrics and events of steps %2 to %3 (they are "
           "trained again) and moves %4 later checkpoint(s) aside into checkpoints/superseded-*.\n\nContinue? "
           "(File > Resume into a branch… keeps this run as it is and continues in a new folder.)")
            .arg(later->from_step)
            .arg(later->from_step + 1)
            .arg(std::max(later->last_logged_step, later->from_step + 1))
            .arg(later->later_checkpoints);
    if (!confirmer_ || !confirmer_(tr("Drop the later history?"), text)) {
      log_->addNote(QStringLiteral("info"), tr("resume cancelled: %1 was left as it is").arg(dir));
      return false;
    }
  }
  const RunConfig shown = config_->config();
  const qint64 steps = shown.steps;
  // What may change mid-run is taken from the window, as it would be in a running run.
  MidRunSettings mid;
  mid.precision = shown.precision;
  mid.policy = shown.layer_policy();
  mid.lr_g = shown.lr_g;
  mid.lr_d = shown.lr_d;
  state_ = State::Loading;
  updateActions();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, dir, steps, checkpoint, mid] { w->resumeRun(dir, steps, checkpoint, false, mid); },
      Qt::QueuedConnection);
  return true;
}

bool MainWindow::resumeRunAsBranch(const QString& dir, const QString& checkpoint) {
  if (busy() || refusedWhileWatching()) return false;
  if (!checkRanges(tr("resuming the run"))) return false;
  QString error, ckpt;
  const QString branch = make_branch(dir, checkpoint, &error, &ckpt);
  if (branch.isEmpty()) {
    report(tr("making a branch of the run"), error, tr("check that the run's folder can be read and its parent written"));
    return false;
  }
  log_->addNote(QStringLiteral("info"), tr("branch of %1 at step %2: %3").arg(dir).arg(RunController::checkpointStep(ckpt)).arg(branch));
  return resumeRun(branch, ckpt);
}

bool MainWindow::saveCheckpoint() {
  if (!has_session_ || comparing_ || !runs_->canSample()) {
    report(tr("saving a checkpoint"), tr("no run is loaded"), tr("start or resume a run first"));
    return false;
  }
  worker_->requestCheckpoint();
  return true;
}

bool MainWindow::grabWindow(const QString& png_path) { return grab().save(png_path, "PNG"); }

void MainWindow::updateActions() {
  const bool watch = watching();  // read-only: nothing that trains or writes into the folder
  const bool idle = state_ == State::Idle && !watch;
  const bool running = state_ == State::Running;
  const bool paused = state_ == State::Paused;
  start_->setEnabled(idle);
  pause_->setEnabled((running || paused) && !comparing_);
  pause_->setText(paused ? tr("Resume") : tr("Pause"));
  step_act_->setEnabled((paused || running) && !comparing_);
  stop_->setEnabled(!idle && state_ != State::Stopping);
  compare_act_->setEnabled(idle);
  compare_->setBusy(!idle);
  checkpoint_->setEnabled(has_session_ && !watch && !comparing_ && state_ != State::Stopping && state_ != State::Loading);
  // Sampling only from the current run's own generator (never a previously trained one).
  const bool can_sample = runs_->canSample();
  export_samples_->setEnabled(can_sample && state_ != State::Stopping && state_ != State::Loading);
  samples_->setSampleNowEnabled(can_sample && !comparing_ && (running || paused || idle));
  open_->setEnabled(state_ == State::Idle);
  watch_->setEnabled(state_ == State::Idle);
  unwatch_->setEnabled(watch);
  resume_->setEnabled(idle && runs_->resumable());
  resume_ckpt_->setEnabled(idle);
  resume_branch_->setEnabled(idle);
  precision_->setEnabled(!comparing_ && !watch);
  config_->setRunning(!idle);
  config_->setEnabled(!watch);
}

void MainWindow::updateStepText() {
  if (total_ > 0) status_->setStep(step_, total_, progress_->working());
}

QString MainWindow::statusText() const { return status_->text(); }

void MainWindow::closeEvent(QCloseEvent* e) {
  if (busy()) {
    // Never lose a run: stop after the current step, let the worker write metrics, samples and
    // a checkpoint, then close (onState calls close() again when the worker is idle).
    if (!closing_) {
      closing_ = true;
      worker_->requestStop();
      statusBar()->showMessage(tr("Finishing the run before closing: saving metrics, samples and a checkpoint…"));
      log_->addNote(QStringLiteral("info"), tr("closing: the run is being finished and saved"), step_);
    }
    e->ignore();
    return;
  }
  saveSettings();
  e->accept();
}

}  // namespace ampgan::ui
