#include "core/run/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/amp/loss_scaler.h"
#include "core/backend/cpu/cpu_precision.h"
#include "core/common/cpu_features.h"

namespace ampgan {

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
    s.replaced_d += m.replaced_d;
    s.replaced_g += m.replaced_g;
    if (!std::isnan(m.swd)) s.swd = m.swd;
    if (!std::isnan(m.fd)) s.fd = m.fd;
  }
  s.final_scale_d = rows.back().scale_d;
  s.final_scale_g = rows.back().scale_g;
  return s;
}

namespace {

std::string fixed(double x, int decimals) {
  if (!std::isfinite(x)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string mib(size_t bytes) { return fixed(memory_mib(bytes), 2) + " MiB"; }

// Display width in characters (the table holds "–" and "×", two bytes each in UTF-8).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

const std::vector<std::string>& compare_columns() {
  static const std::vector<std::string> kColumns = {"Run",
                                                    "Images/s (median)",
                                                    "Speed-up",
                                                    "Step (ms, median)",
                                                    "Peak memory",
                                                    "FP32 master",
                                                    "Half copies",
                                                    "Gradients",
                                                    "Adam moments",
                                                    "Activations",
                                                    "Workspace",
                                                    "Data",
                                                    "Largest batch",
                                                    "Final loss D",
                                                    "Final loss G",
                                                    "Overflows D/G",
                                                    "nan_to_num D/G",
                                                    "Final S_D / S_G",
                                                    "SWD",
                                                    "FD",
                                                    "Steps",
                                                    "Folder"};
  static_assert(static_cast<int>(MemCategory::Count) == 7, "one column per memory category");
  return kColumns;
}

std::vector<std::string> compare_cells(const CompareRun& r, const CompareRun& baseline, bool is_baseline) {
  const RunSummary& s = r.summary;
  std::vector<std::string> c;
  c.push_back(r.ok ? r.label : r.label + " (incomplete)");
  c.push_back(fixed(s.median_images_per_s, 1));
  const double base = baseline.summary.median_images_per_s;
  c.push_back(is_baseline ? "1.00× (baseline)" : base > 0 ? fixed(s.median_images_per_s / base, 2) + "×" : "–");
  c.push_back(fixed(s.median_step_ms, 2));
  c.push_back(mib(r.memory.peak_total));
  for (int k = 0; k < static_cast<int>(MemCategory::Count); ++k) c.push_back(mib(r.memory.peak[k]));
  if (!r.max_batch_searched)
    c.push_back("–");
  else if (r.max_batch <= 0)
    c.push_back("none");
  else
    c.push_back(std::to_string(r.max_batch) + (r.max_batch_ratio > 0 ? " (" + fixed(r.max_batch_ratio, 2) + "×)" : ""));
  c.push_back(fixed(s.final_loss_d, 4));
  c.push_back(fixed(s.final_loss_g, 4));
  c.push_back(std::to_string(s.skipped_d) + " / " + std::to_string(s.skipped_g));
  c.push_back(std::to_string(s.replaced_d) + " / " + std::to_string(s.replaced_g));  // values replaced
  c.push_back(scale_label(s.final_scale_d) + " / " + scale_label(s.final_scale_g));
  c.push_back(fixed(s.swd, 2));
  c.push_back(fixed(s.fd, 2));
  c.push_back(std::to_string(s.steps));
  c.push_back(r.dir);
  return c;
}

std::string compare_verdict(const CompareRun& baseline, const CompareRun& amp, Precision amp_mode, bool on_cpu) {
  const double base = baseline.summary.median_images_per_s;
  if (!(base > 0) || !std::isfinite(amp.summary.median_images_per_s)) return {};
  std::string text = amp.label + " is " + fixed(amp.summary.median_images_per_s / base, 2) + "× the speed of FP32 here";
  if (on_cpu && is_mixed(amp_mode))
    text += std::string(" · ") + precision_name(amp_mode) +
            " on this CPU: " + cpu_precision_support(precision_name(amp_mode));
  return text;
}

std::string compare_table_text(const std::vector<CompareRun>& runs, bool tab_separated) {
  std::vector<std::vector<std::string>> rows{compare_columns()};
  for (size_t i = 0; i < runs.size(); ++i) rows.push_back(compare_cells(runs[i], runs[0], i == 0));
  std::string out;
  if (tab_separated) {
    for (const auto& row : rows) {
      for (size_t c = 0; c < row.size(); ++c) out += (c ? "\t" : "") + row[c];
      out += "\n";
    }
    return out;
  }
  // Transposed for the terminal: one line per column, one value column per run, so the 22
  // columns fit an 80-character terminal.
  size_t left = 0;
  for (const std::string& h : rows[0]) left = std::max(left, width(h));
  std::vector<size_t> col(rows.size(), 0);
  for (size_t r = 1; r < rows.size(); ++r)
    for (const std::string& v : rows[r]) col[r] = std::max(col[r], width(v));
  for (size_t c = 0; c < rows[0].size(); ++c) {
    std::string line = rows[0][c] + std::string(left - width(rows[0][c]) + 2, ' ');
    for (size_t r = 1; r < rows.size(); ++r) {
      const std::string& v = rows[r][c];
      const bool last = r + 1 == rows.size();
      line += v + (last ? "" : std::string(col[r] - width(v) + 2, ' '));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace ampgan
