// Dynamic loss scaling: the scaler update rule. Part of the element-wise arithmetic both compilers read
// (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- dynamic loss scaling (PyTorch GradScaler's update rule, plus a floor and a ceiling) -----

struct ScalerConfig {
  float init_scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
  float min_scale = 1.0f;         // floor: a scale that collapses to 0 trains nothing
  float max_scale = 16777216.0f;  // ceiling: 2^24
};

// state[0] = scale, state[1] = clean steps since the last change. found_inf: any non-finite
// gradient in this step. Returns nothing; the GPU runs this in a one-thread kernel.
AMPGAN_HD void scaler_update(float& scale, float& growth_tracker, bool found_inf, const ScalerConfig& c) {
  if (found_inf) {
    scale = fmaxf(scale * c.backoff_factor, c.min_scale);
    growth_tracker = 0.0f;
    return;
  }
  const float successful = growth_tracker + 1.0f;
  if (successful >= static_cast<float>(c.growth_interval)) {
    const float grown = scale * c.growth_factor;
    if (grown <= c.max_scale) scale = grown;  // like GradScaler: grow only if it stays in range
    growth_tracker = 0.0f;
  } else {
    growth_tracker = successful;
  }
}

}  // namespace ampgan::ew
