// The seeds' claims about mixed precision, shown with numbers on the CPU backend (which stores
// half tensors as real 16-bit values): loss scaling rescues gradients from FP16 underflow, an
// overflow skips the step without touching anything, the scaler follows GradScaler's rule, and
// FP16 training trains like FP32.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/data/batch_loader.h"
#include "core/data/image_set.h"
#include "core/train/trainer.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

data::ImageSet shapes(int count) {
  data::LoadOptions lo;
  lo.res = 32;
  lo.synthetic_count = count;
  return data::load_dataset("synthetic", lo);
}

TrainerConfig small_config(int channels) {
  TrainerConfig c;
  c.model.res = 32;
  c.model.channels = channels;
  c.model.width = 16;
  c.batch = 16;
  return c;
}

struct Counts {
  double zeros = 0, subnormals = 0, total = 0;
};

// Zero and subnormal counts over a network's 16-bit gradients.
Counts half_gradient_counts(Backend& b, Sequential& net) {
  std::vector<Tensor> half;
  for (const Tensor& g : net.gradients())
    if (g.dtype() == DType::F16) half.push_back(g);
  Tensor s = b.empty(Shape{8}, DType::F32, MemCategory::Data);
  Tensor unit = make_tensor(b, Shape{2}, DType::F32, {1.0f, 0.0f});
  b.grad_stats(half, unit, s, {0, 1, 2, 4, 6});  // counts take [slot, slot + 1]
  const auto h = to_host(b, s);
  return {double(ew::count_load(&h[2])), double(ew::count_load(&h[4])), double(ew::count_load(&h[6]))};
}

std::vector<std::vector<float>> snapshot(Trainer& t, const std::string& net) {
  std::vector<std::vector<float>> out;
  for (const StateEntry& e : t.state()) {
    // Weights, Adam moments and step counts; batch-norm running averages legitimately move
    // during the forward pass even on a skipped step.
    if (e.name.rfind(net + ".", 0) != 0 || e.name.find("running_") != std::string::npos) continue;
    out.push_back(to_host(t.backend(), *e.tensor));
  }
  return out;
}

}  // namespace

// When D wins (here: D trained alone with G frozen until D(x) > 0.999 and D(G(z)) < 0.001), its
// loss gradient sigma(x) - y is ~1e-4 per sample and /16 for the batch mean; deeper in D the
// weight gradients fall to ~1e-8..1e-6, below FP16's smallest normal 2^-14 = 6.1e-5 and near its
// smallest subnormal 2^-24 = 6e-8. Without scaling nearly all of them are subnormal (at most 10
// significant bits, down to 1) or zero; multiplied by 2^16 they are normal numbers again.
TEST(LossScaling, RescuesGradientsFromFp16Underflow) {
  CpuBackend b;
  const data::ImageSet set = shapes(512);
  Counts counts[2];
  const float scales[2] = {1.0f, 65536.0f};
  for (int i = 0; i < 2; ++i) {
    TrainerConfig c = small_config(set.channels);
    c.adam_g.lr = 1e-12f;  // G frozen: D learns to win
    c.adam_d.lr = 2e-3f;
    c.scaler.init_scale = scales[i];
    c.scaler.growth_interval = 1 << 30;
    Trainer t(b, c);
    data::BatchLoader loader(set, c.batch, 0, 0);
    for (int s = 0; s < 60; ++s) t.step(loader.next());
    const StepMetrics warm = t.collect(true).back();
    ASSERT_GT(warm.d_real, 0.999) << "D did not win; the scenario needs a confident discriminator";
    ASSERT_LT(warm.d_fake, 0.001);
    t.set_precision(Precision::FP16);  // the same weights and batch, now in FP16
    t.step(loader.next());
    t.collect(true);
    counts[i] = half_gradient_counts(b, t.discriminator());
  }
  const Counts& s1 = counts[0];
  const Counts& s16 = counts[1];
  // Without scaling: more than 90% of D's half gradients are zero or subnormal, dozens exactly 0.
  EXPECT_GT((s1.zeros + s1.subnormals) / s1.total, 0.90);
  EXPECT_GT(s1.zeros, 50.0);
  // With S = 2^16 they move up by 16 binades: none is zero, fewer than 0.1% subnormal.
  EXPECT_EQ(s16.zeros, 0.0);
  EXPECT_LT((s16.zeros + s16.subnormals) / s16.total, 0.001);
}

