// What the CPU (core/backend/cpu/cpu_spectral_norm.cpp) and CUDA (gpu/kernels_spectral_norm.cu)
// versions of the spectral-norm ops share: the matrix view of a weight and its checks. Both
// accumulate in double, so they agree to the last bit or two of the FP32 results.
#pragma once

#include <string>

#include "core/common/error.h"
#include "core/tensor/tensor.h"

namespace ampgan {

constexpr double kSpectralNormEps = 1e-12;  // as torch.nn.utils.spectral_norm

struct SnMatrix {
  int64_t rows = 0, cols = 0;  // (out channels, in channels x kernel): KRSC as (K, R*S*C)
};

inline SnMatrix sn_matrix(const Tensor& w, const Tensor& u, const Tensor& v, const char* op) {
  SnMatrix m;
  m.rows = w.shape().rank ? w.shape()[0] : 0;
  m.cols = m.rows ? w.numel() / m.rows : 0;
  if (w.dtype() != DType::F32 || u.dtype() != DType::F32 || v.dtype() != DType::F32 || u.numel() != m.rows ||
      v.numel() != m.cols || m.rows == 0)
    throw Error(std::string(op) + ": w must be an FP32 master weight (" + w.shape().str() + "), u FP32 of " +
                    std::to_string(m.rows) + " and v FP32 of " + std::to_string(m.cols) + " values",
                "", "this is a bug in the caller");
  return m;
}

inline SnMatrix check_sn_forward(const Tensor& w, const Tensor& u, const Tensor& v, const Tensor& sigma,
                                 const Tensor& w_sn) {
  const SnMatrix m = sn_matrix(w, u, v, "spectral_norm_forward");
  if (sigma.dtype() != DType::F32 || sigma.numel() < 1 || w_sn.numel() != w.numel())
    throw Error("spectral_norm_forward: sigma must be FP32 and w_sn the weight's size", "",
                "this is a bug in the caller");
  return m;
}

inline SnMatrix check_sn_backward(const Tensor& g, const Tensor& w, const Tensor& u, const Tensor& v,
                                  const Tensor& sigma, const Tensor& dw) {
  const SnMatrix m = sn_matrix(w, u, v, "spectral_norm_backward");
  if (g.numel() != w.numel() || dw.numel() != w.numel() || g.dtype() != dw.dtype() || sigma.dtype() != DType::F32)
    throw Error("spectral_norm_backward: g and dw must have the weight's size and one dtype", "",
                "this is a bug in the caller");
  return m;
}

// Blocks for the partial sums of <g, W / sigma> on the GPU (a fixed count: a fixed order).
constexpr int kSpectralNormDotBlocks = 128;

}  // namespace ampgan
