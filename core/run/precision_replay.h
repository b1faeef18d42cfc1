// The first-divergence replay (`ampgan doctor --replay RUN --step N`): recomputes step N of a run
// from its newest checkpoint before N (or its initialisation), twice from the same state and inputs: in the run's half
// precision and in FP32. The steps between the checkpoint and N are retrained in the run's
// precision by both (bit for bit the run's own on the CPU), so only step N differs. Then:
//  - forward, layer by layer (G on the step's latents, D on its real batch and on G's output):
//    each activation's relative error ||half - fp32|| / ||fp32||, and its inf/NaN count;
//  - backward, tensor by tensor in backward order (D's, then G's): the largest unscaled gradient
//    magnitude of each, half against FP32, and its inf/NaN count (from the step's fused check).
// The first layer whose output or gradient goes non-finite or departs beyond the tolerance of its
// dtype (precision_replay.cpp: a multiple of the format's unit roundoff) is named.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/train/trainer.h"

namespace ampgan {

struct ReplayActivation {
  std::string layer, type, input;  // "D.2", "Conv2d", "real images"
  double rel_error = 0;
  uint64_t nonfinite = 0;
  bool departs = false;
};

struct ReplayGradient {
  std::string name;  // "D.2.weight"
  double max_half = 0, max_fp32 = 0, rel_error = 0;
  uint64_t nonfinite = 0;
  bool departs = false;
};

struct ReplayResult {
  int64_t step = 0, checkpoint_step = 0;
  std::string checkpoint;   // the file, or the run's initialisation (config.json) it started from
  bool from_start = false;  // no checkpoint before the step: replayed from the initialisation
  Precision precision = Precision::FP16;
  double activation_tolerance = 0, gradient_tolerance = 0;
  std::vector<ReplayActivation> forward;        // in forward order
  std::vector<ReplayGradient> gradients;        // in backward order
  int first_forward = -1, first_gradient = -1;  // indices of the first departures; -1: none
  bool skipped_d = false, skipped_g = false;    // the half-precision step N skipped its update
  std::string verdict;                          // one line
};

struct ReplayOptions {
  // For tests: the backend each of the two trainers uses, and a hook on the half-precision
  // trainer just before step N (a planted fault).
  std::function<std::unique_ptr<Backend>()> make_backend;
  std::function<void(Trainer& half)> before_step;
};

// From the newest checkpoint before step N, or from the run's initialisation (config.json) when
// there is none. Throws Error when the run trained that checkpoint (or started) in FP32.
ReplayResult replay_step(const std::filesystem::path& run_dir, int64_t step, const ReplayOptions& opt = {});

// The two tables (activations, gradients) and the verdict as aligned text.
std::string replay_text(const ReplayResult& r);

}  // namespace ampgan
