// CPU backend, optimizer family: Adam on the FP32 master weights (skipped with the step, the
// half copy refreshed in the same pass) and the generator's EMA.
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::kGrain;
using cpu::require;
using cpu::tiles;

void CpuBackend::adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg, Tensor& step_count,
                           const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) {
  if (scalars.as<float>()[found_inf_slot] != 0.0f) return;  // skipped step: nothing changes
  require(step_count.dtype() == DType::F32 && step_count.numel() == 2, "adam_step",
          "step_count: an FP32 [lo, hi] count");
  ew::count_increment(step_count.as<float>());
  const float t = static_cast<float>(ew::count_load(step_count.as<float>()));
  const ew::AdamScalars s = ew::adam_scalars(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, t, scaler_state.as<float>()[0]);
  for (const AdamTensor& p : params) {
    float* w = p.master.as<float>();
    float* m = p.m.as<float>();
    float* v = p.v.as<float>();
    const bool has_half = p.half_copy.defined();
    parallel_for(p.master.numel(), kGrain, [&](int64_t b, int64_t e) {
      tiles(b, e, [&](int64_t t0, int64_t n, float* g) {
        cpu::widen(p.grad.dtype(), cpu::at(p.grad.data(), p.grad.dtype(), t0), g, n);
        for (int64_t i = 0; i < n; ++i) ew::adam_update(s, g[i], w[t0 + i], m[t0 + i], v[t0 + i]);
        if (has_half) cpu::narrow(p.half_copy.dtype(), w + t0, cpu::at(p.half_copy.data(), p.half_copy.dtype(), t0), n);
      });
    });
  }
}

void CpuBackend::ema_update(const std::vector<Tensor>& shadow, const std::vector<Tensor>& params, float decay,
                            float rampup, const Tensor& step_count, const Tensor& scalars, int found_inf_slot) {
  require(shadow.size() == params.size(), "ema_update", "one shadow per parameter");
  if (scalars.as<float>()[found_inf_slot] != 0.0f) return;  // G's step was skipped
  const float d = ew::ema_decay(decay, rampup, static_cast<float>(ew::count_load(step_count.as<float>())));
  for (size_t k = 0; k < params.size(); ++k) {
    require(
        shadow[k].dtype() == DType::F32 && params[k].dtype() == DType::F32 && shadow[k].numel() == params[k].numel(),
        "ema_update", "shadow and parameter must be FP32 of one size");
    float* sh = shadow[k].as<float>();
    const float* pv = params[k].as<float>();
    parallel_for(params[k].numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sh[i] = ew::ema_update(sh[i], pv[i], d);
    });
  }
}

}  // namespace ampgan
