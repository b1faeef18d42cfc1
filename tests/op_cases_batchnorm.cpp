// Cases: batch norm, training and eval forward, backward, the commit of staged running
// statistics (backend.h "batch norm"), with the gradient check of the training forward.
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

const int kShapes[][4] = {{8, 4, 4, 64}, {16, 8, 8, 8}, {4, 16, 16, 3}, {2, 3, 3, 100}, {64, 1, 1, 32}};
constexpr float kMomentum = 0.1f, kEps = 1e-5f;

std::string shape_name(const int* s) {
  return "n" + std::to_string(s[0]) + "h" + std::to_string(s[1]) + "w" + std::to_string(s[2]) + "c" +
         std::to_string(s[3]);
}

struct BnInputs {
  Tensor x, gamma, beta;
};

BnInputs bn_inputs(Backend& b, const Shape& shape, DType t, uint64_t seed) {
  const int c = static_cast<int>(shape[3]);
  return {input(b, shape, t, scaled_normal(shape.numel(), seed, 1.5f, 0.3f)),
          input(b, Shape{c}, DType::F32, scaled_normal(c, seed + 1, 0.1f, 1.0f)),
          input(b, Shape{c}, DType::F32, random_normal(c, seed + 2, 0.1f))};
}

CaseFn bn_case(const int* s) {
  const Shape shape{s[0], s[1], s[2], s[3]};
  return [shape](Backend& b, DType t, Outputs& out) {
    const int c = static_cast<int>(shape[3]);
    const int64_t n = shape.numel();
    const BnInputs in = bn_inputs(b, shape, t, 71);
    const auto rm0 = random_normal(c, 74, 0.1f), rv0 = scaled_normal(c, 75, 0.1f, 1.0f);
    for (bool update : {true, false}) {
      const std::string what = "batchnorm_forward_train(update_running=" + bool_name(update) + ")";
      Tensor rm = input(b, Shape{c}, DType::F32, rm0), rv = input(b, Shape{c}, DType::F32, rv0);
      Tensor y = blank(b, shape, t);
      Tensor mean = blank(b, Shape{c}, DType::F32), invstd = blank(b, Shape{c}, DType::F32);
      b.batchnorm_forward_train(in.x, in.gamma, in.beta, rm, rv, kMomentum, kEps, update, y, mean, invstd);
      out.tensor(what + " y", y, {norm(kReduceTol)});
      out.tensor(what + " save_mean", mean, {norm(kFp32Tol)});
      out.tensor(what + " save_invstd", invstd, {norm(kFp32Tol)});
      if (update) {
        out.tensor(what + " running_mean", rm, {norm(kFp32Tol)});
        out.tensor(what + " running_var (unbiased)", rv, {norm(kFp32Tol)});
      } else {
        EXPECT_TRUE(tensor_bits(b, rm) == tensor_bits(b, input(b, Shape{c}, DType::F32, rm0)))
            << what << " on " << b.name() << ": running_mean must be untouched";
        EXPECT_TRUE(tensor_bits(b, rv) == tensor_bits(b, input(b, Shape{c}, DType::F32, rv0)))
            << what << " on " << b.name() << ": running_var must be untouched";
      }

      // Backward from the same saved statistics (the CPU's) on every backend.
      CpuBackend& ref = reference();
      const BnInputs rin = bn_inputs(ref, shape, t, 71);
      Tensor rrm = input(ref, Shape{c}, DType::F32, rm0), rrv = input(ref, Shape{c}, DType::F32, rv0);
      Tensor ry = blank(ref, shape, t), rmean = blank(ref, Shape{c}, DType::F32),
             rinv = blank(ref, Shape{c}, DType::F32);
      ref.batchnorm_forward_train(rin.x, rin.gamma, rin.beta, rrm, rrv, kMomentum, kEps, update, ry, rmean, rinv);
      Tensor sm = from_reference(b, rmean), si = from_reference(b, rinv);
      Tensor dy = input(b, shape, t, random_normal(n, 76, 1.0f));
      for (bool acc : {false, true}) {
        const std::string bw = "batchnorm_backward(accumulate=" + bool_name(acc) + ") after " + what;
        Tensor dx = blank(b, shape, t);
        Tensor dg = input(b, Shape{c}, DType::F32, random_normal(c, 77, 1.0f));
        Tensor db = input(b, Shape{c}, DType::F32, random_normal(c, 78, 1.0f));
        b.batchnorm_backward(in.x, dy, in.gamma, sm, si, dx, dg, db, acc);
        out.tensor(bw + " dx", dx, {norm(kReduceTol)});
        out.tensor(bw + " dgamma", dg, {norm(kFp32Tol)});
        out.tensor(bw + " dbeta", db, {norm(kFp32Tol)});
      }
    }
    Tensor rm = input(b, Shape{c}, DType::F32, rm0), rv = input(b, Shape{c}, DType::F32, rv0);
    Tensor y = blank(b, shape, t);
    b.batchnorm_forward_eval(in.x, in.gamma, in.beta, rm, rv, kEps, y);
    out.tensor("batchnorm_forward_eval", y, {exact_unless_fma(kReduceTol)});
  };
}

