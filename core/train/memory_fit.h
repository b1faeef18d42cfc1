// The largest batch that fits: a training step's peak memory is a fixed part (weights, their
// half copies, gradients, Adam's moments) plus a part per image (activations, their gradients,
// the batch itself, most workspace). Two measured batch sizes give the line; the budget gives
// the batch. `ampgan bench --max-batch` measures, predicts and then checks the prediction by
// running there, since workspace need not be exactly linear.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ampgan {

struct LinearMemory {
  double fixed = 0;      // bytes at batch 0
  double per_image = 0;  // bytes per image of batch
  double at(int64_t batch) const { return fixed + per_image * static_cast<double>(batch); }
};

// The line through (b1, peak1) and (b2, peak2), b1 != b2.
inline LinearMemory fit_memory(int64_t b1, double peak1, int64_t b2, double peak2) {
  LinearMemory m;
  m.per_image = (peak2 - peak1) / static_cast<double>(b2 - b1);
  m.fixed = peak1 - m.per_image * static_cast<double>(b1);
  return m;
}

// The largest batch whose predicted peak is within budget bytes, capped at max_batch; 0 when
// even a batch of min_batch does not fit (or the line does not grow with the batch). The caller
// passes the trainer's limits (kMinBatch, kMaxBatch in core/train/trainer.h).
inline int64_t largest_batch(const LinearMemory& m, double budget, int64_t min_batch, int64_t max_batch) {
  if (!(m.per_image > 0)) return m.at(min_batch) <= budget ? max_batch : 0;
  const double b = std::floor((budget - m.fixed) / m.per_image);
  if (b < static_cast<double>(min_batch)) return 0;
  return std::min<int64_t>(max_batch, static_cast<int64_t>(b));
}

}  // namespace ampgan
