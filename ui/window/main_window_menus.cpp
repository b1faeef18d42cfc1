// MainWindow's frame: its views (the tabs in the middle and the docks around them), actions
// (with their shortcuts), menus and toolbar, and the file dialogs and help windows they open.
// The actions only call the window's public functions.
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
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/common/error.h"
#include "core/run/run_folder.h"
#include "core/settings/settings_table.h"
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

#include "ui/window/status_fields.h"

namespace ampgan::ui {

void MainWindow::buildViews() {
  plots_ = new PlotsPanel;
  compare_ = new CompareView;
  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->addTab(plots_, tr("Live training"));
  // Short names: seven tabs fit a 1024 px window's central area without scroll arrows.
  tabs_->addTab(compare_, tr("Compare"));
  tabs_->setTabToolTip(tabs_->indexOf(compare_), tr("FP32 against an AMP mode, same seed and data"));
  runs_panel_ = new RunsPanel;
  tabs_->addTab(runs_panel_, tr("Runs"));
  connect(runs_panel_, &RunsPanel::overlaysChanged, plots_, &PlotsPanel::setOverlays);
  connect(runs_panel_, &RunsPanel::openRequested, this, &MainWindow::openRun);
  // The Runs tab reads its folder when first shown and after each run (not at every launch).
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (tabs_->currentWidget() != runs_panel_) return;
    const QString root = QString::fromStdString(config_->config().runs_root);
    if (runs_panel_->runsFolder().isEmpty() && !root.isEmpty())
      runs_panel_->setRunsFolder(QFileInfo(root).absoluteFilePath());
    else if (runs_stale_)
      runs_panel_->rescan();
    runs_stale_ = false;
  });
  explore_ = new ExploreView;
  tabs_->addTab(explore_, tr("Explore"));
  connect(explore_, &ExploreView::failed, this, &MainWindow::onFailed);
  layers_ = new LayersView;
  tabs_->addTab(layers_, tr("Layers"));
  doctor_ = new DoctorView;
  connect(doctor_, &DoctorView::diagnoseRequested, this, &MainWindow::diagnosePrecision);
  connect(doctor_, &DoctorView::applyRequested, this, &MainWindow::applyDoctorAnswer);
  connect(doctor_, &DoctorView::replayRequested, this, &MainWindow::replayStep);
  model_ = new ModelView;
  tabs_->addTab(model_, tr("Model"));
  tabs_->addTab(doctor_, tr("Doctor"));
  alerts_ = new AlertBanner;
  alerts_->setWording([](const QString& t) { return studio_wording(t); });
  connect(alerts_, &AlertBanner::applyRequested, this, &MainWindow::applyRemedy);
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

  // The exports of the current run (File > Export, the charts' menus).
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
}

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
  start_ = make("actionStart", tr("Start"), QKeySequence(Qt::CTRL | Qt::Key_Return),
                tr("Start training with these settings"));
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
  diagnose_ = make("actionDiagnose", tr("Diagnose precision…"), QKeySequence(),
                   tr("Find the cheapest mixed-precision recipe that trains these settings cleanly (short probes)"));
  connect(diagnose_, &QAction::triggered, this, [this] {
    tabs_->setCurrentWidget(doctor_);
    diagnosePrecision();
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
  export_timelapse_ = make("actionExportTimelapse", tr("Timelapse as MP4/WebP…"), {},
                           tr("The run's sample grids over training as a video, captioned with step and precision"));
  connect(export_timelapse_, &QAction::triggered, this, [this] { exports_->chooseAndExportTimelapse(); });
  export_onnx_ = make("actionExportOnnx", tr("ONNX…"), {},
                      tr("The run's generator (newest checkpoint) as an ONNX model, for onnxruntime and other tools"));
  connect(export_onnx_, &QAction::triggered, this, [this] { exports_->chooseAndExportOnnx(); });
  open_ = make("actionOpen", tr("Open run…"), QKeySequence::Open,
               tr("Show an earlier run's curves, events and samples; it can then be resumed"));
  connect(open_, &QAction::triggered, this, &MainWindow::chooseAndOpenRun);
  load_settings_ = make("actionLoadSettings", tr("Load settings…"), {},
                        tr("Fill the settings from a JSON file: a run's config.json, the precision doctor's "
                           "doctor-config.json or a saved preset"));
  connect(load_settings_, &QAction::triggered, this, [this] {
    const QString file = QFileDialog::getOpenFileName(
        this, tr("Load settings"), QString::fromStdString(config_->config().runs_root), tr("Settings (*.json)"));
    if (!file.isEmpty()) loadSettings(file);
  });
  resume_ = make("actionResume", tr("Resume run"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return),
                 tr("Continue the run shown from its newest checkpoint, up to the Steps setting"));
  connect(resume_, &QAction::triggered, this, [this] { resumeRun(runs_->dir()); });
  watch_ = make(
      "actionWatch", tr("Watch run folder…"), {},
      tr("Follow a run that another process writes (ampgan train, an MPI job, a shared disk), live and read-only"));
  connect(watch_, &QAction::triggered, this, &MainWindow::chooseAndWatchRun);
  unwatch_ = make("actionStopWatching", tr("Stop watching"), {}, tr("Stop following the watched run folder"));
  connect(unwatch_, &QAction::triggered, this, &MainWindow::stopWatching);
  resume_ckpt_ = make("actionResumeCheckpoint", tr("Resume from checkpoint…"), {},
                      tr("Continue a run from a checkpoint file of your choice"));
  connect(resume_ckpt_, &QAction::triggered, this, [this] { chooseAndResumeCheckpoint(false); });
  resume_branch_ = make("actionResumeBranch", tr("Resume into a branch…"), {},
                        tr("Continue from a checkpoint in a new folder next to the run, which stays as it is"));
  connect(resume_branch_, &QAction::triggered, this, [this] { chooseAndResumeCheckpoint(true); });
  quit_ =
      make("actionQuit", tr("Quit"), QKeySequence::Quit, tr("Close the window (a run is finished and saved first)"));
  connect(quit_, &QAction::triggered, this, &QWidget::close);

  precision_ = new PrecisionActions(this, config_);
  connect(precision_, &PrecisionActions::picked, this, &MainWindow::switchPrecision);
}

void MainWindow::buildMenusAndToolbar() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open_);
  file->addAction(load_settings_);
  file->addAction(watch_);
  file->addAction(unwatch_);
  file->addAction(resume_);
  file->addAction(resume_ckpt_);
  file->addAction(resume_branch_);
  file->addSeparator();
  file->addAction(checkpoint_);
  QMenu* exp = file->addMenu(tr("&Export"));
  exp->addAction(export_grid_);
  exp->addAction(export_samples_);
  exp->addAction(export_csv_);
  exp->addAction(export_plots_);
  exp->addAction(export_timelapse_);
  file->addMenu(tr("Export &generator"))->addAction(export_onnx_);
  file->addSeparator();
  file->addAction(quit_);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(start_);
  run->addAction(pause_);
  run->addAction(step_act_);
  run->addAction(stop_);
  run->addSeparator();
  QMenu* prec = run->addMenu(tr("Switch &precision"));
  prec->addActions(precision_->actions());
  run->addAction(compare_act_);
  run->addAction(diagnose_);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(settings_dock_->toggleViewAction());
  view->addAction(samples_dock_->toggleViewAction());
  view->addAction(log_dock_->toggleViewAction());
  view->addSeparator();
  view->addAction(tr("Reset plot views"), plots_, &PlotsPanel::resetViews);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* gl = help->addAction(tr("AMP &glossary"), this, &MainWindow::showGlossary);
  gl->setShortcut(QKeySequence::HelpContents);
  QAction* keys = help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts);
  keys->setObjectName(QStringLiteral("actionShortcuts"));
  keys->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
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
  tb->addWidget(precision_->toolbarBox());
  tb->addSeparator();
  tb->addAction(compare_act_);
  tb->addSeparator();
  tb->addAction(checkpoint_);
  tb->addAction(export_grid_);
  tb->addAction(open_);
}

