#include "core/run/doctor_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/run/run_summary.h"
#include "core/settings/settings_table.h"

namespace ampgan {

namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", 100.0 * share);
  return buf;
}

// A number as an option's value: the shortest text that reads back as the same FP32 value (the
// settings are FP32), so 0.0001 stays 0.0001 and 2^-14 is exact.
std::string number_text(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  const float x = static_cast<float>(v.get<double>());
  char buf[64];
  for (int digits = 6; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(x));
    if (std::strtof(buf, nullptr) == x) break;
  }
  return buf;
}

// The per-network departure |p - r| / max(|r|, 0.1); inf when either is not finite.
double departure(double probe, double ref) {
  if (!std::isfinite(probe) || !std::isfinite(ref)) return INFINITY;
  return std::fabs(probe - ref) / std::max(std::fabs(ref), 0.1);
}

}  // namespace

bool scaling_on(const RunConfig& c) { return uses_loss_scaling(c.amp_strategy, c.precision, c.bf16_loss_scaling); }

ProbeFigures measure_probe(const std::vector<StepMetrics>& rows, const std::vector<RunEvent>& events,
                           const RunConfig& cfg, const DoctorLimits& limits, const ProbeFigures* reference) {
  ProbeFigures f;
  f.steps = rows.empty() ? 0 : rows.back().step;
  f.complete = f.steps >= cfg.steps;
  const bool scaling = scaling_on(cfg);
  double loss_d = 0, loss_g = 0, underflow = 0;
  int n = 0, updates = 0;
  bool all_floor_d = true, all_floor_g = true, all_ceil_d = true, all_ceil_g = true;
  int skips_d = 0, skips_g = 0;
  double prev_d = NAN, prev_g = NAN;
  for (const StepMetrics& m : rows) {
    if (m.step <= limits.warmup_steps) {
      prev_d = m.scale_d, prev_g = m.scale_g;
      continue;
    }
    ++n;
    f.skipped += m.skipped_d + m.skipped_g;
    skips_d += m.skipped_d;
    skips_g += m.skipped_g;
    updates += cfg.n_dis + 1;
    loss_d += m.loss_d;
    loss_g += m.loss_g;
    underflow += std::max(m.underflow_d, m.underflow_g);
    all_floor_d &= m.scale_d <= cfg.scaler.min_scale;
    all_floor_g &= m.scale_g <= cfg.scaler.min_scale;
    all_ceil_d &= m.scale_d >= cfg.scaler.max_scale;
    all_ceil_g &= m.scale_g >= cfg.scaler.max_scale;
    f.scale_grew |= (std::isfinite(prev_d) && m.scale_d > prev_d) || (std::isfinite(prev_g) && m.scale_g > prev_g);
    prev_d = m.scale_d, prev_g = m.scale_g;
  }
  if (n > 0) {
    f.skip_rate = static_cast<double>(f.skipped) / updates;
    f.underflow = underflow / n;
    f.loss_d = loss_d / n;
    f.loss_g = loss_g / n;
    // At the floor and still overflowing (the "scale_floor" alert's pattern): below the floor a
    // scale set that low by hand is not stuck, only small.
    f.at_floor = scaling && ((all_floor_d && skips_d > 0) || (all_floor_g && skips_g > 0));
    f.at_ceiling = scaling && (all_ceil_d || all_ceil_g);
  }
  if (!rows.empty()) {
    f.final_scale_d = rows.back().scale_d;
    f.final_scale_g = rows.back().scale_g;
    f.images_per_s = summarize(rows).median_images_per_s;
  }
  if (reference) f.departure = std::max(departure(f.loss_d, reference->loss_d), departure(f.loss_g, reference->loss_g));
  // Overflows after the warm-up only (those before it are the scaler finding its level), unless
  // there were none after it.
  std::map<std::string, int> blame;
  for (int after : {limits.warmup_steps, 0}) {
    for (const RunEvent& e : events) {
      if (e.type != EventType::Overflow || e.step <= after) continue;
      const std::string layer = e.data.value("forward_layer", e.data.value("layer", std::string()));
      if (!layer.empty()) ++blame[layer];
    }
    if (!blame.empty()) break;
  }
  f.blamed.assign(blame.begin(), blame.end());
  std::stable_sort(f.blamed.begin(), f.blamed.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return f;
}

std::vector<std::string> judge_probe(const ProbeFigures& f, const DoctorLimits& limits) {
  std::vector<std::string> p;
  if (f.steps <= limits.warmup_steps) return {"no steps after the warm-up"};
  if (f.skip_rate > limits.target_skips)
    p.push_back("skip rate " + percent(f.skip_rate) + " > " + percent(limits.target_skips));
  if (f.underflow > limits.max_underflow)
    p.push_back("underflow " + percent(f.underflow) + " > " + percent(limits.max_underflow));
  if (f.at_floor) p.push_back("scale stuck at its floor");
  if (f.at_ceiling) p.push_back("scale stuck at its ceiling");
  if (!std::isfinite(f.loss_d) || !std::isfinite(f.loss_g))
    p.push_back("non-finite loss");
  else if (f.departure > limits.max_loss_departure) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "loss departs from FP32 by %.2f > %.2f", f.departure, limits.max_loss_departure);
    p.push_back(buf);
  }
  return p;
}

std::vector<std::string> config_flags(const RunConfig& from, const RunConfig& to) {
  std::vector<std::string> out;
  for (const Setting& s : settings()) {
    if (!s.flag) continue;
    const std::string key = s.key;
    if (key == "out" || key == "name" || key == "steps") continue;
    const nlohmann::json a = s.get(from), b = s.get(to);
    if (a == b) continue;
    if (s.type == SettingType::Bool) {
      // A switch sets one value; the other is the default, which needs no option.
      if (b.get<bool>() == s.switch_sets) out.push_back(std::string("--") + s.flag);
      continue;
    }
    const std::string v = b.is_number() ? number_text(b) : b.is_string() ? b.get<std::string>() : b.dump();
    out.push_back(std::string("--") + s.flag + " " + (v.empty() ? "''" : v));
  }
  return out;
}

}  // namespace ampgan
