// The precision doctor: finds the cheapest remedy that makes a half-precision run train cleanly.
// A short FP32 reference and a short probe in the run's half precision, same seed and data order;
// when the probe is not clean (doctor_verdict.h says what clean means), short probes of remedies
// from the same start, cheapest first: the loss scaler's settings, FP32 for the layers the
// overflow locator names (greedy, most-blamed first), half precision only in the highest-
// resolution blocks, an activation clamp, nan_to_num gradients. Each probe is an ordinary run
// folder under <out>/probes. Bounded by a step budget and stoppable between and within probes:
// the result then holds the best answer so far. `ampgan doctor` prints and writes it
// (doctor_report.h).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/run/doctor_verdict.h"
#include "core/run/session.h"
#include "core/settings/run_config.h"

namespace ampgan {

struct DoctorResult;

struct DoctorOptions {
  DoctorLimits limits;
  int probe_steps = 40;      // steps of each probe (the reference's too)
  int64_t budget_steps = 0;  // steps of all probes together; 0: 12 probes' worth
  int max_fp32_layers = 4;   // the greedy search's most layers kept in FP32
  const std::atomic<bool>* stop = nullptr;
  // After each probe (finished or stopped): the result so far, its answer the best candidate yet
  // (what a stop now would return), for progress lines and a report that a second Ctrl-C leaves
  // whole; it may set *stop.
  std::function<void(const DoctorResult& so_far)> on_probe;
  // Before each probe: its label ("plain FP16", "+ FP32 D.2"); during it, the steps done.
  std::function<void(const std::string& label, int index)> on_start;
  std::function<void(int64_t step, int64_t steps)> on_steps;
  // For tests: the backend each probe trains on, and a hook once its Session exists.
  std::function<std::unique_ptr<Backend>()> make_backend;
  std::function<void(Session&)> on_session;
};

struct DoctorResult {
  RunConfig base;  // the user's configuration (its precision the one examined)
  DoctorLimits limits;
  int probe_steps = 0;
  int64_t budget_steps = 0;
  std::vector<DoctorCandidate> candidates;  // in the order tried: [0] FP32, [1] plain AMP
  int answer = -1;       // index of the answer in candidates; -1: none (stopped before the plain probe)
  bool clean = false;    // the answer's probe was clean
  bool stopped = false;  // stopped by the caller (Ctrl-C)
  bool budget_spent = false;
  int64_t steps_used = 0;
  std::string summary;  // one line: what the answer is and why
  const DoctorCandidate* answer_candidate() const { return answer >= 0 ? &candidates[answer] : nullptr; }
};

// Runs the search; probes go to <base.out_dir>/probes/NN-<slug>. base.precision must be fp16 or
// bf16 (Error otherwise). The user's own settings refused by the reference's or the plain probe's
// Session (a missing dataset) throw that Error; errors of a remedy's probe (settings it refuses, a
// run that diverged) are recorded on its candidate.
DoctorResult run_precision_doctor(const RunConfig& base, const DoctorOptions& opt);

// The answer's configuration as a --config file's JSON: every setting that differs from the
// defaults, without the output folder, name and recorded fields (so `ampgan train --config FILE`
// trains the user's run with the remedy, for base.steps steps).
nlohmann::json doctor_config_json(const DoctorResult& r);

}  // namespace ampgan
