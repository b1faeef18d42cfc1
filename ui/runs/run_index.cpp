#include "ui/runs/run_index.h"

#include <algorithm>
#include <map>

#include <QDir>
#include <QFileInfo>

#include "core/io/atomic_file.h"
#include "core/run/run_folder.h"
#include "core/run/run_summary.h"
#include "core/run/session.h"

namespace ampgan::ui {

namespace {
// Keys that name where or which a run is, not how it trains.
bool identity_key(const std::string& k) { return k == "seed" || k == "out_dir" || k == "runs_root" || k == "name"; }

QString cell(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return QString::fromStdString(v.dump());
}
}  // namespace

RunRecord read_run_record(const QString& dir) {
  RunRecord r;
  r.dir = dir;
  r.name = QFileInfo(dir).fileName();
  const QString cfg = QDir(dir).filePath(QString::fromLatin1(RunFolder::kConfig));
  try {
    r.config = nlohmann::json::parse(io::read_file(cfg.toStdString(), 16u << 20));
  } catch (const std::exception&) {
    r.config = nullptr;
  }
  if (r.config.is_object()) {
    if (r.config.contains("model")) r.model = cell(r.config["model"]);
    if (r.config.contains("seed") && r.config["seed"].is_number()) r.seed = r.config["seed"].get<qint64>();
  }
  r.started = QFileInfo(cfg).lastModified();
  std::vector<StepMetrics> rows;
  try {
    rows = RunFolder(dir.toStdString()).read_metrics();
  } catch (const std::exception&) {}
  if (!rows.empty()) {
    // The same arithmetic as the Compare table and `ampgan compare` (core/run/run_summary).
    const RunSummary sum = summarize(rows);
    r.steps = sum.steps;
    r.loss_d = sum.final_loss_d;
    r.loss_g = sum.final_loss_g;
    r.images_per_s = sum.median_images_per_s;
    r.overflows = sum.skipped_d + sum.skipped_g;
    r.swd = sum.swd;
    r.fd = sum.fd;
    r.precision = QString::fromLatin1(precision_label(rows.back().precision));
  } else if (r.config.is_object() && r.config.contains("precision")) {
    r.precision = cell(r.config["precision"]);
  }
  r.rows = std::make_shared<const std::vector<StepMetrics>>(std::move(rows));
  return r;
}

std::vector<RunRecord> scan_runs_folder(const QString& root) {
  std::vector<RunRecord> out;
  const QDir d(root);
  for (const QString& sub : d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    const QString dir = d.filePath(sub);
    if (QFileInfo(QDir(dir).filePath(QString::fromLatin1(RunFolder::kMetrics))).isFile())
      out.push_back(read_run_record(dir));
    // A comparison folder holds its two runs one level down (fp32/, fp16/ ...).
    else
      for (const QString& inner : QDir(dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        const QString idir = QDir(dir).filePath(inner);
        if (QFileInfo(QDir(idir).filePath(QString::fromLatin1(RunFolder::kMetrics))).isFile()) {
          out.push_back(read_run_record(idir));
          out.back().name = sub + QLatin1Char('/') + inner;
        }
      }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RunRecord& a, const RunRecord& b) { return a.started > b.started; });
  return out;
}

std::vector<std::vector<int>> seed_groups(const std::vector<RunRecord>& runs) {
  std::map<std::string, std::vector<int>> by_settings;
  for (int i = 0; i < static_cast<int>(runs.size()); ++i) {
    if (!runs[i].config.is_object()) continue;
    nlohmann::json key = runs[i].config;
    for (auto it = key.begin(); it != key.end();) it = identity_key(it.key()) ? key.erase(it) : std::next(it);
    by_settings[key.dump()].push_back(i);
  }
  std::vector<std::vector<int>> out;
  for (auto& [k, members] : by_settings) {
    // Same settings and the same seed are repeats, not seeds: a group needs two seeds at least.
    std::vector<qint64> seeds;
    for (int i : members) seeds.push_back(runs[i].seed);
    std::sort(seeds.begin(), seeds.end());
    if (members.size() >= 2 && std::unique(seeds.begin(), seeds.end()) - seeds.begin() >= 2) out.push_back(members);
  }
  return out;
}

std::vector<ConfigDifference> config_diff(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<ConfigDifference> out;
  std::vector<std::string> keys;
  for (const nlohmann::json* j : {&a, &b})
    if (j->is_object())
      for (auto it = j->begin(); it != j->end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::string& k : keys) {
    if (k == "out_dir" || k == "runs_root") continue;
    const bool in_a = a.is_object() && a.contains(k), in_b = b.is_object() && b.contains(k);
    if (in_a && in_b && a[k] == b[k]) continue;
    out.push_back(
        {QString::fromStdString(k), in_a ? cell(a[k]) : QStringLiteral("–"), in_b ? cell(b[k]) : QStringLiteral("–")});
  }
  return out;
}

}  // namespace ampgan::ui
