// Sample-quality evaluation as the Session runs it: the feature classifier learns the labels,
// is cached, and the Fréchet distance on its features (with the SWD beside it) orders degraded
// copies of the data as expected.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/data/image_set.h"
#include "core/metrics/evaluator.h"
#include "core/metrics/feature_classifier.h"
#include "core/train/trainer.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

// The labelled shapes dataset (3 classes) and a disjoint second sample of it.
struct Fixture {
  data::ImageSet train, other;
  Fixture() {
    data::LoadOptions lo;
    lo.res = 32;
    lo.synthetic_count = 3000;
    lo.seed = 1;
    train = data::load_dataset("synthetic", lo);
    lo.seed = 2;
    lo.synthetic_count = 512;
    other = data::load_dataset("synthetic", lo);
  }
  std::vector<float> images(const data::ImageSet& s, int n) const {
    std::vector<int> idx(n);
    for (int i = 0; i < n; ++i) idx[i] = i;
    std::vector<float> out(static_cast<size_t>(n) * s.image_size());
    s.to_float(idx.data(), n, out.data());
    return out;
  }
};

// 3x3 box blur applied `times` times, per channel, borders clamped.
std::vector<float> blur(std::vector<float> img, int n, int res, int c, int times) {
  std::vector<float> tmp(img.size());
  for (int t = 0; t < times; ++t) {
    for (int i = 0; i < n; ++i)
      for (int y = 0; y < res; ++y)
        for (int x = 0; x < res; ++x)
          for (int k = 0; k < c; ++k) {
            float s = 0;
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                const int yy = std::clamp(y + dy, 0, res - 1), xx = std::clamp(x + dx, 0, res - 1);
                s += img[((size_t(i) * res + yy) * res + xx) * c + k];
              }
            tmp[((size_t(i) * res + y) * res + x) * c + k] = s / 9;
          }
    img.swap(tmp);
  }
  return img;
}

class EvaluatorTest : public ::testing::Test {
 protected:
  // CTest runs each test in its own process: a cache folder in the build tree lets them share
  // the classifier, trained by whichever runs first (the cache is what is under test too).
  static void SetUpTestSuite() {
    setenv("AMPGAN_CACHE_DIR", AMPGAN_TEST_CACHE_DIR, 1);
    fx_ = new Fixture();
  }
  static void TearDownTestSuite() { delete fx_; }
  static Fixture* fx_;
};
Fixture* EvaluatorTest::fx_ = nullptr;

}  // namespace

TEST_F(EvaluatorTest, OrdersDegradedCopiesAndIsDeterministic) {
  const Fixture& f = *fx_;
  metrics::Evaluator ev(f.train, 512, 7);
  const int n = 512, res = 32, c = f.train.channels;
  const std::vector<float> same = f.images(f.other, n);
  const metrics::EvalResult r_same = ev.evaluate_images(same.data(), n);
  // Far above chance (1/3). The label is the kind of the largest of 1-3 shapes, which overlaps
  // or is tiny in some images, so ~85% is what 300 steps reach, not 100%.
  EXPECT_GT(r_same.classifier_accuracy, 0.7);
  const metrics::EvalResult r_blur1 = ev.evaluate_images(blur(same, n, res, c, 1).data(), n);
  const metrics::EvalResult r_blur3 = ev.evaluate_images(blur(same, n, res, c, 3).data(), n);
  std::vector<float> shifted = same;
  for (float& v : shifted) v = std::min(1.0f, v + 0.3f);
  const metrics::EvalResult r_shift = ev.evaluate_images(shifted.data(), n);
  std::vector<float> noise(same.size());
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = std::clamp(philox_normal(3, 3, i) * 0.5f, -1.0f, 1.0f);
  const metrics::EvalResult r_noise = ev.evaluate_images(noise.data(), n);
  std::printf("FD: same data %.3f, blur x1 %.3f, blur x3 %.3f, shift %.3f, noise %.3f\n", r_same.fd, r_blur1.fd,
              r_blur3.fd, r_shift.fd, r_noise.fd);
  std::printf("SWD: same data %.2f, blur x1 %.2f, blur x3 %.2f, shift %.2f, noise %.2f\n", r_same.swd, r_blur1.swd,
              r_blur3.swd, r_shift.swd, r_noise.swd);
  // Another sample of the same distribution is close; more damage is farther; noise is farthest.
  EXPECT_LT(r_same.fd, r_blur1.fd);
  EXPECT_LT(r_blur1.fd, r_blur3.fd);
  EXPECT_LT(r_blur3.fd, r_noise.fd);
  EXPECT_LT(r_same.fd, r_shift.fd);
  EXPECT_LT(r_same.swd, r_blur1.swd);
  EXPECT_LT(r_blur1.swd, r_blur3.swd);
  EXPECT_LT(r_blur3.swd, r_noise.swd);
  EXPECT_LT(r_same.swd, r_shift.swd);
  // Same inputs, same value.
  const metrics::EvalResult again = ev.evaluate_images(same.data(), n);
  EXPECT_EQ(again.fd, r_same.fd);
  EXPECT_EQ(again.swd, r_same.swd);
}

