// CUDA backend: spectral norm, checked as on the CPU (core/backend/spectral_norm.h) and launched
// from gpu/kernels_spectral_norm.cu.
#include "core/backend/spectral_norm.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::spectral_norm_power_iteration(const Tensor& w, Tensor& u, Tensor& v) {
  const SnMatrix m = sn_matrix(w, u, v, "spectral_norm_power_iteration");
  activate();
  void* ws = workspace(kWsReduce, gpu::spectral_norm_workspace_bytes(m.rows), "spectral_norm_power_iteration");
  gpu::spectral_norm_power_iteration(stream_, w.as<float>(), u.as<float>(), v.as<float>(), m.rows, m.cols, ws);
}

void CudaBackend::spectral_norm_forward(const Tensor& w, const Tensor& u, const Tensor& v, Tensor& sigma,
                                        Tensor& w_sn) {
  const SnMatrix m = check_sn_forward(w, u, v, sigma, w_sn);
  activate();
  void* ws = workspace(kWsReduce, gpu::spectral_norm_workspace_bytes(m.rows), "spectral_norm_forward");
  gpu::spectral_norm_forward(stream_, w_sn.dtype(), w.as<float>(), u.as<float>(), v.as<float>(), m.rows, m.cols,
                             sigma.as<float>(), w_sn.data(), ws);
}

void CudaBackend::spectral_norm_backward(const Tensor& g, const Tensor& w, const Tensor& u, const Tensor& v,
                                         const Tensor& sigma, Tensor& dw, bool accumulate) {
  const SnMatrix m = check_sn_backward(g, w, u, v, sigma, dw);
  activate();
  void* ws = workspace(kWsReduce, gpu::spectral_norm_workspace_bytes(m.rows), "spectral_norm_backward");
  gpu::spectral_norm_backward(stream_, dw.dtype(), g.data(), w.as<float>(), u.as<float>(), v.as<float>(),
                              sigma.as<float>(), m.rows, m.cols, dw.data(), accumulate, ws);
}

}  // namespace ampgan::gpu
