// What the Runs panel knows about the runs of a runs folder: each run's settings and final
// scores (read from its config.json and metrics.csv), which runs differ only in their seed (a
// seed group, shown as mean ± sd), and how the settings of two runs differ.
#pragma once

#include <memory>
#include <vector>

#include <QDateTime>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "core/train/step_metrics.h"

namespace ampgan::ui {

struct RunRecord {
  QString dir, name;
  nlohmann::json config;  // config.json as written (null when missing or unreadable)
  std::shared_ptr<const std::vector<StepMetrics>> rows;
  QDateTime started;
  // Final values as core/run/run_summary sums them up (NaN when the run has none): losses
  // averaged over the last steps, median img/s, the last evaluation's SWD/FD, overflows.
  double loss_d = NAN, loss_g = NAN, swd = NAN, fd = NAN, images_per_s = NAN;
  int64_t steps = 0, overflows = 0;
  QString model, precision;  // as trained last (a run switched mid-run shows where it ended)
  qint64 seed = -1;
};

// Reads one run folder (its metrics in full). nullopt-like: an empty dir on a folder that is no run.
RunRecord read_run_record(const QString& dir);
// Every run folder directly under root (those with a metrics.csv), newest first.
std::vector<RunRecord> scan_runs_folder(const QString& root);

// The runs whose settings are equal except for the seed (and the folder), in groups of two or
// more; indices into runs. A run in no group is alone.
std::vector<std::vector<int>> seed_groups(const std::vector<RunRecord>& runs);
// Settings that differ between a and b: "key: a → b" rows (keys present in one only show "–").
struct ConfigDifference {
  QString key, a, b;
};
std::vector<ConfigDifference> config_diff(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace ampgan::ui
