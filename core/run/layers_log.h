// layers.csv in a run folder: one row per gradient tensor on the steps it is written for
// (every K steps, and every overflow step), from StepMetrics::tensors. The GUI's Layers view
// reads it back for a finished run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/io/atomic_file.h"
#include "core/train/step_metrics.h"

namespace ampgan {

struct LayerRow {
  int64_t step = 0;
  TensorName name;
  TensorGradStat stat;
};

class LayersLog {
 public:
  // Opens (or continues) the file; a new one gets the header row.
  LayersLog(const std::filesystem::path& path, std::vector<TensorName> names);
  void write(const StepMetrics& m);  // one row per tensor
  void sync() { log_->sync(); }
  const std::vector<TensorName>& names() const { return names_; }

  static const char* header();
  // Drops rows after `step` (a resume trains them again). No file: nothing to do.
  static void trim(const std::filesystem::path& path, int64_t step);
  // Every row of a layers.csv (an absent file: none); a malformed file throws Error.
  static std::vector<LayerRow> read(const std::filesystem::path& path);
  // Appends the rows the file gained after byte `offset` (0: from the start, header checked),
  // complete lines only, and returns the offset to continue from: a live view reads each row
  // once instead of the whole file at every update. A file now shorter than offset (a resume
  // trimmed it) is read again from the start, and rows is cleared first.
  static uint64_t read_more(const std::filesystem::path& path, uint64_t offset, std::vector<LayerRow>& rows);

 private:
  std::unique_ptr<io::AppendLog> log_;
  std::vector<TensorName> names_;
};

// log2 of a max |g| for people and plots: -inf for 0.
double log2_or_neg_inf(double v);

}  // namespace ampgan
