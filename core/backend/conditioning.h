// What the CPU (core/backend/cpu/cpu_conditioning.cpp) and CUDA (gpu/kernels_conditioning.cu)
// versions of the class-conditioning ops share: the shape checks and the per-element arithmetic.
//   modulate: conditional batch norm's per-sample scale and shift (BigGAN's class-conditional
//             gain and bias), y (n, h, w, c) = x * scale[n, c] + shift[n, c], scale and shift FP32.
//   row_dot:  the projection discriminator's <embed(y), h> (Miyato & Koyama 2018), y[n] = sum_f
//             a[n, f] * b[n, f].
// Sums run in FP32 in a fixed order (positions, then features, in row-major order) and round
// once into the output's dtype, on both backends.
#pragma once

#include <string>

#include "core/backend/resample.h"

namespace ampgan {

// x and y (n, h, w, c) of one dtype; scale and shift (n, c) FP32 (and their gradients).
inline Nhwc check_modulate(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& y, const char* op) {
  const Nhwc s = nhwc_of(x, op, "the feature map");
  if (y.shape() != x.shape() || y.dtype() != x.dtype())
    throw Error(std::string(op) + ": the output must have the feature map's shape and dtype", "",
                "this is a bug in the caller");
  for (const Tensor* t : {&scale, &shift})
    if (t->numel() != s.n * s.c || t->dtype() != DType::F32)
      throw Error(std::string(op) + ": scale and shift must be (n, c) = (" + std::to_string(s.n) + ", " +
                      std::to_string(s.c) + ") FP32, not " + t->shape().str(),
                  "", "this is a bug in the caller");
  return s;
}

struct Rows {
  int64_t n = 0, f = 0;
};

// a and b (n, f) of one dtype; y (n) of that dtype.
inline Rows check_row_dot(const Tensor& a, const Tensor& b, const Tensor& y, const char* op) {
  if (a.shape().rank < 1 || a.shape() != b.shape() || a.dtype() != b.dtype() || y.dtype() != a.dtype())
    throw Error(std::string(op) + ": both operands must have one shape and the output their dtype", "",
                "this is a bug in the caller");
  const Rows r{a.shape()[0], a.numel() / std::max<int64_t>(1, a.shape()[0])};
  if (y.numel() != r.n)
    throw Error(std::string(op) + ": the output must hold one value per row, not " + y.shape().str(), "",
                "this is a bug in the caller");
  return r;
}

namespace ew {
AMPGAN_HD float modulate(float x, float scale, float shift) { return x * scale + shift; }
}  // namespace ew

}  // namespace ampgan
