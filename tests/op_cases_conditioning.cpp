// Cases: class conditioning (backend.h "class conditioning"): conditional batch norm's modulation
// and the projection discriminator's inner product, with their gradient checks. Products and
// sums in FP32 in a fixed order with one rounding: exact on every backend except where a * b + c
// is contracted into an FMA (op_cases.h, "a*b+c element-wise").
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

// c = 24: vector-sized rows; h * w = 20 positions per sum; f = 40 features per row.
constexpr int kN = 3, kH = 5, kW = 4, kC = 24, kF = 40;
const Shape kMap{kN, kH, kW, kC}, kPerSample{kN, kC}, kRowsShape{kN, kF}, kDot{kN, 1};

struct ModInputs {
  Tensor x, scale, shift;
};
ModInputs mod_inputs(Backend& b, DType t) {
  auto xv = random_normal(kMap.numel(), 701, 3.0f);
  xv[0] = 60000.0f;  // overflows FP16 once scaled
  return {input(b, kMap, t, xv), input(b, kPerSample, DType::F32, scaled_normal(kPerSample.numel(), 702, 0.5f, 1.0f)),
          input(b, kPerSample, DType::F32, random_normal(kPerSample.numel(), 703))};
}

void modulate_case(Backend& b, DType t, Outputs& out) {
  ModInputs m = mod_inputs(b, t);
  Tensor y = blank(b, kMap, t);
  b.modulate_forward(m.x, m.scale, m.shift, y);
  out.tensor("modulate_forward", y, {exact_unless_fma(kReduceTol)});
  Tensor dy = input(b, kMap, t, random_normal(kMap.numel(), 704, 2.0f));
  Tensor dx = blank(b, kMap, t), ds = blank(b, kPerSample, DType::F32), dt = blank(b, kPerSample, DType::F32);
  b.modulate_backward(m.x, dy, m.scale, dx, ds, dt);
  out.tensor("modulate_backward dx", dx, {bits_exact()});
  out.tensor("modulate_backward dscale", ds, {exact_unless_fma(kFp32Tol)});
  out.tensor("modulate_backward dshift", dt, {bits_exact()});
}

GradProblem modulate_grad(Backend& b) {
  ModInputs m = mod_inputs(b, DType::F32);
  b.upload(m.x, random_normal(kMap.numel(), 705, 1.0f).data(), m.x.nbytes());
  Tensor y = blank(b, kMap, DType::F32);
  const std::vector<float> r = objective_weights(kMap.numel(), 12);
  GradProblem p;
  p.inputs = {{"x", m.x}, {"scale", m.scale}, {"shift", m.shift}};
  p.objective = [=, &b]() mutable {
    b.modulate_forward(m.x, m.scale, m.shift, y);
    return weighted_sum(b, y, r);
  };
  p.gradients = [=, &b]() {
    Tensor rt = input(b, kMap, DType::F32, r), dx = blank(b, kMap, DType::F32);
    Tensor ds = blank(b, kPerSample, DType::F32), dt = blank(b, kPerSample, DType::F32);
    b.modulate_backward(m.x, rt, m.scale, dx, ds, dt);
    return std::vector<Tensor>{dx, ds, dt};
  };
  return p;
}

void row_dot_case(Backend& b, DType t, Outputs& out) {
  Tensor a = input(b, kRowsShape, t, random_normal(kRowsShape.numel(), 711, 3.0f));
  Tensor o = input(b, kRowsShape, t, random_normal(kRowsShape.numel(), 712, 3.0f));
  Tensor y = blank(b, kDot, t);
  b.row_dot_forward(a, o, y);
  out.tensor("row_dot_forward", y, {exact_unless_fma(kReduceTol)});
  Tensor dy = input(b, kDot, t, random_normal(kN, 713, 2.0f));
  Tensor da = blank(b, kRowsShape, t), db = blank(b, kRowsShape, t);
  b.row_dot_backward(a, o, dy, da, db);
  out.tensor("row_dot_backward da", da, {bits_exact()});
  out.tensor("row_dot_backward db", db, {bits_exact()});
}

GradProblem row_dot_grad(Backend& b) {
  Tensor a = input(b, kRowsShape, DType::F32, random_normal(kRowsShape.numel(), 714, 1.0f));
  Tensor o = input(b, kRowsShape, DType::F32, random_normal(kRowsShape.numel(), 715, 1.0f));
  Tensor y = blank(b, kDot, DType::F32);
  const std::vector<float> r = objective_weights(kN, 13);
  GradProblem p;
  p.inputs = {{"a", a}, {"b", o}};
  p.objective = [=, &b]() mutable {
    b.row_dot_forward(a, o, y);
    return weighted_sum(b, y, r);
  };
  p.gradients = [=, &b]() {
    Tensor rt = input(b, kDot, DType::F32, r), da = blank(b, kRowsShape, DType::F32);
    Tensor db = blank(b, kRowsShape, DType::F32);
    b.row_dot_backward(a, o, rt, da, db);
    return std::vector<Tensor>{da, db};
  };
  return p;
}

}  // namespace

void add_conditioning_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  ops.push_back({"modulate_n3h5w4c24", all_types(), modulate_case});
  ops.push_back({"row_dot_n3f40", all_types(), row_dot_case});
  grads.push_back({"modulate_n3h5w4c24", modulate_grad});
  grads.push_back({"row_dot_n3f40", row_dot_grad});
}

}  // namespace ampgan::testing
