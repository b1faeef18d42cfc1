#include "ui/window/main_window.h"

#include <algorithm>

#include <QAbstractSpinBox>
#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QScreen>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>

#include "core/common/error.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/run_branch.h"
#include "ui/runs/run_controller.h"
#include "ui/runs/runs_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/settings/precision_actions.h"
#include "ui/views/compare_view.h"
#include "ui/views/doctor_view.h"
#include "ui/views/event_log.h"
#include "ui/views/explore_view.h"
#include "ui/views/layers_view.h"
#include "ui/views/model_view.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/app_icon.h"
#include "ui/widgets/input_guards.h"
#include "ui/window/run_exports.h"
#include "ui/window/status_fields.h"
#include "ui/window/status_progress.h"
#include "ui/window/window_settings.h"

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

  buildViews();
  buildActions();
  buildMenusAndToolbar();
  buildStatusBar();
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

  // 1600x1000 where it fits; on a smaller screen 90% of it (the layout adapts, see PlotsPanel).
  QSize first(1600, 1000);
  if (const QScreen* sc = screen()) first = first.boundedTo(sc->availableGeometry().size() * 0.9);
  resize(first);
  applyDefaultLayout();
  if (options_.restore_settings) restoreSettings();
  updateActions();
  // The wheel over a box without the keyboard focus (the toolbar's precision, the Compare tab's
  // mode, the samples' zoom) changes nothing, as in the settings panel, which guards its own.
  auto* guard = new WheelGuard(nullptr, this);
  for (QComboBox* c : findChildren<QComboBox*>())
    if (!config_->isAncestorOf(c)) guard->guard(c);
  for (QAbstractSpinBox* b : findChildren<QAbstractSpinBox*>())
    if (!config_->isAncestorOf(b)) guard->guard(b);
}

MainWindow::~MainWindow() {
  // Whatever the path here (close, app quit, a test deleting the window): the run is finished
  // cleanly on the worker thread before the thread goes.
  worker_->requestStop();
  thread_.requestInterruption();
  thread_.quit();
  thread_.wait();
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

WindowParts MainWindow::settingsParts() {
  return {this, config_, plots_, samples_, compare_, tabs_, watching() ? user_config_ : std::nullopt};
}

void MainWindow::applyOptions(const AppOptions& o) {
  if (!o.config_file.isEmpty()) {
    try {
      config_->applySettingsFile(o.config_json, o.config_file.toStdString());
      log_->addNote(QStringLiteral("info"), tr("settings loaded from %1").arg(QDir::toNativeSeparators(o.config_file)));
    } catch (const Error& e) {  // checked while parsing; reported all the same
      onFailed(UiError::of(e, tr("loading settings")));
    }
  }
  RunConfig c = config_->config();
  o.applyTo(c);
  config_->setConfig(c);
  if (const nlohmann::json* out = o.given("out")) config_->setOutDir(QString::fromStdString(out->get<std::string>()));
  precision_->show(c.precision);
  if (o.compare) {
    compare_->setAmpMode(o.compare_amp);
    if (const nlohmann::json* steps = o.given("steps")) compare_->setSteps(steps->get<int>());
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
  if (o.tab == QStringLiteral("runs"))
    tabs_->setCurrentWidget(runs_panel_);
  else if (o.tab == QStringLiteral("explore"))
    tabs_->setCurrentWidget(explore_);
  else if (o.tab == QStringLiteral("doctor"))
    tabs_->setCurrentWidget(doctor_);
  else if (o.tab == QStringLiteral("layers"))
    tabs_->setCurrentWidget(layers_);
  else if (o.tab == QStringLiteral("model"))
    tabs_->setCurrentWidget(model_);
  else if (o.tab == QStringLiteral("compare") || o.compare)
    tabs_->setCurrentWidget(compare_);
  else if (o.tab == QStringLiteral("live") || o.start)
    tabs_->setCurrentWidget(plots_);
  // Without --start or --compare no step comes to trigger --screenshot: picture the window once
  // it has settled (the first paint, a runs folder's scan on its thread).
  if (!o.screenshot.isEmpty() && o.doctor) {
    connect(this, &MainWindow::doctorDone, this, [this] { takeScreenshot(); });
  } else if (!o.screenshot.isEmpty() && !o.open.isEmpty()) {
    // --open: once the run is read (and the Explore tab, if shown, has had time for its images).
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = connect(this, &MainWindow::runOpened, this, [this, once] {
      disconnect(*once);
      QTimer::singleShot(2000, this, [this] { takeScreenshot(); });
    });
  } else if (!o.screenshot.isEmpty() && !o.start && !o.compare) {
    QTimer::singleShot(1500, this, [this] { takeScreenshot(); });
  }
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
    onFailed(UiError::of(e, tr("checking the settings")));
    return false;
  }
  if (cfg.dataset.empty()) {
    report(tr("checking the settings"), tr("no dataset chosen"), tr("choose a folder of images under Data"));
    return false;
  }
  saveSettings();  // a crash later still leaves the settings of this run
  state_ = State::Loading;
  updateActions();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, cfg, paused, steps] { w->startRun(cfg, paused, steps); }, Qt::QueuedConnection);
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
  if (branch_->running()) {  // the copy before a branch's resume: nothing to stop yet
    branch_->cancel();
    return;
  }
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
  const bool max_batch = compare_->maxBatch();
  log_->addNote(QStringLiteral("info"), tr("comparison: FP32 vs %1, %2 steps each%3")
                                            .arg(QString::fromLatin1(precision_label(amp)))
                                            .arg(cfg.steps)
                                            .arg(max_batch ? tr(", then the largest batch of each") : QString()));
  QMetaObject::invokeMethod(
      worker_, [w = worker_, cfg, amp, max_batch] { w->runComparison(cfg, amp, max_batch); }, Qt::QueuedConnection);
  return true;
}

