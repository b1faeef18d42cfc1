// Class-conditional models (core/nn/class_embedding.h, projection.h, conditional_batchnorm2d.h;
// core/models): each conditional layer's backward against central differences of its forward,
// the models' class parameters, a trainer that steps in every precision on labelled batches and
// draws each class as asked, and the errors of a conditional model without labels.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/amp/precision.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/models/model_family.h"
#include "core/models/resnet.h"
#include "core/nn/class_embedding.h"
#include "core/nn/conditional_batchnorm2d.h"
#include "core/nn/projection.h"
#include "core/train/trainer.h"
#include "tests/op_cases.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

constexpr int kBatch = 6, kClasses = 3;

// One-hot labels 0, 1, 2, 0, 1, 2 (every class twice, so batch norm sees each).
Tensor one_hot(Backend& b) {
  Tensor t = b.empty(Shape{kBatch, kClasses}, DType::F32, MemCategory::Data);
  upload_one_hot(b, t, sample_classes(0, kBatch, kClasses, {}).data(), kClasses);
  return t;
}

void randomize(Backend& b, Parameter& p, uint64_t seed, float sd, float mean = 0.0f) {
  std::vector<float> v = random_normal(static_cast<size_t>(p.shape.numel()), seed, sd);
  for (float& x : v) x += mean;
  b.upload(p.master, v.data(), v.size() * sizeof(float));
}

// L = sum(r * layer(x)) with the labels above; gradients of x (when returned) and of every
// parameter, from the layer's own backward.
GradProblem layer_problem(Backend& b, Layer& layer, Shape xs, const Tensor& labels, bool with_dx, uint64_t seed) {
  layer.set_precision(b, DType::F32);
  Tensor x = make_tensor(b, xs, DType::F32, random_normal(xs.numel(), seed));
  const Shape ys = layer.output_shape(xs);
  const std::vector<float> r = random_normal(ys.numel(), seed + 1);
  auto ctx = [&b, &labels] {
    return Context{.backend = b, .dtype = DType::F32, .mode = Mode::Train, .labels = &labels};
  };
  GradProblem p;
  if (with_dx) p.inputs.push_back({"x", x});
  for (Parameter* q : layer.parameters()) p.inputs.push_back({q->name, q->master});
  p.objective = [&b, &layer, x, r, ctx] {
    Context c = ctx();
    return weighted_sum(b, layer.forward(c, x), r);
  };
  p.gradients = [&b, &layer, x, r, ys, ctx, with_dx] {
    Context c = ctx();
    layer.forward(c, x);
    Tensor rt = make_tensor(b, ys, DType::F32, r);
    std::vector<Tensor> g;
    const Tensor& dx = layer.backward(c, rt, with_dx ? InputGrad::Return : InputGrad::Skip);
    if (with_dx) g.push_back(dx);
    for (Parameter* q : layer.parameters()) g.push_back(q->grad);
    return g;
  };
  return p;
}

}  // namespace

TEST(ConditionalLayers, ProjectionBackwardMatchesCentralDifferences) {
  CpuBackend b;
  const Tensor labels = one_hot(b);
  for (bool sn : {false, true}) {
    Projection proj(b, "embed.", kClasses, 4 * 4 * 5);
    randomize(b, *proj.parameters()[0], 11, 0.5f);
    if (sn) proj.enable_spectral_norm(b, 3, 4);
    check_gradients(sn ? "Projection (spectral norm)" : "Projection", b,
                    layer_problem(b, proj, Shape{kBatch, 4, 4, 5}, labels, true, 21));
  }
}

TEST(ConditionalLayers, ClassEmbeddingBackwardMatchesCentralDifferences) {
  CpuBackend b;
  const Tensor labels = one_hot(b);
  ClassEmbedding embed(b, "embed.", kClasses, Shape{4, 4, 3});
  randomize(b, *embed.parameters()[0], 12, 0.5f);
  check_gradients("ClassEmbedding", b, layer_problem(b, embed, Shape{kBatch, 1, 1, 7}, labels, false, 22));
}

TEST(ConditionalLayers, ConditionalBatchNormBackwardMatchesCentralDifferences) {
  CpuBackend b;
  const Tensor labels = one_hot(b);
  ConditionalBatchNorm2d cbn(b, "bn.", 5, kClasses);
  const std::vector<Parameter*> ps = cbn.parameters();  // weight, bias, embed_gain, embed_bias
  ASSERT_EQ(ps.size(), 4u);
  EXPECT_EQ(ps[2]->name, "bn.embed_gain.weight");
  randomize(b, *ps[0], 13, 0.2f, 1.0f);
  for (size_t i = 1; i < ps.size(); ++i) randomize(b, *ps[i], 14 + i, 0.3f);
  GradProblem p = layer_problem(b, cbn, Shape{kBatch, 3, 2, 5}, labels, true, 23);
  p.step = kGradStepBatchNorm;  // one x moves its channel's statistics (tests/op_cases.h)
  check_gradients("ConditionalBatchNorm2d", b, p);
}

