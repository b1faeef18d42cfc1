// What one training step reports: the columns of metrics.csv, the series of the GUI's plots and
// the fields of the CLI's progress line all come from here.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/amp/precision.h"
#include "core/train/tensor_stats.h"

namespace ampgan {

// Slots of the per-step FP32 scalars tensor the backend writes (see Backend).
enum StepSlot : int {
  kSlotLossDReal,
  kSlotLossDFake,
  kSlotLossG,
  kSlotDReal,   // mean D(x) on real images
  kSlotDFake,   // mean D(G(z)) before D's update
  kSlotDFakeG,  // mean D(G(z)) after D's update (the G step)
  kSlotScaleD,  // loss scale used for D this step
  kSlotScaleG,
  kSlotFoundInfD,
  kSlotSumSqD,
  kSlotZerosD,  // counts take two slots, [lo, hi] (ew::count_load)
  kSlotSubnormalsD = kSlotZerosD + 2,
  kSlotCountD = kSlotSubnormalsD + 2,
  kSlotFoundInfG = kSlotCountD + 2,
  kSlotSumSqG,
  kSlotZerosG,
  kSlotSubnormalsG = kSlotZerosG + 2,
  kSlotCountG = kSlotSubnormalsG + 2,
  kSlotReplacedD = kSlotCountG + 2,  // count: gradient values nan_to_num replaced (AmpStrategy::NanToNum)
  kSlotReplacedG = kSlotReplacedD + 2,
  kSlotCount = kSlotReplacedG + 2
};

struct StepMetrics {
  int64_t step = 0;  // 1-based: the step this row describes
  Precision precision = Precision::FP32;
  double loss_d = 0, loss_g = 0;
  double d_real = 0, d_fake = 0;
  double grad_norm_d = 0, grad_norm_g = 0;  // L2 norms of the unscaled gradients
  double scale_d = 1, scale_g = 1;          // loss scales used this step
  // Updates skipped for inf/NaN gradients: D counts its n_dis D steps (0..n_dis), G its one.
  int skipped_d = 0, skipped_g = 0;
  double underflow_d = 0, underflow_g = 0;  // fraction of gradient values zero or subnormal
  double step_ms = 0, images_per_s = 0;
  double memory_mb = 0;  // backend memory in use after the step
  double time_s = 0;     // seconds since the run (or resume) started
  // Sample quality, filled on evaluation steps only (NaN otherwise; an empty CSV cell).
  double swd = NAN, fd = NAN;
  // Gradient values nan_to_num replaced (the nan_to_num strategy; 0 otherwise).
  uint64_t replaced_d = 0, replaced_g = 0;
  // Each gradient tensor's statistics, in Trainer::tensor_names() order (not in metrics.csv:
  // layers.csv holds them).
  std::vector<TensorGradStat> tensors;

  static const std::vector<std::string>& columns();
  std::string csv_row() const;
  static StepMetrics from_csv_row(const std::vector<std::string>& header, const std::vector<std::string>& cells);
};

}  // namespace ampgan
