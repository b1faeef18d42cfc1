// StyleGAN2-ADA's recipe beside GradScaler's: the per-layer precision policy (layers
// kept in FP32 by name, "half only in the N highest-resolution blocks"), the activation clamp,
// and nan_to_num gradients as an AMP strategy.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/nn/conv2d.h"
#include "core/nn/layer_policy.h"
#include "core/run/checkpoint.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "core/tensor/half.h"
#include "tests/planted_overflow.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

// Weights that fit FP16 but whose products do not: D.2's output overflows in half precision.
void plant_big_weights(Backend& b, Sequential& d) {
  Parameter* w = param(d, "2.weight");
  std::vector<float> v = to_host(b, w->master);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 60000.0f * (1.0f + 1e-3f * static_cast<float>(i % 7));
  b.upload(w->master, v.data(), v.size() * 4);
  w->refresh_working(b);
}

// Steps trained and D steps skipped; a step that was not skipped has a finite loss.
int skipped_d_steps(Trainer& t, const std::vector<float>& real, int steps) {
  int skipped = 0;
  for (int i = 0; i < steps; ++i) {
    t.step(real.data());
    for (const StepMetrics& m : t.collect(true)) {
      skipped += m.skipped_d;
      if (!m.skipped_d) EXPECT_TRUE(std::isfinite(m.loss_d)) << "step " << m.step;
    }
  }
  return skipped;
}

}  // namespace

// ---- the policy itself -----------------------------------------------------------------------------

TEST(LayerPolicy, HalfBlocksKeepsTheHighestResolutionBlocksInHalf) {
  CpuBackend b;
  TrainerConfig c = tiny_dcgan(Precision::FP16);
  c.layer_policy.half_blocks = 2;
  Trainer t(b, c);
  // DCGAN at 32 px: 4 blocks a network. G's highest-resolution blocks are its last (G.6 + G.7 at
  // 16x16, G.9 at 32x32); D's its first (D.0 at 32x32, D.2 + D.3 at 16x16).
  std::vector<std::string> fp32, half;
  for (auto [net, name] : {std::pair<Sequential*, const char*>{&t.generator(), "G"}, {&t.discriminator(), "D"}})
    for (const LayerInfo& l : named_layers(*net, name)) (l.fp32 ? fp32 : half).push_back(l.name);
  EXPECT_EQ(half, (std::vector<std::string>{"G.6", "G.7", "G.9", "D.0", "D.2", "D.3"}));
  EXPECT_EQ(fp32, (std::vector<std::string>{"G.0", "G.1", "G.3", "G.4", "D.5", "D.6", "D.8"}));
  EXPECT_EQ(param(t.discriminator(), "5.weight")->working.dtype(), DType::F32);
  EXPECT_EQ(param(t.discriminator(), "5.weight")->grad.dtype(), DType::F32);
  EXPECT_EQ(param(t.discriminator(), "2.weight")->working.dtype(), DType::F16);
  EXPECT_EQ(param(t.generator(), "0.weight")->working.dtype(), DType::F32);
  EXPECT_EQ(param(t.generator(), "9.weight")->working.dtype(), DType::F16);
  const auto real = real_batch(c);
  moderate_scales(b, t);
  EXPECT_EQ(skipped_d_steps(t, real, 2), 0);
}