TEST(ConditionalModels, AddClassParametersAndKeepTheUnconditionalNames) {
  CpuBackend b;
  for (ModelFamily f : {ModelFamily::DCGAN, ModelFamily::ResNet}) {
    DcganSpec spec;
    spec.width = 4;
    spec.latent = f == ModelFamily::ResNet ? 128 : 100;
    spec.channels = 1;
    GanPair plain = make_gan(b, f, spec, 1, 2, 3);
    spec.classes = 10;
    GanPair cond = make_gan(b, f, spec, 1, 2, 3);
    auto names = [](Sequential& s) {
      std::vector<std::string> n;
      for (Parameter* p : s.parameters()) n.push_back(p->name);
      return n;
    };
    const std::vector<std::string> gc = names(*cond.g), dc = names(*cond.d);
    for (const std::string& n : names(*plain.g)) EXPECT_NE(std::find(gc.begin(), gc.end(), n), gc.end()) << n;
    for (const std::string& n : names(*plain.d)) EXPECT_NE(std::find(dc.begin(), dc.end(), n), dc.end()) << n;
    EXPECT_NE(std::find(dc.begin(), dc.end(), "embed.weight"), dc.end());
    // D gains one embedding of its head's features per class; G a 4x4 map per class (DCGAN) or
    // a gain and a bias per channel of each up-block batch norm (ResNet).
    const int64_t d_extra = cond.d->parameter_count() - plain.d->parameter_count();
    const int64_t g_extra = cond.g->parameter_count() - plain.g->parameter_count();
    if (f == ModelFamily::DCGAN) {
      EXPECT_EQ(d_extra, 10 * 4 * 4 * (4 << 2));  // width 4 at 32 px: the last map has 16 channels
      EXPECT_EQ(g_extra, 10 * 4 * 4 * (4 << 2));
    } else {
      EXPECT_EQ(d_extra, 10 * 2 * 4);                      // the pooled features: 2W
      EXPECT_EQ(g_extra, 10 * 2 * (3 * (4 * 4 + 4 * 4)));  // 3 up-blocks, bn1 and bn2 of 4W each
    }
    EXPECT_EQ(cond.g->output_shape(Shape{2, 1, 1, spec.latent}), (Shape{2, 32, 32, 1}));
    EXPECT_EQ(cond.d->output_shape(Shape{2, 32, 32, 1}), (Shape{2, 1}));
  }
  DcganSpec too_many;
  too_many.classes = kMaxClasses + 1;
  EXPECT_THROW(make_gan(b, ModelFamily::DCGAN, too_many, 1, 2, 3), Error);
}

namespace {

TrainerConfig conditional_config(ModelFamily f, Precision p) {
  TrainerConfig c;
  c.family = f;
  c.model.width = 4;
  c.model.channels = 1;
  c.model.latent = f == ModelFamily::ResNet ? 128 : 100;
  c.model.classes = kClasses;
  c.batch = kBatch;
  c.precision = p;
  c.seed = 5;
  return c;
}

std::vector<float> real_images(uint64_t seed) {
  std::vector<float> v = random_normal(static_cast<size_t>(kBatch) * 32 * 32, seed, 0.5f);
  for (float& x : v) x = std::tanh(x);
  return v;
}

}  // namespace

TEST(ConditionalTrainer, StepsInEveryPrecisionAndDrawsTheClassAskedFor) {
  for (ModelFamily f : {ModelFamily::DCGAN, ModelFamily::ResNet})
    for (Precision p : {Precision::FP32, Precision::FP16, Precision::BF16}) {
      CpuBackend b;
      Trainer t(b, conditional_config(f, p));
      const std::vector<float> images = real_images(31);
      const std::vector<int32_t> labels = {0, 1, 2, 2, 1, 0};
      for (int s = 0; s < 3; ++s) t.step_batches([&] { return RealBatch{images.data(), labels.data()}; });
      for (const StepMetrics& m : t.collect(true)) {
        EXPECT_TRUE(std::isfinite(m.loss_d) && std::isfinite(m.loss_g))
            << model_family_name(f) << " " << precision_name(p);
      }
      // One latent, every class: G's output differs by class, and a class drawn twice is the same.
      // The class parameters are set large first: three steps barely move the ResNet's, which
      // start at zero.
      uint64_t seed = 50;
      for (Parameter* q : t.generator().parameters())
        if (q->name.find("embed") != std::string::npos) {
          randomize(b, *q, seed++, 0.5f);
          q->refresh_working(b);
        }
      const int nz = t.config().model.latent;
      std::vector<float> z(static_cast<size_t>(4) * nz);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < nz; ++j) z[static_cast<size_t>(i) * nz + j] = random_normal(nz, 41)[j];
      const std::vector<float> img = t.generate(z, 4, {0, 1, 2, 0});
      const size_t per = 32 * 32;
      auto diff = [&](int a, int c) {
        double d = 0;
        for (size_t k = 0; k < per; ++k) d += std::fabs(img[a * per + k] - img[c * per + k]);
        return d / per;
      };
      EXPECT_GT(diff(0, 1), 1e-4) << model_family_name(f) << " " << precision_name(p);
      EXPECT_GT(diff(1, 2), 1e-4) << model_family_name(f) << " " << precision_name(p);
      EXPECT_EQ(diff(0, 3), 0.0) << model_family_name(f) << " " << precision_name(p);
      EXPECT_THROW(t.generate(z, 1, {kClasses}), Error);
    }
}

