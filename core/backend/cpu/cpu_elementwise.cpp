// CPU backend, element-wise family: activations forward and backward (bias add is beside the
// GEMMs in cpu_linalg.cpp; the arithmetic is elementwise.h's, shared with the GPU).
#include <type_traits>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::kGrain;
using cpu::kTile;
using cpu::require;
using cpu::tiles;

namespace {

// Calls f with the activation as a compile-time constant, so the per-element switch folds away.
template <typename F>
void dispatch_act(ew::Act a, F&& f) {
  switch (a) {
    case ew::Act::ReLU:
      return f(std::integral_constant<ew::Act, ew::Act::ReLU>{});
    case ew::Act::LeakyReLU:
      return f(std::integral_constant<ew::Act, ew::Act::LeakyReLU>{});
    case ew::Act::Tanh:
      return f(std::integral_constant<ew::Act, ew::Act::Tanh>{});
    default:
      return f(std::integral_constant<ew::Act, ew::Act::Identity>{});
  }
}

}  // namespace

// The loops take alpha by value: captured by reference, a store to buf might change it, which
// keeps the loop from vectorizing.
void CpuBackend::activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) {
  require(x.dtype() == y.dtype() && x.numel() == y.numel(), "activation_forward", "mismatch");
  const DType dt = x.dtype();
  dispatch_act(act, [&, alpha](auto a) {
    parallel_for(x.numel(), kGrain, [&, alpha](int64_t b, int64_t e) {
      tiles(b, e, [&, alpha](int64_t t, int64_t n, float* buf) {
        const float* in = cpu::tile_in(dt, x.data(), t, n, buf);
        float* out = cpu::tile_out(dt, y.data(), t, buf);
        for (int64_t i = 0; i < n; ++i) out[i] = ew::act_forward(a.value, alpha, in[i]);
        cpu::tile_done(dt, out, y.data(), t, n);
      });
    });
  });
}

void CpuBackend::activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) {
  require(y.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && y.numel() == dy.numel() && dy.numel() == dx.numel(),
          "activation_backward", "mismatch");
  const DType dt = y.dtype();
  dispatch_act(act, [&, alpha](auto a) {
    parallel_for(y.numel(), kGrain, [&, alpha](int64_t b, int64_t e) {
      float ybuf[kTile];
      tiles(b, e, [&, alpha](int64_t t, int64_t n, float* buf) {
        const float* yv = cpu::tile_in(dt, y.data(), t, n, ybuf);
        const float* g = cpu::tile_in(dt, dy.data(), t, n, buf);
        float* out = cpu::tile_out(dt, dx.data(), t, buf);
        for (int64_t i = 0; i < n; ++i) out[i] = ew::act_backward(a.value, alpha, yv[i], g[i]);
        cpu::tile_done(dt, out, dx.data(), t, n);
      });
    });
  });
}

}  // namespace ampgan
