// Cases: residual sums and resampling, spectral norm (backend.h "residual sums and resampling",
// "spectral norm"), with their gradient checks. Residual sums and resampling are FP32 arithmetic
// in a fixed order with one rounding, so every dtype must match the CPU bit for bit.
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

// c = 24: vector-sized rows; h odd: no power-of-two shortcut.
constexpr int kN = 3, kH = 5, kW = 4, kC = 24;
const Shape kSmall{kN, kH, kW, kC}, kBig{kN, 2 * kH, 2 * kW, kC}, kPooled{kN, kC};

// FP16 overflow in a sum, a subnormal.
std::vector<float> small_values() {
  auto v = random_normal(kSmall.numel(), 501, 3.0f);
  v[0] = 60000.0f, v[1] = -1e-7f;
  return v;
}
std::vector<float> big_values() {
  auto v = random_normal(kBig.numel(), 502, 3.0f);
  v[0] = 65504.0f, v[kC] = 65504.0f;
  return v;
}

void add_case(Backend& b, DType t, Outputs& out) {
  Tensor a = input(b, kSmall, t, small_values()), o = input(b, kSmall, t, random_normal(kSmall.numel(), 503, 3.0f));
  Tensor y = blank(b, kSmall, t);
  b.add(a, o, y);
  out.tensor("add", y, {bits_exact()});
}

std::vector<float> pooled_values() { return random_normal(kPooled.numel(), 504); }

// A one-input op y = f(x) whose backward is a one-input op dx = df(dy).
using Unary = void (Backend::*)(const Tensor&, Tensor&);
struct Resampling {
  const char* forward_name;
  const char* backward_name;
  Shape xs, ys;
  Unary forward, backward;
  std::vector<float> (*x_values)();
  std::vector<float> (*dy_values)();
};

const Resampling kUpsample{"upsample2x_forward",         "upsample2x_backward",         kSmall,       kBig,
                           &Backend::upsample2x_forward, &Backend::upsample2x_backward, small_values, big_values};
const Resampling kAvgpool{"avgpool2x_forward",         "avgpool2x_backward",         kBig,       kSmall,
                          &Backend::avgpool2x_forward, &Backend::avgpool2x_backward, big_values, small_values};
const Resampling kSumPool{
    "global_sum_pool_forward",         "global_sum_pool_backward",         kBig,       kPooled,
    &Backend::global_sum_pool_forward, &Backend::global_sum_pool_backward, big_values, pooled_values};

CaseFn resample_case(const Resampling& op) {
  return [op](Backend& b, DType t, Outputs& out) {
    Tensor x = input(b, op.xs, t, op.x_values()), y = blank(b, op.ys, t);
    (b.*op.forward)(x, y);
    out.tensor(op.forward_name, y, {bits_exact()});
    Tensor dy = input(b, op.ys, t, op.dy_values()), dx = blank(b, op.xs, t);
    (b.*op.backward)(dy, dx);
    out.tensor(op.backward_name, dx, {bits_exact()});
  };
}

// The gradient check of a resampling op.
GradFn resample_grad(const Resampling& op, uint64_t seed) {
  return [op, seed](Backend& b) {
    const Shape xs = op.xs, ys = op.ys;
    Tensor x = input(b, xs, DType::F32, random_normal(xs.numel(), 505 + seed, 1.0f)), y = blank(b, ys, DType::F32);
    const std::vector<float> r = objective_weights(ys.numel(), 10 + seed);
    GradProblem p;
    p.inputs = {{"x", x}};
    p.objective = [=, &b]() mutable {
      (b.*op.forward)(x, y);
      return weighted_sum(b, y, r);
    };
    p.gradients = [=, &b]() {
      Tensor rt = input(b, ys, DType::F32, r), dx = blank(b, xs, DType::F32);
      (b.*op.backward)(rt, dx);
      return std::vector<Tensor>{dx};
    };
    return p;
  };
}

// y = a + b: the gradient fan-in passes r to both.
GradProblem add_grad(Backend& b) {
  Tensor a = input(b, kSmall, DType::F32, random_normal(kSmall.numel(), 510, 1.0f));
  Tensor o = input(b, kSmall, DType::F32, random_normal(kSmall.numel(), 511, 1.0f));
  Tensor y = blank(b, kSmall, DType::F32);
  const std::vector<float> r = objective_weights(kSmall.numel(), 9);
  GradProblem p;
  p.inputs = {{"a", a}, {"b", o}};
  p.objective = [=, &b]() mutable {
    b.add(a, o, y);
    return weighted_sum(b, y, r);
  };
  p.gradients = [=, &b]() {
    Tensor rt = input(b, kSmall, DType::F32, r);
    return std::vector<Tensor>{rt, rt};
  };
  return p;
}

// ---- spectral norm: FP32 with double accumulation, summed in different fixed orders ------------