TEST(ConditionalTrainer, RefusesBatchesWithoutLabelsOrWithUnknownClasses) {
  CpuBackend b;
  Trainer t(b, conditional_config(ModelFamily::DCGAN, Precision::FP32));
  const std::vector<float> images = real_images(32);
  try {
    t.step(images.data());
    FAIL() << "a conditional trainer stepped without labels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without labels"), std::string::npos) << e.what();
  }
  const std::vector<int32_t> bad = {0, 1, 2, 3, 1, 0};
  EXPECT_THROW(t.step_batches([&] { return RealBatch{images.data(), bad.data()}; }), Error);
}

// The CPU reference of the two conditioning ops: FP32 against sums in double; a half mode's
// output is the FP32 op on its widened inputs, rounded once.
TEST(CpuConditioning, ForwardMatchesNaiveReferenceAndHalfModesRoundOnce) {
  CpuBackend b;
  const int n = 3, hw = 10, c = 7, f = 600;  // f: more than one 512-value tile per row
  const std::vector<float> x = random_normal(static_cast<size_t>(n) * hw * c, 61, 2.0f);
  const std::vector<float> sc = random_normal(static_cast<size_t>(n) * c, 62), sh = random_normal(n * c, 63);
  const std::vector<float> a = random_normal(static_cast<size_t>(n) * f, 64), o = random_normal(n * f, 65);
  Tensor scale = make_tensor(b, Shape{n, c}, DType::F32, sc), shift = make_tensor(b, Shape{n, c}, DType::F32, sh);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    // The inputs as the half formats hold them, and the same values in FP32.
    Tensor xh = make_tensor(b, Shape{n, hw, 1, c}, dt, x), ah = make_tensor(b, Shape{n, f}, dt, a);
    Tensor oh = make_tensor(b, Shape{n, f}, dt, o);
    const std::vector<float> xr = to_host(b, xh), ar = to_host(b, ah), orr = to_host(b, oh);
    Tensor x32 = make_tensor(b, Shape{n, hw, 1, c}, DType::F32, xr), a32 = make_tensor(b, Shape{n, f}, DType::F32, ar);
    Tensor o32 = make_tensor(b, Shape{n, f}, DType::F32, orr);
    Tensor y = b.empty(xh.shape(), dt, MemCategory::Data), y32 = b.empty(xh.shape(), DType::F32, MemCategory::Data);
    Tensor d = b.empty(Shape{n, 1}, dt, MemCategory::Data), d32 = b.empty(Shape{n, 1}, DType::F32, MemCategory::Data);
    b.modulate_forward(xh, scale, shift, y);
    b.modulate_forward(x32, scale, shift, y32);
    b.row_dot_forward(ah, oh, d);
    b.row_dot_forward(a32, o32, d32);
    const std::vector<float> m32 = to_host(b, y32), r32 = to_host(b, d32);
    for (int i = 0; i < n * hw * c; ++i) {
      const int k = (i / (hw * c)) * c + i % c;
      EXPECT_NEAR(m32[i], double(xr[i]) * sc[k] + sh[k], 1e-5 * (1 + std::fabs(m32[i]))) << i;
    }
    for (int r = 0; r < n; ++r) {
      double ref = 0;
      for (int j = 0; j < f; ++j) ref += double(ar[r * f + j]) * orr[r * f + j];
      EXPECT_NEAR(r32[r], ref, 1e-5 * std::sqrt(double(f)) * 3) << r;
    }
    Tensor yr = b.empty(xh.shape(), dt, MemCategory::Data), dr = b.empty(Shape{n, 1}, dt, MemCategory::Data);
    b.cast(y32, yr);
    b.cast(d32, dr);
    EXPECT_EQ(to_host(b, y), to_host(b, yr)) << dtype_name(dt) << " modulate rounds once";
    EXPECT_EQ(to_host(b, d), to_host(b, dr)) << dtype_name(dt) << " row_dot rounds once";
  }
}
