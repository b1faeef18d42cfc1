// The one place that knows a run folder's layout (docs/user-guide.md, "A session on the command line"):
//   config.json    the run's settings (RunConfig)      run.lock      its one writer (io/run_lock.h)
//   metrics.csv    one row a step (StepMetrics)        events.jsonl  one RunEvent a line
//   layers.csv     per-tensor gradient statistics      histograms.csv  gradient exponent histograms
//   compare.tsv    in a comparison's root only
//   samples/step_NNNNNN.png                            checkpoints/step_NNNNNN.safetensors
//   checkpoints/superseded-after-<step>-<time>/        (a history a resume retrained)
//   events.out.tfevents.<time>.<host>.<pid>            TensorBoard's event files, one a start or resume
// Everything that reads or writes a run folder (Session, checkpoints, the CLI, the studio) asks
// this class for the paths, and the readers of its logs live here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <vector>

#include "core/run/run_event.h"
#include "core/settings/run_config.h"
#include "core/train/step_metrics.h"

namespace ampgan {

class RunFolder {
 public:
  static constexpr const char* kConfig = "config.json";
  static constexpr const char* kMetrics = "metrics.csv";
  static constexpr const char* kEvents = "events.jsonl";
  static constexpr const char* kLayers = "layers.csv";
  static constexpr const char* kHistograms = "histograms.csv";
  static constexpr const char* kSamples = "samples";
  static constexpr const char* kCheckpoints = "checkpoints";
  static constexpr const char* kCompareTable = "compare.tsv";
  // TensorBoard finds event files by this part of their name (core/run/tensorboard_log.h).
  static constexpr const char* kTensorBoardPrefix = "events.out.tfevents.";

  RunFolder() = default;
  explicit RunFolder(std::filesystem::path dir) : dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path config() const { return dir_ / kConfig; }
  std::filesystem::path metrics() const { return dir_ / kMetrics; }
  std::filesystem::path events() const { return dir_ / kEvents; }
  std::filesystem::path layers() const { return dir_ / kLayers; }
  std::filesystem::path histograms() const { return dir_ / kHistograms; }
  std::filesystem::path samples_dir() const { return dir_ / kSamples; }
  std::filesystem::path checkpoints_dir() const { return dir_ / kCheckpoints; }
  std::filesystem::path sample_grid(int64_t step) const;  // samples/step_NNNNNN.png
  // The sample grids on disk (regular files named as sample_grid names them), by step.
  std::map<int64_t, std::filesystem::path> sample_grids() const;
  std::filesystem::path checkpoint(int64_t step) const;  // checkpoints/step_NNNNNN.safetensors
  // The folder's TensorBoard event files (regular files only), oldest name first.
  std::vector<std::filesystem::path> tensorboard_files() const;
  // A name for a new one: events.out.tfevents.<unix time>.<host>.<pid>, TensorBoard's own
  // pattern, with .<n> added when that name is taken (two starts in one second by one process).
  std::filesystem::path new_tensorboard_file() const;
  // What each log is called, for copies of the folder (a branch, a set-aside history).
  static std::vector<const char*> log_names() { return {kMetrics, kEvents, kLayers, kHistograms}; }

  bool exists() const;       // a folder with a config.json (of any file type)
  bool holds_files() const;  // anything but an unheld run.lock (a refused start may leave one)
  bool has_checkpoint() const;

  // Throws Error naming the first of config.json and the logs that exists but is not a regular
  // file of the folder's own (a symbolic link, even a dangling one, a FIFO, a folder): a writer
  // must never follow a link out of its folder. Called before a run's first write.
  void check_own_files() const;
  RunConfig read_config() const;  // clear errors for a missing or invalid config.json
  void write_config(const RunConfig& c) const;
  // Rows that parse; a half-written last row (a killed writer) is left out.
  std::vector<StepMetrics> read_metrics() const;
  std::vector<RunEvent> read_events() const;  // none if the file is missing; bad lines skipped

  // Keeps the rows and events of steps <= step (the history a resume from `step` continues) and
  // returns the largest time_s kept, the clock the continued run counts on from.
  double trim_logs(int64_t step) const;
  // Moves `files` (later checkpoints) and copies of the logs into a new folder
  // checkpoints/superseded-after-<step>-<time>/ (-2, -3, ... when that name is taken: every
  // set-aside history keeps its own), and returns that folder.
  std::filesystem::path set_aside(const std::vector<std::filesystem::path>& files, int64_t step) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace ampgan
