// The CSV export of in-memory rows. The numbers that sum up a run (RunSummary, summarize) are the
// run layer's, core/run/run_summary.h, shared with `ampgan compare`.
#pragma once

#include <vector>

#include <QString>

#include "core/run/run_summary.h"
#include "core/train/step_metrics.h"

namespace ampgan::ui {

// metrics.csv's format (StepMetrics::columns) from rows in memory. Returns an error message, or
// an empty string on success.
QString write_metrics_csv(const QString& path, const std::vector<StepMetrics>& rows);

}  // namespace ampgan::ui