TEST(LossScaling, OverflowSkipsTheStepAndBacksOff) {
  CpuBackend b;
  const data::ImageSet set = shapes(256);
  TrainerConfig c = small_config(set.channels);
  c.precision = Precision::FP16;
  c.scaler.init_scale = std::ldexp(1.0f, 40);  // every scaled gradient overflows FP16 (65504)
  c.scaler.max_scale = std::ldexp(1.0f, 50);
  Trainer t(b, c);
  data::BatchLoader loader(set, c.batch, 0, 0);
  const auto g0 = snapshot(t, "G"), d0 = snapshot(t, "D");
  t.step(loader.next());
  const StepMetrics m = t.collect(true).at(0);
  EXPECT_TRUE(m.skipped_d);
  EXPECT_TRUE(m.skipped_g);
  EXPECT_EQ(m.scale_d, std::ldexp(1.0, 40));
  // Weights, Adam moments and Adam's step count: unchanged bit for bit.
  EXPECT_EQ(snapshot(t, "G"), g0);
  EXPECT_EQ(snapshot(t, "D"), d0);
  EXPECT_EQ(t.scaler_d().scale(b), std::ldexp(1.0f, 39));
  EXPECT_EQ(t.scaler_g().scale(b), std::ldexp(1.0f, 39));
  // The scale keeps halving until the gradients fit, then the networks train.
  int steps = 1;
  StepMetrics last = m;
  while ((last.skipped_d || last.skipped_g) && steps < 60) {
    t.step(loader.next());
    last = t.collect(true).at(0);
    ++steps;
  }
  ASSERT_FALSE(last.skipped_d || last.skipped_g) << "still overflowing after 60 steps";
  EXPECT_LT(last.scale_d, std::ldexp(1.0, 40));
  EXPECT_GE(last.scale_d, std::ldexp(1.0, 8));
  EXPECT_NE(snapshot(t, "G"), g0);
  EXPECT_NE(snapshot(t, "D"), d0);
  EXPECT_TRUE(std::isfinite(last.loss_d) && std::isfinite(last.loss_g));
}

// GradScaler's update rule (torch/amp/grad_scaler.py, _amp_update_scale_): on inf, scale *=
// backoff and the counter resets; else counter += 1 and at growth_interval scale *= growth, counter
// resets. The values below were worked out by hand from that rule.
TEST(LossScaling, ScalerFollowsGradScalerSequence) {
  CpuBackend b;
  ew::ScalerConfig cfg;
  cfg.init_scale = 65536.0f;
  cfg.growth_interval = 3;
  cfg.min_scale = 4096.0f;    // 2^12
  cfg.max_scale = 262144.0f;  // 2^18
  Tensor state = make_tensor(b, Shape{2}, DType::F32, {cfg.init_scale, 0.0f});
  Tensor flag = b.empty(Shape{1}, DType::F32, MemCategory::Data);
  // F = finite step, N = non-finite
  const char* script = "FFFNFFNFFFFFFFFFNNNNNNF";
  const double expected[] = {65536,  65536,  131072,                     // third clean step: grow
                             65536,                                      // overflow: back off, counter reset
                             65536,  65536,                              // two clean
                             32768,                                      // overflow
                             32768,  32768,  65536,                      // grow after three
                             65536,  65536,  131072,                     //
                             131072, 131072, 262144,                     // reaches the ceiling
                             131072, 65536,  32768,  16384, 8192, 4096,  // six overflows: halves down to the floor
                             4096};                                      // one clean step: counter 1, no growth yet
  for (size_t i = 0; i < std::strlen(script); ++i) {
    b.fill(flag, script[i] == 'N' ? 1.0f : 0.0f);
    b.scaler_update(state, cfg, flag, {0});
    ASSERT_EQ(to_host(b, state)[0], expected[i]) << "after step " << i + 1 << " (" << script[i] << ")";
  }
  // At the ceiling a due growth is not applied (GradScaler only grows to finite values; we cap).
  Tensor top = make_tensor(b, Shape{2}, DType::F32, {cfg.max_scale, 2.0f});
  b.fill(flag, 0.0f);
  b.scaler_update(top, cfg, flag, {0});
  EXPECT_EQ(to_host(b, top)[0], cfg.max_scale);
  EXPECT_EQ(to_host(b, top)[1], 0.0f);
}

TEST(LossScaling, SharedScalerUpdatesOnceFromBothNetworks) {
  CpuBackend b;
  const data::ImageSet set = shapes(256);
  TrainerConfig c = small_config(set.channels);
  c.precision = Precision::FP16;
  c.shared_scaler = true;
  c.scaler.init_scale = std::ldexp(1.0f, 40);
  c.scaler.max_scale = std::ldexp(1.0f, 50);
  Trainer t(b, c);
  data::BatchLoader loader(set, c.batch, 0, 0);
  t.step(loader.next());
  const StepMetrics m = t.collect(true).at(0);
  EXPECT_TRUE(m.skipped_d && m.skipped_g);
  EXPECT_EQ(m.scale_d, m.scale_g);  // one scale for both within the step
  // One backoff per iteration, not one per network.
  EXPECT_EQ(t.scaler_d().scale(b), std::ldexp(1.0f, 39));
}

