// CPU backend: the three convolution ops, each run one of two ways, chosen per direction,
// geometry and dtype by the KernelPlan (timed on the first call, or forced): im2col + a matrix
// product (cpu_linalg.cpp), or oneDNN's direct convolution (cpu_conv_onednn.h), here.
//
// The direct way cuts the batch into groups of whole samples fixed by the geometry (at most
// kGroups), one thread per group, each running oneDNN single-threaded: the results are the same
// at any thread count, and the filter gradient's per-group partial sums are added in group order.
// Operands: FP32 and BF16 tensors as they are, FP16 widened to FP32 (exact); outputs in the
// operands' dtype (BF16 rounded once by oneDNN), FP32 for FP16, rounded once here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::ConvDirection;
using cpu::DirectConv;

namespace {

constexpr int64_t kGroups = 8;

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

// The operand dtype of the direct way: BF16 stays BF16, FP16 is widened.
DType operand_dtype(DType dt) { return dt == DType::BF16 ? DType::BF16 : DType::F32; }

// The batch cut into groups of spg samples; the last may be smaller.
struct Groups {
  int spg = 1, count = 1, last = 1;
  ConvGeometry full, tail;
};
Groups groups_of(const ConvGeometry& g) {
  Groups q;
  q.spg = static_cast<int>(chunk_count(g.n, kGroups));
  q.count = static_cast<int>(chunk_count(g.n, q.spg));
  q.last = g.n - (q.count - 1) * q.spg;
  q.full = q.tail = g;
  q.full.n = q.spg;
  q.tail.n = q.last;
  return q;
}

struct DirectPair {
  std::shared_ptr<const DirectConv> full, tail;
  explicit operator bool() const { return full && tail; }
  const DirectConv& of(int group, const Groups& q) const { return group == q.count - 1 ? *tail : *full; }
};
std::string plan_key(ConvDirection d, const ConvGeometry& g, DType dt) {
  const char* dir = d == ConvDirection::Forward ? "fwd" : d == ConvDirection::BackwardData ? "bwd-data" : "bwd-filter";
  char b[160];
  std::snprintf(b, sizeof b, "%s conv %s n%d %dx%dx%d k%d %dx%d stride %d pad %d", dtype_name(dt), dir, g.n, g.h, g.w,
                g.c, g.k, g.r, g.s, g.stride, g.pad);
  return b;
}

// Per-task scratch of the direct way, in floats: only FP16 has any, its widened input and FP32
// output (the two operands, for the filter gradient, whose own layout is blocked_floats()). Every
// direction reads one tensor of each size, so the direction does not enter.
int64_t direct_task_floats(const ConvGeometry& g, DType dt, int spg) {
  if (dt != DType::F16) return 0;
  return int64_t{spg} * g.h * g.w * g.c + int64_t{spg} * g.out_h() * g.out_w() * g.k;
}

// The filter gradient in the kernel's own layout, per task, on its way to the plain one.
int64_t blocked_floats(ConvDirection d, const DirectConv& full, const DirectConv& tail) {
  if (d != ConvDirection::BackwardFilter) return 0;
  return static_cast<int64_t>(std::max(full.gradient_is_plain() ? 0 : full.weights_bytes(),
                                       tail.gradient_is_plain() ? 0 : tail.weights_bytes()) /
                                  4 +
                              16);
}

}  // namespace

bool CpuBackend::reserve_direct(ConvDirection d, const ConvGeometry& g, DType dt) {
  const Groups q = groups_of(g);
  const DType od = operand_dtype(dt);
  const auto full = DirectConv::get(d, q.full, od), tail = DirectConv::get(d, q.tail, od);
  if (!full || !tail) return false;
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  if (dt == DType::F16) scratch(kWeights, size_t(g.k) * rsc);
  if (d != ConvDirection::BackwardFilter) {
    scratch(kPacked, full->weights_bytes() / 4 + 1);
    scratch(kPackedLast, tail->weights_bytes() / 4 + 1);
  } else {
    if (dt != DType::F32) scratch(kAccum, size_t(g.k) * rsc);
    scratch(kPartials, size_t(kGroups) * g.k * rsc);  // not q.count: the same at every batch size
  }
  const int64_t per_task = direct_task_floats(g, dt, q.spg) + blocked_floats(d, *full, *tail);
  if (per_task > 0) scratch(kTiles, size_t(cpu_threads() * per_task));
  // And a line in the batch through it (a group is ceil(n / kGroups) samples, a step function of
  // the batch): the largest-batch prediction extrapolates the memory of two small batches.
  const int64_t linear = direct_task_floats(g, dt, 1) * (g.n + kGroups) / kGroups + blocked_floats(d, *full, *tail);
  if (linear > 0) scratch(kTiles, size_t(cpu_threads() * linear));
  return true;
}

