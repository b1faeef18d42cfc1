#include "ui/run_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.h"
#include "core/io/atomic_file.h"

namespace ampgan::ui {

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return NAN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + mid));
}

double memory_mib(size_t bytes) { return bytes / (1024.0 * 1024.0); }

RunSummary summarize(const std::vector<StepMetrics>& rows, int last_n_max) {
  RunSummary s;
  if (rows.empty()) return s;
  const int n = static_cast<int>(rows.size());
  s.steps = rows.back().step;
  s.time_s = rows.back().time_s;
  // Warm-up: the first steps allocate buffers (and on a GPU build plans and graphs).
  const int warm = std::min(n - 1, std::max(1, n / 20));
  std::vector<double> ips, ms;
  for (int i = warm; i < n; ++i) {
    ips.push_back(rows[i].images_per_s);
    ms.push_back(rows[i].step_ms);
  }
  s.median_images_per_s = median(ips);
  s.median_step_ms = median(ms);
  s.last_n = std::clamp(n / 10, 1, std::max(1, last_n_max));
  double ld = 0, lg = 0, dr = 0, df = 0;
  for (int i = n - s.last_n; i < n; ++i) {
    ld += rows[i].loss_d;
    lg += rows[i].loss_g;
    dr += rows[i].d_real;
    df += rows[i].d_fake;
  }
  s.final_loss_d = ld / s.last_n;
  s.final_loss_g = lg / s.last_n;
  s.final_d_real = dr / s.last_n;
  s.final_d_fake = df / s.last_n;
  for (const StepMetrics& m : rows) {
    s.skipped_d += m.skipped_d;
    s.skipped_g += m.skipped_g;
    if (!std::isnan(m.swd)) s.swd = m.swd;
    if (!std::isnan(m.fd)) s.fd = m.fd;
  }
  s.final_scale_d = rows.back().scale_d;
  s.final_scale_g = rows.back().scale_g;
  return s;
}

QString write_metrics_csv(const QString& path, const std::vector<StepMetrics>& rows) {
  std::string out;
  for (const std::string& c : StepMetrics::columns()) out += (out.empty() ? "" : ",") + c;
  out += "\n";
  for (const StepMetrics& m : rows) out += m.csv_row() + "\n";
  try {
    io::write_file_atomic(path.toStdString(), out);
  } catch (const Error& e) {
    return QString::fromStdString(e.what_failed() + " (" + e.subject() + ")");
  }
  return {};
}

}  // namespace ampgan::ui
