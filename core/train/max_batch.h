// The largest batch that fits a memory budget, in each precision: the search behind `ampgan bench
// --max-batch`, `ampgan compare --max-batch` and the studio's Compare. Peak memory of two steps is
// measured at two batch sizes (each on a fresh backend, so a grow-only cache of one size is not
// counted at the next), a line is fitted (core/train/memory_fit.h), the largest batch within the
// budget is predicted and then checked by running two steps there, stepping down where the peak
// was over. Out of memory (a GPU's) at any batch is a result, named in the row, never a crash.
// No printing here: the callers print from the result.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/amp/precision.h"
#include "core/backend/backend.h"
#include "core/train/memory_fit.h"
#include "core/train/trainer.h"

namespace ampgan {

struct MaxBatchProbe {
  int batch = 0;
  MemoryStats mem;
  bool oom = false;
  std::string why;  // what ran out, when oom
};

struct MaxBatchRow {
  Precision precision = Precision::FP32;
  MaxBatchProbe small, large;  // the two measured batches: probe and twice it
  LinearMemory fit;
  int64_t predicted = 0;
  MaxBatchProbe verified;  // the last verification run
  int64_t fits = 0;        // the largest batch verified within the budget (0: none)
  int tries = 0;
  std::string problem;  // why there is no verified batch (empty when there is one)
};

struct MaxBatchResult {
  double budget = 0;        // bytes
  std::string budget_from;  // "--memory-budget", "90% of the GPU's free memory", ...
  std::string backend;      // the backend's name
  std::vector<MaxBatchRow> rows;
  bool stopped = false;  // the stop flag ended the search early: rows may be missing or unchecked

  const MaxBatchRow* row(Precision p) const;
  int64_t fits(Precision p) const;  // 0 when not found
  // fits(p) / fits(FP32); 0 when either is missing.
  double ratio(Precision p) const;
};

struct MaxBatchOptions {
  double budget = 0;        // bytes; must be > 0 (see default_memory_budget)
  std::string budget_from;  // said with the result
  int probe = 8;            // the smaller measured batch (at least 2); the other is twice it
  // A fresh backend for each measurement.
  std::function<std::unique_ptr<Backend>()> new_backend;
  // After each measurement: what was just measured, measurements done, the expected total (it
  // grows when a verification has to step down).
  std::function<void(const std::string& what, int done, int total)> progress;
  // Checked before each measurement (a measurement is two steps): set, the search returns with
  // `stopped` and what it has.
  const std::atomic<bool>* stop = nullptr;
};

MaxBatchResult find_max_batch(const TrainerConfig& tc, const std::vector<Precision>& precisions,
                              const MaxBatchOptions& opt);

// Peak memory of two training steps at `batch` in `p` on a fresh backend (the second step is the
// captured replay on a GPU, so a graph's own memory counts too). Out of memory is a result.
MaxBatchProbe measure_peak(const std::function<std::unique_ptr<Backend>()>& new_backend, TrainerConfig tc, Precision p,
                           int batch);

// A GPU's default budget, 90% of its free memory (the rest for the CUDA context, cuDNN's and
// cuBLAS's own buffers, which the backend's counts do not include). Throws Error naming `input`
// on the CPU, which has no limit of its own to fill, and when the free memory cannot be read.
double gpu_memory_budget(const Backend& backend, int gpu, const std::string& input, const std::string& remedy);
constexpr const char* kGpuBudgetFrom = "90% of the GPU's free memory";

// "FP16 AMP fits 1.6× the FP32 batch (22 against 14)"; empty when either batch is missing.
std::string max_batch_ratio_line(const MaxBatchResult& r, Precision amp);

}  // namespace ampgan
