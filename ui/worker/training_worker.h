// TrainingWorker: the only object that touches an engine Session. It lives on its own QThread
// (moved there by the MainWindow) and creates, steps and finishes Sessions there.
//
// Two kinds of input, following docs/DESIGN.md's threading rule "the GUI never waits for the engine":
// - Starting something (a run, a resume, a comparison, reading a run folder) is a queued call
//   (QMetaObject::invokeMethod with Qt::QueuedConnection) that occupies the worker until done.
// - While a run is going, the loop inside that call does not return to the event loop, so
//   changes reach it through thread-safe request*() methods: atomic flags for stop/pause/step
//   and a mutex-guarded command queue drained between steps. A Stop therefore waits for at most
//   the step in flight, then the run is finished cleanly (metrics flushed, samples and a
//   checkpoint written).
//
// Output: queued signals. Listener callbacks are collected into a UiBatch and delivered at most
// every flush interval (50 ms: ~20 batches a second however fast the steps are).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include <QObject>
#include <QString>

#include "core/run/session.h"
#include "ui/common/ui_types.h"

namespace ampgan::ui {

class RunSampler;

// The settings a run can change between steps, as the window shows them: a resumed run takes
// these instead of what its checkpoint was saved with.
struct MidRunSettings {
  Precision precision = Precision::FP32;
  std::optional<LayerPolicy> policy;  // FP32 layers, half blocks, activation clamp
  float lr_g = 0, lr_d = 0;           // 0: keep the run's own
};

class TrainingWorker : public QObject, private SessionListener {
  Q_OBJECT

 public:
  enum class State : int { Idle, Loading, Running, Paused, Stopping };
  Q_ENUM(State)

  explicit TrainingWorker(QObject* parent = nullptr);
  ~TrainingWorker() override;

  // ---- thread-safe; applied between steps (or at once when no run is going) ----
  void requestStop();  // also cancels dataset loading
  void setPaused(bool paused);
  bool isPaused() const { return paused_.load(); }
  void requestStep();  // one iteration while paused
  void requestPrecision(Precision p);
  void requestLayerPolicy(const LayerPolicy& policy);  // an unknown layer name is reported, training goes on
  void requestLearningRates(float lr_g, float lr_d);
  void requestTotalSteps(int64_t steps);
  void requestCheckpoint();
  void requestExportSamples(const QString& dir, int n, quint64 seed);
  void requestSampleNow();
  // The Explore tab's images from the current generator (a run's, live between steps, or an
  // opened run's): answered by explored(), or failed(); a newer request replaces an unserved one.
  void requestExplore(const ExploreRequest& r);
  void cancelExplore() { cancel_explore_.store(true); }  // stops the images in progress
  // Ends the evaluation in progress without scores (the engine tries again at the next
  // interval); the run goes on. No effect when none is going.
  void requestSkipWork() { skip_work_.store(true); }
  void setFlushIntervalMs(int ms) { flush_ms_.store(ms); }
  State state() const { return static_cast<State>(state_.load()); }
  bool hasSession() const { return has_session_.load(); }

  // ---- run on the worker thread: call through QMetaObject::invokeMethod(..., Queued) ----
  // paused: create the run and wait (Step then trains one iteration at a time); steps: single
  // steps to take at once (Step pressed with no run: start paused and take one).
  void startRun(const ampgan::RunConfig& cfg, bool paused, int steps = 0);
  // checkpoint empty: the newest; steps <= 0: the run's own target; `mid` (when given) is
  // applied before the first resumed step.
  void resumeRun(const QString& run_dir, qint64 steps, const QString& checkpoint, bool paused,
                 std::optional<MidRunSettings> mid = std::nullopt);
  // The same configuration in FP32 and in `amp`, one after the other, same seed and data order,
  // each in its own folder under one comparison folder. max_batch: then the largest batch of
  // both within the memory budget (core/run/compare.h), with workProgress, stopped by Stop.
  void runComparison(const ampgan::RunConfig& base, ampgan::Precision amp, bool max_batch = false);
  // The precision doctor (core/run/precision_doctor.h) on cfg (fp16 or bf16; its probes and
  // report in cfg.out_dir): doctorUpdated after each probe, workProgress within one, stopped by
  // Stop (the best answer so far stands).
  void runDoctor(const ampgan::RunConfig& cfg);
  // The first-divergence replay of step `step` of the run folder `dir`: replayed(), or failed().
  void runReplay(const QString& dir, qint64 step);
  // Reads a run folder for display and loads its generator (newest checkpoint) for sampling;
  // the previous run's session is released, so nothing samples from the wrong run.
  void openRun(const QString& run_dir);
  void releaseSession();  // frees the finished run's memory
  // First call on the worker thread (blocking, at start-up): lowers this thread's scheduling
  // priority (nice +5, or $AMPGAN_WORKER_NICE) and creates the engine's CPU thread pool from
  // here, so the pool threads inherit it. Training then yields the CPU to the GUI thread when
  // both want it (on 2 cores the GUI otherwise waits behind the pool for tens of ms) and loses
  // nothing when the GUI is idle. Returns the nice value applied.
  int initThread();

