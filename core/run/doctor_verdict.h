// What the precision doctor measures on a probe and when it calls the probe clean. A probe is a
// short run; its first `warmup_steps` steps are left out (the loss scaler finds its level there:
// from 2^16 a DCGAN's D settles near 2^9 in about 7 skipped steps). After the warm-up a probe is
// clean when all of these hold:
//  - skip rate: skipped updates / updates (D's n_dis and G's one per step, both networks) at most
//    `target_skips`;
//  - underflow: the mean over steps of the larger of underflow_d and underflow_g (the share of
//    gradient values that are zero or subnormal in the compute format) at most `max_underflow`;
//  - the loss scale (when scaling is on) of neither network at its floor on every step while that
//    network still overflows (it cannot back off further), nor at its ceiling on every step (it
//    cannot grow);
//  - loss departure: for D and G, |mean loss of the probe - mean loss of the FP32 reference|
//    / max(|mean loss of the reference|, 0.1), over the same steps, at most `max_loss_departure`,
//    and every loss finite.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/run/run_event.h"
#include "core/settings/run_config.h"
#include "core/train/step_metrics.h"

namespace ampgan {

struct DoctorLimits {
  int warmup_steps = 10;
  double target_skips = 0.05;       // share of updates skipped after the warm-up
  double max_underflow = 0.01;      // share of gradient values zero or subnormal
  double max_loss_departure = 0.5;  // relative to the FP32 reference's mean loss
};

// The figures of one probe, from its metrics rows, its overflow events and its backend.
struct ProbeFigures {
  int64_t steps = 0;  // steps trained (fewer than asked when stopped)
  bool complete = false;
  double skip_rate = 0, underflow = 0;  // after the warm-up (definitions above)
  int skipped = 0;                      // skipped updates after the warm-up, D and G together
  double loss_d = NAN, loss_g = NAN;    // means after the warm-up
  double departure = NAN;               // against the FP32 reference (NaN for the reference itself)
  double final_scale_d = 1, final_scale_g = 1;
  bool at_floor = false, at_ceiling = false;  // (scaling on) every step after the warm-up (above)
  bool scale_grew = false;                    // the scale grew at least once after the warm-up
  double images_per_s = 0;                    // median, warm-up excluded (RunSummary)
  double activation_mib = 0, peak_mib = 0;    // peak activation memory, peak of all categories
  // Where overflows started, most-blamed first: each overflow event counts for its forward layer
  // when the forward pass overflowed, else for its first non-finite gradient's layer.
  std::vector<std::pair<std::string, int>> blamed;
};

struct DoctorCandidate {
  std::string label;  // "FP32 reference", "plain FP16", "init scale 2^10", "+ FP32 D.2"
  std::string stage;  // reference, plain, scaler, fp32-layers, half-blocks, clamp, nan_to_num
  RunConfig config;
  std::vector<std::string> flags;  // `ampgan train` options that differ from the user's
  std::string dir;                 // its run folder
  ProbeFigures figures;
  std::vector<std::string> problems;  // empty: clean (for the reference: nothing is judged)
  std::string error;                  // the probe could not run (its settings were refused)
  bool clean() const { return error.empty() && figures.complete && problems.empty(); }
};

// The figures of a finished probe (warm-up from limits; reference: the FP32 candidate's figures,
// for the loss departure; nullptr for the reference itself).
ProbeFigures measure_probe(const std::vector<StepMetrics>& rows, const std::vector<RunEvent>& events,
                           const RunConfig& cfg, const DoctorLimits& limits, const ProbeFigures* reference);

// What is wrong with a probe, one phrase each ("skip rate 12.5% > 5%"); empty: clean.
std::vector<std::string> judge_probe(const ProbeFigures& f, const DoctorLimits& limits);

// Whether the loss scaler is on for a configuration (fp16 unless the strategy says otherwise; bf16
// with scaling asked for).
bool scaling_on(const RunConfig& c);

// The options of `ampgan train` that turn configuration `from` into `to` ("--init-scale 1024",
// "--fp32-layers D.2"), in the settings table's order; the output folder and name are left out.
std::vector<std::string> config_flags(const RunConfig& from, const RunConfig& to);

}  // namespace ampgan