void CpuBackend::conv_planned(ConvDirection d, const ConvGeometry& g, DType dt, const std::function<void(bool)>& run,
                              const std::function<void()>& restore) {
  reserve_im2col(d, g, dt);
  std::vector<std::string> ways = {cpu::kIm2col};
  if (reserve_direct(d, g, dt)) ways.push_back(cpu::kDirect);
  const std::string way = plan_.choose_conv(plan_key(d, g, dt), ways, [&](const std::string& w) {
    if (restore) restore();
    const auto t0 = std::chrono::steady_clock::now();
    run(w == cpu::kDirect);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  if (restore) restore();
  run(way == cpu::kDirect);
}

void CpuBackend::conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  check(x.dtype() == w.dtype() && w.dtype() == y.dtype(), "conv2d_forward", "dtypes differ");
  check(x.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() && y.numel() == g.y_shape().numel(),
        "conv2d_forward", "shapes do not match the geometry");
  conv_planned(ConvDirection::Forward, g, x.dtype(),
               [&](bool direct) {
                 if (direct)
                   conv_forward_direct(g, x, w, y);
                 else
                   conv_forward_im2col(g, x, w, y);
               },
               {});
}

void CpuBackend::conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) {
  check(dy.dtype() == w.dtype() && w.dtype() == dx.dtype(), "conv2d_backward_data", "dtypes differ");
  check(dx.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() && dy.numel() == g.y_shape().numel(),
        "conv2d_backward_data", "shapes do not match the geometry");
  conv_planned(ConvDirection::BackwardData, g, dy.dtype(),
               [&](bool direct) {
                 if (direct)
                   conv_backward_data_direct(g, dy, w, dx);
                 else
                   conv_backward_data_im2col(g, dy, w, dx);
               },
               {});
}

void CpuBackend::conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                        bool accumulate) {
  check(x.dtype() == dy.dtype() && dy.dtype() == dw.dtype(), "conv2d_backward_filter", "dtypes differ");
  check(x.numel() == g.x_shape().numel() && dw.numel() == g.w_shape().numel() && dy.numel() == g.y_shape().numel(),
        "conv2d_backward_filter", "shapes do not match the geometry");
  // Timing both ways runs the op more than once: an accumulated gradient starts from its value.
  std::vector<uint8_t> before;
  std::function<void()> restore;
  if (accumulate) {
    restore = [&] {
      if (before.empty())
        before.assign(static_cast<const uint8_t*>(dw.data()), static_cast<const uint8_t*>(dw.data()) + dw.nbytes());
      else
        std::memcpy(dw.data(), before.data(), before.size());
    };
  }
  conv_planned(
      ConvDirection::BackwardFilter, g, x.dtype(),
      [&](bool direct) {
        if (direct)
          conv_backward_filter_direct(g, x, dy, dw, accumulate);
        else
          conv_backward_filter_im2col(g, x, dy, dw, accumulate);
      },
      restore);
}

// ---- the direct way -----------------------------------------------------------------------------

namespace {

DirectPair pair_for(ConvDirection d, const Groups& q, DType od) {
  return {DirectConv::get(d, q.full, od), DirectConv::get(d, q.tail, od)};
}

// The weights (k, r, s, c) as the direct way reads them: the tensor's own (FP32, BF16) or widened.
const void* plain_weights(const Tensor& w, float* widened) {
  if (w.dtype() != DType::F16) return w.data();
  cpu::widen(DType::F16, w.data(), widened, w.numel());
  return widened;
}

// Runs fn(group, task) over the groups, one task per thread.
void for_each_group(int groups, const std::function<void(int group, int task)>& fn) {
  std::atomic<int> next{0};
  parallel_chunks(std::min<int64_t>(cpu_threads(), groups), [&](int64_t task) {
    for (int q = next.fetch_add(1); q < groups; q = next.fetch_add(1)) fn(q, static_cast<int>(task));
  });
}

}  // namespace

void CpuBackend::conv_forward_direct(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  const DType dt = x.dtype(), od = operand_dtype(dt);
  const Groups q = groups_of(g);
  const DirectPair p = pair_for(ConvDirection::Forward, q, od);
  const int64_t rsc = int64_t{g.r} * g.s * g.c, in = int64_t{g.h} * g.w * g.c,
                out = int64_t{g.out_h()} * g.out_w() * g.k;
  const void* wp = plain_weights(w, dt == DType::F16 ? scratch(kWeights, size_t(g.k) * rsc) : nullptr);
  float* packed = scratch(kPacked, p.full->weights_bytes() / 4 + 1);
  float* packed_tail = scratch(kPackedLast, p.tail->weights_bytes() / 4 + 1);
  p.full->pack_weights(wp, packed);
  if (q.count > 1 && q.last != q.spg)
    p.tail->pack_weights(wp, packed_tail);
  else
    packed_tail = packed;
  const int64_t per_task = direct_task_floats(g, dt, q.spg);
  float* tasks = per_task > 0 ? scratch(kTiles, size_t(cpu_threads() * per_task)) : nullptr;
  for_each_group(q.count, [&](int group, int task) {
    const int64_t n0 = int64_t{group} * q.spg, n = group == q.count - 1 ? q.last : q.spg;
    float* own = tasks ? tasks + task * per_task : nullptr;
    const void* src = cpu::at(x.data(), dt, n0 * in);
    if (dt == DType::F16) {
      cpu::widen(dt, src, own, n * in);
      src = own;
      own += q.spg * in;
    }
    void* dst = dt == DType::F16 ? own : cpu::at(y.data(), dt, n0 * out);
    p.of(group, q).forward(src, group == q.count - 1 ? packed_tail : packed, dst);
    if (dt == DType::F16) cpu::narrow(dt, own, cpu::at(y.data(), dt, n0 * out), n * out);
  });
}

