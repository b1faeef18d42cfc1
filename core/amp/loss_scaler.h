// Dynamic loss scaling, GradScaler's rule (PyTorch torch.amp.GradScaler): multiply the loss by
// S before the backward pass; if any gradient is inf or NaN skip the step and multiply S by
// backoff; after growth_interval clean steps multiply S by growth. Plus a floor and a ceiling.
// The state [S, clean steps] lives on the device and is updated there, so the skip decision
// needs no host synchronisation. A disabled scaler (fp32, bf16 by default) hands out a unit
// scale but keeps its state, so switching precision back resumes where it was.
#pragma once

#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

class LossScaler {
 public:
  LossScaler(Backend& b, const ew::ScalerConfig& cfg);

  void set_enabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }
  const ew::ScalerConfig& config() const { return cfg_; }

  // The state the loss and the unscale pass read: [S, clean steps], or [1, 0] when disabled.
  const Tensor& active_state() const { return enabled_ ? state_ : unit_; }
  Tensor& state() { return state_; }

  // Backs off if any of scalars[found_inf_slots] is set, else counts a clean step (no-op when
  // disabled).
  void update(Backend& b, const Tensor& scalars, const std::vector<int>& found_inf_slots);

  // Host access (synchronous; for checkpoints and displays, not for the step).
  float scale(Backend& b) const;
  void set_state(Backend& b, float scale, float growth_tracker);

 private:
  ew::ScalerConfig cfg_;
  bool enabled_ = false;
  Tensor state_, unit_;
};

// Throws Error naming flag unless v is a loss scale the arithmetic survives: v and 1/v finite
// and normal in FP32. Used by the run configuration's validation and by LossScaler itself.
void check_loss_scale(float v, const char* flag, const char* what, const char* default_hint);

// Throws Error unless [scale, growth_tracker] is a state a scaler with config c can be in (the
// state a checkpoint brings back): scale passes check_loss_scale and lies in [min_scale,
// max_scale], growth_tracker is a whole number in [0, growth_interval).
void check_scaler_state(float scale, float growth_tracker, const ew::ScalerConfig& c);

// A loss scale for people: "2^16" for powers of two (what scales are, unless set by hand), else
// four significant digits; "?" for a non-positive or non-finite value.
std::string scale_label(double scale);

}  // namespace ampgan
