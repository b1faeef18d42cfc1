// CUDA backend: the class-conditioning ops, checked as on the CPU (core/backend/conditioning.h)
// and launched from gpu/kernels_conditioning.cu.
#include "core/backend/conditioning.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

void CudaBackend::modulate_forward(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y) {
  const Nhwc s = check_modulate(x, scale, shift, y, "modulate_forward");
  activate();
  gpu::modulate_forward(stream_, x.dtype(), x.data(), scale.as<float>(), shift.as<float>(), y.data(), s.n, s.h * s.w,
                        s.c);
}

void CudaBackend::modulate_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, Tensor& dx, Tensor& dscale,
                                    Tensor& dshift) {
  const Nhwc s = check_modulate(x, scale, dscale, dx, "modulate_backward");
  check_modulate(dy, dshift, scale, dx, "modulate_backward");
  activate();
  gpu::modulate_backward(stream_, x.dtype(), x.data(), dy.data(), scale.as<float>(), dx.data(), dscale.as<float>(),
                         dshift.as<float>(), s.n, s.h * s.w, s.c);
}

void CudaBackend::row_dot_forward(const Tensor& a, const Tensor& b, Tensor& y) {
  const Rows r = check_row_dot(a, b, y, "row_dot_forward");
  activate();
  gpu::row_dot_forward(stream_, a.dtype(), a.data(), b.data(), y.data(), r.n, r.f);
}

void CudaBackend::row_dot_backward(const Tensor& a, const Tensor& b, const Tensor& dy, Tensor& da, Tensor& db) {
  const Rows r = check_row_dot(a, b, dy, "row_dot_backward");
  check_row_dot(da, db, dy, "row_dot_backward");
  activate();
  gpu::row_dot_backward(stream_, a.dtype(), a.data(), b.data(), dy.data(), da.data(), db.data(), r.n, r.f);
}

}  // namespace ampgan::gpu
