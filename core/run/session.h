// A training run: the dataset, the backend, the Trainer and the run folder on disk. The CLI and
// the GUI's worker drive the same Session; it writes config.json, metrics.csv (a row per step),
// events.jsonl, sample grids, checkpoints and a TensorBoard event file, and tells a listener
// what happened.
//
// Threading: a Session is used from one thread at a time (the GUI's worker thread); listener
// callbacks run on that thread.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/data/batch_loader.h"
#include "core/data/image_set.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/run_lock.h"
#include "core/run/alerts.h"
#include "core/run/histograms_log.h"
#include "core/run/layers_log.h"
#include "core/run/run_event.h"
#include "core/run/run_folder.h"
#include "core/run/tensorboard_log.h"
#include "core/settings/run_config.h"
#include "core/train/trainer.h"

namespace ampgan {

namespace dist {
class Communicator;
class DataParallel;
}  // namespace dist

namespace metrics {
class Evaluator;
struct EvalResult;
}  // namespace metrics

class SessionListener {
 public:
  virtual ~SessionListener() = default;
  virtual void on_metrics(const std::vector<StepMetrics>& /*rows*/) {}
  virtual void on_event(const RunEvent& /*e*/) {}
  virtual void on_samples(int64_t /*step*/, const io::Image8& /*grid*/) {}
  virtual void on_histograms(int64_t /*step*/, const std::vector<float>& /*g*/, const std::vector<float>& /*d*/) {}
};

struct SessionOptions {
  SessionListener* listener = nullptr;
  // Dataset loading progress (done, total), and a flag that cancels loading.
  std::function<void(int, int)> progress;
  const std::atomic<bool>* cancel = nullptr;
  // Who writes the run, for the run folder's lock file (a second writer is shown it); empty:
  // this process's command line.
  std::string writer;
  // Data-parallel training (core/dist/data_parallel.h): this process is rank 0 of comm's ranks,
  // the others run dist::run_replica. nullptr: one device.
  dist::Communicator* comm = nullptr;
  // Resume: continue although the dataset differs from the one the checkpoint was trained on
  // (its fingerprint); false refuses, since the run would no longer be the one that never stopped.
  bool allow_changed_dataset = false;
  // The backend the run trains on, made by the caller (a test's backend with a planted fault, as
  // the precision doctor's tests use); empty: the configuration's (cfg.backend, cfg.gpu).
  std::function<std::unique_ptr<Backend>()> make_backend;
};

class Session {
 public:
  // Validates the configuration, loads the dataset, picks the backend and creates the run
  // folder. Refuses a folder that already holds a run (nothing there is touched). A Session
  // holds the run folder's lock (io::RunLock) for its lifetime: one writer per folder.
  static std::unique_ptr<Session> create(const RunConfig& cfg, const SessionOptions& opt = {});
  // Continues a run from its newest checkpoint (or the given one, which must belong to the run);
  // total_steps > 0 sets a new target. Metrics and events after the checkpoint's step are
  // dropped: those steps are trained again.
  static std::unique_ptr<Session> resume(const std::filesystem::path& run_dir, int64_t total_steps,
                                         const SessionOptions& opt = {}, const std::filesystem::path& checkpoint = {});
  ~Session();

  void step();  // one iteration with its bookkeeping
  // Until the target step, *stop, or (data-parallel) a stop another rank was asked for.
  void run(const std::atomic<bool>* stop = nullptr);
  // Data-parallel: the ranks stopped because another rank was asked to (a signal to rank 1).
  bool stopped_by_another_rank() const { return ranks_stopped_; }
  // A "stop" event for a run that ends by an error (a collective that failed, a full disk):
  // best effort, from the thread that runs the Session.
  void record_stop(const std::string& reason) noexcept;
  // From any thread, while the Session's own thread may be blocked (in a collective whose other
  // ranks have ended): a "stop" event naming the newest checkpoint, written through its own
  // descriptor, and the same line returned for stderr.
  std::string report_blocked_stop(const std::string& why) const;
  // Flushes metrics, writes samples and a checkpoint (unless already written for this step)
  // and a "stop" event with the reason.
  void finish(const std::string& reason);
  bool done() const { return trainer_->iteration() >= cfg_.steps; }

