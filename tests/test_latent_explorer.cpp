// The latent explorer (core/run/latent_explorer.h): a seed names one latent and one image, the
// truncation trick keeps every value within its threshold and leaves the rest as drawn, an
// interpolation starts and ends on its seeds' images exactly, and standing statistics are the
// batches' and leave the model as it was.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/nn/batchnorm2d.h"
#include "core/run/latent_explorer.h"
#include "core/run/onnx_export.h"
#include "core/run/session.h"
#include "core/train/standing_stats.h"
#include "test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

double norm(const float* v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

std::vector<float> image_of(const std::vector<float>& imgs, int i, size_t per_image) {
  return {imgs.begin() + static_cast<std::ptrdiff_t>(i * per_image),
          imgs.begin() + static_cast<std::ptrdiff_t>((i + 1) * per_image)};
}

}  // namespace

TEST(LatentExplorer, ASeedNamesOneStandardNormalLatent) {
  EXPECT_EQ(seed_latent(7, 100), seed_latent(7, 100));
  EXPECT_NE(seed_latent(7, 100), seed_latent(8, 100));
  // seed_latents is seed_latent back to back, in the order given.
  const std::vector<float> both = seed_latents({8, 7}, 100);
  ASSERT_EQ(both.size(), 200u);
  EXPECT_EQ(std::vector<float>(both.begin(), both.begin() + 100), seed_latent(8, 100));
  EXPECT_EQ(std::vector<float>(both.begin() + 100, both.end()), seed_latent(7, 100));
  // 64 seeds x 128 values of N(0, 1): the mean's standard error is 1/90, the variance's 1/64.
  std::vector<uint64_t> seeds;
  for (uint64_t s = 0; s < 64; ++s) seeds.push_back(s);
  const std::vector<float> z = seed_latents(seeds, 128);
  double sum = 0, sq = 0;
  for (float v : z) sum += v, sq += double(v) * v;
  const double mean = sum / z.size(), var = sq / z.size() - mean * mean;
  EXPECT_LT(std::fabs(mean), 0.06);
  EXPECT_NEAR(var, 1.0, 0.1);
}

TEST(LatentExplorer, TruncationRedrawsOnlyTheValuesBeyondTheThreshold) {
  std::vector<uint64_t> seeds;
  for (uint64_t s = 0; s < 32; ++s) seeds.push_back(s);
  const std::vector<float> plain = seed_latents(seeds, 128);
  for (float t : {0.05f, 0.5f, 1.0f, 2.0f}) {
    const std::vector<float> cut = seed_latents(seeds, 128, t);
    ASSERT_EQ(cut.size(), plain.size());
    size_t redrawn = 0, at_threshold = 0;
    for (size_t i = 0; i < cut.size(); ++i) {
      ASSERT_LE(std::fabs(cut[i]), t) << "value " << i << " at threshold " << t;
      at_threshold += std::fabs(cut[i]) == t;
      if (std::fabs(plain[i]) <= t)
        ASSERT_EQ(cut[i], plain[i]) << "a value within " << t << " was changed";
      else
        ++redrawn;
    }
    // The share of |N(0,1)| > t: 2 (1 - Phi(t)) = erfc(t / sqrt 2), within 4 standard errors.
    const double expect = std::erfc(t / std::sqrt(2.0)), n = double(cut.size());
    EXPECT_NEAR(redrawn / n, expect, 4 * std::sqrt(expect * (1 - expect) / n)) << "threshold " << t;
    EXPECT_EQ(at_threshold, 0u) << "redrawn values are new draws, not the threshold (a clamp)";
  }
  EXPECT_EQ(seed_latent(3, 64, 0.0f), seed_latent(3, 64)) << "truncation 0 is none";
  // Standing statistics' latents: as truncated as the images', from a stream of their own.
  const std::vector<float> standing = standing_latents(16, 64, 0.5f);
  ASSERT_EQ(standing.size(), 16u * 64);
  for (float v : standing) ASSERT_LE(std::fabs(v), 0.5f);
  EXPECT_NE(standing_latents(1, 64), seed_latent(0, 64));
  for (double bad : {-0.5, 4.5, double(NAN)})
    EXPECT_NE(error_of([&] { check_truncation(bad, "--truncation"); }).find("--truncation"), std::string::npos);
  EXPECT_NE(error_of([] { seed_latent(1, 8, 5.0f); }), "(no error)");
}