void CpuBackend::conv_backward_data_direct(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) {
  const DType dt = dy.dtype(), od = operand_dtype(dt);
  const Groups q = groups_of(g);
  const DirectPair p = pair_for(ConvDirection::BackwardData, q, od);
  const int64_t rsc = int64_t{g.r} * g.s * g.c, in = int64_t{g.h} * g.w * g.c,
                out = int64_t{g.out_h()} * g.out_w() * g.k;
  const void* wp = plain_weights(w, dt == DType::F16 ? scratch(kWeights, size_t(g.k) * rsc) : nullptr);
  float* packed = scratch(kPacked, p.full->weights_bytes() / 4 + 1);
  float* packed_tail = scratch(kPackedLast, p.tail->weights_bytes() / 4 + 1);
  p.full->pack_weights(wp, packed);
  if (q.count > 1 && q.last != q.spg)
    p.tail->pack_weights(wp, packed_tail);
  else
    packed_tail = packed;
  const int64_t per_task = direct_task_floats(g, dt, q.spg);
  float* tasks = per_task > 0 ? scratch(kTiles, size_t(cpu_threads() * per_task)) : nullptr;
  for_each_group(q.count, [&](int group, int task) {
    const int64_t n0 = int64_t{group} * q.spg, n = group == q.count - 1 ? q.last : q.spg;
    float* own = tasks ? tasks + task * per_task : nullptr;
    const void* src = cpu::at(dy.data(), dt, n0 * out);
    if (dt == DType::F16) {
      cpu::widen(dt, src, own, n * out);
      src = own;
      own += q.spg * out;
    }
    void* dst = dt == DType::F16 ? own : cpu::at(dx.data(), dt, n0 * in);
    p.of(group, q).backward_data(src, group == q.count - 1 ? packed_tail : packed, dst);
    if (dt == DType::F16) cpu::narrow(dt, own, cpu::at(dx.data(), dt, n0 * in), n * in);
  });
}

void CpuBackend::conv_backward_filter_direct(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                             bool accumulate) {
  const DType dt = x.dtype(), od = operand_dtype(dt);
  const Groups q = groups_of(g);
  const DirectPair p = pair_for(ConvDirection::BackwardFilter, q, od);
  const int64_t rsc = int64_t{g.r} * g.s * g.c, kw = g.k * rsc;
  const int64_t in = int64_t{g.h} * g.w * g.c, out = int64_t{g.out_h()} * g.out_w() * g.k;
  float* partials = scratch(kPartials, size_t(kGroups) * kw);
  const int64_t widened = direct_task_floats(g, dt, q.spg);
  const int64_t per_task = widened + blocked_floats(ConvDirection::BackwardFilter, *p.full, *p.tail);
  float* tasks = per_task > 0 ? scratch(kTiles, size_t(cpu_threads() * per_task)) : nullptr;
  for_each_group(q.count, [&](int group, int task) {
    const int64_t n0 = int64_t{group} * q.spg, n = group == q.count - 1 ? q.last : q.spg;
    float* own = tasks ? tasks + task * per_task : nullptr;
    const void* xs = cpu::at(x.data(), dt, n0 * in);
    const void* dys = cpu::at(dy.data(), dt, n0 * out);
    if (dt == DType::F16) {
      cpu::widen(dt, xs, own, n * in);
      cpu::widen(dt, dys, own + q.spg * in, n * out);
      xs = own;
      dys = own + q.spg * in;
    }
    p.of(group, q).backward_filter(xs, dys, partials + group * kw, own ? own + widened : nullptr);
  });
  // The partials in group order, into the FP32 gradient (the tensor's own if FP32).
  float* dwf = dw.dtype() == DType::F32 ? dw.as<float>() : scratch(kAccum, size_t(kw));
  if (dw.dtype() != DType::F32 && accumulate) widen(dw, 0, kw, dwf);
  parallel_for(kw, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float sum = partials[i];
      for (int64_t gq = 1; gq < q.count; ++gq) sum += partials[gq * kw + i];
      dwf[i] = accumulate ? dwf[i] + sum : sum;
    }
  });
  if (dw.dtype() != DType::F32) narrow(dwf, dw, 0, kw);
}

}  // namespace ampgan
