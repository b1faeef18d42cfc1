#include "core/run/precision_doctor.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/common/error.h"
#include "core/nn/layer_policy.h"
#include "core/run/run_summary.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

// What a probe's Session reports, kept for its figures.
class Collector final : public SessionListener {
 public:
  std::vector<StepMetrics> rows;
  std::vector<RunEvent> events;
  std::function<void(int64_t, int64_t)> on_steps;
  int64_t steps = 0;
  void on_metrics(const std::vector<StepMetrics>& r) override {
    rows.insert(rows.end(), r.begin(), r.end());
    if (on_steps && !r.empty()) on_steps(r.back().step, steps);
  }
  void on_event(const RunEvent& e) override {
    if (e.type == EventType::Overflow) events.push_back(e);
  }
};

std::string slug(const std::string& label) {
  std::string s;
  for (char ch : label) {
    const bool word = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.';
    if (word)
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s;
}

std::string pow2_label(double s) {
  const int k = static_cast<int>(std::lround(std::log2(s)));
  return std::ldexp(1.0, k) == s ? "2^" + std::to_string(k) : std::to_string(s);
}

// How far a candidate is from clean, for choosing the best of unclean ones and for deciding
// whether a remedy helped: each limit's excess as a multiple of the limit.
double badness(const DoctorCandidate& c, const DoctorLimits& l) {
  const ProbeFigures& f = c.figures;
  double b = f.skip_rate / l.target_skips + f.underflow / l.max_underflow + (f.at_floor || f.at_ceiling ? 1 : 0);
  if (std::isfinite(f.departure)) b += f.departure / l.max_loss_departure;
  if (!std::isfinite(f.loss_d) || !std::isfinite(f.loss_g)) b += 10;
  return b;
}

bool usable(const DoctorCandidate& c) { return c.error.empty() && c.figures.complete && c.stage != "reference"; }

std::string summary_of(const DoctorResult& r) {
  const DoctorCandidate* a = r.answer_candidate();
  std::string s = r.stopped ? "stopped after " + std::to_string(r.candidates.size()) + " probe(s); " : "";
  if (!a) return s + "no answer: the plain probe did not finish";
  std::string flags;
  for (const std::string& f : a->flags) flags += (flags.empty() ? "" : " ") + f;
  if (a->stage == "plain" && r.clean) return s + a->label + " trains cleanly here: no remedy needed";
  if (r.clean) return s + "answer: " + a->label + " (" + flags + "), clean";
  std::string why;
  for (const std::string& p : a->problems) why += (why.empty() ? "" : "; ") + p;
  return s + "no clean candidate " + (r.stopped ? "so far" : "within the budget") + "; the best: " + a->label +
         (flags.empty() ? "" : " (" + flags + ")") + ": " + why;
}

// The answer: the clean candidate the search stopped at, else the best so far (the cheapest of
// equals: tried first); whether it was stopped; the summary line.
void finalize(DoctorResult& r, const DoctorOptions& opt) {
  r.stopped = opt.stop && opt.stop->load();
  if (r.answer < 0) {
    for (int i = 0; i < static_cast<int>(r.candidates.size()); ++i) {
      const DoctorCandidate& c = r.candidates[i];
      if (!usable(c)) continue;
      const DoctorCandidate* b = r.answer_candidate();
      if (!b || c.problems.size() < b->problems.size() ||
          (c.problems.size() == b->problems.size() && badness(c, opt.limits) < badness(*b, opt.limits)))
        r.answer = i;
    }
  }
  r.clean = r.answer >= 0 && r.candidates[r.answer].clean();
  r.summary = summary_of(r);
}

class Search {
 public:
  Search(const RunConfig& base, const DoctorOptions& opt, DoctorResult& r) : base_(base), opt_(opt), r_(r) {
    budget_ = r.budget_steps;
  }

  void run() {
    RunConfig ref = base_;
    ref.precision = Precision::FP32;
    if (probe("FP32 reference", "reference", ref) < 0) return;
    const int plain = probe(std::string("plain ") + precision_name_upper(), "plain", base_);
    if (plain < 0) return;
    current_ = plain;
    if (r_.candidates[plain].clean()) {
      r_.answer = plain;
      return;
    }
    if (!usable(r_.candidates[plain])) return;  // the user's own settings were refused
    if (scaler_stage() || fp32_layer_stage()) return;
    const int blocks = std::max(1, std::min(blocks_g_, blocks_d_) / 2);
    const int have = r_.candidates[current_].config.half_blocks;
    if (have < 0 || have > blocks)
      if (attempt("half precision in " + std::to_string(blocks) + " blocks", "half-blocks",
                  [&](RunConfig& c) { c.half_blocks = blocks; }))
        return;
    if (base_.conv_clamp == 0.0f && attempt("conv clamp 256", "clamp", [](RunConfig& c) { c.conv_clamp = 256.0f; }))
      return;
    if (base_.amp_strategy != AmpStrategy::NanToNum)
      attempt("nan_to_num gradients", "nan_to_num", [](RunConfig& c) { c.amp_strategy = AmpStrategy::NanToNum; });
  }

  int current() const { return current_; }

 private:
  std::string precision_name_upper() const { return base_.precision == Precision::BF16 ? "BF16" : "FP16"; }

  bool stopped() const { return opt_.stop && opt_.stop->load(); }

  // The loss scaler's settings: where the scale settled when it overflows, a longer growth
  // interval when it overflowed after growing, per-network scalers instead of a shared one; a
  // higher initial scale when gradients underflow; scaling on where it was off.
  bool scaler_stage() {
    const DoctorCandidate& cur = r_.candidates[current_];
    const ProbeFigures f = cur.figures;
    const bool overflow = f.skip_rate > opt_.limits.target_skips || f.at_floor;
    const bool underflow = f.underflow > opt_.limits.max_underflow;
    if (!overflow && !underflow) return false;
    const RunConfig c0 = cur.config;
    if (!scaling_on(c0))
      return underflow &&
             attempt("loss scaling on", "scaler", [](RunConfig& c) { c.amp_strategy = AmpStrategy::Scale; });
    if (overflow) {
      const double settled = std::min(f.final_scale_d, f.final_scale_g);
      const float level = std::ldexp(1.0f, static_cast<int>(std::floor(std::log2(settled))));
      if (level < c0.scaler.init_scale && level >= c0.scaler.min_scale &&
          attempt("init scale " + pow2_label(level), "scaler", [&](RunConfig& c) { c.scaler.init_scale = level; }))
        return true;
      if (f.scale_grew) {
        const int interval = static_cast<int>(std::min<int64_t>(1000000, 10LL * c0.scaler.growth_interval));
        if (attempt("growth interval " + std::to_string(interval), "scaler",
                    [&](RunConfig& c) { c.scaler.growth_interval = interval; }))
          return true;
      }
      if (c0.shared_scaler && attempt("per-network scalers", "scaler", [](RunConfig& c) { c.shared_scaler = false; }))
        return true;
    }
    if (underflow) {
      const float raised = std::min(c0.scaler.max_scale, std::max(65536.0f, c0.scaler.init_scale * 256.0f));
      if (raised > c0.scaler.init_scale &&
          attempt("init scale " + pow2_label(raised), "scaler", [&](RunConfig& c) { c.scaler.init_scale = raised; }))
        return true;
      if (r_.candidates[current_].config.scaler.growth_interval > 20 &&
          attempt("growth interval 20", "scaler", [](RunConfig& c) { c.scaler.growth_interval = 20; }))
        return true;
    }
    return false;
  }

  // FP32 for the layers the locator names, one at a time, most-blamed first: a layer that helps
  // stays and the next blame comes from its probe; one that does not is dropped again.
  bool fp32_layer_stage() {
    std::set<std::string> refused;  // tried on the current base without helping
    int added = 0;
    while (added < opt_.max_fp32_layers && !stopped() && !r_.budget_spent) {
      const DoctorCandidate& cur = r_.candidates[current_];
      std::string layer;
      for (const auto& [name, count] : cur.figures.blamed) {
        const auto& kept = cur.config.fp32_layers;
        if (std::find(kept.begin(), kept.end(), name) == kept.end() && !refused.count(name)) {
          layer = name;
          break;
        }
      }
      if (layer.empty()) return false;
      const int before = current_;
      if (attempt("+ FP32 " + layer, "fp32-layers", [&](RunConfig& c) { c.fp32_layers.push_back(layer); })) return true;
      if (current_ != before) {
        ++added;
        refused.clear();
      } else {
        refused.insert(layer);
      }
    }
    return false;
  }

  // A remedy on top of the current best: probed; the answer when clean, the new base when it
  // helps by a margin (a quarter of its distance from clean, or a problem fewer), so that noise
  // adds no remedy.
  template <typename F>
  bool attempt(const std::string& label, const std::string& stage, F&& change) {
    RunConfig c = r_.candidates[current_].config;
    change(c);
    const int i = probe(label, stage, c);
    if (i < 0) return false;
    const DoctorCandidate& cand = r_.candidates[i];
    if (cand.clean()) {
      r_.answer = i;
      return true;
    }
    const DoctorCandidate& cur = r_.candidates[current_];
    if (usable(cand) &&
        (cand.problems.size() < cur.problems.size() || (cand.problems.size() == cur.problems.size() &&
                                                        badness(cand, opt_.limits) < 0.75 * badness(cur, opt_.limits))))
      current_ = i;
    return false;
  }

  // One probe from the same start; its index, or -1 when stopped or out of budget first.
  int probe(const std::string& label, const std::string& stage, const RunConfig& cfg) {
    if (stopped()) return -1;
    if (r_.steps_used + opt_.probe_steps > budget_) {
      r_.budget_spent = true;
      return -1;
    }
    DoctorCandidate c;
    c.label = label;
    c.stage = stage;
    c.config = cfg;
    c.flags = config_flags(base_, cfg);
    const int index = static_cast<int>(r_.candidates.size());
    char num[8];
    std::snprintf(num, sizeof num, "%02d-", index);
    c.dir = (fs::path(base_.out_dir) / "probes" / (num + slug(label))).string();
    RunConfig pc = cfg;
    pc.steps = opt_.probe_steps;
    pc.out_dir = c.dir;
    pc.name.clear();
    pc.sample_every = pc.checkpoint_every = pc.eval_every = pc.hist_every = 0;
    pc.tensorboard = false;
    if (opt_.on_start) opt_.on_start(label, index);
    Collector col;
    col.on_steps = opt_.on_steps;
    col.steps = pc.steps;
    MemoryStats mem;
    bool created = false;
    try {
      SessionOptions so;
      so.listener = &col;
      so.cancel = opt_.stop;
      so.make_backend = opt_.make_backend;
      auto s = Session::create(pc, so);
      created = true;
      if (opt_.on_session) opt_.on_session(*s);
      blocks_g_ = block_count(s->trainer().generator());
      blocks_d_ = block_count(s->trainer().discriminator());
      s->run(opt_.stop);
      s->finish(stopped() ? "interrupted" : "finished");
      mem = s->backend().memory_stats();
    } catch (const Error& e) {
      // The user's own settings refused (a missing dataset, a bad value): nothing to search, the
      // error is the command's. A remedy refused, or a probe that diverged, is a finding.
      if (!created && !stopped() && (stage == "reference" || stage == "plain")) throw;
      c.error = e.what();
    }
    const ProbeFigures* ref = stage == "reference" || r_.candidates.empty() ? nullptr : &r_.candidates[0].figures;
    c.figures = measure_probe(col.rows, col.events, pc, opt_.limits, ref);
    c.figures.activation_mib = memory_mib(mem.peak[static_cast<size_t>(MemCategory::Activation)]);
    c.figures.peak_mib = memory_mib(mem.peak_total);
    r_.steps_used += c.figures.steps;
    if (stage != "reference") c.problems = judge_probe(c.figures, opt_.limits);
    r_.candidates.push_back(std::move(c));
    if (opt_.on_probe) {
      DoctorResult so_far = r_;
      finalize(so_far, opt_);
      opt_.on_probe(so_far);
    }
    return index;
  }

  const RunConfig& base_;
  const DoctorOptions& opt_;
  DoctorResult& r_;
  int64_t budget_ = 0;
  int current_ = -1;
  int blocks_g_ = 1, blocks_d_ = 1;
};

}  // namespace

