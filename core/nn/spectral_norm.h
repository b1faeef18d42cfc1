// Spectral normalisation of a weight (Miyato et al. 2018, as torch.nn.utils.spectral_norm):
// the layer computes with W / sigma(W), sigma the largest singular value of W seen as a
// (out channels, rest) matrix, estimated by power iteration with a persistent vector u.
// Everything here stays FP32 whatever the precision -- the master weight, u, v and sigma -- and
// only the normalised weight is rounded to the compute dtype: sigma of a large FP16 weight
// would overflow 65504 and 1/sigma of a small one underflow (PyTorch's spectral norm under
// autocast breaks this way: pytorch/pytorch#125544).
#pragma once

#include <string>

#include "core/nn/layer.h"

namespace ampgan {

class SpectralNorm {
 public:
  // For weight (rows, ...) of layer prefix: buffers "<prefix>weight_u" and "<prefix>weight_v"
  // (PyTorch's names), u and v drawn from Philox (seed, stream) and normalised.
  SpectralNorm(Backend& b, const std::string& prefix, const Shape& weight_shape, uint64_t seed, uint64_t stream);

  void power_iteration(Backend& b, const Parameter& w);
  // The weight the layer computes with: W / sigma in dtype (sigma refreshed from u, v).
  const Tensor& normalized(Backend& b, const Parameter& w, DType dtype);
  // A buffer for dL/d(W / sigma) in dtype, then w.grad (+)= its gradient through the norm.
  Tensor& grad_buffer(Backend& b, const Parameter& w);
  void backward(Backend& b, Parameter& w, bool accumulate);
  std::vector<StateBuffer*> buffers() { return {&u_, &v_}; }
  const Tensor& sigma() const { return sigma_; }
  const Tensor& last_normalized() const { return w_sn_; }  // from the last normalized()

 private:
  StateBuffer u_, v_;
  Tensor sigma_, w_sn_, g_sn_;
};

}  // namespace ampgan