TEST(LayerPolicy, UnknownLayerNameIsAnErrorListingTheValidNames) {
  CpuBackend b;
  TrainerConfig c = tiny_dcgan(Precision::FP16);
  Trainer t(b, c);
  LayerPolicy p;
  p.fp32_layers = {"D.2", "D.7"};  // D.7 is a LeakyReLU: it has no parameters, hence no name
  try {
    t.set_layer_policy(p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "--fp32-layers");
    EXPECT_NE(e.what_failed().find("D.7"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("D.0, D.2, D.3, D.5, D.6, D.8, G.0"), std::string::npos) << e.hint();
  }
  // Nothing changed.
  EXPECT_TRUE(t.layer_policy().empty());
  EXPECT_EQ(param(t.discriminator(), "2.weight")->working.dtype(), DType::F16);
  p.fp32_layers = {};
  p.half_blocks = -2;
  EXPECT_THROW(t.set_layer_policy(p), Error);
}

// Layers kept in FP32 inside residual blocks: the casts in and out of the block's paths work in
// both passes, and the chosen convolutions compute in FP32.
TEST(LayerPolicy, ResnetLayersInsideBlocksTrainInFp32) {
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    CpuBackend b;
    TrainerConfig c = tiny_dcgan(p);
    c.family = ModelFamily::ResNet;
    c.model.latent = 16;
    c.model.width = 4;
    c.loss = LossKind::Hinge;
    c.layer_policy.fp32_layers = {"D.blocks.0.conv2", "D.blocks.1.shortcut", "G.blocks.2.conv2", "G.linear"};
    Trainer t(b, c);
    EXPECT_EQ(param(t.discriminator(), "blocks.0.conv2.weight")->grad.dtype(), DType::F32);
    EXPECT_EQ(param(t.discriminator(), "blocks.0.conv1.weight")->grad.dtype(), compute_dtype(p));
    EXPECT_EQ(param(t.generator(), "linear.weight")->working.dtype(), DType::F32);
    const auto real = real_batch(c);
    moderate_scales(b, t);
    for (int i = 0; i < 2; ++i) t.step(real.data());
    for (const StepMetrics& m : t.collect(true)) {
      EXPECT_TRUE(std::isfinite(m.loss_d) && std::isfinite(m.loss_g)) << precision_label(p);
      EXPECT_FALSE(m.skipped_d || m.skipped_g) << precision_label(p);
    }
    // Switched back between steps: everything in half again, and it still trains.
    t.set_layer_policy({});
    EXPECT_EQ(param(t.discriminator(), "blocks.0.conv2.weight")->grad.dtype(), compute_dtype(p));
    t.step(real.data());
    EXPECT_EQ(t.collect(true).size(), 1u);
  }
}

// The test: an overflow planted in a chosen D layer skips steps in fp16; the same run
// with that layer kept in FP32 has none. Both kinds: a gradient beyond FP16's range (backward)
// and activations beyond it (forward, where the layer's batch norm D.3 normalises them again).
TEST(LayerPolicy, KeepingThePlantedLayerInFp32RemovesItsOverflows) {
  for (bool fp32_layer : {false, true}) {
    PlantingBackend b;
    b.value = 1e6f;  // inf once stored in FP16, finite in FP32
    TrainerConfig c = tiny_dcgan(Precision::FP16);
    if (fp32_layer) c.layer_policy.fp32_layers = {"D.2"};
    Trainer t(b, c);
    moderate_scales(b, t);
    b.target = param(t.discriminator(), "2.weight")->grad;
    const auto real = real_batch(c);
    const int skipped = skipped_d_steps(t, real, 3);
    if (fp32_layer)
      EXPECT_EQ(skipped, 0) << "backward, D.2 in FP32";
    else
      EXPECT_EQ(skipped, 3) << "backward, D.2 in FP16";
  }
  for (bool fp32_layer : {false, true}) {
    CpuBackend b;
    TrainerConfig c = tiny_dcgan(Precision::FP16);
    if (fp32_layer) c.layer_policy.fp32_layers = {"D.2", "D.3"};
    Trainer t(b, c);
    moderate_scales(b, t);
    plant_big_weights(b, t.discriminator());
    const auto real = real_batch(c);
    const int skipped = skipped_d_steps(t, real, 3);
    if (fp32_layer)
      EXPECT_EQ(skipped, 0) << "forward, D.2 and D.3 in FP32";
    else
      EXPECT_EQ(skipped, 3) << "forward, D.2 in FP16";
  }
}

