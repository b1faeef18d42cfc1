// Cases: mixed precision (gradient statistics, histogram, Adam, EMA, the loss scaler) and the AMP
// safeguards (activation clamp, nan_to_num) (backend.h "mixed precision", "AMP safeguards"),
// with the clamp's gradient check.
#include <cmath>

#include "core/amp/precision.h"
#include "core/backend/elementwise.h"
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

// ---- gradient statistics and histogram --------------------------------------------------------------

// A network's gradients as the trainer produces them in a half mode: half conv-weight gradients,
// FP32 batch-norm gradients, scaled by S = 1024, with exact zeros and subnormals of each format
// planted, optionally an inf or a NaN in tensor 3.
std::vector<Tensor> make_grads(Backend& b, DType half, float planted, int extra_tensors) {
  std::vector<Tensor> grads;
  auto add = [&](Shape shape, DType t, uint64_t seed, float stddev, bool plant) {
    std::vector<float> v = random_normal(shape.numel(), seed, stddev);
    for (size_t i = 0; i < v.size(); i += 17) v[i] = 0.0f;
    const float sub = t == DType::F16 ? 0x1p-20f : t == DType::BF16 ? 1e-39f : 1e-40f;
    for (size_t i = 3; i < v.size(); i += 29) v[i] = (i & 1) ? sub : -sub;
    if (plant && planted != 0.0f) v[12345] = planted;
    grads.push_back(input(b, shape, t, v, MemCategory::Gradient));
  };
  add(Shape{64, 4, 4, 3}, half, 101, 1024.0f * 1e-3f, false);
  add(Shape{64}, DType::F32, 102, 1024.0f * 1e-2f, false);
  add(Shape{64}, DType::F32, 103, 1024.0f * 1e-2f, false);
  add(Shape{128, 4, 4, 64}, half, 104, 1024.0f * 1e-4f, true);
  add(Shape{1, 4, 4, 128}, half, 105, 1e-5f, false);  // mostly subnormal in f16 (below 2^-14), normal in bf16/f32
  for (int i = 0; i < extra_tensors; ++i) add(Shape{33 + i}, i % 2 ? half : DType::F32, 200 + i, 10.0f, false);
  return grads;
}

struct Planted {
  float value;
  const char* name;
};
const Planted kPlanted[] = {{0.0f, "clean"}, {INFINITY, "inf"}, {-INFINITY, "minf"}, {NAN, "nan"}, {1e30f, "1e30"}};

std::string grads_name(const Planted& p, int extra) { return std::string(p.name) + "_t" + std::to_string(5 + extra); }

CaseFn grad_stats_case(float planted, int extra) {
  return [planted, extra](Backend& b, DType half, Outputs& out) {
    const GradStatSlots slots{1, 2, 3, 5, 7};  // counts take [slot, slot + 1]
    const std::vector<Tensor> grads = make_grads(b, half, planted, extra);
    Tensor state = input(b, Shape{2}, DType::F32, {1024.0f, 0.0f});
    Tensor s = input(b, Shape{10}, DType::F32, std::vector<float>(10, 7.0f));
    b.grad_stats(grads, state, s, slots);
    out.slice("found_inf", s, 1, 1, {equal()});
    out.count("zero count", s, 3);
    out.count("subnormal count", s, 5);
    out.count("value count", s, 7);
    const auto sv = to_host(b, s);
    const std::string on = " on " + b.name();
    EXPECT_EQ(sv[8], 0.0f) << "the value count's high slot (fewer than 2^24 values)" << on;
    EXPECT_EQ(sv[0], 7.0f) << "slot 0 must be untouched" << on;
    EXPECT_EQ(sv[9], 7.0f) << "slot 9 must be untouched" << on;
    // The sum of squares is defined for finite gradients only (an infinite one must stay infinite).
    if (sv[1] == 0.0f) out.slice("sum_sq", s, 2, 1, {rel(kSumSqTol)});
    if (planted == 0.0f) EXPECT_GT(ew::count_load(&sv[5]), 0u) << "the test must plant subnormals" << on;
  };
}

void grad_stats_empty_case(Backend& b, DType, Outputs& out) {
  Tensor state = input(b, Shape{2}, DType::F32, {1.0f, 0.0f});
  Tensor s = input(b, Shape{10}, DType::F32, std::vector<float>(10, 7.0f));
  b.grad_stats({}, state, s, GradStatSlots{1, 2, 3, 5, 7});
  out.tensor("grad_stats of an empty list", s, {bits_exact()});
}

