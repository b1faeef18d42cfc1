// Cases: activations, forward, backward and in place (backend.h "activations"), with their
// gradient checks.
#include "core/backend/elementwise.h"
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

struct ActCase {
  ew::Act act;
  float alpha;
  const char* name;
};
const ActCase kActs[] = {{ew::Act::ReLU, 0.0f, "relu"},
                         {ew::Act::LeakyReLU, 0.2f, "leaky_relu0p2"},
                         {ew::Act::Tanh, 0.0f, "tanh"},
                         {ew::Act::Identity, 0.0f, "identity"}};

std::vector<float> act_inputs(int64_t n) {
  std::vector<float> xv = random_normal(n, 21, 2.0f);
  xv[0] = 0.0f, xv[1] = -0.0f, xv[2] = 20.0f, xv[3] = -20.0f, xv[4] = 1e-6f, xv[5] = -65504.0f;
  return xv;
}

// n = 5003: element by element; 4096: the 16-byte vector path (whole vectors, aligned).
CaseFn act_case(ActCase a, int64_t n) {
  return [a, n](Backend& b, DType t, Outputs& out) {
    const bool tanh = a.act == ew::Act::Tanh;
    const auto xv = act_inputs(n);
    Tensor x = input(b, Shape{n}, t, xv), y = blank(b, Shape{n}, t);
    b.activation_forward(a.act, a.alpha, x, y);
    out.tensor("activation_forward", y, {tanh ? ulps(kTranscendentalUlps) : bits_exact()});

    // Backward from the same y on every backend (the CPU's), so only the backward math is compared.
    Tensor rx = input(reference(), Shape{n}, t, xv), ry = blank(reference(), Shape{n}, t);
    reference().activation_forward(a.act, a.alpha, rx, ry);
    Tensor ys = from_reference(b, ry);
    Tensor dy = input(b, Shape{n}, t, random_normal(n, 22, 1.0f)), dx = blank(b, Shape{n}, t);
    b.activation_backward(a.act, a.alpha, ys, dy, dx);
    out.tensor("activation_backward", dx, {tanh ? exact_unless_fma(kReduceTol) : bits_exact()});

    // In place (y aliases x), as the layers may call it.
    Tensor inplace = input(b, Shape{n}, t, xv);
    b.activation_forward(a.act, a.alpha, inplace, inplace);
    if (!tanh) out.tensor("activation_forward (in place)", inplace, {bits_exact()});
  };
}

// dx = activation_backward(y, r), of sum(r * act(x)); x kept away from the kink at 0.
GradFn act_grad(ActCase a) {
  return [a](Backend& b) {
    const int64_t n = 1000;
    Tensor x = input(b, Shape{n}, DType::F32, away_from(random_normal(n, 23, 1.5f), {0.0f}, 5 * kGradStep));
    Tensor y = blank(b, Shape{n}, DType::F32);
    const std::vector<float> r = objective_weights(n, 5);
    GradProblem p;
    p.inputs = {{"x", x}};
    p.objective = [=, &b]() mutable {
      b.activation_forward(a.act, a.alpha, x, y);
      return weighted_sum(b, y, r);
    };
    p.gradients = [=, &b]() mutable {
      b.activation_forward(a.act, a.alpha, x, y);
      Tensor rt = input(b, Shape{n}, DType::F32, r), dx = blank(b, Shape{n}, DType::F32);
      b.activation_backward(a.act, a.alpha, y, rt, dx);
      return std::vector<Tensor>{dx};
    };
    return p;
  };
}

}  // namespace

void add_elementwise_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  for (const ActCase& a : kActs) {
    for (int64_t n : {int64_t{5003}, int64_t{4096}})
      ops.push_back({std::string("act_") + a.name + "_n" + std::to_string(n), all_types(), act_case(a, n)});
    grads.push_back({std::string("act_") + a.name + "_n1000", act_grad(a)});
  }
}

}  // namespace ampgan::testing