  void set_precision(Precision p);  // between steps; logged, marked on the plots
  // Which layers stay FP32 (between steps; logged as a "policy_switch" event; checkpoints and
  // config.json carry it). An unknown layer name throws Error and changes nothing.
  void set_layer_policy(const LayerPolicy& policy);
  void set_learning_rates(float lr_g, float lr_d);
  void set_total_steps(int64_t steps);
  std::filesystem::path save_checkpoint();
  io::Image8 sample_grid();  // 8 x 8 from the fixed latents, now
  // n images from latents of the given seed (NHWC FP32 in [-1, 1]).
  std::vector<float> generate(int n, uint64_t seed);
  void export_samples(const std::filesystem::path& dir, int n, uint64_t seed);
  void set_listener(SessionListener* l) { listener_ = l; }

  int64_t step_count() const { return trainer_->iteration(); }
  const RunConfig& config() const { return cfg_; }
  const std::filesystem::path& dir() const { return folder_.dir(); }
  const RunFolder& folder() const { return folder_; }
  Trainer& trainer() { return *trainer_; }
  Backend& backend() { return *backend_; }
  const data::ImageSet& dataset() const { return *data_; }
  const std::string& backend_note() const { return backend_note_; }

 private:
  static constexpr int kGridSide = 8;  // the sample grid: kGridSide x kGridSide images

  Session() = default;
  void build(const SessionOptions& opt, int channels_override);
  void emit_event(RunEvent e);
  void handle_rows(std::vector<StepMetrics> rows);
  void write_histograms(int64_t step, const StepMetrics& last);  // histograms.csv and the listener
  void report_kernels(int64_t step);                             // new CPU kernel choices as an event
  void write_samples();
  void evaluate(StepMetrics& row);

  void take_lock(const SessionOptions& opt);
  // The logs (metrics.csv with its header when it is new or was deleted, a new TensorBoard
  // event file unless --no-tensorboard), for create and resume.
  void open_logs();
  // A "warning" event naming the stale temporary files removed at start (sweep_stale_temporaries).
  void report_swept(const std::vector<std::filesystem::path>& swept, int64_t step);
  // Data-parallel start (core/run/session_parallel.cpp): the ranks check their settings and
  // take rank 0's state; returns what to tell the user.
  std::vector<std::string> start_parallel(int64_t step, int64_t batches_consumed, int previous_world_size);

  // First member, so it is released last, after the logs are closed.
  std::unique_ptr<io::RunLock> lock_;
  RunConfig cfg_;
  RunFolder folder_;
  std::unique_ptr<Backend> backend_;
  std::vector<KernelChoice> recorded_kernels_;  // a resumed run's CPU kernel choices, reused
  std::set<std::string> reported_kernels_;      // kernel choices already in events.jsonl
  std::string backend_note_;
  std::unique_ptr<data::ImageSet> data_;
  std::string dataset_fingerprint_;  // data::fingerprint(*data_), written into every checkpoint
  std::unique_ptr<data::BatchLoader> loader_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<metrics::Evaluator> evaluator_;
  std::unique_ptr<dist::DataParallel> parallel_;
  std::unique_ptr<io::AppendLog> metrics_log_, events_log_;
  std::unique_ptr<LayersLog> layers_log_;    // layers.csv
  std::unique_ptr<HistogramsLog> hist_log_;  // histograms.csv
  std::unique_ptr<TensorBoardLog> tb_log_;   // events.out.tfevents.* (none with --no-tensorboard)
  AlertMonitor alerts_;
  SessionListener* listener_ = nullptr;
  std::vector<float> fixed_latents_;
  double time_offset_ = 0;  // seconds trained before a resume
  double last_scale_d_ = -1, last_scale_g_ = -1;
  int consecutive_skips_d_ = 0, consecutive_skips_g_ = 0;
  int64_t last_checkpoint_step_ = -1, last_samples_step_ = -1;
  bool ranks_stopped_ = false;
  bool stopped_ = false;  // finish() wrote the "stop" event
  // For report_blocked_stop, read from another thread.
  std::atomic<int64_t> steps_done_{0}, checkpoint_done_{-1};
  std::atomic<double> time_done_{0};  // metrics.csv's clock at steps_done_
};

}  // namespace ampgan