// Per-tensor statistics (max |g / scale|, inf/NaN and underflow counts) are order-independent,
// so they equal the CPU's bit for bit, across the 64-tensor launch split too.
CaseFn per_tensor_case(float planted, int extra) {
  return [planted, extra](Backend& b, DType half, Outputs& out) {
    const std::vector<Tensor> grads = make_grads(b, half, planted, extra);
    const int n = static_cast<int>(grads.size()), base = 9;
    const int total = base + kTensorStatSlots * n + 1;
    Tensor state = input(b, Shape{2}, DType::F32, {1024.0f, 0.0f});
    Tensor s = input(b, Shape{total}, DType::F32, std::vector<float>(total, 7.0f));
    b.grad_stats(grads, state, s, GradStatSlots{0, 1, 2, 4, 6, base});
    out.slice("per-tensor slots", s, base, total - base, {bits_exact()});
    if (planted != 0.0f)
      EXPECT_EQ(ew::count_load(&to_host(b, s)[base + 3 * kTensorStatSlots + kTensorNonFinite]), 1u)
          << "tensor 3's non-finite count on " << b.name();
  };
}

CaseFn histogram_case(float planted, int extra) {
  return [planted, extra](Backend& b, DType half, Outputs& out) {
    Tensor hist = blank(b, Shape{ew::kHistBins}, DType::F32);
    b.grad_histogram(make_grads(b, half, planted, extra), hist);
    out.tensor("grad_histogram", hist, {bits_exact()});
  };
}

// ---- Adam, EMA, scaler -------------------------------------------------------------------------------

// Parameters as one network has them: conv weights with gradients and working copies in the
// compute dtype, batch-norm parameters in FP32 throughout.
struct AdamSet {
  std::vector<AdamTensor> params;
  Tensor step;
};

AdamSet make_adam(Backend& b, DType compute, int count, uint64_t seed) {
  AdamSet s;
  for (int i = 0; i < count; ++i) {
    const bool bn = i % 3 == 2;
    const Shape shape = bn ? Shape{64} : Shape{32, 4, 4, 3 + i};
    const DType gt = bn ? DType::F32 : compute;
    const int64_t n = shape.numel();
    AdamTensor t;
    t.master = input(b, shape, DType::F32, random_normal(n, seed + 10 * i, 0.02f), MemCategory::Master);
    t.grad = input(b, shape, gt, random_normal(n, seed + 10 * i + 1, 1024.0f * 0.01f), MemCategory::Gradient);
    t.m = input(b, shape, DType::F32, random_normal(n, seed + 10 * i + 2, 1e-3f), MemCategory::Optimizer);
    // Adam's second moment is a running mean of squares: never negative (a negative v makes
    // sqrtf(v) NaN, and the master comparison fails on any backend).
    std::vector<float> v0 = scaled_normal(n, seed + 10 * i + 3, 1e-7f, 2e-7f);
    for (float& x : v0) x = std::fabs(x);
    t.v = input(b, shape, DType::F32, v0, MemCategory::Optimizer);
    if (gt != DType::F32) t.half_copy = input(b, shape, gt, std::vector<float>(n, 0.0f), MemCategory::HalfCopy);
    s.params.push_back(t);
  }
  s.step = input(b, Shape{2}, DType::F32, {4.0f, 0.0f});  // [lo, hi] count: t = 4
  return s;
}

AdamConfig adam_config() {
  AdamConfig cfg;
  cfg.lr = 2e-4f, cfg.beta1 = 0.5f, cfg.beta2 = 0.999f, cfg.eps = 1e-8f;
  return cfg;
}

void add_adam_outputs(Outputs& out, const std::string& what, const AdamSet& a) {
  for (size_t i = 0; i < a.params.size(); ++i) {
    const AdamTensor& p = a.params[i];
    const std::string name = what + " param " + std::to_string(i);
    out.tensor(name + " master", p.master, {norm(all_dtypes(1e-6))});
    out.tensor(name + " m", p.m, {exact_unless_fma(kFp32Tol)});
    out.tensor(name + " v", p.v, {exact_unless_fma(kFp32Tol)});
    if (p.half_copy.defined()) out.tensor(name + " half copy", p.half_copy, {ulps(all_dtypes(1))});
  }
}