bool MainWindow::loadSettings(const QString& path) {
  if (busy()) {
    report(tr("loading settings"), tr("the settings cannot change while a run trains"), tr("stop it first"));
    return false;
  }
  if (refusedWhileWatching()) return false;
  try {
    config_->loadSettingsFile(path);
  } catch (const Error& e) {
    onFailed(UiError::of(e, tr("loading settings")));
    return false;
  }
  precision_->show(config_->precision());
  log_->addNote(QStringLiteral("info"), tr("settings loaded from %1").arg(QDir::toNativeSeparators(path)), step_);
  statusBar()->showMessage(tr("Settings: loaded from %1 (Undo puts the previous ones back)").arg(path), 5000);
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

bool MainWindow::exportTimelapse(const QString& path) { return exports_->exportTimelapse(path); }

void MainWindow::openRun(const QString& dir) {
  if (busy()) {
    report(tr("opening a run"), tr("a run is in progress"), tr("stop it first"));
    return;
  }
  stopWatching();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, dir] { w->openRun(dir); }, Qt::QueuedConnection);
}

bool MainWindow::resumeRun(const QString& dir, const QString& checkpoint) {
  if (busy() || dir.isEmpty() || refusedWhileWatching()) return false;
  if (!checkRanges(tr("resuming the run"))) return false;
  // Resuming from an earlier checkpoint retrains the steps after it: their metrics and events
  // are dropped and later checkpoints set aside. Only with the user's yes.
  if (const QString text = RunController::laterHistoryQuestion(dir, checkpoint); !text.isEmpty()) {
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
  branch_source_ = dir;
  branch_->start(dir, checkpoint);
  updateActions();
  return true;
}

void MainWindow::onBranchCopied(const QString& branch, const QString& ckpt, const QString& error, bool cancelled) {
  progress_->setWork(tr("copying the run into a branch"), 1, 1, step_);
  updateActions();
  if (closing_) {
    close();
    return;
  }
  if (cancelled) {
    log_->addNote(QStringLiteral("info"),
                  tr("branch cancelled: nothing was left behind, %1 is as it was").arg(branch_source_));
  } else if (branch.isEmpty()) {
    report(tr("making a branch of the run"), error,
           tr("check that the run's folder can be read and its parent written"));
  } else {
    log_->addNote(
        QStringLiteral("info"),
        tr("branch of %1 at step %2: %3").arg(branch_source_).arg(RunController::checkpointStep(ckpt)).arg(branch));
    resumeRun(branch, ckpt);
  }
}

bool MainWindow::busy() const { return state_ != TrainingWorker::State::Idle || (branch_ && branch_->running()); }

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
  const bool idle = state_ == State::Idle && !watch && !branch_->running();
  const bool running = state_ == State::Running;
  const bool paused = state_ == State::Paused;
  start_->setEnabled(idle);
  pause_->setEnabled((running || paused) && !comparing_ && !doctoring_);
  pause_->setText(paused ? tr("Resume") : tr("Pause"));
  step_act_->setEnabled((paused || running) && !comparing_ && !doctoring_);
  // Stop stops what this window runs; a watched run belongs to the process that writes it.
  stop_->setEnabled(busy() && state_ != State::Stopping);
  const QString stop_tip = watch ? tr("The watched run is written by another process and cannot be stopped from "
                                      "here; File > Stop watching stops following it")
                                 : tr("Stop after the current step; metrics, samples and a checkpoint are saved");
  stop_->setToolTip(
      watch ? stop_tip : QStringLiteral("%1 (%2)").arg(stop_tip, stop_->shortcut().toString(QKeySequence::NativeText)));
  stop_->setStatusTip(stop_tip);
  compare_act_->setEnabled(idle);
  diagnose_->setEnabled(idle);
  doctor_->setStartEnabled(idle, watch ? tr("Watching a run read-only: File > Stop watching first")
                                       : tr("Wait until the run or the comparison ends"));
  doctor_->setReplayRun(runs_->hasRun() ? runs_->dir() : QString(), state_ == State::Idle && !branch_->running(),
                        tr("Wait until the run ends: the replay retrains steps of it"));
  compare_->setBusy(!idle);
  checkpoint_->setEnabled(has_session_ && !watch && !comparing_ && state_ != State::Stopping &&
                          state_ != State::Loading);
  // Sampling only from the current run's own generator (never a previously trained one).
  const bool can_sample = runs_->canSample();
  export_samples_->setEnabled(can_sample && state_ != State::Stopping && state_ != State::Loading);
  samples_->setSampleNowEnabled(can_sample && !comparing_ && (running || paused || idle));
  export_timelapse_->setEnabled(runs_->hasRun());
  open_->setEnabled(state_ == State::Idle);
  load_settings_->setEnabled(state_ == State::Idle && !watching());
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
  if (branch_->running()) {  // a half-made branch is removed; closing follows (onBranchCopied)
    closing_ = true;
    branch_->cancel();
    e->ignore();
    return;
  }
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