 signals:
  void stateChanged(int state);  // State
  void loadingProgress(int done, int total);
  void runStarted(const ampgan::ui::RunStartInfo& info);
  // The running model's layers under the current precision and policy (after a start, a resume
  // and every precision or policy switch).
  void modelDescribed(const ampgan::ui::ModelDescription& d);
  void batchReady(const ampgan::ui::UiBatchPtr& batch);
  void runFinished(const ampgan::ui::RunEndInfo& info);
  void maxBatchFound(const ampgan::ui::MaxBatchPtr& result);  // before comparisonFinished
  void comparisonFinished(bool complete);
  void failed(const ampgan::ui::UiError& error);
  void notice(const QString& text);  // e.g. "loading cancelled": for the log, not a dialog
  void exported(const QString& what, const QString& path);
  void runOpened(const std::shared_ptr<const ampgan::ui::OpenedRun>& run);
  // Long work inside a step (the feature classifier's training, an evaluation): what, done of
  // total; done == total when it ends. Stop cancels it.
  void workProgress(const QString& what, int done, int total);
  void sessionAvailable(bool available);  // a run is loaded: exports and checkpoints can be served
  // A generator can be sampled (a session, or an opened run's checkpoint); dir: whose.
  void generatorAvailable(bool available, const QString& dir);
  // Just before generatorAvailable: the generator's classes (0: unconditional) and their names.
  void generatorClasses(int classes, const QStringList& names);
  void explored(const ampgan::ui::ExploreResultPtr& result);
  void exploreProgress(int id, int done, int total);
  void doctorUpdated(const ampgan::ui::DoctorUpdatePtr& update);
  void replayed(const ampgan::ui::ReplayResultPtr& result);  // null: it failed (said by failed())

 private:
  struct Command {
    enum Kind {
      SetPrecision,
      SetLayerPolicy,
      SetLearningRates,
      SetTotalSteps,
      Checkpoint,
      ExportSamples,
      SampleNow,
      Explore
    };
    explicit Command(Kind k = SampleNow) : kind(k) {}
    Kind kind;
    Precision precision = Precision::FP32;
    LayerPolicy policy;
    float lr_g = 0, lr_d = 0;
    int64_t steps = 0;
    QString dir;
    int n = 0;
    quint64 seed = 0;
    ExploreRequest explore;
  };
  void explore(const ExploreRequest& r);

  void describeModel();
  // SessionListener (called on the worker thread, inside Session calls)
  void on_metrics(const std::vector<StepMetrics>& rows) override;
  void on_event(const RunEvent& e) override;
  void on_samples(int64_t step, const io::Image8& grid) override;
  void on_histograms(int64_t step, const std::vector<float>& g, const std::vector<float>& d) override;

  void push(Command c);
  void drainIdle();      // queued after each push: serves commands when no loop runs
  void drainCommands();  // worker thread, between steps
  void apply(const Command& c);
  bool stopRequested() const;
  void beginRun(RunTag tag, bool paused, int steps = 0);
  SessionOptions sessionOptions();
  void announce(RunTag tag, bool resumed);
  QString loop();  // steps until done or stopped; returns the reason
  void finishRun(const QString& reason);
  void flush(bool force);
  void setState(State s);
  void fail(const QString& during);  // inside a catch block: reports the current exception
  // Inside a catch block of a run: reports, saves what can be saved, ends the run.
  void runFailed(const QString& before_start);
  void setSession(std::unique_ptr<Session> s);
  void setSampler(std::unique_ptr<RunSampler> s);
  void announceClasses();  // generatorClasses of the session or sampler now held
  bool findMaxBatch(const RunConfig& base, Precision amp, int channels);  // false: stopped or failed
  // Inside a catch block: the exception is a divergence (Session::step finished the run itself)
  // or a cancelled dataset load.
  static bool isDivergence();
  static bool isCancel();

  std::unique_ptr<Session> session_;
  std::unique_ptr<RunSampler> sampler_;  // an opened run's generator (only when no session_)
  RunTag tag_ = RunTag::Main;
  QString dir_;
  std::shared_ptr<UiBatch> pending_;
  std::chrono::steady_clock::time_point last_flush_{}, last_progress_{}, last_work_{};
  bool in_work_ = false;
  std::string work_what_;
  bool in_loop_ = false;
  bool run_started_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> commands_;
  std::atomic<bool> stop_{false}, paused_{false}, cancel_loading_{false}, has_session_{false}, skip_work_{false},
      cancel_explore_{false};
  std::atomic<int> step_requests_{0};
  std::atomic<int> state_{0};
  std::atomic<int> flush_ms_{50};
};

}  // namespace ampgan::ui
