// Numbers that sum up a run (the comparison table) and the CSV export of in-memory rows. Plain
// functions over StepMetrics, so the table's arithmetic is tested without a window.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <QString>

#include "core/backend/backend.h"
#include "core/train/step_metrics.h"

namespace ampgan::ui {

struct RunSummary {
  int64_t steps = 0;
  double median_images_per_s = 0;  // warm-up steps excluded
  double median_step_ms = 0;
  double final_loss_d = 0, final_loss_g = 0;  // mean over the last `last_n` steps
  double final_d_real = 0, final_d_fake = 0;
  int last_n = 0;
  int skipped_d = 0, skipped_g = 0;       // overflows: steps whose update was skipped
  double final_scale_d = 1, final_scale_g = 1;
  double swd = NAN, fd = NAN;             // the last evaluation, if any
  double time_s = 0;
};

// last_n_max: how many final steps the "final" losses average (fewer for short runs: a tenth of
// the run, at least 1). The first steps (allocation, warm-up) are left out of the medians.
RunSummary summarize(const std::vector<StepMetrics>& rows, int last_n_max = 50);

double median(std::vector<double> v);
double memory_mib(size_t bytes);

// metrics.csv's format (StepMetrics::columns) from rows in memory. Returns an error message, or
// an empty string on success.
QString write_metrics_csv(const QString& path, const std::vector<StepMetrics>& rows);

}  // namespace ampgan::ui