TEST_F(EvaluatorTest, ClassifierIsCachedPerDataset) {
  const Fixture& f = *fx_;
  const std::vector<float> same = f.images(f.other, 256);
  metrics::Evaluator first(f.train, 256, 7);  // trains it unless another test already did
  const metrics::EvalResult r1 = first.evaluate_images(same.data(), 256);
  ASSERT_TRUE(std::filesystem::exists(metrics::classifier_cache_path(f.train)));
  int notices = 0;
  metrics::Evaluator::Options opt;
  opt.notice = [&](const std::string&) { ++notices; };
  metrics::Evaluator second(f.train, 256, 7, opt);
  const metrics::EvalResult r2 = second.evaluate_images(same.data(), 256);
  EXPECT_EQ(notices, 0) << "the cached classifier should have been loaded, not retrained";
  EXPECT_EQ(r2.fd, r1.fd);
  EXPECT_EQ(r2.classifier_accuracy, r1.classifier_accuracy);
  // A damaged cache file is retrained (briefly here), not fatal. On a copy of the cache, so the
  // other tests keep theirs.
  TempDir own("ampgan-cache");
  const auto copy = own.path() / "classifiers" / metrics::classifier_cache_path(f.train).filename();
  std::filesystem::create_directories(copy.parent_path());
  std::filesystem::copy_file(metrics::classifier_cache_path(f.train), copy);
  std::filesystem::resize_file(copy, 100);
  setenv("AMPGAN_CACHE_DIR", own.path().c_str(), 1);
  opt.classifier_min_steps = 20;
  metrics::Evaluator third(f.train, 256, 7, opt);
  const metrics::EvalResult r3 = third.evaluate_images(same.data(), 256);
  setenv("AMPGAN_CACHE_DIR", AMPGAN_TEST_CACHE_DIR, 1);
  EXPECT_EQ(notices, 1);
  EXPECT_TRUE(std::isfinite(r3.fd));
  EXPECT_GT(std::filesystem::file_size(copy), 100u) << "the retrained classifier replaces the damaged file";
}

// A GAN's scores swing while it trains, and so does the untrained baseline, so the claim is made
// on medians at both ends:
// - Trained: until ~800 steps here one snapshot's FD is often 2-4x the one 100 steps before or
//   after (e.g. 408, 143, 401 at steps 600, 700, 800), so the trained score is the median of three
//   evaluations 100 steps apart late in the run. The trajectory itself differs between hosts and
//   between runs on one host: OpenBLAS and the engine pick kernels by CPU, and the kernel plan
//   times its candidates on first use (cpu_kernel_plan.h), so two fresh runs need not multiply
//   alike. Over 7 runs of seed 0 on a Zen 4 host (auto, openblas, onednn; OpenBLAS's Haswell and
//   AVX-512 kernels, AMPGAN_CPU_FEATURES=avx2) the median FD at steps 800-1000 was 100-244, and a
//   CI run on the same kind of host got 349.
// - Untrained: one initialisation's FD is as much a draw: 488, 969, 923 and 887 for seeds 0-3 with
//   one classifier, so a ratio to seed 0's alone (the lowest) swung from 0.2x to 0.63x. The
//   baseline is the median over five initialisations, which no single lucky init moves.
// Against that baseline (887 here) the trained medians above are 0.11-0.28x, and the SWD at 1000
// steps 0.30-0.39x of the untrained median (the CI run's: 0.54x; its FD would be ~0.4x of a
// baseline like this one, an estimate: its classifier differed). The test asks < 0.6x of both
// (tests/README.md, "Host kinds").
TEST_F(EvaluatorTest, TrainedGeneratorScoresBetterThanUntrained) {
  const Fixture& f = *fx_;
  CpuBackend b;
  TrainerConfig c;
  c.model.res = 32;
  c.model.channels = f.train.channels;
  c.model.width = 16;
  c.batch = 32;
  metrics::Evaluator ev(f.train, 256, 7);
  std::vector<double> fd0, swd0;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    c.seed = seed;
    Trainer untrained(b, c);
    const metrics::EvalResult r = ev.evaluate(untrained);
    fd0.push_back(r.fd);
    swd0.push_back(r.swd);
  }
  std::sort(fd0.begin(), fd0.end());
  std::sort(swd0.begin(), swd0.end());
  c.seed = 0;
  Trainer t(b, c);
  const int kSteps = 1000;
  std::vector<int> idx(32);
  std::vector<float> batch(32 * f.train.image_size());
  std::vector<double> fd, swd;
  for (int s = 0; s < kSteps; ++s) {
    for (int i = 0; i < 32; ++i) idx[i] = (s * 32 + i) % f.train.count;
    f.train.to_float(idx.data(), 32, batch.data());
    t.step(batch.data());
    if (s + 1 >= kSteps - 200 && (s + 1) % 100 == 0) {
      t.collect(true);
      const metrics::EvalResult r = ev.evaluate(t);
      EXPECT_EQ(r.step, s + 1);
      fd.push_back(r.fd);
      swd.push_back(r.swd);
    }
  }
  ASSERT_EQ(fd.size(), 3u);
  const double last_swd = swd.back();
  std::sort(fd.begin(), fd.end());
  std::printf(
      "untrained (seeds 0-4): FD %.1f %.1f %.1f %.1f %.1f, SWD median %.1f; after %d steps: SWD %.1f (%.2fx), "
      "FD at steps %d-%d %.1f %.1f %.1f (median %.2fx)\n",
      fd0[0], fd0[1], fd0[2], fd0[3], fd0[4], swd0[2], kSteps, last_swd, last_swd / swd0[2], kSteps - 200, kSteps,
      fd[0], fd[1], fd[2], fd[1] / fd0[2]);
  EXPECT_LT(last_swd, 0.6 * swd0[2]);
  EXPECT_LT(fd[1], 0.6 * fd0[2]);
}
