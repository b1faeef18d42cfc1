// CUDA backend, element-wise family: activations forward and backward (gpu/kernels_elementwise.cu;
// bias add is beside the GEMMs in cuda_linalg.cpp, as on the CPU).
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) {
  require(x.dtype() == y.dtype() && x.numel() == y.numel(), "activation_forward", "mismatch");
  activate();
  gpu::activation_forward(stream_, x.dtype(), act, alpha, x.data(), y.data(), x.numel());
}

void CudaBackend::activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) {
  require(y.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && y.numel() == dy.numel() && dy.numel() == dx.numel(),
          "activation_backward", "mismatch");
  activate();
  gpu::activation_backward(stream_, y.dtype(), act, alpha, y.data(), dy.data(), dx.data(), y.numel());
}

}  // namespace ampgan::gpu
