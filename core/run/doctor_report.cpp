#include "core/run/doctor_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/amp/loss_scaler.h"
#include "core/io/atomic_file.h"

namespace ampgan {

namespace {

std::string fmt(const char* f, double x) {
  if (!std::isfinite(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string ratio(double x, double base) { return base > 0 && x > 0 ? fmt("%.2f", x / base) : "-"; }

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string verdict(const DoctorCandidate& c) {
  if (!c.error.empty()) return "error: " + c.error;
  if (!c.figures.complete) return "stopped at step " + std::to_string(c.figures.steps);
  if (c.stage == "reference") return "reference";
  return c.problems.empty() ? "clean" : joined(c.problems, "; ");
}

}  // namespace

const std::vector<std::string>& doctor_table_columns() {
  static const std::vector<std::string> c = {"#",         "candidate", "steps", "skips",  "underflow",
                                             "S_D / S_G", "Δloss",     "img/s", "×FP32",  "×AMP",
                                             "act MiB",   "×FP32",     "×AMP",  "verdict"};
  return c;
}

std::vector<std::vector<std::string>> doctor_table_rows(const DoctorResult& r) {
  std::vector<std::vector<std::string>> rows;
  const ProbeFigures* ref = r.candidates.empty() ? nullptr : &r.candidates[0].figures;
  const ProbeFigures* amp = r.candidates.size() > 1 ? &r.candidates[1].figures : nullptr;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const DoctorCandidate& c = r.candidates[i];
    const ProbeFigures& f = c.figures;
    const bool answer = static_cast<int>(i) == r.answer;
    rows.push_back({std::to_string(i) + (answer ? "*" : ""), c.label, std::to_string(f.steps),
                    fmt("%.1f%%", 100 * f.skip_rate), fmt("%.3f%%", 100 * f.underflow),
                    scale_label(f.final_scale_d) + " / " + scale_label(f.final_scale_g), fmt("%.2f", f.departure),
                    fmt("%.1f", f.images_per_s), ref ? ratio(f.images_per_s, ref->images_per_s) : "-",
                    amp ? ratio(f.images_per_s, amp->images_per_s) : "-", fmt("%.2f", f.activation_mib),
                    ref ? ratio(f.activation_mib, ref->activation_mib) : "-",
                    amp ? ratio(f.activation_mib, amp->activation_mib) : "-", verdict(c)});
  }
  return rows;
}

namespace {

// Display width (the headers hold "Δ" and "×", two bytes each in UTF-8).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

nlohmann::json figures_json(const ProbeFigures& f) {
  auto num = [](double x) -> nlohmann::json { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  nlohmann::json blamed = nlohmann::json::array();
  for (const auto& [layer, n] : f.blamed) blamed.push_back({{"layer", layer}, {"overflows", n}});
  return {{"steps", f.steps},
          {"complete", f.complete},
          {"skip_rate", num(f.skip_rate)},
          {"skipped_updates", f.skipped},
          {"underflow", num(f.underflow)},
          {"loss_d", num(f.loss_d)},
          {"loss_g", num(f.loss_g)},
          {"loss_departure", num(f.departure)},
          {"final_scale_d", f.final_scale_d},
          {"final_scale_g", f.final_scale_g},
          {"scale_at_floor", f.at_floor},
          {"scale_at_ceiling", f.at_ceiling},
          {"images_per_s", num(f.images_per_s)},
          {"activation_mib", f.activation_mib},
          {"peak_mib", f.peak_mib},
          {"blamed", blamed}};
}

}  // namespace

std::string doctor_table_text(const DoctorResult& r, bool markdown) {
  std::vector<std::vector<std::string>> rows{doctor_table_columns()};
  for (auto& row : doctor_table_rows(r)) rows.push_back(std::move(row));
  std::string out;
  if (markdown) {
    for (size_t i = 0; i < rows.size(); ++i) {
      out += "| " + joined(rows[i], " | ") + " |\n";
      if (i == 0) {
        out += "|";
        for (size_t c = 0; c < rows[0].size(); ++c) out += c == 1 || c + 1 == rows[0].size() ? "---|" : "---:|";
        out += "\n";
      }
    }
    return out;
  }
  std::vector<size_t> w(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], width(row[c]));
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool left = c == 1 || c + 1 == row.size();  // the label and the verdict
      const std::string pad(w[c] - width(row[c]), ' ');
      line += (c ? "  " : "") + (left ? row[c] + (c + 1 == row.size() ? "" : pad) : pad + row[c]);
    }
    out += line + "\n";
  }
  return out;
}

std::string doctor_answer_flags(const DoctorResult& r) {
  const DoctorCandidate* a = r.answer_candidate();
  return a ? joined(a->flags, " ") : "";
}

nlohmann::json doctor_json(const DoctorResult& r) {
  nlohmann::json cands = nlohmann::json::array();
  for (const DoctorCandidate& c : r.candidates)
    cands.push_back({{"label", c.label},
                     {"stage", c.stage},
                     {"flags", c.flags},
                     {"dir", c.dir},
                     {"clean", c.stage != "reference" && c.clean()},  // the reference is not judged
                     {"problems", c.problems},
                     {"error", c.error},
                     {"figures", figures_json(c.figures)}});
  const DoctorCandidate* a = r.answer_candidate();
  return {{"precision", precision_name(r.base.precision)},
          {"limits",
           {{"warmup_steps", r.limits.warmup_steps},
            {"target_skips", r.limits.target_skips},
            {"max_underflow", r.limits.max_underflow},
            {"max_loss_departure", r.limits.max_loss_departure}}},
          {"probe_steps", r.probe_steps},
          {"budget_steps", r.budget_steps},
          {"steps_used", r.steps_used},
          {"stopped", r.stopped},
          {"budget_spent", r.budget_spent},
          {"answer", a ? nlohmann::json(r.answer) : nlohmann::json()},
          {"answer_label", a ? a->label : ""},
          {"answer_flags", a ? nlohmann::json(a->flags) : nlohmann::json::array()},
          {"clean", r.clean},
          {"summary", r.summary},
          {"config", doctor_config_json(r)},
          {"candidates", cands}};
}

std::string doctor_markdown(const DoctorResult& r) {
  std::string md = "# Precision doctor: " + std::string(precision_label(r.base.precision)) + "\n\n";
  md += r.summary + "\n\n";
  const std::string flags = doctor_answer_flags(r);
  if (!flags.empty())
    md += "Train with: `ampgan train ... " + flags + "` or `ampgan train --config " + kDoctorConfig +
          "` (in the studio: File ▸ Load settings, or `ampgan-studio --config " + kDoctorConfig + "`)\n\n";
  md += doctor_table_text(r, true);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\nEach probe: %d steps from the same seed and data order; the first %d (warm-up) are not judged. "
                "Clean: skipped updates at most %.3g%%, underflow (zero or subnormal gradient values) at most "
                "%.3g%%, the loss scale not at its floor or ceiling throughout, and mean losses within %.2f "
                "(relative) of the FP32 reference. Speed and activation memory: against FP32 (row 0) and plain "
                "AMP (row 1). `*` marks the answer.\n",
                r.probe_steps, r.limits.warmup_steps, 100 * r.limits.target_skips, 100 * r.limits.max_underflow,
                r.limits.max_loss_departure);
  return md + buf;
}

void write_doctor_report(const DoctorResult& r, const std::filesystem::path& dir) {
  io::ensure_writable_dir(dir);
  io::write_file_atomic(dir / kDoctorJson, doctor_json(r).dump(2) + "\n");
  io::write_file_atomic(dir / kDoctorMarkdown, doctor_markdown(r));
  io::write_file_atomic(dir / kDoctorConfig, doctor_config_json(r).dump(2) + "\n");
}

}  // namespace ampgan
