// CPU backend: memory, conversions, element-wise ops, losses and the mixed-precision passes.
// Matrix products and convolutions are in cpu_linalg.cpp, batch norm in cpu_batchnorm.cpp.
#include "core/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"

namespace ampgan {

namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per chunk in element-wise loops

// Half -> float by table: 65,536 exact values, 256 KiB, faster than the branchy conversion in
// the CPU's hot loops (im2col, GEMM operands). The table is built with the shared function.
const float* half_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) t[i] = half_bits_to_float(static_cast<uint16_t>(i));
    return t;
  }();
  return table.data();
}

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

}  // namespace

CpuBackend::CpuBackend() { (void)half_table(); }
CpuBackend::~CpuBackend() { scratch_.clear(); }

std::string CpuBackend::name() const { return "CPU (" + std::to_string(cpu_threads()) + " threads, OpenBLAS)"; }

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
  switch (t.dtype()) {
    case DType::F32:
      std::memcpy(out, t.as<float>() + offset, count * 4);
      return;
    case DType::F16: {
      const uint16_t* src = t.as<uint16_t>() + offset;
      const float* table = half_table();
      parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = table[src[i]];
      });
      return;
    }
    case DType::BF16: {
      const uint16_t* src = t.as<uint16_t>() + offset;
      parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = bf16_bits_to_float(src[i]);
      });
      return;
    }
  }
}

void CpuBackend::narrow(const float* in, Tensor& t, int64_t offset, int64_t count) {
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    auto* dst = t.as<typename S::T>() + offset;
    parallel_for(count, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = S::store(in[i]);
    });
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
  dispatch_dtype(src.dtype(), [&](auto stag) {
    dispatch_dtype(dst.dtype(), [&](auto dtag) {
      using S = decltype(stag);
      using D = decltype(dtag);
      const auto* s = src.as<typename S::T>();
      auto* d = dst.as<typename D::T>();
      parallel_for(src.numel(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) d[i] = D::store(S::load(s[i]));
      });
    });
  });
}

void CpuBackend::fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter,
                             float stddev) {
  if (counter.defined()) stream += static_cast<uint64_t>(counter.as<float>()[0]);
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    auto* d = t.as<typename S::T>();
    parallel_for(t.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = S::store(stddev * philox_normal(seed, stream, i));
    });
  });
}

void CpuBackend::copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) {
  dst.as<float>()[dst_index] = src.as<float>()[src_index];
}

void CpuBackend::add_scalar(Tensor& dst, int index, float value) { dst.as<float>()[index] += value; }

void CpuBackend::activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) {
  require(x.dtype() == y.dtype() && x.numel() == y.numel(), "activation_forward", "mismatch");
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto* xs = x.as<typename S::T>();
    auto* ys = y.as<typename S::T>();
    parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ys[i] = S::store(ew::act_forward(act, alpha, S::load(xs[i])));
    });
  });
}

void CpuBackend::activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy,
                                     Tensor& dx) {
  require(y.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && y.numel() == dy.numel() &&
              dy.numel() == dx.numel(),
          "activation_backward", "mismatch");
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto* ys = y.as<typename S::T>();
    const auto* dys = dy.as<typename S::T>();
    auto* dxs = dx.as<typename S::T>();
    parallel_for(y.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        dxs[i] = S::store(ew::act_backward(act, alpha, S::load(ys[i]), S::load(dys[i])));
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
    const float* row = x + i * k;
    float* drow = dx + i * k;
    int64_t arg = 0;
    float mx = row[0];
    for (int64_t j = 1; j < k; ++j)
      if (row[j] > mx) mx = row[j], arg = j;
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j] - mx));
    const int64_t label = static_cast<int64_t>(y[i]);
    loss += std::log(sum) - (row[label] - mx);
    if (arg == label) ++correct;
    for (int64_t j = 0; j < k; ++j) {
      const double p = std::exp(static_cast<double>(row[j] - mx)) / sum;
      drow[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) / n);
    }
  }
  float* s = scalars.as<float>();
  s[loss_slot] = static_cast<float>(loss / n);
  s[correct_slot] = static_cast<float>(correct);
}

