// What the overflow tests share (test_overflow_locator, test_layer_policy): a backend that plants
// a non-finite gradient in a chosen layer, moderate loss scales, a fixed real batch, a parameter
// by name.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/tensor/half.h"
#include "core/train/trainer.h"

namespace ampgan::testing {

// The CPU backend with one fault: the weight gradient of the convolution whose gradient tensor is
// `target` gets `value` at index 0, stored in the tensor's own format. inf (the default) is what an
// overflowing half product gives; 1e6 is inf once stored in FP16 (largest value 65504) but a finite
// 1e6 in FP32: a gradient that overflows only in half.
class PlantingBackend : public CpuBackend {
 public:
  Tensor target;
  float value = INFINITY;
  void conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                              bool accumulate) override {
    CpuBackend::conv2d_backward_filter(g, x, dy, dw, accumulate);
    if (target.defined() && dw.same_storage(target)) {
      if (dw.dtype() == DType::F32)
        dw.as<float>()[0] = value;
      else if (dw.dtype() == DType::F16)
        dw.as<uint16_t>()[0] = float_to_half_bits(value);
      else
        dw.as<uint16_t>()[0] = float_to_bf16_bits(value);
    }
  }
};

// Loss scales low enough that the clean steps are clean (at fp16's default 2^16 this
// discriminator's D.2 gradient overflows on the first step by itself).
inline void moderate_scales(Backend& b, Trainer& t) {
  const float s[2] = {1024.0f, 0.0f};
  b.upload(t.scaler_d().state(), s, sizeof s);
  b.upload(t.scaler_g().state(), s, sizeof s);
}

// One fixed batch of "real" images in [-1, 1] for config c.
inline std::vector<float> real_batch(const TrainerConfig& c) {
  std::vector<float> real(static_cast<size_t>(c.batch) * c.model.res * c.model.res * c.model.channels);
  for (size_t i = 0; i < real.size(); ++i) real[i] = std::tanh(philox_normal(3, 4, i));
  return real;
}

inline Parameter* param(Sequential& net, const std::string& name) {
  for (Parameter* p : net.parameters())
    if (p->name == name) return p;
  ADD_FAILURE() << "no parameter " << name;
  return nullptr;
}

}  // namespace ampgan::testing
