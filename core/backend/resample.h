// What the CPU (core/backend/cpu/cpu_resample.cpp) and CUDA (gpu/kernels_resample.cu) versions
// of the residual and resampling ops share: the shape checks, and the per-element arithmetic,
// written once so both backends round identically (FP32 sums in a fixed order, one rounding).
#pragma once

#include <string>

#include "core/common/error.h"
#include "core/common/hd.h"
#include "core/tensor/tensor.h"

namespace ampgan {

struct Nhwc {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t rows() const { return n * h * w; }
};

inline Nhwc nhwc_of(const Tensor& t, const char* op, const char* what) {
  if (t.shape().rank != 4)
    throw Error(std::string(op) + ": " + what + " must be 4-D (n, h, w, c), not " + t.shape().str(), "",
                "this is a bug in the caller");
  return Nhwc{t.shape()[0], t.shape()[1], t.shape()[2], t.shape()[3]};
}

// big (n, 2h, 2w, c) against small (n, h, w, c), same dtype: the two sides of a x2 resampling.
inline Nhwc check_resample2x(const Tensor& big, const Tensor& small, const char* op) {
  const Nhwc b = nhwc_of(big, op, "the larger tensor"), s = nhwc_of(small, op, "the smaller tensor");
  if (b.n != s.n || b.c != s.c || b.h != 2 * s.h || b.w != 2 * s.w || big.dtype() != small.dtype())
    throw Error(std::string(op) + ": " + big.shape().str() + " is not twice " + small.shape().str() +
                    " in height and width (same batch, channels and dtype)",
                "", "this is a bug in the caller");
  return s;
}

inline void check_add(const Tensor& a, const Tensor& b, const Tensor& y) {
  if (a.dtype() != b.dtype() || b.dtype() != y.dtype() || a.numel() != b.numel() || b.numel() != y.numel())
    throw Error("add: operands differ in dtype or size", "", "this is a bug in the caller");
}

// x (n, h, w, c) against pooled (n, c) of x's dtype.
inline Nhwc check_sum_pool(const Tensor& x, const Tensor& pooled, const char* op) {
  const Nhwc s = nhwc_of(x, op, "the feature map");
  if (pooled.numel() != s.n * s.c || pooled.dtype() != x.dtype())
    throw Error(std::string(op) + ": the pooled tensor must be (n, c) of the feature map's dtype", "",
                "this is a bug in the caller");
  return s;
}

namespace ew {
// One 2x2 block, summed in this order on every backend.
AMPGAN_HD float sum4(float a, float b, float c, float d) { return ((a + b) + c) + d; }
AMPGAN_HD float mean4(float a, float b, float c, float d) { return sum4(a, b, c, d) * 0.25f; }
}  // namespace ew

}  // namespace ampgan