TEST(LatentExplorer, InterpolationEndsOnItsLatentsAndSlerpKeepsTheNorm) {
  const std::vector<float> a = seed_latent(3, 128), b = seed_latent(9, 128);
  for (LatentPath path : {LatentPath::Lerp, LatentPath::Slerp}) {
    const std::vector<float> z = interpolate_latents(a, b, 9, path);
    ASSERT_EQ(z.size(), 9u * 128);
    EXPECT_EQ(std::vector<float>(z.begin(), z.begin() + 128), a) << latent_path_name(path);
    EXPECT_EQ(std::vector<float>(z.end() - 128, z.end()), b) << latent_path_name(path);
  }
  const std::vector<float> lerp = interpolate_latents(a, b, 9, LatentPath::Lerp);
  for (int j = 0; j < 128; ++j) EXPECT_FLOAT_EQ(lerp[4 * 128 + j], 0.5f * (a[j] + b[j]));
  // Two independent Gaussian latents are nearly orthogonal: lerp's midpoint has ~1/sqrt 2 of
  // their norm, slerp's the norm of its ends (which lie within a few percent of each other).
  const double na = norm(a.data(), 128), nb = norm(b.data(), 128);
  const std::vector<float> slerp = interpolate_latents(a, b, 9, LatentPath::Slerp);
  EXPECT_LT(norm(lerp.data() + 4 * 128, 128), 0.85 * std::min(na, nb));
  for (int i = 1; i < 8; ++i) {
    const double n = norm(slerp.data() + i * 128, 128);
    EXPECT_GT(n, 0.98 * std::min(na, nb)) << "frame " << i;
    EXPECT_LT(n, 1.02 * std::max(na, nb)) << "frame " << i;
  }
  // The same latent twice: every frame is that latent (no 0/0 on the sphere).
  const std::vector<float> same = interpolate_latents(a, a, 5, LatentPath::Slerp);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 128; ++j) ASSERT_FLOAT_EQ(same[i * 128 + j], a[j]) << "frame " << i;
  EXPECT_EQ(parse_latent_path("lerp", "--path"), LatentPath::Lerp);
  EXPECT_NE(error_of([] { parse_latent_path("cubic", "--path"); }).find("--path"), std::string::npos);
}

