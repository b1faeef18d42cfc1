// CPU backend: the AMP safeguards of StyleGAN2-ADA's recipe, the activation clamp (conv_clamp)
// and nan_to_num on gradients. The CUDA versions are gpu/kernels_amp_guards.cu; both use the
// arithmetic of core/backend/elementwise.h.
#include <cstdint>

#include "core/backend/amp_guards.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/parallel.h"

namespace ampgan {

namespace {
constexpr int64_t kGuardGrain = int64_t{1} << 15;
}  // namespace

// The clamp converts a tile at a time (vectorised F16C / AVX2), not value by value.
void CpuBackend::clamp_forward(const Tensor& x, Tensor& y, float c) {
  check_clamp(x, y, c, "clamp_forward");
  const DType dt = x.dtype();
  parallel_for(x.numel(), kGuardGrain, [&](int64_t i0, int64_t i1) {
    cpu::tiles(i0, i1, [&](int64_t t, int64_t n, float* buf) {
      cpu::widen(dt, cpu::at(x.data(), dt, t), buf, n);
      for (int64_t i = 0; i < n; ++i) buf[i] = ew::clamp_value(buf[i], c);
      cpu::narrow(dt, buf, cpu::at(y.data(), dt, t), n);
    });
  });
}

void CpuBackend::clamp_backward(const Tensor& x, const Tensor& dy, Tensor& dx, float c) {
  check_clamp(x, dy, c, "clamp_backward");
  check_clamp(dy, dx, c, "clamp_backward");
  const DType dt = x.dtype();
  parallel_for(x.numel(), kGuardGrain, [&](int64_t i0, int64_t i1) {
    float xb[cpu::kTile];
    cpu::tiles(i0, i1, [&](int64_t t, int64_t n, float* buf) {
      cpu::widen(dt, cpu::at(x.data(), dt, t), xb, n);
      cpu::widen(dt, cpu::at(dy.data(), dt, t), buf, n);
      for (int64_t i = 0; i < n; ++i) buf[i] = ew::clamp_grad(xb[i], buf[i], c);
      cpu::narrow(dt, buf, cpu::at(dx.data(), dt, t), n);
    });
  });
}

void CpuBackend::nan_to_num(const std::vector<Tensor>& grads, float bound, Tensor& scalars, int count_slot,
                            int found_inf_slot) {
  check_nan_to_num(scalars, bound, count_slot, found_inf_slot);
  uint64_t replaced = 0;
  for (const Tensor& g : grads) {
    const float b = bound < ew::max_finite(g.dtype()) ? bound : ew::max_finite(g.dtype());
    dispatch_dtype(g.dtype(), [&](auto tag) {
      using S = decltype(tag);
      using T = typename S::T;
      T* p = g.as<T>();  // a handle: the gradient is written in place
      const int64_t n = g.numel();
      std::vector<uint64_t> parts(static_cast<size_t>((n + kGuardGrain - 1) / kGuardGrain), 0);
      parallel_for(n, kGuardGrain, [&](int64_t i0, int64_t i1) {
        uint64_t k = 0;
        for (int64_t i = i0; i < i1; ++i)
          if (!S::is_finite(p[i])) {
            p[i] = S::store(ew::nan_to_num_value(S::load(p[i]), b));
            ++k;
          }
        parts[static_cast<size_t>(i0 / kGuardGrain)] += k;
      });
      for (uint64_t k : parts) replaced += k;
    });
  }
  float* s = scalars.as<float>();
  ew::count_store(s + count_slot, ew::count_load(s + count_slot) + replaced);
  if (found_inf_slot >= 0) s[found_inf_slot] = 0.0f;
}

}  // namespace ampgan