// The policy is in config.json and in checkpoints; a switch between steps is logged, and a resume
// continues with the policy of its checkpoint.
TEST(LayerPolicy, RoundTripsThroughConfigCheckpointsAndResume) {
  const fs::path dir = fs::temp_directory_path() / ("ampgan-policy-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunConfig c = ampgan::testing::tiny_fp16_run(6, dir);
  c.fp32_layers = {"D.2", "G.3"};
  c.half_blocks = 3;
  c.conv_clamp = 256.0f;
  c.amp_strategy = AmpStrategy::NanToNum;
  {
    auto s = Session::create(c);
    const auto j = nlohmann::json::parse(io::read_file(dir / "config.json"));
    EXPECT_EQ(j["fp32_layers"], "D.2,G.3");  // one string, as on the command line
    EXPECT_EQ(j["half_blocks"], 3);
    EXPECT_EQ(j["conv_clamp"], 256.0);
    EXPECT_EQ(j["amp_strategy"], "nan_to_num");
    EXPECT_EQ(RunConfig::from_json(j, "config.json").layer_policy(), c.layer_policy());
    s->step();
    s->step();
    LayerPolicy switched;
    switched.fp32_layers = {"D.5"};
    switched.conv_clamp = 128.0f;
    s->set_layer_policy(switched);
    EXPECT_EQ(param(s->trainer().discriminator(), "5.weight")->grad.dtype(), DType::F32);
    EXPECT_EQ(param(s->trainer().discriminator(), "2.weight")->grad.dtype(), DType::F16);
    s->step();
    s->finish("test");  // a checkpoint at step 3
    bool logged = false;
    for (const RunEvent& e : RunFolder(dir).read_events())
      if (e.type == EventType::PolicySwitch) {
        logged = true;
        EXPECT_EQ(e.step, 2);
        EXPECT_EQ(e.data["fp32_layers"], nlohmann::json({"D.5"}));
      }
    EXPECT_TRUE(logged);
  }
  CheckpointInfo info;
  read_checkpoint(RunFolder(dir).checkpoint(3), &info);
  EXPECT_EQ(info.layer_policy.fp32_layers, std::vector<std::string>{"D.5"});
  EXPECT_EQ(info.layer_policy.half_blocks, -1);
  EXPECT_EQ(info.layer_policy.conv_clamp, 128.0f);
  {
    auto s = Session::resume(dir, 5);
    EXPECT_EQ(s->trainer().layer_policy().fp32_layers, std::vector<std::string>{"D.5"});
    EXPECT_EQ(s->trainer().layer_policy().conv_clamp, 128.0f);
    EXPECT_EQ(s->trainer().config().amp_strategy, AmpStrategy::NanToNum);
    EXPECT_EQ(param(s->trainer().discriminator(), "5.weight")->working.dtype(), DType::F32);
    EXPECT_EQ(param(s->trainer().discriminator(), "2.weight")->working.dtype(), DType::F16);
    const auto j = nlohmann::json::parse(io::read_file(dir / "config.json"));
    EXPECT_EQ(j["fp32_layers"], "D.5");
    s->run();
    s->finish("test");
  }
  fs::remove_all(dir);
}

TEST(LayerPolicy, ConfigRefusesBadValues) {
  RunConfig c;
  EXPECT_THROW(c.apply_json(nlohmann::json{{"half_blocks", -2}}, "x.json"), Error);
  EXPECT_THROW(c.apply_json(nlohmann::json{{"amp_strategy", "gradscaler"}}, "x.json"), Error);
  c.apply_json(nlohmann::json{{"fp32_layers", "D.2, D.3"}}, "x.json");
  EXPECT_EQ(c.fp32_layers, (std::vector<std::string>{"D.2", "D.3"}));
  c.conv_clamp = -1.0f;
  EXPECT_THROW(c.validate(), Error);
  c.conv_clamp = 0.0f;
  c.bf16_loss_scaling = true;
  c.amp_strategy = AmpStrategy::NanToNum;
  EXPECT_THROW(c.validate(), Error);
  c.amp_strategy = AmpStrategy::Scale;
  EXPECT_NO_THROW(c.validate());
}

// ---- the activation clamp ----------------------------------------------------------------------

TEST(ConvClamp, ChangesOutputsOnlyWhereTheyExceedTheBound) {
  CpuBackend b;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    const std::vector<float> xv = {0.0f, 255.0f, 256.0f, 257.0f,   -256.0f,   -300.0f,
                                   1e4f, -1e4f,  3.5f,   INFINITY, -INFINITY, NAN};
    const int64_t n = static_cast<int64_t>(xv.size());
    Tensor x = make_tensor(b, Shape{n}, t, xv), y = b.empty(Shape{n}, t, MemCategory::Data);
    b.clamp_forward(x, y, 256.0f);
    const auto xs = to_host(b, x), ys = to_host(b, y);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(xs[i])) {
        EXPECT_TRUE(std::isnan(ys[i])) << "NaN stays NaN";
      } else if (std::fabs(xs[i]) <= 256.0f) {
        EXPECT_EQ(ys[i], xs[i]) << dtype_name(t) << " " << xs[i] << " is within the bound: unchanged";
      } else {
        EXPECT_EQ(ys[i], std::copysign(256.0f, xs[i])) << dtype_name(t) << " " << xs[i];
      }
    }
  }
}