// The training forward's gradients in x, gamma and beta from batchnorm_backward.
GradFn bn_grad(const int* s) {
  const Shape shape{s[0], s[1], s[2], s[3]};
  return [shape](Backend& b) {
    const int c = static_cast<int>(shape[3]);
    const BnInputs in = bn_inputs(b, shape, DType::F32, 79);
    Tensor rm = input(b, Shape{c}, DType::F32, std::vector<float>(c, 0.0f));
    Tensor rv = input(b, Shape{c}, DType::F32, std::vector<float>(c, 1.0f));
    Tensor y = blank(b, shape, DType::F32);
    Tensor mean = blank(b, Shape{c}, DType::F32), invstd = blank(b, Shape{c}, DType::F32);
    const std::vector<float> r = objective_weights(shape.numel(), 4);
    auto forward = [=, &b]() mutable {
      b.batchnorm_forward_train(in.x, in.gamma, in.beta, rm, rv, kMomentum, kEps, false, y, mean, invstd);
    };
    GradProblem p;
    p.inputs = {{"x", in.x}, {"gamma", in.gamma}, {"beta", in.beta}};
    p.step = kGradStepBatchNorm;
    p.objective = [=, &b]() mutable {
      forward();
      return weighted_sum(b, y, r);
    };
    p.gradients = [=, &b]() mutable {
      forward();
      Tensor rt = input(b, shape, DType::F32, r);
      Tensor dx = blank(b, shape, DType::F32), dg = blank(b, Shape{c}, DType::F32), db = blank(b, Shape{c}, DType::F32);
      b.batchnorm_backward(in.x, rt, in.gamma, mean, invstd, dx, dg, db, false);
      return std::vector<Tensor>{dx, dg, db};
    };
    return p;
  };
}

// A plain copy in one direction or the other, decided on the device from the found-inf flags, so
// exact; several pairs per launch and more pairs than one launch takes.
CaseFn commit_case(int pairs) {
  return [pairs](Backend& b, DType, Outputs& out) {
    for (const std::vector<int>& slots : {std::vector<int>{0}, std::vector<int>{0, 1}, std::vector<int>{}}) {
      Tensor scalars = input(b, Shape{4}, DType::F32, {0.0f, 1.0f, 0.0f, 0.0f});
      std::vector<Tensor> running, staged;
      for (int i = 0; i < pairs; ++i) {
        const int64_t n = 1 + (i * 37) % 300;
        running.push_back(input(b, Shape{n}, DType::F32, random_normal(n, 80 + i, 1.0f)));
        staged.push_back(input(b, Shape{n}, DType::F32, random_normal(n, 180 + i, 1.0f)));
      }
      const std::vector<float> before_r = to_host(b, running.back()), before_s = to_host(b, staged.back());
      b.batchnorm_commit_running(running, staged, scalars, slots);
      const bool skip = slots.size() == 2;  // slot 1 holds a found-inf flag
      const std::string what =
          std::string(skip ? "revert" : "commit") + " (" + std::to_string(slots.size()) + " slots)";
      EXPECT_EQ(to_host(b, running.back()), skip ? before_r : before_s) << what << " on " << b.name();
      EXPECT_EQ(to_host(b, staged.back()), skip ? before_r : before_s) << what << " on " << b.name();
      for (int i = 0; i < pairs; ++i) {
        out.tensor(what + " running " + std::to_string(i), running[i], {bits_exact()});
        out.tensor(what + " staged " + std::to_string(i), staged[i], {bits_exact()});
      }
    }
  };
}

}  // namespace

void add_batchnorm_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  for (const auto& s : kShapes) {
    ops.push_back({"batchnorm_" + shape_name(s), all_types(), bn_case(s)});
    grads.push_back({"batchnorm_train_" + shape_name(s), bn_grad(s)});
  }
  for (int pairs : {1, 5, 40})
    ops.push_back({"batchnorm_commit_running_" + std::to_string(pairs) + "pairs", f32_only(), commit_case(pairs)});
}

}  // namespace ampgan::testing