// Four steps, the third skipped (found_inf set): a skipped step changes no bit.
CaseFn adam_case(int count) {
  return [count](Backend& b, DType compute, Outputs& out) {
    AdamSet a = make_adam(b, compute, count, 1000 + count);
    Tensor state = input(b, Shape{2}, DType::F32, {1024.0f, 0.0f});
    for (int step = 0; step < 4; ++step) {
      const bool skip = step == 2;
      Tensor s = input(b, Shape{3}, DType::F32, {0.0f, skip ? 1.0f : 0.0f, 0.0f});
      std::vector<std::vector<uint32_t>> before;
      for (const AdamTensor& p : a.params) before.push_back(tensor_bits(b, p.master));
      b.adam_step(a.params, adam_config(), a.step, state, s, 1);
      const std::string what = "adam_step " + std::to_string(step) + (skip ? " (found_inf set: skipped)" : "");
      out.tensor(what + " step count", a.step, {bits_exact()});
      if (skip)
        for (size_t i = 0; i < a.params.size(); ++i)
          EXPECT_TRUE(tensor_bits(b, a.params[i].master) == before[i])
              << what << " on " << b.name() << ": master " << i << " changed";
      add_adam_outputs(out, what, a);
      // New gradients for the next step, identical on every backend.
      for (size_t i = 0; i < a.params.size(); ++i) {
        Tensor& g = a.params[i].grad;
        g = input(b, g.shape(), g.dtype(), random_normal(g.numel(), 5000 + 97 * step + i, 1024.0f * 0.01f),
                  MemCategory::Gradient);
      }
    }
    EXPECT_EQ(to_host(b, a.step), (std::vector<float>{7.0f, 0.0f})) << "adam_step: 4 + 3 applied steps on " << b.name();
  };
}

// Adam's t past 2^24, where one float would stop counting: 2^24 - 1 + 2 applied steps.
void adam_past_2p24_case(Backend& b, DType compute, Outputs& out) {
  AdamSet a = make_adam(b, compute, 5, 77);
  a.step = input(b, Shape{2}, DType::F32, {16777215.0f, 0.0f});
  Tensor state = input(b, Shape{2}, DType::F32, {1024.0f, 0.0f});
  Tensor s = input(b, Shape{3}, DType::F32, {0.0f, 0.0f, 0.0f});
  for (int step = 0; step < 2; ++step) b.adam_step(a.params, adam_config(), a.step, state, s, 1);
  out.tensor("adam_step count across 2^24", a.step, {bits_exact()});
  EXPECT_EQ(to_host(b, a.step), (std::vector<float>{1.0f, 1.0f})) << "adam_step: t = 2^24 + 1 on " << b.name();
  for (size_t i = 0; i < a.params.size(); ++i)
    out.tensor("adam_step past 2^24 master " + std::to_string(i), a.params[i].master, {norm(all_dtypes(1e-6))});
}

// One multiply-add per element in FP32 and the same decay: the shadow matches bit for bit (fmad
// off), and stays untouched on a skipped step.
void ema_case(Backend& b, DType, Outputs& out) {
  const int64_t n = 3001;
  Tensor sh = input(b, Shape{n}, DType::F32, random_normal(n, 701)),
         p = input(b, Shape{n}, DType::F32, random_normal(n, 702));
  std::vector<float> tv(2);
  ew::count_store(tv.data(), 7);
  Tensor tt = input(b, Shape{2}, DType::F32, tv);
  for (float skip : {0.0f, 1.0f}) {
    Tensor s = input(b, Shape{4}, DType::F32, {0, 0, skip, 0});
    b.ema_update({sh}, {p}, 0.999f, 10.0f, tt, s, 2);
    out.tensor(skip ? "ema_update (skipped)" : "ema_update", sh, {bits_exact()});
  }
}

// Found-inf flags of two networks per step: growth to the ceiling (16 -> 64), back-off down to
// the floor (2), growth back up to the ceiling, where a further growth is refused.
void scaler_case(Backend& b, DType, Outputs& out) {
  ew::ScalerConfig cfg;
  cfg.init_scale = 16.0f, cfg.growth_interval = 3, cfg.min_scale = 2.0f, cfg.max_scale = 64.0f;
  Tensor state = input(b, Shape{2}, DType::F32, {16.0f, 0.0f});
  const int flags[][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 0},
                          {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0},
                          {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0},
                          {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}};
  int step = 0;
  for (const auto& f : flags) {
    Tensor s = input(b, Shape{4}, DType::F32, {0.0f, float(f[0]), 0.0f, float(f[1]) * 3.0f});
    b.scaler_update(state, cfg, s, {1, 3});
    out.tensor("scaler_update step " + std::to_string(step++) + " [scale, growth tracker]", state, {bits_exact()});
  }
}