TEST(ConvClamp, GradientMatchesFiniteDifferences) {
  CpuBackend b;
  const std::vector<float> xv = {0.5f, 10.0f, 255.0f, 257.0f, -255.5f, -258.0f, 1000.0f, -3.0f};
  const std::vector<float> dyv = {1.0f, -2.0f, 0.5f, 3.0f, 1.5f, -1.0f, 4.0f, 2.0f};
  const int64_t n = static_cast<int64_t>(xv.size());
  const float c = 256.0f, h = 0.25f;
  Tensor x = make_tensor(b, Shape{n}, DType::F32, xv), dy = make_tensor(b, Shape{n}, DType::F32, dyv);
  Tensor dx = b.empty(Shape{n}, DType::F32, MemCategory::Data);
  b.clamp_backward(x, dy, dx, c);
  const auto g = to_host(b, dx);
  for (int64_t i = 0; i < n; ++i) {
    // d/dx of sum(dy * clamp(x)) by central differences (no point lies within h of the kink).
    const double numeric = dyv[i] * (ew::clamp_value(xv[i] + h, c) - ew::clamp_value(xv[i] - h, c)) / (2.0 * h);
    EXPECT_DOUBLE_EQ(g[i], numeric) << "x = " << xv[i];
  }
}

// In a network: a half-precision convolution with the clamp gives the unclamped output wherever
// that is within the bound, and the bound elsewhere; in FP32 the clamp is off.
TEST(ConvClamp, ConvolutionOutputsInHalfAreClamped) {
  CpuBackend b;
  Conv2d conv(b, "0.", 2, 3, 3, 1, 1, false);
  std::vector<float> w(3 * 3 * 3 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 40.0f * philox_normal(5, 6, i);
  b.upload(conv.parameters()[0]->master, w.data(), w.size() * 4);
  const std::vector<float> xv = random_normal(2 * 5 * 5 * 2, 7, 1.0f);
  for (DType t : {DType::F16, DType::F32}) {
    conv.set_precision(b, t);
    Tensor x = make_tensor(b, Shape{2, 5, 5, 2}, t, xv);
    Context ctx{b, t, Mode::Train, true, false, false};
    conv.set_conv_clamp(0.0f);
    const auto free = to_host(b, conv.forward(ctx, x));
    conv.set_conv_clamp(64.0f);
    const auto clamped = to_host(b, conv.forward(ctx, x));
    int changed = 0;
    for (size_t i = 0; i < free.size(); ++i) {
      if (t == DType::F32 || std::fabs(free[i]) <= 64.0f) {
        EXPECT_EQ(clamped[i], free[i]);
      } else {
        EXPECT_EQ(clamped[i], std::copysign(64.0f, free[i]));
        ++changed;
      }
    }
    if (t == DType::F16) EXPECT_GT(changed, 0) << "the weights are large enough that some outputs exceed 64";
  }
}

// ---- nan_to_num gradients -------------------------------------------------------------------------

TEST(NanToNum, ReplacesNonFiniteValuesCountsThemAndClearsTheFlag) {
  CpuBackend b;
  const std::vector<float> v = {1.0f, NAN, INFINITY, -INFINITY, -2.5f, 70000.0f};
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    Tensor g = make_tensor(b, Shape{6}, t, v);
    Tensor s = make_tensor(b, Shape{4}, DType::F32, {1.0f, 0.0f, 5.0f, 0.0f});  // found_inf, ?, count [lo, hi]
    b.nan_to_num({g}, kNanToNumBound, s, 2, 0);
    const auto r = to_host(b, g), sv = to_host(b, s);
    // 1e5 as the format stores it (bf16: 99840), capped at FP16's largest finite value.
    const float top = t == DType::F16 ? 65504.0f : to_host(b, make_tensor(b, Shape{1}, t, {kNanToNumBound}))[0];
    const float big = t == DType::F16 ? INFINITY : to_host(b, make_tensor(b, Shape{1}, t, {70000.0f}))[0];
    EXPECT_EQ(r[0], 1.0f);
    EXPECT_EQ(r[1], 0.0f);
    EXPECT_EQ(r[2], top);
    EXPECT_EQ(r[3], -top);
    EXPECT_EQ(r[4], -2.5f);
    // 70000 is inf once stored in FP16 (replaced too), finite in the others (left alone).
    EXPECT_EQ(r[5], t == DType::F16 ? top : big);
    EXPECT_EQ(sv[0], 0.0f) << "the step applies";
    EXPECT_EQ(ew::count_load(sv.data() + 2), 5u + (t == DType::F16 ? 4u : 3u)) << dtype_name(t);
  }
}

