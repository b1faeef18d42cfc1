// CPU backend: memory, conversions, element-wise ops, losses and the mixed-precision passes.
// Matrix products and convolutions are in cpu_linalg.cpp, batch norm in cpu_batchnorm.cpp.
#include "core/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/cpu_features.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"

namespace ampgan {

namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per parallel chunk in element-wise loops
constexpr int64_t kTile = 512;       // elements widened to FP32 at a time inside a chunk

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

// Runs f(begin, count, float* tile) over [b, e) in tiles: the storage-to-FP32 conversions happen
// a tile at a time (vectorised), the arithmetic in between on FP32 values.
template <typename F>
void tiles(int64_t b, int64_t e, F&& f) {
  float buf[kTile];
  for (int64_t t = b; t < e; t += kTile) f(t, std::min(kTile, e - t), buf);
}

// Calls f with the activation as a compile-time constant, so the per-element switch folds away.
template <typename F>
void dispatch_act(ew::Act a, F&& f) {
  switch (a) {
    case ew::Act::ReLU: return f(std::integral_constant<ew::Act, ew::Act::ReLU>{});
    case ew::Act::LeakyReLU: return f(std::integral_constant<ew::Act, ew::Act::LeakyReLU>{});
    case ew::Act::Tanh: return f(std::integral_constant<ew::Act, ew::Act::Tanh>{});
    default: return f(std::integral_constant<ew::Act, ew::Act::Identity>{});
  }
}

}  // namespace

CpuBackend::CpuBackend() = default;
CpuBackend::~CpuBackend() { scratch_.clear(); }

std::string CpuBackend::name() const {
  // The instruction sets that decide what mixed precision can buy here (core/common/cpu_features.h).
  return "CPU (" + std::to_string(cpu_threads()) + " threads, OpenBLAS, " + cpu_features().summary() + ")";
}

Tensor CpuBackend::empty(Shape shape, DType dtype, MemCategory category) {
  const size_t bytes = std::max<size_t>(64, static_cast<size_t>(shape.numel()) * dtype_size(dtype));
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p)
    throw OutOfMemoryError("out of host memory allocating " + std::to_string(rounded >> 20) + " MiB",
                           "tensor " + shape.str(), "try a smaller batch, width or resolution");
  auto st = std::make_shared<Storage>();
  st->ptr = p;
  st->bytes = rounded;
  st->category = category;
  st->owner = this;
  memory_.add(category, rounded);
  return Tensor(std::move(st), shape, dtype, DeviceKind::CPU);
}

void CpuBackend::release(Storage& s) {
  memory_.remove(s.category, s.bytes);
  std::free(s.ptr);
  s.ptr = nullptr;
}

float* CpuBackend::scratch(int slot, size_t floats) {
  if (static_cast<int>(scratch_.size()) <= slot) scratch_.resize(slot + 1);
  Tensor& t = scratch_[slot];
  if (!t.defined() || t.capacity_bytes() < floats * 4)
    t = empty(Shape{static_cast<int64_t>(std::max<size_t>(floats, 16))}, DType::F32, MemCategory::Workspace);
  return t.as<float>();
}

void CpuBackend::upload(Tensor& dst, const void* host, size_t nbytes) {
  require(nbytes == dst.nbytes(), "upload", "size mismatch");
  std::memcpy(dst.data(), host, nbytes);
}

void CpuBackend::download(const Tensor& src, void* host, size_t nbytes) {
  require(nbytes == src.nbytes(), "download", "size mismatch");
  std::memcpy(host, src.data(), nbytes);
}

void CpuBackend::widen(const Tensor& t, int64_t offset, int64_t count, float* out) {
  const void* src = cpu::at(t.data(), t.dtype(), offset);
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
    cpu::widen(t.dtype(), cpu::at(src, t.dtype(), b), out + b, e - b);
  });
}

void CpuBackend::narrow(const float* in, Tensor& t, int64_t offset, int64_t count) {
  void* dst = cpu::at(t.data(), t.dtype(), offset);
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
    cpu::narrow(t.dtype(), in + b, cpu::at(dst, t.dtype(), b), e - b);
  });
}

void CpuBackend::fill(Tensor& t, float value) {
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto v = S::store(value);
    std::fill_n(t.as<typename S::T>(), t.numel(), v);
  });
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  require(src.dtype() == dst.dtype() && src.numel() == dst.numel(), "copy", "dtype or size mismatch");
  if (src.data() != dst.data()) std::memmove(dst.data(), src.data(), src.nbytes());
}

void CpuBackend::cast(const Tensor& src, Tensor& dst) {
  require(src.numel() == dst.numel(), "cast", "size mismatch");
  if (src.dtype() == dst.dtype()) return copy(src, dst);
  parallel_for(src.numel(), kGrain, [&](int64_t b, int64_t e) {
    tiles(b, e, [&](int64_t t, int64_t n, float* buf) {
      cpu::widen(src.dtype(), cpu::at(src.data(), src.dtype(), t), buf, n);
      cpu::narrow(dst.dtype(), buf, cpu::at(dst.data(), dst.dtype(), t), n);
    });
  });
}

void CpuBackend::fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter,
                             float stddev) {
  if (counter.defined()) {
    require(counter.dtype() == DType::F32 && counter.numel() == 2, "fill_normal", "the counter must be an FP32 [lo, hi] count");
    stream += ew::count_load(counter.as<float>());
  }
  parallel_for(t.numel(), kGrain, [&](int64_t b, int64_t e) {
    tiles(b, e, [&](int64_t s, int64_t n, float* buf) {
      for (int64_t i = 0; i < n; ++i) buf[i] = stddev * philox_normal(seed, stream, s + i);
      cpu::narrow(t.dtype(), buf, cpu::at(t.data(), t.dtype(), s), n);
    });
  });
}

