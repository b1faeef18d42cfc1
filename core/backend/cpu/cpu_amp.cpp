// CPU backend, mixed-precision passes: the fused unscale-and-check with gradient statistics
// (per network and per tensor), the gradient exponent histogram and the loss-scaler update.
#include <array>
#include <cmath>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::kGrain;
using cpu::kTile;
using cpu::require;
using cpu::tiles;

void CpuBackend::grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state, Tensor& scalars,
                            const GradStatSlots& slots) {
  for (int slot : {slots.found_inf, slots.sum_sq})
    require(slot >= 0 && slot < scalars.numel(), "grad_stats", "slot out of range");
  for (int slot : {slots.zeros, slots.subnormals, slots.count})  // counts: [slot, slot + 1]
    require(slot >= 0 && slot + 1 < scalars.numel(), "grad_stats", "count slot out of range");
  const bool per_tensor = slots.per_tensor >= 0;
  if (per_tensor)
    require(slots.per_tensor + int64_t{kTensorStatSlots} * static_cast<int64_t>(grads.size()) <= scalars.numel(),
            "grad_stats", "per-tensor slots out of range");
  const float inv_scale = 1.0f / scaler_state.as<float>()[0];
  bool found = false;
  double sum_sq = 0.0;
  int64_t zeros = 0, subnormals = 0, count = 0;
  float* s = scalars.as<float>();
  for (size_t ti = 0; ti < grads.size(); ++ti) {
    const Tensor& g = grads[ti];
    dispatch_dtype(g.dtype(), [&](auto tag) {
      using S = decltype(tag);
      const auto* v = g.as<typename S::T>();
      const int64_t n = g.numel();
      struct Part {
        double sq = 0;
        int64_t zero = 0, sub = 0, nonfinite = 0;
        float max_abs = 0.0f;
        bool bad = false;
      };
      std::vector<Part> parts(chunk_count(n, kGrain));
      parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        Part& p = parts[b / kGrain];
        float sq = 0.0f, mx = 0.0f;
        tiles(b, e, [&](int64_t t, int64_t m, float* buf) {
          cpu::widen(S::kType, v + t, buf, m);
          for (int64_t i = 0; i < m; ++i) {
            const auto raw = v[t + i];
            p.zero += S::is_zero(raw);
            p.sub += S::is_subnormal(raw);
            const float u = buf[i] * inv_scale;
            sq += u * u;  // inf/NaN make sq non-finite; flagged below
            const float a = std::fabs(u);
            mx = a > mx ? a : mx;  // NaN never wins; an inf does, and is redone below
          }
        });
        p.bad = !std::isfinite(sq);
        if (p.bad) {
          // sq can overflow to inf from large finite values: decide from the values themselves.
          // Only overflow steps come here, so the per-tensor count and the finite max are redone.
          p.bad = false;
          mx = 0.0f;
          for (int64_t i = b; i < e; ++i) {
            if (!S::is_finite(v[i])) {
              ++p.nonfinite;
              continue;
            }
            const float a = std::fabs(S::load(v[i]) * inv_scale);
            mx = a > mx ? a : mx;
          }
          p.bad = p.nonfinite > 0;
          if (!p.bad) sq = INFINITY;  // finite gradients whose norm overflows FP32
        }
        p.sq = sq;
        p.max_abs = mx;
      });
      int64_t t_under = 0, t_nonfinite = 0;
      float t_max = 0.0f;
      for (const Part& p : parts) {
        found |= p.bad;
        if (!p.bad) sum_sq += p.sq;
        zeros += p.zero;
        subnormals += p.sub;
        t_under += p.zero + p.sub;
        t_nonfinite += p.nonfinite;
        t_max = std::max(t_max, p.max_abs);
      }
      count += n;
      if (per_tensor) {
        float* o = s + slots.per_tensor + kTensorStatSlots * static_cast<int64_t>(ti);
        o[kTensorMaxAbs] = t_max;
        ew::count_store(o + kTensorNonFinite, static_cast<uint64_t>(t_nonfinite));
        ew::count_store(o + kTensorUnderflow, static_cast<uint64_t>(t_under));
      }
    });
  }
  s[slots.found_inf] = found ? 1.0f : 0.0f;
  s[slots.sum_sq] = static_cast<float>(sum_sq);
  ew::count_store(s + slots.zeros, static_cast<uint64_t>(zeros));
  ew::count_store(s + slots.subnormals, static_cast<uint64_t>(subnormals));
  ew::count_store(s + slots.count, static_cast<uint64_t>(count));
}

void CpuBackend::grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) {
  require(hist.dtype() == DType::F32 && hist.numel() >= ew::kHistBins, "grad_histogram", "hist too small");
  std::vector<int64_t> counts(ew::kHistBins, 0);
  for (const Tensor& g : grads) {
    const int64_t n = g.numel();
    std::vector<std::array<int64_t, ew::kHistBins>> parts(chunk_count(n, kGrain));
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
      auto& c = parts[b / kGrain];
      c.fill(0);
      tiles(b, e, [&](int64_t t, int64_t m, float* buf) {
        cpu::widen(g.dtype(), cpu::at(g.data(), g.dtype(), t), buf, m);
        for (int64_t i = 0; i < m; ++i) ++c[ew::exponent_bin(buf[i])];
      });
    });
    for (const auto& c : parts)
      for (int i = 0; i < ew::kHistBins; ++i) counts[i] += c[i];
  }
  float* h = hist.as<float>();
  for (int i = 0; i < ew::kHistBins; ++i) h[i] = static_cast<float>(counts[i]);
}

void CpuBackend::scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg, const Tensor& scalars,
                               const std::vector<int>& found_inf_slots) {
  bool found = false;
  for (int slot : found_inf_slots) found |= scalars.as<float>()[slot] != 0.0f;
  float* st = scaler_state.as<float>();
  ew::scaler_update(st[0], st[1], found, cfg);
}

}  // namespace ampgan