// The strategy in training: a planted non-finite gradient is replaced, the step is applied (D's
// weights change), the loss scale is 1, and metrics report how many values were replaced.
TEST(NanToNum, PlantedNonFiniteGradientIsReplacedAndTheStepApplied) {
  PlantingBackend b;
  b.value = INFINITY;
  TrainerConfig c = tiny_dcgan(Precision::FP16);
  c.amp_strategy = AmpStrategy::NanToNum;
  Trainer t(b, c);
  Parameter* w = param(t.discriminator(), "2.weight");
  b.target = w->grad;
  const auto before = to_host(b, w->master);
  const auto real = real_batch(c);
  t.step(real.data());
  const auto rows = t.collect(true);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].skipped_d);
  EXPECT_EQ(rows[0].scale_d, 1.0);
  EXPECT_EQ(rows[0].scale_g, 1.0);
  EXPECT_GE(rows[0].replaced_d, 1u);
  const auto after = to_host(b, w->master);
  EXPECT_NE(after, before) << "the step was applied";
  for (float x : after) ASSERT_TRUE(std::isfinite(x));
  // The same plant with dynamic loss scaling skips the step and changes nothing.
  PlantingBackend b2;
  b2.value = INFINITY;
  TrainerConfig c2 = tiny_dcgan(Precision::FP16);
  Trainer t2(b2, c2);
  moderate_scales(b2, t2);
  Parameter* w2 = param(t2.discriminator(), "2.weight");
  b2.target = w2->grad;
  const auto before2 = to_host(b2, w2->master);
  t2.step(real.data());
  const auto rows2 = t2.collect(true);
  EXPECT_TRUE(rows2[0].skipped_d);
  EXPECT_EQ(rows2[0].replaced_d, 0u);
  EXPECT_EQ(to_host(b2, w2->master), before2);
}

// metrics.csv carries the replaced counts; a resumed run from before the columns existed gets
// them added to its header.
TEST(NanToNum, MetricsCsvReportsReplacedValues) {
  StepMetrics m;
  m.step = 4;
  m.replaced_d = 12;
  m.replaced_g = 3;
  const auto cols = StepMetrics::columns();
  std::vector<std::string> cells;
  std::string row = m.csv_row(), cur;
  for (char ch : row + ",") {
    if (ch == ',')
      cells.push_back(cur), cur.clear();
    else
      cur += ch;
  }
  ASSERT_EQ(cells.size(), cols.size());
  const StepMetrics back = StepMetrics::from_csv_row(cols, cells);
  EXPECT_EQ(back.replaced_d, 12u);
  EXPECT_EQ(back.replaced_g, 3u);
  EXPECT_EQ(cols[cols.size() - 2], "replaced_d");
}
