// A run's TensorBoard event file (events.out.tfevents.*, in the run folder): the scalars of
// metrics.csv, the sample grids, the gradient-exponent histograms of histograms.csv and a text
// note at each precision switch, as TensorBoard's Event / Summary protos (core/io/
// tensorboard_event.proto) in TFRecord framing (core/io/tfevents.h). Rank 0's Session writes it
// as it trains (unless --no-tensorboard); `ampgan tensorboard RUN` writes one for a finished run.
//
// Each record is written by itself, so a killed run leaves whole records. A resume starts a new
// file (TensorBoard reads every file of a folder as one run) after trim() dropped the steps past
// the checkpoint from the older ones: the union has each step once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/io/image_io.h"
#include "core/io/tfevents.h"
#include "core/run/histograms_log.h"
#include "core/run/run_folder.h"
#include "core/train/step_metrics.h"

namespace ampgan {

// The precision as TensorBoard's "precision" scalar: 0 FP32, 1 TF32, 2 FP16, 3 BF16.
double precision_code(Precision p);

// The scalar tags and their values for one metrics.csv row, in a fixed order; a NaN value (an
// empty cell: SWD and FD off evaluation steps, a skipped step's gradient norm) is left out.
std::vector<std::pair<std::string, double>> tensorboard_scalars(const StepMetrics& m);

class TensorBoardLog {
 public:
  // Creates `path` (RunFolder::new_tensorboard_file) and writes its first record, the
  // file_version event TensorBoard expects. Throws Error naming the path if it cannot.
  explicit TensorBoardLog(const std::filesystem::path& path, double wall_time = now());

  // wall_time: seconds since 1970 (the Event's wall_time; TensorBoard's "relative" axis).
  void scalars(const StepMetrics& m, double wall_time = now());
  void text(int64_t step, const std::string& tag, const std::string& text, double wall_time = now());
  // A PNG file's bytes as an image summary (the sample grid: tag "samples").
  void image(int64_t step, const std::string& tag, const std::string& png, const io::Image8& img,
             double wall_time = now());
  // One histograms.csv row as "grad_exponent/<G|D>" on the axis of exponents: the values with
  // floor(log2|g|) = e are the bucket (e, e + 1] (bucket_limit e + 1); exact zeros the bucket
  // (kHistMinExp - 1, kHistMinExp], inf/NaN the bucket (kHistMaxExp + 1, kHistMaxExp + 2].
  void histogram(const HistogramRow& row, double wall_time = now());
  void sync() { writer_->sync(); }
  const std::filesystem::path& path() const { return writer_->path(); }

  static double now();
  // Drops every event after `step` from each of the folder's event files (rewritten whole, only
  // those that change): a resume from that step's checkpoint trains those steps again. A file
  // that does not decode is left as it is and named in the returned list.
  static std::vector<std::filesystem::path> trim(const std::vector<std::filesystem::path>& files, int64_t step);

 private:
  std::unique_ptr<io::TfRecordWriter> writer_;
};

// What write_run_tensorboard wrote.
struct TensorBoardExport {
  std::filesystem::path file;
  int64_t scalar_steps = 0, images = 0, histograms = 0, notes = 0;
  std::vector<std::filesystem::path> replaced;  // the event files it deleted (--replace)
};

// `ampgan tensorboard RUN`: one event file for an existing run from its metrics.csv, events.jsonl
// (precision switches), samples/ and histograms.csv, with wall times from metrics.csv's clock
// (counted back from the file's modification time). Takes the run's lock (a run that is training
// is refused). A run that already has event files is refused unless `replace`, which deletes
// them once the new file is whole.
TensorBoardExport write_run_tensorboard(const RunFolder& folder, bool replace);

}  // namespace ampgan