// A precision switch keeps the FP32 master weights and Adam moments exactly.
TEST(Precision, SwitchingLosesNothing) {
  CpuBackend b;
  const data::ImageSet set = shapes(256);
  Trainer t(b, small_config(set.channels));
  data::BatchLoader loader(set, 16, 0, 0);
  for (int i = 0; i < 3; ++i) t.step(loader.next());
  const auto g = snapshot(t, "G"), d = snapshot(t, "D");
  for (Precision p : {Precision::FP16, Precision::BF16, Precision::TF32, Precision::FP32}) {
    t.set_precision(p);
    EXPECT_EQ(snapshot(t, "G"), g) << precision_name(p);
    EXPECT_EQ(snapshot(t, "D"), d) << precision_name(p);
  }
  t.set_precision(Precision::FP16);
  t.step(loader.next());
  const StepMetrics m = t.collect(true).back();
  EXPECT_EQ(m.precision, Precision::FP16);
  EXPECT_TRUE(std::isfinite(m.loss_d));
}

// A few hundred steps on the shapes dataset in FP32 and in FP16: losses stay finite and neither
// run collapses. Collapse here means D wins outright (mean D(x) > 0.99 and D(G(z)) < 0.01 over
// the last 50 steps -- G then learns nothing) or G maps every latent to nearly the same image
// (mean pairwise distance of samples under 15% of the real images').
TEST(Training, Fp16TrainsLikeFp32) {
  CpuBackend b;
  const data::ImageSet set = shapes(2048);
  const int kSteps = 300;
  std::vector<float> real_idx_f(64 * set.image_size());
  std::vector<int> idx(64);
  for (int i = 0; i < 64; ++i) idx[i] = i;
  set.to_float(idx.data(), 64, real_idx_f.data());
  auto mean_pairwise = [&](const std::vector<float>& imgs, int n) {
    const size_t sz = set.image_size();
    double sum = 0;
    int pairs = 0;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j, ++pairs) {
        double d = 0;
        for (size_t k = 0; k < sz; ++k) d += std::pow(imgs[i * sz + k] - imgs[j * sz + k], 2);
        sum += std::sqrt(d);
      }
    return sum / pairs;
  };
  const double real_spread = mean_pairwise(real_idx_f, 64);
  double final_loss_g[2];
  for (Precision p : {Precision::FP32, Precision::FP16}) {
    TrainerConfig c = small_config(set.channels);
    c.batch = 32;
    c.precision = p;
    Trainer t(b, c);
    data::BatchLoader loader(set, c.batch, 0, 0);
    std::vector<StepMetrics> rows;
    for (int s = 0; s < kSteps; ++s) {
      t.step(loader.next());
      for (const StepMetrics& m : t.collect(true)) rows.push_back(m);
    }
    double d_real = 0, d_fake = 0, loss_g = 0;
    int skipped = 0;
    for (const StepMetrics& m : rows) {
      ASSERT_TRUE(std::isfinite(m.loss_d) && std::isfinite(m.loss_g)) << precision_name(p) << " step " << m.step;
      skipped += m.skipped_d + m.skipped_g;
    }
    for (int s = kSteps - 50; s < kSteps; ++s) {
      d_real += rows[s].d_real / 50;
      d_fake += rows[s].d_fake / 50;
      loss_g += rows[s].loss_g / 50;
    }
    const double spread = mean_pairwise(t.generate(
                                            [&] {
                                              std::vector<float> z(64 * 100);
                                              for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(5, 5, i);
                                              return z;
                                            }(),
                                            64),
                                        64) /
                          real_spread;
    std::printf("%s: last 50 steps D(x) %.3f D(G(z)) %.3f loss_g %.3f; sample spread %.2f of real; %d skips\n",
                precision_name(p), d_real, d_fake, loss_g, spread, skipped);
    EXPECT_LT(d_real, 0.99) << precision_name(p);
    EXPECT_GT(d_fake, 0.01) << precision_name(p);
    EXPECT_GT(spread, 0.15) << precision_name(p);
    // FP16 skips a handful of early steps while the scale finds its level, then few.
    if (p == Precision::FP16) EXPECT_LT(skipped, kSteps / 10);
    final_loss_g[p == Precision::FP16] = loss_g;
  }
  // Same seed, same data: the runs diverge numerically but train alike (G loss within a factor 2).
  EXPECT_LT(std::fabs(std::log(final_loss_g[1] / final_loss_g[0])), std::log(2.0));
}
