// Activations and their backward passes. Part of the element-wise arithmetic both compilers read
// (core/backend/elementwise.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/ew/storage.h"
#include "core/common/hd.h"

namespace ampgan::ew {

// ---- activations: backward passes use the layer's output y, so only y need be kept ----------

enum class Act : uint8_t { ReLU, LeakyReLU, Tanh, Identity };

AMPGAN_HD float act_forward(Act a, float alpha, float x) {
  switch (a) {
    case Act::ReLU:
      return x > 0.0f ? x : 0.0f;
    case Act::LeakyReLU:
      return x > 0.0f ? x : alpha * x;
    case Act::Tanh:
      return tanhf(x);
    default:
      return x;
  }
}

// dL/dx from dL/dy and y = f(x). For LeakyReLU with alpha > 0, sign(y) = sign(x).
AMPGAN_HD float act_backward(Act a, float alpha, float y, float dy) {
  switch (a) {
    case Act::ReLU:
      return y > 0.0f ? dy : 0.0f;
    case Act::LeakyReLU:
      return y > 0.0f ? dy : alpha * dy;
    case Act::Tanh:
      return dy * (1.0f - y * y);
    default:
      return dy;
  }
}

}  // namespace ampgan::ew
