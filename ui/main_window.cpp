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
#include "ui/plots_panel.h"
#include "ui/run_controller.h"
#include "ui/run_exports.h"
#include "ui/sample_view.h"
#include "ui/status_progress.h"

namespace ampgan::ui {

namespace {

using State = TrainingWorker::State;

QString state_name(State s) {
  switch (s) {
    case State::Idle: return QObject::tr("idle");
    case State::Loading: return QObject::tr("loading data…");
    case State::Running: return QObject::tr("training");
    case State::Paused: return QObject::tr("paused");
    case State::Stopping: return QObject::tr("stopping: saving…");
  }
  return {};
}

QString tag_label(RunTag t, Precision amp) {
  if (t == RunTag::CompareBaseline) return QString::fromLatin1(precision_label(Precision::FP32));
  if (t == RunTag::CompareAmp) return QString::fromLatin1(precision_label(amp));
  return {};
}

}  // namespace

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
  layers_ = new LayersView;
  tabs_->addTab(layers_, tr("Layers"));
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

  connect(config_, &ConfigPanel::precisionEdited, this, [this](Precision p) { switchPrecision(p); });
  connect(config_, &ConfigPanel::learningRatesEdited, this, [this](float g, float d) {
    if (busy()) worker_->requestLearningRates(g, d);
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

// ---- construction helpers --------------------------------------------------------------------

void MainWindow::buildActions() {
  auto make = [this](const char* name, const QString& text, const QKeySequence& key, const QString& tip) {
    auto* a = new QAction(text, this);
    a->setObjectName(QString::fromLatin1(name));
    if (!key.isEmpty()) a->setShortcut(key);
    a->setToolTip(key.isEmpty() ? tip : QStringLiteral("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText)));
    a->setStatusTip(tip);
    addAction(a);  // shortcuts work even when the toolbar is hidden
    return a;
  };
  start_ = make("actionStart", tr("Start"), QKeySequence(Qt::CTRL | Qt::Key_Return), tr("Start training with these settings"));
  connect(start_, &QAction::triggered, this, [this] { startTraining(); });
  pause_ = make("actionPause", tr("Pause"), QKeySequence(Qt::Key_Space), tr("Pause or resume training between steps"));
  connect(pause_, &QAction::triggered, this, &MainWindow::togglePause);
  step_act_ = make("actionStep", tr("Step"), QKeySequence(Qt::Key_F10),
               tr("Train exactly one iteration (one D and one G update), then pause"));
  connect(step_act_, &QAction::triggered, this, &MainWindow::stepOnce);
  stop_ = make("actionStop", tr("Stop"), QKeySequence(Qt::CTRL | Qt::Key_Period),
               tr("Stop after the current step; metrics, samples and a checkpoint are saved"));
  connect(stop_, &QAction::triggered, this, &MainWindow::stopTraining);
  compare_act_ = make("actionCompare", tr("Compare"), QKeySequence(Qt::CTRL | Qt::Key_R),
                      tr("Train these settings in FP32 and in an AMP mode, same seed and data, and compare"));
  connect(compare_act_, &QAction::triggered, this, [this] {
    tabs_->setCurrentWidget(compare_);
    runComparison();
  });
  checkpoint_ = make("actionCheckpoint", tr("Save checkpoint"), QKeySequence::Save,
                     tr("Write a checkpoint of the run now (between steps)"));
  connect(checkpoint_, &QAction::triggered, this, &MainWindow::saveCheckpoint);
  export_grid_ = make("actionExportGrid", tr("Sample grid as PNG…"), QKeySequence(Qt::CTRL | Qt::Key_E),
                      tr("Save the sample grid shown, optionally enlarged"));
  connect(export_grid_, &QAction::triggered, this, [this] { exports_->chooseAndExportGrid(); });
  export_samples_ = make("actionExportSamples", tr("Single samples…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
                         tr("Generate N images from the current generator into a folder"));
  connect(export_samples_, &QAction::triggered, this, &MainWindow::chooseAndExportSamples);
  export_csv_ = make("actionExportCsv", tr("Metrics as CSV…"), {}, tr("Every step's metrics (metrics.csv's columns)"));
  connect(export_csv_, &QAction::triggered, this, [this] { exports_->chooseAndExportCsv(); });
  export_plots_ = make("actionExportPlots", tr("All plots as PNG/PDF…"), {}, tr("Save every chart into a folder"));
  connect(export_plots_, &QAction::triggered, this, [this] { exports_->chooseAndExportPlots(); });
  open_ = make("actionOpen", tr("Open run…"), QKeySequence::Open,
               tr("Show an earlier run's curves, events and samples; it can then be resumed"));
  connect(open_, &QAction::triggered, this, &MainWindow::chooseAndOpenRun);
  resume_ = make("actionResume", tr("Resume run"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return),
                 tr("Continue the run shown from its newest checkpoint, up to the Steps setting"));
  connect(resume_, &QAction::triggered, this, [this] { resumeRun(runs_->dir()); });
  resume_ckpt_ = make("actionResumeCheckpoint", tr("Resume from checkpoint…"), {},
                      tr("Continue a run from a checkpoint file of your choice"));
  connect(resume_ckpt_, &QAction::triggered, this, &MainWindow::chooseAndResumeCheckpoint);
  quit_ = make("actionQuit", tr("Quit"), QKeySequence::Quit, tr("Close the window (a run is finished and saved first)"));
  connect(quit_, &QAction::triggered, this, &QWidget::close);

  const Precision modes[] = {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16};
  for (int i = 0; i < 4; ++i) {
    auto* a = make(qPrintable(QStringLiteral("actionPrecision%1").arg(i + 1)),
                   QString::fromLatin1(precision_label(modes[i])), QKeySequence(Qt::CTRL | (Qt::Key_1 + i)),
                   tr("Train in %1 from the next step on").arg(QString::fromLatin1(precision_label(modes[i]))));
    const Precision p = modes[i];
    connect(a, &QAction::triggered, this, [this, p] { switchPrecision(p); });
    precision_actions_ << a;
  }
}

void MainWindow::buildMenusAndToolbar() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open_);
  file->addAction(resume_);
  file->addAction(resume_ckpt_);
  file->addSeparator();
  file->addAction(checkpoint_);
  QMenu* exp = file->addMenu(tr("&Export"));
  exp->addAction(export_grid_);
  exp->addAction(export_samples_);
  exp->addAction(export_csv_);
  exp->addAction(export_plots_);
  file->addSeparator();
  file->addAction(quit_);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(start_);
  run->addAction(pause_);
  run->addAction(step_act_);
  run->addAction(stop_);
  run->addSeparator();
  QMenu* prec = run->addMenu(tr("Switch &precision"));
  for (QAction* a : precision_actions_) prec->addAction(a);
  run->addAction(compare_act_);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(settings_dock_->toggleViewAction());
  view->addAction(samples_dock_->toggleViewAction());
  view->addAction(log_dock_->toggleViewAction());
  view->addSeparator();
  view->addAction(tr("Reset plot views"), plots_, &PlotsPanel::resetViews);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* gl = help->addAction(tr("AMP &glossary"), this, &MainWindow::showGlossary);
  gl->setShortcut(QKeySequence::HelpContents);
  help->addAction(tr("&About AMP GAN Studio"), this, &MainWindow::showAbout);

  QToolBar* tb = addToolBar(tr("Training"));
  tb->setObjectName(QStringLiteral("trainingToolbar"));
  tb->setToolButtonStyle(Qt::ToolButtonTextOnly);
  tb->setMovable(false);
  tb->addAction(start_);
  tb->addAction(pause_);
  tb->addAction(step_act_);
  tb->addAction(stop_);
  tb->addSeparator();
  auto* plabel = new QLabel(tr(" Precision "));
  plabel->setToolTip(glossary::master_weights());
  tb->addWidget(plabel);
  precision_box_ = new QComboBox;
  precision_box_->setObjectName(QStringLiteral("toolbarPrecision"));
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16}) {
    precision_box_->addItem(QString::fromLatin1(precision_label(p)), static_cast<int>(p));
    precision_box_->setItemData(precision_box_->count() - 1, glossary::precision_mode(static_cast<int>(p)), Qt::ToolTipRole);
  }
  precision_box_->setToolTip(tr("Precision; switching it while training takes effect at the next step and is "
                                "marked on every plot (Ctrl+1…4)"));
  connect(precision_box_, &QComboBox::activated, this, [this](int i) {
    switchPrecision(static_cast<Precision>(precision_box_->itemData(i).toInt()));
  });
  tb->addWidget(precision_box_);
  tb->addSeparator();
  tb->addAction(compare_act_);
  tb->addSeparator();
  tb->addAction(checkpoint_);
  tb->addAction(export_grid_);
  tb->addAction(open_);
}

void MainWindow::buildStatusBar() {
  auto field = [this](const QString& tip, int min_width) {
    auto* l = new QLabel;
    l->setToolTip(tip);
    l->setMinimumWidth(min_width);
    l->setContentsMargins(4, 0, 4, 0);
    statusBar()->addPermanentWidget(l);
    return l;
  };
  progress_ = new StatusProgress(statusBar(), log_, this);
  connect(progress_, &StatusProgress::cancelRequested, this, &MainWindow::stopTraining);
  // Small minimum widths (an explicit minimum overrides the text's): on a small screen the
  // fields share what there is, their tooltips tell the rest.
  st_state_ = field(tr("What the worker is doing"), 50);
  st_device_ = field(tr("Where training runs"), 60);
  st_precision_ = field(tr("Precision of the latest step"), 45);
  st_step_ = field(tr("Step / target"), 80);
  st_ips_ = field(tr("Training images per second (smoothed)"), 55);
  st_elapsed_ = field(tr("Training time of the run"), 40);
  st_memory_ = field(tr("Backend memory in use"), 55);
  st_state_->setText(state_name(State::Idle));
  st_device_->setText(config_->gpuUsable() ? tr("GPU available") : tr("CPU (no usable GPU)"));
  st_device_->setToolTip(config_->deviceNote());
}

void MainWindow::connectWorker() {
  connect(worker_, &TrainingWorker::stateChanged, this, &MainWindow::onState);
  connect(worker_, &TrainingWorker::runStarted, this, &MainWindow::onRunStarted);
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

// ---- settings -----------------------------------------------------------------------------------

void MainWindow::restoreSettings() {
  QSettings s;
  const QString json = s.value(QStringLiteral("config/json")).toString();
  if (!json.isEmpty()) {
    try {
      RunConfig c = RunConfig::from_json(nlohmann::json::parse(json.toStdString()), "saved settings");
      c.out_dir.clear();
      const QString root = s.value(QStringLiteral("config/runs_root")).toString();
      if (!root.isEmpty()) c.runs_root = root.toStdString();
      config_->setConfig(c);
    } catch (const std::exception&) {
      // Settings of an older version with keys that no longer exist: start from the defaults.
    }
  }
  if (s.contains(QStringLiteral("window/geometry"))) restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  if (s.contains(QStringLiteral("window/state")))
    restored_layout_ = restoreState(s.value(QStringLiteral("window/state")).toByteArray());
  plots_->setSmoothing(s.value(QStringLiteral("plots/smoothing"), 0.9).toDouble());
  samples_->setZoom(s.value(QStringLiteral("samples/zoom"), 0).toInt());
  compare_->setAmpMode(static_cast<Precision>(s.value(QStringLiteral("compare/amp"), int(Precision::FP16)).toInt()));
  compare_->setSteps(s.value(QStringLiteral("compare/steps"), 300).toInt());
  tabs_->setCurrentIndex(s.value(QStringLiteral("window/tab"), 0).toInt());
  if (auto* sp = compare_->findChild<QSplitter*>(QStringLiteral("compareSplitter")))
    sp->restoreState(s.value(QStringLiteral("compare/splitter")).toByteArray());
  config_->setPrecision(config_->precision());
  precision_box_->setCurrentIndex(precision_box_->findData(static_cast<int>(config_->precision())));
}

void MainWindow::saveSettings() {
  if (!options_.save_settings) return;
  QSettings s;
  RunConfig c = config_->config();
  c.out_dir.clear();  // --out is for one run
  const nlohmann::json j = c.to_json();  // a run's config.json keys; the runs folder is separate
  s.setValue(QStringLiteral("config/json"), QString::fromStdString(j.dump()));
  s.setValue(QStringLiteral("config/runs_root"), QString::fromStdString(c.runs_root));
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/state"), saveState());
  s.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
  s.setValue(QStringLiteral("plots/smoothing"), plots_->smoothing());
  s.setValue(QStringLiteral("samples/zoom"), samples_->zoom());
  s.setValue(QStringLiteral("compare/amp"), static_cast<int>(compare_->ampMode()));
  s.setValue(QStringLiteral("compare/steps"), compare_->steps());
  if (auto* sp = compare_->findChild<QSplitter*>(QStringLiteral("compareSplitter")))
    s.setValue(QStringLiteral("compare/splitter"), sp->saveState());
}

void MainWindow::applyOptions(const AppOptions& o) {
  RunConfig c = config_->config();
  o.applyTo(c);
  config_->setConfig(c);
  if (o.out) config_->setOutDir(QString::fromStdString(*o.out));
  precision_box_->setCurrentIndex(precision_box_->findData(static_cast<int>(c.precision)));
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
  if (o.tab == QStringLiteral("compare") || o.compare) tabs_->setCurrentWidget(compare_);
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

bool MainWindow::startTraining(bool paused, int steps) {
  if (busy()) return false;
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
  config_->setPrecision(p);
  precision_box_->setCurrentIndex(precision_box_->findData(static_cast<int>(p)));
  if ((state_ == State::Running || state_ == State::Paused) && !comparing_) {
    worker_->requestPrecision(p);
    statusBar()->showMessage(tr("Switching to %1 at the next step").arg(QString::fromLatin1(precision_label(p))), 3000);
  }
}

bool MainWindow::runComparison() {
  if (busy()) return false;
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
  QMetaObject::invokeMethod(worker_, [w = worker_, dir] { w->openRun(dir); }, Qt::QueuedConnection);
}

bool MainWindow::resumeRun(const QString& dir, const QString& checkpoint) {
  if (busy() || dir.isEmpty()) return false;
  if (!checkRanges(tr("resuming the run"))) return false;
  // Resuming from an earlier checkpoint retrains the steps after it: their metrics and events
  // are dropped and later checkpoints get overwritten. Only with the user's yes.
  if (const auto later = RunController::laterHistory(dir, checkpoint)) {
    const QString text =
        tr("Resuming from the checkpoint of step %1 drops the metrics and events of steps %2 to %3 (they are "
           "trained again) and overwrites %4 later checkpoint(s) as training reaches them.\n\nContinue?")
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
  mid.lr_g = shown.lr_g;
  mid.lr_d = shown.lr_d;
  state_ = State::Loading;
  updateActions();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, dir, steps, checkpoint, mid] { w->resumeRun(dir, steps, checkpoint, false, mid); },
      Qt::QueuedConnection);
  return true;
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

// ---- worker messages ---------------------------------------------------------------------------

void MainWindow::onState(int s) {
  state_ = static_cast<State>(s);
  st_state_->setText(state_name(state_));
  const bool loading = state_ == State::Loading;
  progress_->setLoading(loading);
  if (state_ == State::Idle) {
    statusBar()->clearMessage();
    emit becameIdle();
    if (closing_) QTimer::singleShot(0, this, &QWidget::close);
  }
  updateActions();
}

void MainWindow::onLoading(int done, int total) {
  progress_->setLoadingProgress(done, total);
}

void MainWindow::onRunStarted(const RunStartInfo& info) {
  st_device_->setText(info.backend);
  st_device_->setToolTip(info.backend_note.isEmpty() ? info.backend : info.backend + QStringLiteral("\n") + info.backend_note);
  total_ = info.config.steps;
  step_ = info.start_step;
  layers_every_ = info.config.layers_every;
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
    log_->addNote(QStringLiteral("info"), tr("[%1] run folder: %2").arg(tag_label(info.tag, compare_->ampMode()), info.dir));
    return;
  }
  runs_->setCurrent(info.dir, RunController::Origin::Trained);
  config_->clearOutDir();  // --out named this run's folder only
  plots_->setEvaluationInterval(info.config.eval_every);
  if (!info.resumed) {
    plots_->clear();
    samples_->clear();
    log_->clear();
  }
  log_->addNote(QStringLiteral("info"), tr("%1 run folder: %2 · %3 · %4")
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
    } else {
      plots_->appendRows(b->rows);
    }
    for (const SampleShot& s : b->samples) samples_->addShot(s);
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
    st_precision_->setText(QString::fromLatin1(precision_label(p)));
    st_elapsed_->setText(format_duration(b->rows.back().time_s));
    // Keep the precision controls on what the engine actually trains in.
    if (b->tag == RunTag::Main && p != shown_precision_ && !b->replace_history) {
      shown_precision_ = p;
      precision_box_->setCurrentIndex(precision_box_->findData(static_cast<int>(p)));
    }
  }
  updateStepText();
  if (!b->rows.empty()) st_ips_->setText(tr("%1 img/s").arg(ips_, 0, 'f', ips_ < 100 ? 1 : 0));
  if (b->memory.current_total > 0) st_memory_->setText(format_bytes(static_cast<double>(b->memory.current_total)));
  QString mem_tip = tr("Backend memory now (peak):");
  for (int c = 0; c < static_cast<int>(MemCategory::Count); ++c)
    mem_tip += QStringLiteral("\n%1: %2 (%3)")
                   .arg(QString::fromLatin1(mem_category_name(static_cast<MemCategory>(c))),
                        format_bytes(static_cast<double>(b->memory.current[c])),
                        format_bytes(static_cast<double>(b->memory.peak[c])));
  st_memory_->setToolTip(mem_tip);

  // Demo hooks.
  if (b->tag == RunTag::Main && switch_at_ && step_ >= *switch_at_ && state_ != State::Stopping) {
    switch_at_.reset();
    switchPrecision(switch_to_);
  }
  if (b->tag == RunTag::Main) maybeScreenshot(false);
}

void MainWindow::maybeScreenshot(bool run_ended) {
  if (screenshot_.isEmpty()) return;
  const bool at_step = screenshot_step_ > 0 && step_ >= screenshot_step_ && !comparing_;
  if (!at_step && !(run_ended && screenshot_step_ == 0)) return;
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
  const QString text = info.reason == QStringLiteral("finished")
                           ? tr("run finished at step %1; samples and a checkpoint are in %2").arg(info.step).arg(info.dir)
                           : tr("run ended at step %1 (%2); everything up to it is saved in %3")
                                 .arg(info.step)
                                 .arg(info.reason, info.dir);
  log_->addNote(info.ok ? QStringLiteral("info") : QStringLiteral("warning"), text, info.step);
  emit runFinished(info.dir, info.reason);
  maybeScreenshot(true);
}

void MainWindow::onFailed(const UiError& e) {
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
    precision_box_->setCurrentIndex(precision_box_->findData(static_cast<int>(c.precision)));
  }
  step_ = run->rows.empty() ? 0 : run->rows.back().step;
  total_ = run->has_config ? run->config.steps : step_;
  st_step_->setText(tr("step %1 / %2").arg(step_).arg(total_));
  // The status bar describes the opened run too, not the run trained before it.
  const StepMetrics* last = run->rows.empty() ? nullptr : &run->rows.back();
  st_device_->setText(config_->gpuUsable() ? tr("GPU available") : tr("CPU (no usable GPU)"));
  st_precision_->setText(last ? QString::fromLatin1(precision_label(last->precision)) : QString());
  st_elapsed_->setText(last ? format_duration(last->time_s) : QString());
  st_ips_->setText(last ? tr("%1 img/s").arg(last->images_per_s, 0, 'f', last->images_per_s < 100 ? 1 : 0) : QString());
  st_memory_->setText(last && last->memory_mb > 0 ? format_bytes(last->memory_mb * 1024.0 * 1024.0) : QString());
  ips_ = 0;
  log_->addNote(QStringLiteral("info"),
                tr("opened %1: %2 steps, %3 sample grids, %4 checkpoints%5")
                    .arg(run->dir)
                    .arg(run->rows.size())
                    .arg(run->samples.size())
                    .arg(run->checkpoints.size())
                    .arg(runs_->resumable() ? tr(" — raise Steps and press Resume run (Ctrl+Shift+Return) to continue it")
                                        : QString()));
  tabs_->setCurrentWidget(plots_);
  updateActions();
  emit runOpened(run->dir);
}

void MainWindow::updateActions() {
  const bool idle = state_ == State::Idle;
  const bool running = state_ == State::Running;
  const bool paused = state_ == State::Paused;
  start_->setEnabled(idle);
  pause_->setEnabled((running || paused) && !comparing_);
  pause_->setText(paused ? tr("Resume") : tr("Pause"));
  step_act_->setEnabled((paused || running) && !comparing_);
  stop_->setEnabled(!idle && state_ != State::Stopping);
  compare_act_->setEnabled(idle);
  compare_->setBusy(!idle);
  checkpoint_->setEnabled(has_session_ && !comparing_ && state_ != State::Stopping && state_ != State::Loading);
  // Sampling only from the current run's own generator (never a previously trained one).
  const bool can_sample = runs_->canSample();
  export_samples_->setEnabled(can_sample && state_ != State::Stopping && state_ != State::Loading);
  samples_->setSampleNowEnabled(can_sample && !comparing_ && (running || paused || idle));
  open_->setEnabled(idle);
  resume_->setEnabled(idle && runs_->resumable());
  resume_ckpt_->setEnabled(idle);
  for (QAction* a : precision_actions_) a->setEnabled(!comparing_);
  precision_box_->setEnabled(!comparing_);
  config_->setRunning(!idle);
}

void MainWindow::updateStepText() {
  if (total_ <= 0) return;
  QString t = tr("step %1 / %2").arg(step_).arg(total_);
  if (progress_->working()) t += tr(" · evaluating");  // the counter stands still meanwhile
  st_step_->setText(t);
}

QString MainWindow::statusText() const {
  return QStringList{st_state_->text(), st_device_->text(), st_precision_->text(), st_step_->text(), st_ips_->text(),
                     st_elapsed_->text(),  st_memory_->text()}
      .join(QStringLiteral(" | "));
}

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

// ---- dialogs --------------------------------------------------------------------------------------

void MainWindow::chooseAndOpenRun() {
  const QString start = runs_->hasRun() ? QFileInfo(runs_->dir()).path() : QString::fromStdString(config_->config().runs_root);
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run folder"), start);
  if (!dir.isEmpty()) openRun(dir);
}

void MainWindow::chooseAndResumeCheckpoint() {
  const QString start = runs_->hasRun() ? QDir(runs_->dir()).filePath(QStringLiteral("checkpoints"))
                                        : QString::fromStdString(config_->config().runs_root);
  const QString ckpt = QFileDialog::getOpenFileName(this, tr("Resume from checkpoint"), start,
                                                    tr("Checkpoints (*.safetensors)"));
  if (ckpt.isEmpty()) return;
  // <run>/checkpoints/step_NNNNNN.safetensors
  const QString run = QFileInfo(QFileInfo(ckpt).path()).path();
  resumeRun(run, ckpt);
}

void MainWindow::chooseAndExportSamples() {
  ExportSamplesDialog d(runs_->samplesExportDir(), 64, 1, this);
  if (d.exec() == QDialog::Accepted && !d.dir().isEmpty()) exportSamples(d.dir(), d.count(), d.seed());
}

void MainWindow::showGlossary() {
  auto* d = new QDialog(this);
  d->setWindowTitle(tr("AMP glossary"));
  d->setAttribute(Qt::WA_DeleteOnClose);
  auto* v = new QVBoxLayout(d);
  auto* t = new QTextBrowser;
  t->setHtml(glossary::html());
  v->addWidget(t);
  auto* b = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(b, &QDialogButtonBox::rejected, d, &QDialog::close);
  v->addWidget(b);
  d->resize(640, 600);
  d->show();
}

void MainWindow::showAbout() {
  QMessageBox::about(this, tr("About AMP GAN Studio"),
                     tr("<h3>AMP GAN Studio %1</h3><p>Train a DCGAN with mixed precision (FP16/BF16 compute, FP32 "
                        "master weights, dynamic loss scaling) on the CPU or an NVIDIA GPU, and watch what it "
                        "does: loss scale and overflows, underflow, gradient exponents, speed and memory.</p>"
                        "<p>CUDA backend in this build: %2</p>")
                         .arg(QStringLiteral(AMPGAN_VERSION), cuda_backend_compiled() ? tr("yes") : tr("no")));
}

}  // namespace ampgan::ui
