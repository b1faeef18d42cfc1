// Numbers that sum up a run, and the FP32-against-AMP comparison table built from them. Plain
// functions over StepMetrics, shared by the studio's Compare view and `ampgan compare`, so both
// print the same table from the same arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/amp/precision.h"
#include "core/backend/backend.h"
#include "core/train/step_metrics.h"

namespace ampgan {

struct RunSummary {
  int64_t steps = 0;
  double median_images_per_s = 0;  // warm-up steps excluded
  double median_step_ms = 0;
  double final_loss_d = 0, final_loss_g = 0;  // mean over the last `last_n` steps
  double final_d_real = 0, final_d_fake = 0;
  int last_n = 0;
  int skipped_d = 0, skipped_g = 0;         // overflows: steps whose update was skipped
  uint64_t replaced_d = 0, replaced_g = 0;  // gradient values nan_to_num replaced (that strategy only)
  double final_scale_d = 1, final_scale_g = 1;
  double swd = NAN, fd = NAN;  // the last evaluation, if any
  double time_s = 0;
};

// last_n_max: how many final steps the "final" losses average (fewer for short runs: a tenth of
// the run, at least 1). The first steps (allocation, warm-up) are left out of the medians.
RunSummary summarize(const std::vector<StepMetrics>& rows, int last_n_max = 50);

double median(std::vector<double> v);  // of the finite values; NaN when there are none
double memory_mib(size_t bytes);

// One row of the comparison table: a finished (or stopped) run of one precision.
struct CompareRun {
  std::string label;  // "FP32", "FP16 AMP", ...
  bool ok = false;    // ran to its last step
  RunSummary summary;
  MemoryStats memory;  // peaks over the run
  std::string dir;
  // The largest batch within the comparison's memory budget (core/train/max_batch.h), when it was
  // searched: 0 when none was verified; the ratio to FP32's (0: unknown).
  bool max_batch_searched = false;
  int64_t max_batch = 0;
  double max_batch_ratio = 0;
};

// The table's column headers; memory categories follow MemCategory's order.
const std::vector<std::string>& compare_columns();
constexpr int kCompareFirstMemColumn = 5;
// The cells of one row, in compare_columns()' order. `baseline` is the FP32 run (row 0), whose
// median images/s the speed-up divides by.
std::vector<std::string> compare_cells(const CompareRun& run, const CompareRun& baseline, bool is_baseline);
// "FP16 AMP is 1.43× the speed of FP32 here", plus what this CPU does for that precision when the
// runs were on the CPU. Empty when the baseline has no speed.
std::string compare_verdict(const CompareRun& baseline, const CompareRun& amp, Precision amp_mode, bool on_cpu);
// The whole table as aligned text (for the terminal) or tab-separated (for a spreadsheet).
std::string compare_table_text(const std::vector<CompareRun>& runs, bool tab_separated);

}  // namespace ampgan