// ---- AMP safeguards ----------------------------------------------------------------------------------

CaseFn clamp_case(float c) {
  return [c](Backend& b, DType t, Outputs& out) {
    const int64_t n = 5003;
    Tensor x = input(b, Shape{n}, t, special_values(n, 31)), y = blank(b, Shape{n}, t);
    b.clamp_forward(x, y, c);
    out.tensor("clamp_forward", y, {bits_exact()});
    Tensor dy = input(b, Shape{n}, t, random_normal(n, 32, 1.0f)), dx = blank(b, Shape{n}, t);
    b.clamp_backward(x, dy, dx, c);
    out.tensor("clamp_backward", dx, {bits_exact()});
  };
}

// dx = clamp_backward(x, r) of sum(r * clamp(x)); x kept away from +-c.
GradProblem clamp_grad(Backend& b) {
  const int64_t n = 1000;
  const float c = 1.0f;
  Tensor x = input(b, Shape{n}, DType::F32, away_from(random_normal(n, 33, 2.0f), {-c, c}, 5 * kGradStep));
  Tensor y = blank(b, Shape{n}, DType::F32);
  const std::vector<float> r = objective_weights(n, 12);
  GradProblem p;
  p.inputs = {{"x", x}};
  p.objective = [=, &b]() mutable {
    b.clamp_forward(x, y, c);
    return weighted_sum(b, y, r);
  };
  p.gradients = [=, &b]() {
    Tensor rt = input(b, Shape{n}, DType::F32, r), dx = blank(b, Shape{n}, DType::F32);
    b.clamp_backward(x, rt, dx, c);
    return std::vector<Tensor>{dx};
  };
  return p;
}

// More than one block's worth, several specials, in two tensors; the count and the flag.
void nan_to_num_case(Backend& b, DType t, Outputs& out) {
  Tensor x = input(b, Shape{70001}, t, special_values(70001, 33)), y = input(b, Shape{257}, t, special_values(257, 34));
  Tensor s = input(b, Shape{8}, DType::F32, {1, 0, 0, 0, 0, 0, 0, 0});
  b.nan_to_num({x, y}, kNanToNumBound, s, 2, 0);
  out.tensor("nan_to_num", x, {bits_exact()});
  out.tensor("nan_to_num (second tensor)", y, {bits_exact()});
  out.tensor("nan_to_num count and flag", s, {bits_exact()});
  EXPECT_GT(ew::count_load(to_host(b, s).data() + 2), 0u)
      << "the special values include inf and NaN (" << b.name() << ")";
}

}  // namespace

void add_amp_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  const std::vector<DType> stat_types = {DType::F16, DType::BF16, DType::F32};
  for (const Planted& p : kPlanted)
    for (int extra : {0, 70})  // 1e30 is inf in f16 and ok in bf16: FP32 gradients only
      ops.push_back({"grad_stats_" + grads_name(p, extra), p.value == 1e30f ? f32_only() : stat_types,
                     grad_stats_case(p.value, extra)});
  ops.push_back({"grad_stats_empty", f32_only(), grad_stats_empty_case});
  for (const Planted& p : kPlanted) {
    if (p.value == 1e30f || p.value == -INFINITY) continue;
    for (int extra : {0, 70}) {
      ops.push_back({"grad_stats_per_tensor_" + grads_name(p, extra), stat_types, per_tensor_case(p.value, extra)});
      ops.push_back({"grad_histogram_" + grads_name(p, extra), stat_types, histogram_case(p.value, extra)});
    }
  }
  for (int count : {5, 60})
    ops.push_back({"adam_" + std::to_string(count) + "tensors_4steps_skip3rd", all_types(), adam_case(count)});
  ops.push_back({"adam_count_past_2p24", {DType::F16}, adam_past_2p24_case});
  ops.push_back({"ema_update_n3001", f32_only(), ema_case});
  ops.push_back({"scaler_update_40steps", f32_only(), scaler_case});
  for (float c : {256.0f, 1.0f, 65504.0f}) {
    ops.push_back({"clamp_c" + std::to_string(int(c)) + "_n5003", all_types(), clamp_case(c)});
  }
  grads.push_back({"clamp_c1_n1000", clamp_grad});
  ops.push_back({"nan_to_num_n70001_n257", all_types(), nan_to_num_case});
}

}  // namespace ampgan::testing
