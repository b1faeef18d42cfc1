// The FP32-against-AMP comparison, as `ampgan compare` and the studio's Compare run it: the same
// configuration trained twice, from the same seed, weights and data order, only the precision
// differing. One folder holds both runs, each an ordinary run folder that can be reopened or
// resumed:  <root>/fp32  and  <root>/<amp>  (e.g. fp16).
#pragma once

#include <array>
#include <string>

#include "core/amp/precision.h"
#include "core/run/run_config.h"

namespace ampgan {

// The precisions compared, baseline first.
inline std::array<Precision, 2> compare_modes(Precision amp) { return {Precision::FP32, amp}; }

// `base.out_dir` if set, else <runs_root>/<date>-compare-<dataset>-<amp>.
std::string compare_root(const RunConfig& base, Precision amp);

// The configuration of one of the two runs: `base` in precision `mode`, in <root>/<mode>.
RunConfig compare_run_config(const RunConfig& base, Precision mode, const std::string& root);

// Refuses an AMP mode that compares nothing (FP32 against itself), naming `input`.
void check_compare_mode(Precision amp, const std::string& input);

}  // namespace ampgan