// An alert's remedy, one click away: the setting it names is changed as the user would change
// it (the precision and FP32 layers apply mid-run, like the toolbar and the panel's field).
void MainWindow::applyDoctorAnswer(const nlohmann::json& settings, const QString& label) {
  RunConfig c = config_->config();
  try {
    c.apply_json(settings, "the doctor's answer");
  } catch (const std::exception& e) {
    report(tr("applying the doctor's answer"), QString::fromUtf8(e.what()));
    return;
  }
  config_->setConfig(c);
  precision_->show(c.precision);
  log_->addNote(QStringLiteral("info"), tr("the doctor's answer applied to the settings: %1").arg(label), step_);
  statusBar()->showMessage(tr("Settings: the doctor's answer (%1)").arg(label), 5000);
}

void MainWindow::applyRemedy(const QString& flag, const QString& value) {
  const Setting* s = find_setting_by_flag(flag.toStdString());
  if (!s) return;
  RunConfig c = config_->config();
  try {
    nlohmann::json v = nlohmann::json::parse(value.toStdString(), nullptr, false);
    if (v.is_discarded() || !v.is_number()) v = value.toStdString();
    set_setting(c, *s, v, "the alert's remedy");
  } catch (const std::exception& e) {
    report(tr("applying the alert's remedy"), QString::fromUtf8(e.what()));
    return;
  }
  const std::string key = s->key;
  if (key == "precision") {
    switchPrecision(c.precision);
  } else if (key == "fp32_layers") {
    for (const std::string& layer : c.fp32_layers) config_->setLayerInFp32(QString::fromStdString(layer), true);
  } else {
    config_->setConfig(c);
    const bool policy = key == "conv_clamp" || key == "half_blocks";
    if (policy && state_ != TrainingWorker::State::Idle && !comparing_) worker_->requestLayerPolicy(c.layer_policy());
  }
  const bool later = state_ != TrainingWorker::State::Idle && !s->live;
  log_->addNote(QStringLiteral("info"),
                tr("alert's remedy applied: %1 %2%3")
                    .arg(s->label ? QString::fromLatin1(s->label) : flag, value,
                         later ? tr(" (for the next run: it cannot change mid-run)") : QString()),
                step_);
}

