// The FP32-against-AMP comparison, as `ampgan compare` and the studio's Compare run it: the same
// configuration trained twice, from the same seed, weights and data order, only the precision
// differing. One folder holds both runs, each an ordinary run folder that can be reopened or
// resumed:  <root>/fp32  and  <root>/<amp>  (e.g. fp16).
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <string>

#include "core/amp/precision.h"
#include "core/run/run_summary.h"
#include "core/settings/run_config.h"
#include "core/train/max_batch.h"

namespace ampgan {

// The precisions compared, baseline first.
inline std::array<Precision, 2> compare_modes(Precision amp) { return {Precision::FP32, amp}; }

// `base.out_dir` if set, else <runs_root>/<date>-compare-<dataset>-<amp>.
std::string compare_root(const RunConfig& base, Precision amp);

// The configuration of one of the two runs: `base` in precision `mode`, in <root>/<mode>.
RunConfig compare_run_config(const RunConfig& base, Precision mode, const std::string& root);

// The comparison's largest-batch search: FP32 and `amp` on `base`'s model and settings (channels:
// the dataset's), probing at base.batch and twice it. The budget: on a GPU 90% of its free memory,
// on the CPU base.memory_budget_mib. Stop and progress as in MaxBatchOptions.
MaxBatchResult compare_max_batch(const RunConfig& base, Precision amp, int channels, const std::atomic<bool>* stop,
                                 std::function<void(const std::string& what, int done, int total)> progress);
// The Largest batch cell of the run of precision `mode` (left unsearched where a stopped search
// had not reached it).
void set_max_batch(CompareRun& run, Precision mode, const MaxBatchResult& r);
// "FP16 AMP fits 1.6× the FP32 batch (22 against 14) within 1024 MiB (memory budget)", or what
// went wrong; empty when nothing was searched.
std::string compare_max_batch_verdict(const MaxBatchResult& r, Precision amp);

// Refuses an AMP mode that compares nothing (FP32 against itself), naming `input`.
void check_compare_mode(Precision amp, const std::string& input);

}  // namespace ampgan
