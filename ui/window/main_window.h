// The main window: settings (left dock), live plots and the comparison (tabs in the middle),
// samples (right dock), event log (bottom dock), toolbar, menus with shortcuts and a status bar.
// It owns the worker thread and forwards every user action to the TrainingWorker as a queued
// call or a thread-safe request, so nothing here ever waits for a training step.
//
// The public action functions (startTraining, exportGrid, openRun, ...) are what the toolbar and
// menus call after their dialogs; tests, the benchmark and --start call them directly.
#pragma once

#include <functional>
#include <optional>

#include <QList>
#include <QMainWindow>
#include <QPointer>
#include <QThread>

#include "ui/common/ui_types.h"
#include "ui/window/app_options.h"
#include "ui/window/window_settings.h"
#include "ui/worker/training_worker.h"

class QAction;
class QComboBox;
class QDockWidget;
class QLabel;
class QTabWidget;
class QToolButton;

namespace ampgan::ui {

class AlertBanner;
class BranchCopy;
class CompareView;
class LayersView;
class ModelView;
class ExploreView;
class DoctorView;
class ConfigPanel;
class RunController;
class RunExports;
class RunWatcher;
class RunsPanel;
class StatusFields;
class StatusProgress;
class EventLog;
class PlotsPanel;
class PrecisionActions;
class SampleView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  struct Options {
    bool restore_settings = true;  // read the saved config and layout (QSettings)
    bool save_settings = true;     // write them on close
  };
  explicit MainWindow(const Options& options, QWidget* parent = nullptr);
  MainWindow() : MainWindow(Options{}) {}
  ~MainWindow() override;

  // Command-line settings and demo hooks (switch precision at a step, screenshot, size, tab).
  void applyOptions(const AppOptions& o);

  // ---- actions ----
  bool startTraining(bool paused = false, int steps = 0);  // false: the settings are invalid
  void togglePause();
  void stepOnce();  // one iteration of a running or paused run; with no run, only a hint
  void stopTraining();
  void switchPrecision(Precision p);
  bool runComparison();  // with the Compare tab's mode and steps
  // The precision doctor on the panel's settings (FP16 or BF16), in the Doctor tab; false (and
  // the reason shown) when the settings are refused.
  bool diagnosePrecision();
  // The first-divergence replay of `step` of the current run, in the Doctor tab (idle only).
  bool replayStep(qint64 step);
  // A settings file (a run's config.json, a doctor-config.json, a preset) into the panel, as a
  // whole configuration (ConfigPanel::loadSettingsFile); false (and the reason shown) when the
  // window is busy or the file is refused, the settings then as they were.
  bool loadSettings(const QString& path);
  bool exportGrid(const QString& path, int factor);
  bool exportSamples(const QString& dir, int n, quint64 seed);  // async; samplesExported() follows
  bool exportMetricsCsv(const QString& path);
  bool exportPlot(const QString& id, const QString& path);
  bool exportTimelapse(const QString& path);  // blocks, with a progress dialog (RunExports)
  void openRun(const QString& dir);           // async; runOpened() follows
  // Follows a run folder another process writes, read-only (see RunWatcher); the training
  // controls are off until stopWatching(), Open run or a new watch.
  void watchRun(const QString& dir);
  void stopWatching();
  bool watching() const;
  RunWatcher* watcher() const { return watcher_; }
  // false: busy, no folder, or the user declined dropping later history.
  bool resumeRun(const QString& dir, const QString& checkpoint = {});
  // Continues from `checkpoint` in a new folder next to the run (ui/run_branch), which is left
  // as it is. The copy runs off the GUI thread with progress and Cancel in the status bar;
  // the resume follows when it is done (runStarted). false: busy or the settings are invalid;
  // a failed copy is reported, a cancelled one logged.
  bool resumeRunAsBranch(const QString& dir, const QString& checkpoint);
  BranchCopy* branchCopy() const { return branch_; }
  bool saveCheckpoint();
  bool grabWindow(const QString& png_path);

  // Errors reach the user through this (default: a non-blocking message box). Tests replace it.
  using ErrorPresenter = std::function<void(const UiError&)>;
  void setErrorPresenter(ErrorPresenter p) { presenter_ = std::move(p); }
  const QList<UiError>& errors() const { return errors_; }
  // Yes/no questions (e.g. "drop the later history?") go through this (default: a message
  // box). Tests replace it.
  using Confirmer = std::function<bool(const QString& title, const QString& text)>;
  void setConfirmer(Confirmer c) { confirmer_ = std::move(c); }

  ConfigPanel* configPanel() const { return config_; }
  PlotsPanel* plots() const { return plots_; }
  SampleView* samples() const { return samples_; }
  EventLog* eventLog() const { return log_; }
  CompareView* compareView() const { return compare_; }
  RunsPanel* runsPanel() const { return runs_panel_; }
  TrainingWorker* worker() const { return worker_; }
  StatusProgress* statusProgress() const { return progress_; }
  QTabWidget* tabs() const { return tabs_; }
  LayersView* layersView() const { return layers_; }
  ModelView* modelView() const { return model_; }
  ExploreView* exploreView() const { return explore_; }
  DoctorView* doctorView() const { return doctor_; }
  AlertBanner* alertBanner() const { return alerts_; }
  QAction* action(const QString& name) const;  // by objectName, e.g. "actionStart"
  RunController* runs() const { return runs_; }
  RunExports* exports() const { return exports_; }