void CpuBackend::copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) {
  dst.as<float>()[dst_index] = src.as<float>()[src_index];
}

void CpuBackend::add_scalar(Tensor& dst, int index, float value) { dst.as<float>()[index] += value; }

void CpuBackend::count_increment(Tensor& count) {
  require(count.dtype() == DType::F32 && count.numel() == 2, "count_increment", "an FP32 [lo, hi] count");
  ew::count_increment(count.as<float>());
}

void CpuBackend::activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) {
  require(x.dtype() == y.dtype() && x.numel() == y.numel(), "activation_forward", "mismatch");
  const DType dt = x.dtype();
  dispatch_act(act, [&](auto a) {
    parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      tiles(b, e, [&](int64_t t, int64_t n, float* buf) {
        cpu::widen(dt, cpu::at(x.data(), dt, t), buf, n);
        for (int64_t i = 0; i < n; ++i) buf[i] = ew::act_forward(a.value, alpha, buf[i]);
        cpu::narrow(dt, buf, cpu::at(y.data(), dt, t), n);
      });
    });
  });
}

void CpuBackend::activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy,
                                     Tensor& dx) {
  require(y.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && y.numel() == dy.numel() &&
              dy.numel() == dx.numel(),
          "activation_backward", "mismatch");
  const DType dt = y.dtype();
  dispatch_act(act, [&](auto a) {
    parallel_for(y.numel(), kGrain, [&](int64_t b, int64_t e) {
      float ybuf[kTile];
      tiles(b, e, [&](int64_t t, int64_t n, float* buf) {
        cpu::widen(dt, cpu::at(y.data(), dt, t), ybuf, n);
        cpu::widen(dt, cpu::at(dy.data(), dt, t), buf, n);
        for (int64_t i = 0; i < n; ++i) buf[i] = ew::act_backward(a.value, alpha, ybuf[i], buf[i]);
        cpu::narrow(dt, buf, cpu::at(dx.data(), dt, t), n);
      });
    });
  });
}

void CpuBackend::gan_loss(LossKind kind, LossRole role, const Tensor& logits,
                          const Tensor& scaler_state, Tensor& dlogits, Tensor& scalars,
                          int loss_slot, int prob_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 &&
              logits.numel() == dlogits.numel(),
          "gan_loss", "logits must be FP32");
  const int64_t n = logits.numel();
  const float* x = logits.as<float>();
  float* dx = dlogits.as<float>();
  const float scale = scaler_state.as<float>()[0];
  const float target = role == LossRole::DFake ? 0.0f : 1.0f;
  const ew::HingeRole hr = role == LossRole::DReal   ? ew::HingeRole::DReal
                           : role == LossRole::DFake ? ew::HingeRole::DFake
                                                     : ew::HingeRole::G;
  double loss = 0.0, prob = 0.0;
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) {
    if (kind == LossKind::BCEWithLogits) {
      loss += ew::bce_logits_loss(x[i], target);
      dx[i] = ew::bce_logits_grad(x[i], target) * inv_n * scale;
    } else {
      loss += ew::hinge_loss(hr, x[i]);
      dx[i] = ew::hinge_grad(hr, x[i]) * inv_n * scale;
    }
    prob += ew::sigmoid(x[i]);
  }
  float* s = scalars.as<float>();
  s[loss_slot] += static_cast<float>(loss / n);
  if (prob_slot >= 0) s[prob_slot] = static_cast<float>(prob / n);
}

void CpuBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits,
                                       Tensor& scalars, int loss_slot, int correct_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.shape().rank == 2,
          "softmax_cross_entropy", "logits must be FP32 (n, classes)");
  const int64_t n = logits.shape()[0], k = logits.shape()[1];
  const float* x = logits.as<float>();
  const float* y = labels.as<float>();
  float* dx = dlogits.as<float>();
  double loss = 0.0;
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool right = false;
    loss += ew::softmax_xent_row(x + i * k, k, static_cast<int64_t>(y[i]), static_cast<double>(n), dx + i * k, right);
    correct += right;
  }
  float* s = scalars.as<float>();
  s[loss_slot] = static_cast<float>(loss / n);
  s[correct_slot] = static_cast<float>(correct);
}

void CpuBackend::grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state,
                            Tensor& scalars, const GradStatSlots& slots) {
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

void CpuBackend::adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg,
                           Tensor& step_count, const Tensor& scaler_state, const Tensor& scalars,
                           int found_inf_slot) {
  if (scalars.as<float>()[found_inf_slot] != 0.0f) return;  // skipped step: nothing changes
  require(step_count.dtype() == DType::F32 && step_count.numel() == 2, "adam_step", "step_count: an FP32 [lo, hi] count");
  ew::count_increment(step_count.as<float>());
  const float t = static_cast<float>(ew::count_load(step_count.as<float>()));
  const ew::AdamScalars s =
      ew::adam_scalars(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, t, scaler_state.as<float>()[0]);
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
    require(shadow[k].dtype() == DType::F32 && params[k].dtype() == DType::F32 &&
                shadow[k].numel() == params[k].numel(),
            "ema_update", "shadow and parameter must be FP32 of one size");
    float* sh = shadow[k].as<float>();
    const float* pv = params[k].as<float>();
    parallel_for(params[k].numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sh[i] = ew::ema_update(sh[i], pv[i], d);
    });
  }
}

void CpuBackend::scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg,
                               const Tensor& scalars, const std::vector<int>& found_inf_slots) {
  bool found = false;
  for (int slot : found_inf_slots) found |= scalars.as<float>()[slot] != 0.0f;
  float* st = scaler_state.as<float>();
  ew::scaler_update(st[0], st[1], found, cfg);
}

}  // namespace ampgan
