// Cases: GAN losses (incl. logits of +-100) and softmax cross-entropy, on FP32 logits (backend.h
// "losses"), with the gradient checks of their dlogits against the loss value itself.
#include "core/common/rng.h"
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

const LossKind kKinds[] = {LossKind::BCEWithLogits, LossKind::Hinge};
const LossRole kRoles[] = {LossRole::DReal, LossRole::DFake, LossRole::G};
const char* const kKindNames[] = {"bce", "hinge"};
const char* const kRoleNames[] = {"dreal", "dfake", "g"};

CaseFn gan_loss_case(LossKind kind, LossRole role) {
  return [kind, role](Backend& b, DType, Outputs& out) {
    const int n = 67;
    std::vector<float> logits = random_normal(n, 81, 2.0f);
    logits[0] = 100.0f, logits[1] = -100.0f, logits[2] = 0.0f, logits[3] = 20.0f, logits[4] = -20.0f, logits[5] = 1.0f,
    logits[6] = -1.0f, logits[7] = 1e-7f;
    for (int prob_slot : {5, -1}) {
      const std::string tag = prob_slot < 0 ? " (no prob slot)" : " (prob slot 5)";
      Tensor x = input(b, Shape{n}, DType::F32, logits);
      Tensor state = input(b, Shape{2}, DType::F32, {1024.0f, 3.0f});
      Tensor dx = blank(b, Shape{n}, DType::F32);
      // Slot 2 accumulates (+=), slot 5 is overwritten, the rest must stay as they were.
      const std::vector<float> s0 = {9, 9, 0.25f, 9, 9, 9, 9, 9};
      Tensor s = input(b, Shape{8}, DType::F32, s0);
      b.gan_loss(kind, role, x, state, dx, s, 2, prob_slot);
      out.tensor("dlogits" + tag, dx, {norm(all_dtypes(kDlogitsTol))});
      out.slice("loss slot (+=)" + tag, s, 2, 1, {rel(kLossTol)});
      if (prob_slot >= 0) out.slice("mean sigmoid slot" + tag, s, 5, 1, {rel(kLossTol)});
      const auto sv = to_host(b, s);
      for (int i : {0, 1, 3, 4, 6, 7})
        EXPECT_EQ(sv[i], s0[i]) << tag << " on " << b.name() << ": scalars[" << i << "] must be untouched";
      if (prob_slot < 0) EXPECT_EQ(sv[5], s0[5]) << tag << " on " << b.name() << ": scalars[5] must be untouched";
    }
  };
}

// The loss value's own gradient: dlogits / loss_scale. Logits kept away from the hinge's kinks.
GradFn gan_loss_grad(LossKind kind, LossRole role) {
  return [kind, role](Backend& b) {
    const int n = 16;
    const float scale = 4.0f;
    Tensor x = input(b, Shape{n}, DType::F32, away_from(random_normal(n, 82, 2.0f), {-1.0f, 1.0f}, 5 * kGradStep));
    Tensor state = input(b, Shape{2}, DType::F32, {scale, 0.0f});
    Tensor dx = blank(b, Shape{n}, DType::F32), s = blank(b, Shape{2}, DType::F32);
    GradProblem p;
    p.inputs = {{"logits", x}};
    p.objective = [=, &b]() mutable {
      b.fill(s, 0.0f);
      b.gan_loss(kind, role, x, state, dx, s, 0, 1);
      return double(to_host(b, s)[0]);
    };
    p.gradients = [=, &b]() mutable {
      b.fill(s, 0.0f);
      b.gan_loss(kind, role, x, state, dx, s, 0, 1);
      std::vector<float> g = to_host(b, dx);
      for (float& v : g) v /= scale;
      return std::vector<Tensor>{input(b, Shape{n}, DType::F32, g)};
    };
    return p;
  };
}

std::vector<float> class_labels(int n, int k) {
  std::vector<float> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = float(philox_below(5, 5, i, k));
  return labels;
}

void softmax_ce_case(Backend& b, DType, Outputs& out) {
  const int n = 37, k = 10;
  std::vector<float> logits = random_normal(size_t(n) * k, 91, 3.0f);
  logits[0] = 100.0f, logits[11] = -100.0f;
  Tensor x = input(b, Shape{n, k}, DType::F32, logits), y = input(b, Shape{n}, DType::F32, class_labels(n, k));
  Tensor dx = blank(b, Shape{n, k}, DType::F32);
  Tensor s = input(b, Shape{4}, DType::F32, {7, 7, 7, 7});
  b.softmax_cross_entropy(x, y, dx, s, 1, 3);
  out.tensor("dlogits", dx, {norm(all_dtypes(kDlogitsTol))});
  out.slice("loss", s, 1, 1, {rel(kLossTol)});
  out.slice("correct count", s, 3, 1, {equal()});
  const auto sv = to_host(b, s);
  EXPECT_EQ(sv[0], 7.0f) << "softmax_cross_entropy on " << b.name() << ": scalars[0] must be untouched";
  EXPECT_EQ(sv[2], 7.0f) << "softmax_cross_entropy on " << b.name() << ": scalars[2] must be untouched";
}

GradProblem softmax_ce_grad(Backend& b) {
  const int n = 8, k = 5;
  Tensor x = input(b, Shape{n, k}, DType::F32, random_normal(size_t(n) * k, 92, 1.5f));
  Tensor y = input(b, Shape{n}, DType::F32, class_labels(n, k));
  Tensor dx = blank(b, Shape{n, k}, DType::F32), s = blank(b, Shape{2}, DType::F32);
  GradProblem p;
  p.inputs = {{"logits", x}};
  p.objective = [=, &b]() mutable {
    b.softmax_cross_entropy(x, y, dx, s, 0, 1);
    return double(to_host(b, s)[0]);
  };
  p.gradients = [=, &b]() mutable {
    b.softmax_cross_entropy(x, y, dx, s, 0, 1);
    return std::vector<Tensor>{dx};
  };
  return p;
}

}  // namespace

void add_loss_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  for (int ki = 0; ki < 2; ++ki)
    for (int ri = 0; ri < 3; ++ri) {
      const std::string name = std::string("gan_loss_") + kKindNames[ki] + "_" + kRoleNames[ri];
      ops.push_back({name + "_n67", f32_only(), gan_loss_case(kKinds[ki], kRoles[ri])});
      grads.push_back({name + "_n16", gan_loss_grad(kKinds[ki], kRoles[ri])});
    }
  ops.push_back({"softmax_cross_entropy_n37k10", f32_only(), softmax_ce_case});
  grads.push_back({"softmax_cross_entropy_n8k5", softmax_ce_grad});
}

}  // namespace ampgan::testing