  TrainingWorker::State state() const { return state_; }
  // Training, loading, stopping, or copying a run into a branch.
  bool busy() const;
  QString currentRunDir() const;
  int64_t currentStep() const { return step_; }
  QString statusText() const;  // the status bar's fields, joined

 signals:
  void runStarted(const QString& dir);
  void runFinished(const QString& dir, const QString& reason);
  void comparisonDone(bool complete);
  void doctorDone();  // the precision doctor's search ended (its answer is in the Doctor tab)
  void replayDone();  // a replay ended (its table is in the Doctor tab)
  void samplesExported(const QString& dir);
  void runOpened(const QString& dir);
  void becameIdle();

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildViews();  // the tabs and docks (main_window_menus.cpp)
  void buildActions();
  void buildMenusAndToolbar();
  void buildStatusBar();
  void applyDefaultLayout();
  void connectWorker();
  void restoreSettings();
  void saveSettings();
  WindowParts settingsParts();
  void updateActions();
  void showError(const UiError& e);
  void report(const QString& during, const QString& what, const QString& hint = {});
  bool checkRanges(const QString& during);
  void updateStepText();  // false (and reported): a field is out of range

  void onState(int s);
  void onRunStarted(const RunStartInfo& info);
  void onBatch(const UiBatchPtr& b);
  void onRunFinished(const RunEndInfo& info);
  void onFailed(const UiError& e);
  void onRunOpened(const std::shared_ptr<const OpenedRun>& run);
  void onLoading(int done, int total);
  void onBranchCopied(const QString& branch, const QString& checkpoint, const QString& error, bool cancelled);
  void showRequestedGrid(const SampleShot& s);  // a Sample now grid: shown and logged
  void maybeScreenshot(bool run_ended);
  void takeScreenshot();  // --screenshot now (once), then --quit-after-screenshot

  void connectWatcher();        // main_window_watch.cpp
  bool refusedWhileWatching();  // true (and a hint) while watching
  void chooseAndWatchRun();
  void chooseAndOpenRun();
  void chooseAndResumeCheckpoint(bool branch = false);
  void chooseAndExportSamples();
  void showGlossary();
  void showShortcuts();                                         // Help > Keyboard shortcuts
  void applyRemedy(const QString& flag, const QString& value);  // an alert's button
  void applyDoctorAnswer(const nlohmann::json& settings, const QString& label);
  void showAbout();

  Options options_;
  QThread thread_;
  TrainingWorker* worker_ = nullptr;
  ConfigPanel* config_ = nullptr;
  PlotsPanel* plots_ = nullptr;
  SampleView* samples_ = nullptr;
  EventLog* log_ = nullptr;
  CompareView* compare_ = nullptr;
  RunsPanel* runs_panel_ = nullptr;
  bool runs_stale_ = false;  // a run ended since the Runs tab last read its folder
  QTabWidget* tabs_ = nullptr;
  LayersView* layers_ = nullptr;    // per-layer gradient statistics
  ModelView* model_ = nullptr;      // each layer's dtype under the policy
  ExploreView* explore_ = nullptr;  // the generator's images of chosen seeds
  DoctorView* doctor_ = nullptr;    // the precision doctor's search and answer
  bool doctoring_ = false;
  int layers_every_ = 0;           // the current run's layers.csv interval
  int eval_every_ = 0;             // and its evaluation interval
  AlertBanner* alerts_ = nullptr;  // alerts with a remedy, above the tabs
  QDockWidget *settings_dock_ = nullptr, *samples_dock_ = nullptr, *log_dock_ = nullptr;
  PrecisionActions* precision_ = nullptr;  // the one exclusive precision choice
  QAction *start_ = nullptr, *pause_ = nullptr, *step_act_ = nullptr, *stop_ = nullptr, *compare_act_ = nullptr,
          *diagnose_ = nullptr, *checkpoint_ = nullptr, *export_grid_ = nullptr, *export_samples_ = nullptr,
          *export_csv_ = nullptr, *export_plots_ = nullptr, *export_timelapse_ = nullptr, *export_onnx_ = nullptr,
          *open_ = nullptr, *load_settings_ = nullptr, *resume_ = nullptr, *resume_ckpt_ = nullptr,
          *resume_branch_ = nullptr, *quit_ = nullptr;
  StatusFields* status_ = nullptr;  // the status bar's fields
  StatusProgress* progress_ = nullptr;

  TrainingWorker::State state_ = TrainingWorker::State::Idle;
  bool has_session_ = false;
  RunController* runs_ = nullptr;  // the current run every view refers to
  RunExports* exports_ = nullptr;  // grid, CSV and chart exports of that run
  RunWatcher* watcher_ = nullptr;  // a run another process writes, when watching one
  BranchCopy* branch_ = nullptr;   // copying a run into a branch folder (then resuming there)
  QString branch_source_;
  QAction *watch_ = nullptr, *unwatch_ = nullptr;
  std::optional<RunConfig> user_config_;  // the panel's settings before watching, shown again after
  bool closing_ = false;
  bool restored_layout_ = false;
  bool comparing_ = false;
  int64_t step_ = 0, total_ = 0;
  double ips_ = 0;
  Precision shown_precision_ = Precision::FP32;
  QList<UiError> errors_;
  ErrorPresenter presenter_;
  Confirmer confirmer_;

  // demo hooks (--switch-at, --screenshot)
  std::optional<int64_t> switch_at_;
  Precision switch_to_ = Precision::FP16;
  QString screenshot_;
  int64_t screenshot_step_ = 0;
  bool quit_after_screenshot_ = false;
};

}  // namespace ampgan::ui
