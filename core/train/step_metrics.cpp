#include "core/train/step_metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/common/error.h"

namespace ampgan {

const std::vector<std::string>& StepMetrics::columns() {
  static const std::vector<std::string> c = {
      "step",      "precision", "loss_d",    "loss_g",    "d_real",      "d_fake",      "grad_norm_d", "grad_norm_g",
      "scale_d",   "scale_g",   "skipped_d", "skipped_g", "underflow_d", "underflow_g", "step_ms",     "images_per_s",
      "memory_mb", "time_s",    "swd",       "fd",        "replaced_d",  "replaced_g"};
  return c;
}

namespace {
// A skip count from metrics.csv: 0 or 1 before n_dis, up to n_dis (at most 100) since; anything
// else in a hand-edited file is read as 0 rather than cast out of range.
int skip_count(double d) { return d >= 0 && d <= 100 ? static_cast<int>(d) : 0; }

std::string num(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

std::string StepMetrics::csv_row() const {
  std::string s;
  s += std::to_string(step) + "," + precision_name(precision) + ",";
  for (double v : {loss_d, loss_g, d_real, d_fake, grad_norm_d, grad_norm_g, scale_d, scale_g}) s += num(v) + ",";
  s += std::to_string(skipped_d) + "," + std::to_string(skipped_g) + ",";
  for (double v : {underflow_d, underflow_g, step_ms, images_per_s, memory_mb, time_s, swd}) s += num(v) + ",";
  s += num(fd) + "," + std::to_string(replaced_d) + "," + std::to_string(replaced_g);
  return s;
}

StepMetrics StepMetrics::from_csv_row(const std::vector<std::string>& header, const std::vector<std::string>& cells) {
  StepMetrics m;
  for (size_t i = 0; i < header.size() && i < cells.size(); ++i) {
    const std::string& k = header[i];
    const std::string& v = cells[i];
    const double d = v.empty() ? NAN : std::strtod(v.c_str(), nullptr);
    if (k == "step")
      m.step = std::strtoll(v.c_str(), nullptr, 10);
    else if (k == "precision")
      m.precision = parse_precision(v);
    else if (k == "loss_d")
      m.loss_d = d;
    else if (k == "loss_g")
      m.loss_g = d;
    else if (k == "d_real")
      m.d_real = d;
    else if (k == "d_fake")
      m.d_fake = d;
    else if (k == "grad_norm_d")
      m.grad_norm_d = d;
    else if (k == "grad_norm_g")
      m.grad_norm_g = d;
    else if (k == "scale_d")
      m.scale_d = d;
    else if (k == "scale_g")
      m.scale_g = d;
    else if (k == "skipped_d")
      m.skipped_d = skip_count(d);
    else if (k == "skipped_g")
      m.skipped_g = skip_count(d);
    else if (k == "underflow_d")
      m.underflow_d = d;
    else if (k == "underflow_g")
      m.underflow_g = d;
    else if (k == "step_ms")
      m.step_ms = d;
    else if (k == "images_per_s")
      m.images_per_s = d;
    else if (k == "memory_mb")
      m.memory_mb = d;
    else if (k == "time_s")
      m.time_s = d;
    else if (k == "swd")
      m.swd = d;
    else if (k == "fd")
      m.fd = d;
    else if (k == "replaced_d")
      m.replaced_d = v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "replaced_g")
      m.replaced_g = v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10);
  }
  return m;
}

}  // namespace ampgan