constexpr int64_t kRows = 48, kCols = 3 * 3 * 40;
const Shape kWShape{kRows, 3, 3, 40};

struct SnInputs {
  Tensor w, u, v;
};
SnInputs sn_inputs(Backend& b) {
  return {input(b, kWShape, DType::F32, random_normal(kRows * kCols, 601, 0.7f)),
          input(b, Shape{kRows}, DType::F32, random_normal(kRows, 602)),
          input(b, Shape{kCols}, DType::F32, random_normal(kCols, 603))};
}
void power_iterations(Backend& b, SnInputs& s) {
  for (int it = 0; it < 3; ++it) b.spectral_norm_power_iteration(s.w, s.u, s.v);
}

void sn_power_case(Backend& b, DType, Outputs& out) {
  SnInputs s = sn_inputs(b);
  power_iterations(b, s);
  out.tensor("spectral_norm_power_iteration u", s.u, {ulps(all_dtypes(4))});
  out.tensor("spectral_norm_power_iteration v", s.v, {ulps(all_dtypes(4))});
}

// Forward and backward alone: from the CPU's u and v (and sigma) on every backend.
void sn_case(Backend& b, DType t, Outputs& out) {
  const PerDType tol{1e-6, 1e-3, 8e-3};  // a few ulps, or one rounding flip
  SnInputs rs = sn_inputs(reference());
  power_iterations(reference(), rs);
  Tensor rsigma = blank(reference(), Shape{1}, DType::F32), rwsn = blank(reference(), kWShape, t);
  reference().spectral_norm_forward(rs.w, rs.u, rs.v, rsigma, rwsn);
  Tensor w = from_reference(b, rs.w), u = from_reference(b, rs.u), v = from_reference(b, rs.v);
  Tensor sigma = blank(b, Shape{1}, DType::F32), wsn = blank(b, kWShape, t);
  b.spectral_norm_forward(w, u, v, sigma, wsn);
  out.tensor("spectral_norm_forward sigma", sigma, {ulps(all_dtypes(2))});
  out.tensor("spectral_norm_forward w_sn", wsn, {norm_below(tol)});
  Tensor sig = from_reference(b, rsigma);
  Tensor g = input(b, kWShape, t, random_normal(kRows * kCols, 604, 50.0f));
  Tensor dw = input(b, kWShape, t, random_normal(kRows * kCols, 605));
  b.spectral_norm_backward(g, w, u, v, sig, dw, true);
  out.tensor("spectral_norm_backward (accumulate)", dw, {norm_below(tol)});
}

// dw = spectral_norm_backward(r) of sum(r * W / sigma(W)), u and v held fixed.
GradProblem sn_grad(Backend& b) {
  SnInputs rs = sn_inputs(reference());
  power_iterations(reference(), rs);
  Tensor w = from_reference(b, rs.w), u = from_reference(b, rs.u), v = from_reference(b, rs.v);
  Tensor sigma = blank(b, Shape{1}, DType::F32), wsn = blank(b, kWShape, DType::F32);
  const std::vector<float> r = objective_weights(kRows * kCols, 11);
  GradProblem p;
  p.inputs = {{"w", w}};
  p.objective = [=, &b]() mutable {
    b.spectral_norm_forward(w, u, v, sigma, wsn);
    return weighted_sum(b, wsn, r);
  };
  p.gradients = [=, &b]() mutable {
    b.spectral_norm_forward(w, u, v, sigma, wsn);
    Tensor rt = input(b, kWShape, DType::F32, r), dw = blank(b, kWShape, DType::F32);
    b.spectral_norm_backward(rt, w, u, v, sigma, dw, false);
    return std::vector<Tensor>{dw};
  };
  return p;
}

}  // namespace

void add_resample_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  ops.push_back({"add_n3h5w4c24", all_types(), add_case});
  ops.push_back({"upsample2x_n3h5w4c24", all_types(), resample_case(kUpsample)});
  ops.push_back({"avgpool2x_n3h10w8c24", all_types(), resample_case(kAvgpool)});
  ops.push_back({"global_sum_pool_n3h10w8c24", all_types(), resample_case(kSumPool)});
  ops.push_back({"spectral_norm_power_iteration_r48c360", f32_only(), sn_power_case});
  ops.push_back({"spectral_norm_r48c360", all_types(), sn_case});
  grads.push_back({"add_n3h5w4c24", add_grad});
  grads.push_back({"upsample2x_n3h5w4c24", resample_grad(kUpsample, 0)});
  grads.push_back({"avgpool2x_n3h10w8c24", resample_grad(kAvgpool, 1)});
  grads.push_back({"global_sum_pool_n3h10w8c24", resample_grad(kSumPool, 2)});
  grads.push_back({"spectral_norm_r48c360", sn_grad});
}

}  // namespace ampgan::testing