void CpuBackend::grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state,
                            Tensor& scalars, const GradStatSlots& slots) {
  const float inv_scale = 1.0f / scaler_state.as<float>()[0];
  bool found = false;
  double sum_sq = 0.0;
  int64_t zeros = 0, subnormals = 0, count = 0;
  for (const Tensor& g : grads) {
    dispatch_dtype(g.dtype(), [&](auto tag) {
      using S = decltype(tag);
      const auto* v = g.as<typename S::T>();
      const int64_t n = g.numel();
      struct Part {
        double sq = 0;
        int64_t zero = 0, sub = 0;
        bool bad = false;
      };
      std::vector<Part> parts(chunk_count(n, kGrain));
      parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        Part& p = parts[b / kGrain];
        float sq = 0.0f;
        for (int64_t i = b; i < e; ++i) {
          const auto raw = v[i];
          if (!S::is_finite(raw)) {
            p.bad = true;
            continue;
          }
          const float u = S::load(raw) * inv_scale;
          sq += u * u;
          p.zero += S::is_zero(raw);
          p.sub += S::is_subnormal(raw);
        }
        p.sq = sq;
      });
      for (const Part& p : parts) {
        found |= p.bad;
        sum_sq += p.sq;
        zeros += p.zero;
        subnormals += p.sub;
      }
      count += n;
    });
  }
  float* s = scalars.as<float>();
  s[slots.found_inf] = found ? 1.0f : 0.0f;
  s[slots.sum_sq] = static_cast<float>(sum_sq);
  s[slots.zeros] = static_cast<float>(zeros);
  s[slots.subnormals] = static_cast<float>(subnormals);
  s[slots.count] = static_cast<float>(count);
}

void CpuBackend::grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) {
  require(hist.dtype() == DType::F32 && hist.numel() >= ew::kHistBins, "grad_histogram", "hist too small");
  std::vector<int64_t> counts(ew::kHistBins, 0);
  for (const Tensor& g : grads) {
    dispatch_dtype(g.dtype(), [&](auto tag) {
      using S = decltype(tag);
      const auto* v = g.as<typename S::T>();
      for (int64_t i = 0; i < g.numel(); ++i) ++counts[ew::exponent_bin(S::load(v[i]))];
    });
  }
  float* h = hist.as<float>();
  for (int i = 0; i < ew::kHistBins; ++i) h[i] = static_cast<float>(counts[i]);
}

void CpuBackend::adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg,
                           Tensor& step_count, const Tensor& scaler_state, const Tensor& scalars,
                           int found_inf_slot) {
  if (scalars.as<float>()[found_inf_slot] != 0.0f) return;  // skipped step: nothing changes
  float& t = step_count.as<float>()[0];
  t += 1.0f;
  const ew::AdamScalars s =
      ew::adam_scalars(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, t, scaler_state.as<float>()[0]);
  for (const AdamTensor& p : params) {
    float* w = p.master.as<float>();
    float* m = p.m.as<float>();
    float* v = p.v.as<float>();
    dispatch_dtype(p.grad.dtype(), [&](auto gtag) {
      using G = decltype(gtag);
      const auto* g = p.grad.as<typename G::T>();
      auto body = [&](auto htag, bool has_half) {
        using H = decltype(htag);
        auto* h = has_half ? p.half_copy.as<typename H::T>() : nullptr;
        parallel_for(p.master.numel(), kGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            ew::adam_update(s, G::load(g[i]), w[i], m[i], v[i]);
            if (h) h[i] = H::store(w[i]);
          }
        });
      };
      if (!p.half_copy.defined()) body(ew::F32{}, false);
      else if (p.half_copy.dtype() == DType::F16) body(ew::F16{}, true);
      else body(ew::BF16{}, true);
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
