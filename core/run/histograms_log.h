// histograms.csv in a run folder: the gradient-exponent histograms of G and D (ew::kHistBins
// counts each: floor(log2|g|) from kHistMinExp to kHistMaxExp, zeros, non-finite), two rows every
// hist_every steps, with the precision and loss scale they were taken under. The studio's
// histogram charts read it back, so an opened or watched run shows them over time too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/amp/precision.h"
#include "core/io/atomic_file.h"

namespace ampgan {

struct HistogramRow {
  int64_t step = 0;
  char network = 'G';  // 'G' or 'D'
  Precision precision = Precision::FP32;
  double scale = 1;
  std::vector<float> counts;  // ew::kHistBins
};

class HistogramsLog {
 public:
  // Opens (or continues) the file; a new one gets the header row.
  explicit HistogramsLog(const std::filesystem::path& path);
  void write(const HistogramRow& row);
  void sync() { log_->sync(); }

  static std::string header();
  // One data row; false for a half-written or foreign line.
  static bool parse(const std::string& line, HistogramRow& out);
  // Drops rows after `step` (a resume trains them again). No file: nothing to do.
  static void trim(const std::filesystem::path& path, int64_t step);
  // Every row of a histograms.csv (an absent file: none); a foreign header throws Error.
  static std::vector<HistogramRow> read(const std::filesystem::path& path);

 private:
  std::unique_ptr<io::AppendLog> log_;
};

}  // namespace ampgan