TEST(LatentExplorer, SeedListsAndTheirRefusals) {
  EXPECT_EQ(parse_seed_list("7", "--seeds"), (std::vector<uint64_t>{7}));
  EXPECT_EQ(parse_seed_list("0-3,8", "--seeds"), (std::vector<uint64_t>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_seed_list("9,3-4,9", "--seeds"), (std::vector<uint64_t>{9, 3, 4, 9})) << "the order written";
  EXPECT_EQ(parse_seed_list("9223372036854775808", "--seeds"), (std::vector<uint64_t>{1ull << 63}));
  EXPECT_EQ(parse_seed_list("0-4095", "--seeds").size(), kMaxSeeds);
  for (const char* bad : {"", "x", "1,,2", "3-1", "-3", "1-", "0-4096", "0-4000,5000-5200", "1.5", " 3",
                          "9223372036854775809", "99999999999999999999999"}) {
    const std::string e = error_of([&] { parse_seed_list(bad, "--seeds"); });
    EXPECT_NE(e.find("--seeds"), std::string::npos) << "'" << bad << "': " << e;
    EXPECT_NE(e.find("0-15"), std::string::npos) << "the example is missing for '" << bad << "': " << e;
  }
}

// A seed's image is its own: the same alone or among others, and an interpolation's end frames
// are the images of its two seeds, bit for bit. Trained a few FP16 steps so that batch norm's
// running statistics are not their initial 0 and 1.
TEST(LatentExplorer, ASeedsImageIsTheSameAloneAndInAnyCompany) {
  TempDir tmp;
  auto s = Session::create(tiny_fp16_run(6, tmp / "run"));
  s->run();
  Trainer& t = s->trainer();
  const int nz = t.config().model.latent;
  const size_t per_image = size_t(32) * 32 * t.config().model.channels;
  const std::vector<float> alone = explore_images(t, seed_latent(5, nz), 1);
  const std::vector<float> crowd = explore_images(t, seed_latents({2, 5, 11}, nz), 3);
  ASSERT_EQ(alone.size(), per_image);
  ASSERT_EQ(crowd.size(), 3 * per_image);
  EXPECT_EQ(image_of(crowd, 1, per_image), alone);
  EXPECT_NE(image_of(crowd, 0, per_image), alone);
  const std::vector<float> walk =
      explore_images(t, interpolate_latents(seed_latent(2, nz), seed_latent(5, nz), 6, LatentPath::Slerp), 6);
  EXPECT_EQ(image_of(walk, 0, per_image), image_of(crowd, 0, per_image));
  EXPECT_EQ(image_of(walk, 5, per_image), alone);
  EXPECT_NE(image_of(walk, 2, per_image), alone);

  // Stopped after two images: progress sees 0, 1 and 2 done of 3, then Cancelled says so.
  std::vector<int> seen;
  const std::string why = error_of([&] {
    explore_images(t, seed_latents({1, 2, 3}, nz), 3, 0, [&](int done, int total) {
      EXPECT_EQ(total, 3);
      seen.push_back(done);
      return done < 2;
    });
  });
  EXPECT_NE(why.find("stopped after 2 of 3"), std::string::npos) << why;
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
}

// Standing statistics (core/train/standing_stats.h) over one batch are that batch's statistics:
// the images of exactly that batch then match the batch-statistics images up to the unbiased
// variance's (rows - 1) / rows, where an untrained generator's running averages (0 and 1) are far
// off. Afterwards the running averages, batch counts and momentum are as they were.
TEST(StandingStats, OneBatchGivesThatBatchsStatisticsAndEverythingIsPutBack) {
  CpuBackend b;
  Trainer t(b, tiny_dcgan(Precision::FP32));
  const int nz = t.config().model.latent, batch = t.config().batch;
  const std::vector<float> z = standing_latents(batch, nz);
  const std::vector<float> with_batch = t.generate(z, batch);
  const std::vector<float> with_running = generate_images(t, z, batch, BnStats::Running);
  std::vector<std::vector<float>> before;
  for (StateBuffer* s : t.generator().buffers()) before.push_back(to_host(b, s->value));
  std::vector<float> with_standing;
  {
    StandingStats s(b, t.generator(), DType::F32, z, nz, batch);
    with_standing = generate_images(t, z, batch, BnStats::Running);
  }
  double standing_off = 0, running_off = 0;
  for (size_t i = 0; i < with_batch.size(); ++i) {
    standing_off = std::max(standing_off, double(std::fabs(with_standing[i] - with_batch[i])));
    running_off = std::max(running_off, double(std::fabs(with_running[i] - with_batch[i])));
  }
  EXPECT_LT(standing_off, 0.05);
  EXPECT_GT(running_off, 0.1) << "the scenario needs running averages far from the batch's";
  EXPECT_GT(running_off, 20 * standing_off);
  size_t k = 0;
  for (StateBuffer* s : t.generator().buffers()) EXPECT_EQ(to_host(b, s->value), before[k++]) << s->name;
  EXPECT_EQ(generate_images(t, z, batch, BnStats::Running), with_running);
  for (size_t i = 0; i < t.generator().size(); ++i)
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&t.generator().layer(i))) {
      EXPECT_EQ(bn->momentum(), 0.1f);
      EXPECT_EQ(bn->batches_tracked(), 0);
    }
}