DoctorResult run_precision_doctor(const RunConfig& base, const DoctorOptions& opt) {
  if (!is_mixed(base.precision))
    throw Error(std::string("the doctor examines a half precision, not ") + precision_name(base.precision),
                "--precision", "use --precision fp16 or bf16");
  if (base.out_dir.empty())
    throw Error("the doctor needs a folder for its probes and report", "--out", "add --out DIR");
  if (opt.probe_steps <= opt.limits.warmup_steps)
    throw Error("a probe of " + std::to_string(opt.probe_steps) + " steps has no steps after the warm-up of " +
                    std::to_string(opt.limits.warmup_steps),
                "--probe-steps", "use more probe steps than warm-up steps");
  base.validate();
  std::error_code ec;
  const fs::path probes = fs::path(base.out_dir) / "probes";
  if (fs::exists(probes, ec) && !fs::is_empty(probes, ec))
    throw Error("the folder holds an earlier doctor's probes", probes.string(),
                "choose another --out, or delete that folder");
  DoctorResult r;
  r.base = base;
  r.limits = opt.limits;
  r.probe_steps = opt.probe_steps;
  r.budget_steps = opt.budget_steps > 0 ? opt.budget_steps : 12LL * opt.probe_steps;
  Search search(base, opt, r);
  search.run();
  finalize(r, opt);
  return r;
}

nlohmann::json doctor_config_json(const DoctorResult& r) {
  const RunConfig& c = r.answer_candidate() ? r.answer_candidate()->config : r.base;
  const nlohmann::json mine = c.to_json(), defaults = RunConfig().to_json();
  nlohmann::json out = nlohmann::json::object();
  for (auto it = mine.begin(); it != mine.end(); ++it) {
    const std::string& k = it.key();
    if (k == "out" || k == "name" || k == "world_size") continue;
    if (!defaults.contains(k) || defaults[k] != it.value()) out[k] = it.value();
  }
  return out;
}

}  // namespace ampgan