// ---- dialogs ----------------------------------------------------------------------------------

void MainWindow::chooseAndWatchRun() {
  const QString start =
      runs_->hasRun() ? QFileInfo(runs_->dir()).path() : QString::fromStdString(config_->config().runs_root);
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Watch a run folder"), start);
  if (!dir.isEmpty()) watchRun(dir);
}

void MainWindow::chooseAndOpenRun() {
  const QString start =
      runs_->hasRun() ? QFileInfo(runs_->dir()).path() : QString::fromStdString(config_->config().runs_root);
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run folder"), start);
  if (!dir.isEmpty()) openRun(dir);
}

void MainWindow::chooseAndResumeCheckpoint(bool branch) {
  const QString start = runs_->hasRun() ? QDir(runs_->dir()).filePath(QString::fromLatin1(RunFolder::kCheckpoints))
                                        : QString::fromStdString(config_->config().runs_root);
  const QString ckpt =
      QFileDialog::getOpenFileName(this, tr("Resume from checkpoint"), start, tr("Checkpoints (*.safetensors)"));
  if (ckpt.isEmpty()) return;
  // <run>/checkpoints/step_NNNNNN.safetensors
  const QString run = QFileInfo(QFileInfo(ckpt).path()).path();
  if (branch)
    resumeRunAsBranch(run, ckpt);
  else
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

// Every action of the window that has a key, read from the actions themselves, so the list
// cannot fall behind the menus.
void MainWindow::showShortcuts() {
  auto* d = new QDialog(this);
  d->setObjectName(QStringLiteral("shortcutsDialog"));
  d->setWindowTitle(tr("Keyboard shortcuts"));
  d->setAttribute(Qt::WA_DeleteOnClose);
  auto* v = new QVBoxLayout(d);
  auto* table = new QTableWidget(0, 2);
  table->setObjectName(QStringLiteral("shortcutsTable"));
  table->setHorizontalHeaderLabels({tr("Action"), tr("Keys")});
  table->verticalHeader()->hide();
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setWordWrap(false);
  QList<QAction*> all = actions();
  for (QMenu* m : menuBar()->findChildren<QMenu*>())
    for (QAction* a : m->actions())
      if (!all.contains(a)) all << a;
  for (QAction* a : all) {
    if (a->shortcut().isEmpty() || a->text().isEmpty()) continue;
    const int r = table->rowCount();
    table->insertRow(r);
    QString text = a->text().remove(QLatin1Char('&'));
    if (a->actionGroup()) text = tr("Switch precision to %1").arg(text);
    table->setItem(r, 0, new QTableWidgetItem(text));
    table->setItem(r, 1, new QTableWidgetItem(a->shortcut().toString(QKeySequence::NativeText)));
    table->item(r, 0)->setToolTip(a->statusTip());
  }
  table->resizeColumnsToContents();
  table->horizontalHeader()->setStretchLastSection(true);
  v->addWidget(table);
  auto* b = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(b, &QDialogButtonBox::rejected, d, &QDialog::close);
  v->addWidget(b);
  d->resize(std::max(420, table->horizontalHeader()->length() + 60), 520);
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
