// CUDA backend: residual sums and resampling, checked as on the CPU (core/backend/resample.h)
// and launched from gpu/kernels_resample.cu.
#include "core/backend/resample.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_add(a, b, y);
  activate();
  gpu::add(stream_, y.dtype(), a.data(), b.data(), y.data(), y.numel());
}

void CudaBackend::upsample2x_forward(const Tensor& x, Tensor& y) {
  const Nhwc s = check_resample2x(y, x, "upsample2x_forward");
  activate();
  gpu::upsample2x_forward(stream_, x.dtype(), x.data(), y.data(), s.n, s.h, s.w, s.c);
}

void CudaBackend::upsample2x_backward(const Tensor& dy, Tensor& dx) {
  const Nhwc s = check_resample2x(dy, dx, "upsample2x_backward");
  activate();
  gpu::upsample2x_backward(stream_, dx.dtype(), dy.data(), dx.data(), s.n, s.h, s.w, s.c);
}

void CudaBackend::avgpool2x_forward(const Tensor& x, Tensor& y) {
  const Nhwc s = check_resample2x(x, y, "avgpool2x_forward");
  activate();
  gpu::avgpool2x_forward(stream_, y.dtype(), x.data(), y.data(), s.n, s.h, s.w, s.c);
}

void CudaBackend::avgpool2x_backward(const Tensor& dy, Tensor& dx) {
  const Nhwc s = check_resample2x(dx, dy, "avgpool2x_backward");
  activate();
  gpu::avgpool2x_backward(stream_, dx.dtype(), dy.data(), dx.data(), s.n, s.h, s.w, s.c);
}

void CudaBackend::global_sum_pool_forward(const Tensor& x, Tensor& y) {
  const Nhwc s = check_sum_pool(x, y, "global_sum_pool_forward");
  activate();
  gpu::global_sum_pool_forward(stream_, x.dtype(), x.data(), y.data(), s.n, s.h * s.w, s.c);
}

void CudaBackend::global_sum_pool_backward(const Tensor& dy, Tensor& dx) {
  const Nhwc s = check_sum_pool(dx, dy, "global_sum_pool_backward");
  activate();
  gpu::global_sum_pool_backward(stream_, dx.dtype(), dy.data(), dx.data(), s.n, s.h * s.w, s.c);
}

}  // namespace ampgan::gpu
