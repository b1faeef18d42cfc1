#include "core/amp/loss_scaler.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/common/error.h"

namespace ampgan {

LossScaler::LossScaler(Backend& b, const ew::ScalerConfig& cfg) : cfg_(cfg) {
  check_loss_scale(cfg.init_scale, "--init-scale", "initial loss scale", "the default is 65536 = 2^16");
  check_loss_scale(cfg.min_scale, "--min-scale", "loss-scale floor", "the default is 1");
  check_loss_scale(cfg.max_scale, "--max-scale", "loss-scale ceiling", "the default is 16777216 = 2^24");
  if (!(cfg.growth_factor > 1.0f))
    throw Error("loss-scale growth factor must be above 1", "--growth", "the default is 2");
  if (!(cfg.backoff_factor > 0.0f && cfg.backoff_factor < 1.0f))
    throw Error("loss-scale backoff factor must be between 0 and 1", "--backoff", "the default is 0.5");
  if (cfg.growth_interval < 1)
    throw Error("loss-scale growth interval must be at least 1 step", "--growth-interval", "the default is 2000");
  if (!(cfg.min_scale > 0.0f) || !(cfg.max_scale >= cfg.min_scale))
    throw Error("loss-scale floor must be positive and at most the ceiling", "--min-scale/--max-scale");
  state_ = b.empty(Shape{2}, DType::F32, MemCategory::Data);
  unit_ = b.empty(Shape{2}, DType::F32, MemCategory::Data);
  const float init[2] = {std::fmin(std::fmax(cfg.init_scale, cfg.min_scale), cfg.max_scale), 0.0f};
  const float unit[2] = {1.0f, 0.0f};
  b.upload(state_, init, sizeof init);
  b.upload(unit_, unit, sizeof unit);
}

void LossScaler::update(Backend& b, const Tensor& scalars, const std::vector<int>& found_inf_slots) {
  if (enabled_) b.scaler_update(state_, cfg_, scalars, found_inf_slots);
}

float LossScaler::scale(Backend& b) const {
  float v[2];
  b.download(state_, v, sizeof v);
  return v[0];
}

void LossScaler::set_state(Backend& b, float scale, float growth_tracker) {
  const float v[2] = {scale, growth_tracker};
  b.upload(state_, v, sizeof v);
}

void check_loss_scale(float v, const char* flag, const char* what, const char* default_hint) {
  // Gradients are unscaled by multiplying with 1/S in FP32: below FP32's smallest normal number
  // 1/S is inf, the scaled gradients stay finite (no step is skipped) and Adam writes NaN into
  // every weight. Above FP32's largest number S itself is inf.
  if (v >= std::numeric_limits<float>::min() && v <= std::numeric_limits<float>::max()) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %g is outside the usable range", what, static_cast<double>(v));
  throw Error(buf, flag,
              std::string("use a loss scale from 1.18e-38 (2^-126, FP32's smallest normal number, so that 1/S "
                          "stays finite) to 3.4e38 (FP32's largest); ") +
                  default_hint);
}

void check_scaler_state(float scale, float growth_tracker, const ew::ScalerConfig& c) {
  char buf[200];
  if (!(scale >= std::numeric_limits<float>::min() && scale <= std::numeric_limits<float>::max()) ||
      scale < c.min_scale || scale > c.max_scale) {
    std::snprintf(buf, sizeof buf, "loss scale %g is outside the run's range [%g, %g] (min_scale, max_scale)",
                  static_cast<double>(scale), static_cast<double>(c.min_scale), static_cast<double>(c.max_scale));
    throw Error(buf);
  }
  if (!(growth_tracker >= 0.0f && growth_tracker < static_cast<float>(c.growth_interval)) ||
      growth_tracker != std::floor(growth_tracker)) {
    std::snprintf(buf, sizeof buf, "clean-step count %g is not a whole number from 0 to %d (growth_interval - 1)",
                  static_cast<double>(growth_tracker), c.growth_interval - 1);
    throw Error(buf);
  }
}

std::string scale_label(double scale) {
  if (!(scale > 0) || !std::isfinite(scale)) return "?";
  const double l = std::log2(scale);
  char buf[32];
  if (std::fabs(l - std::round(l)) < 1e-9)
    std::snprintf(buf, sizeof buf, "2^%d", static_cast<int>(std::round(l)));
  else
    std::snprintf(buf, sizeof buf, "%.4g", scale);
  return buf;
}

}  // namespace ampgan
