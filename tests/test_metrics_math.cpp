// Sample-quality metrics, the numerical part: multi-scale sliced Wasserstein distance on
// Laplacian-pyramid patches, and the Fréchet distance between Gaussian feature fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/metrics/frechet.h"
#include "core/metrics/swd.h"
#include "core/metrics/swd_project.h"

namespace ampgan::metrics {
namespace {

// ---- procedural images -------------------------------------------------------------------------

float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return uniform_open01(philox4x32(index, stream, seed).v[0]);
}

// Smooth random blobs on a dark background, NHWC in [-1, 1]: 2-5 Gaussian blobs per image with
// random centre, radius (1.5-6 px) and per-channel brightness. A "dataset" with structure at
// several scales, so every pyramid level has something to compare.
std::vector<float> blobs(int n, int res, int c, uint64_t seed) {
  std::vector<float> img(size_t(n) * res * res * c, -1.0f);
  for (int i = 0; i < n; ++i) {
    uint64_t k = 0;
    auto u = [&] { return uniform(seed, i, k++); };
    const int count = 2 + static_cast<int>(u() * 4);
    for (int b = 0; b < count; ++b) {
      const float cx = u() * res, cy = u() * res, radius = 1.5f + 4.5f * u();
      float amp[3];
      for (int ch = 0; ch < 3; ++ch) amp[ch] = 0.6f + 1.4f * u();
      for (int y = 0; y < res; ++y)
        for (int x = 0; x < res; ++x) {
          const float d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
          const float g = std::exp(-d2 / (2 * radius * radius));
          for (int ch = 0; ch < c; ++ch) img[((size_t(i) * res + y) * res + x) * c + ch] += amp[ch] * g;
        }
    }
  }
  for (float& v : img) v = std::clamp(v, -1.0f, 1.0f);
  return img;
}

std::vector<float> uniform_noise(int n, int res, int c, uint64_t seed) {
  std::vector<float> img(size_t(n) * res * res * c);
  for (size_t i = 0; i < img.size(); ++i) img[i] = 2.0f * uniform(seed, 99, i) - 1.0f;
  return img;
}

// Gaussian blur of standard deviation sigma (clamped borders), per image and channel.
std::vector<float> blurred(const std::vector<float>& src, int n, int res, int c, float sigma) {
  const int radius = static_cast<int>(std::ceil(3 * sigma));
  std::vector<float> k(2 * radius + 1);
  float total = 0;
  for (int t = -radius; t <= radius; ++t) total += k[t + radius] = std::exp(-0.5f * t * t / (sigma * sigma));
  for (float& v : k) v /= total;
  std::vector<float> tmp(src.size()), dst(src.size());
  auto at = [&](int i, int y, int x, int ch) { return (size_t(i) * res * res + size_t(y) * res + x) * c + ch; };
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < res; ++y)
      for (int x = 0; x < res; ++x)
        for (int ch = 0; ch < c; ++ch) {
          float s = 0;
          for (int t = -radius; t <= radius; ++t) s += k[t + radius] * src[at(i, y, std::clamp(x + t, 0, res - 1), ch)];
          tmp[at(i, y, x, ch)] = s;
        }
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < res; ++y)
      for (int x = 0; x < res; ++x)
        for (int ch = 0; ch < c; ++ch) {
          float s = 0;
          for (int t = -radius; t <= radius; ++t) s += k[t + radius] * tmp[at(i, std::clamp(y + t, 0, res - 1), x, ch)];
          dst[at(i, y, x, ch)] = s;
        }
  return dst;
}

std::vector<float> brightened(std::vector<float> img, float delta) {
  for (float& v : img) v = std::clamp(v + delta, -1.0f, 1.0f);
  return img;
}

// Fewer directions than the paper's 4 x 512 keep the suite fast; the estimator is the same.
SwdOptions test_options() {
  SwdOptions o;
  o.projections = 128;
  o.repeats = 2;
  o.seed = 7;
  return o;
}

SwdResult swd(const std::vector<float>& a, int n_a, const std::vector<float>& b, int n_b, int c,
              const SwdOptions& o = test_options()) {
  return sliced_wasserstein(a.data(), n_a, b.data(), n_b, 32, c, o);
}

constexpr int kN = 128;  // images per set: 16384 patches per level

// ---- SWD ---------------------------------------------------------------------------------------

TEST(Swd, LevelsFollowTheResolution) {
  SwdOptions o;
  EXPECT_EQ(swd_levels(32, o), (std::vector<int>{32, 16}));
  EXPECT_EQ(swd_levels(64, o), (std::vector<int>{64, 32, 16}));
  EXPECT_EQ(swd_levels(28, o), (std::vector<int>{28}));  // 14 < 16
  o.min_resolution = 8;
  EXPECT_EQ(swd_levels(32, o), (std::vector<int>{32, 16, 8}));
  EXPECT_EQ(swd_levels(28, o), (std::vector<int>{28, 14}));  // 7 is odd-sized below 8
  o.patch_size = 9;
  EXPECT_EQ(swd_levels(32, o), (std::vector<int>{32, 16}));  // 8 < patch
  EXPECT_THROW(swd_levels(6, SwdOptions{}), Error);

  // The result has one entry per level, and the mean is their average.
  const auto a = blobs(16, 64, 1, 1), b = blobs(16, 64, 1, 2);
  const SwdResult r = sliced_wasserstein(a.data(), 16, b.data(), 16, 64, 1);  // paper defaults
  EXPECT_EQ(r.level_res, (std::vector<int>{64, 32, 16}));
  ASSERT_EQ(r.per_level.size(), 3u);
  EXPECT_NEAR(r.mean, (r.per_level[0] + r.per_level[1] + r.per_level[2]) / 3, 1e-12 * r.mean);
  for (double v : r.per_level) EXPECT_GT(v, 0.0);
}

// Identical sets: same patch positions (same seed and image indices), hence identical patch rows
// and identical projections, so every grid histogram difference is 0 and the result is exactly 0.
TEST(Swd, IdenticalSetsGiveZero) {
  for (int c : {1, 3}) {
    const auto a = blobs(kN, 32, c, 1);
    const auto copy = a;
    const SwdResult r = swd(a, kN, copy, kN, c);
    ASSERT_EQ(r.per_level.size(), 2u);
    EXPECT_EQ(r.mean, 0.0) << "channels " << c;
    EXPECT_EQ(r.per_level[0], 0.0);
    EXPECT_EQ(r.per_level[1], 0.0);
  }
}

// A different patch sample of the same images differs only by sampling noise: per direction, W1
// between two samples of m unit-variance points is O(1/sqrt(m)); measured ~1.6e3 / sqrt(m) in
// reported units for these images (m = patches per level), so 3e3 / sqrt(m) bounds it.
// An independent set of the same distribution adds image-to-image variation (patches of one image
// are correlated), so its floor is a few times higher, but it is still far below real differences
// and shrinks as the sets grow.
TEST(Swd, SameDistributionIsNearZero) {
  const auto a = blobs(kN, 32, 1, 1);
  SwdOptions o1 = test_options(), o2 = test_options();
  o1.seed = 11;
  o2.seed = 12;
  const SwdResult other_patches = sliced_wasserstein(swd_descriptors(a.data(), kN, 32, 1, o1),
                                                     swd_descriptors(a.data(), kN, 32, 1, o2), test_options());
  for (double v : other_patches.per_level) {
    EXPECT_GT(v, 0.0);
    EXPECT_LT(v, 3e3 / std::sqrt(double{kN} * 128));
  }
  const SwdResult noise = swd(a, kN, uniform_noise(kN, 32, 1, 3), kN, 1);
  const SwdResult small = swd(blobs(64, 32, 1, 1), 64, blobs(64, 32, 1, 2), 64, 1);
  const SwdResult large = swd(blobs(1024, 32, 1, 1), 1024, blobs(1024, 32, 1, 2), 1024, 1);
  std::printf("  other patches %.2f, independent sets of 64: %.2f, of 1024: %.2f, noise %.2f\n", other_patches.mean,
              small.mean, large.mean, noise.mean);
  EXPECT_GT(noise.mean, 50 * other_patches.mean);
  EXPECT_GT(noise.mean, 10 * small.mean);
  EXPECT_LT(large.mean, 0.5 * small.mean);  // ~1/sqrt(n): 0.25 expected
}

// More damage, larger distance: slight blur < strong blur < uniform noise; a brightness shift is
// seen (union normalisation keeps it). Degraded copies of the same images (paired: the same
// patch positions, so sampling noise largely cancels), then against an independent set. Grey and
// RGB.
TEST(Swd, OrdersDegradations) {
  for (int c : {1, 3}) {
    SCOPED_TRACE(c == 1 ? "grey" : "rgb");
    const auto a = blobs(kN, 32, c, 1), b = blobs(kN, 32, c, 2);
    const SwdResult slight = swd(a, kN, blurred(a, kN, 32, c, 0.6f), kN, c);
    const SwdResult strong = swd(a, kN, blurred(a, kN, 32, c, 1.5f), kN, c);
    const SwdResult noise = swd(a, kN, uniform_noise(kN, 32, c, 3), kN, c);
    const SwdResult bright = swd(a, kN, brightened(a, 0.25f), kN, c);
    const SwdResult floor = swd(a, kN, b, kN, c);
    const SwdResult strong_b = swd(a, kN, blurred(b, kN, 32, c, 1.5f), kN, c);
    const SwdResult bright_b = swd(a, kN, brightened(b, 0.25f), kN, c);
    std::printf(
        "  channels %d: slight blur %.2f  strong blur %.2f  noise %.2f  brightness %.2f | independent set "
        "%.2f, blurred %.2f, brighter %.2f\n",
        c, slight.mean, strong.mean, noise.mean, bright.mean, floor.mean, strong_b.mean, bright_b.mean);
    EXPECT_GT(slight.mean, 0.0);
    EXPECT_GT(strong.mean, 2 * slight.mean);
    EXPECT_GT(noise.mean, 5 * strong.mean);
    EXPECT_GT(bright.mean, 2 * slight.mean);
    // Blur removes fine detail: the finest level reacts most.
    EXPECT_GT(strong.per_level[0], strong.per_level[1]);
    // Unpaired, the same damage still stands out of the sampling floor.
    EXPECT_GT(strong_b.mean, 1.5 * floor.mean);
    EXPECT_GT(bright_b.mean, 2 * floor.mean);
  }
}

TEST(Swd, DeterministicAndReusable) {
  const auto a = blobs(kN, 32, 3, 1), b = blurred(a, kN, 32, 3, 1.0f);
  const SwdOptions o = test_options();
  const SwdResult r1 = swd(a, kN, b, kN, 3), r2 = swd(a, kN, b, kN, 3);
  EXPECT_EQ(r1.mean, r2.mean);  // bit-identical
  EXPECT_EQ(r1.per_level, r2.per_level);
  // The real set's descriptors computed once give the direct call's value, bit for bit.
  const SwdDescriptors da = swd_descriptors(a.data(), kN, 32, 3, o);
  const SwdDescriptors db = swd_descriptors(b.data(), kN, 32, 3, o);
  const SwdResult r3 = sliced_wasserstein(da, db, o);
  EXPECT_EQ(r3.mean, r1.mean);
  EXPECT_EQ(r3.per_level, r1.per_level);
  EXPECT_EQ(r3.level_res, (std::vector<int>{32, 16}));
  // Another seed: other patches and directions, a different but close value.
  SwdOptions o2 = o;
  o2.seed = 8;
  const SwdResult r4 = swd(a, kN, b, kN, 3, o2);
  EXPECT_NE(r4.mean, r1.mean);
  EXPECT_NEAR(r4.mean, r1.mean, 0.2 * r1.mean);
}

// The 2^16-step grid against the sort of FP32 projections: per direction the difference is below
// one grid step, (max - min) / 2^16 ~ 1e-4 of the projections' range; in practice far smaller.
// Also checks unequal set sizes (integer-weighted CDFs vs the merged-order integral).
TEST(Swd, GridMatchesExactSort) {
  const auto a = blobs(kN, 32, 1, 1);
  const auto b = blurred(blobs(kN, 32, 1, 2), kN, 32, 1, 0.7f);
  const auto noise = uniform_noise(kN, 32, 1, 3);
  SwdOptions grid = test_options(), exact = test_options();
  grid.projections = exact.projections = 48;  // the exact sort is slow
  exact.exact_sort = true;
  struct Case {
    const std::vector<float>* b;
    int n_b;
  };
  for (const Case& k : {Case{&b, kN}, Case{&b, 80}, Case{&noise, kN}, Case{&noise, 50}}) {
    const SwdResult g = swd(a, kN, *k.b, k.n_b, 1, grid), e = swd(a, kN, *k.b, k.n_b, 1, exact);
    for (size_t l = 0; l < g.per_level.size(); ++l) EXPECT_NEAR(g.per_level[l], e.per_level[l], 1e-4 * e.per_level[l]);
  }
  // Unequal sizes: a different patch sample of the same images plus 48 more images of the same
  // distribution stays near the floor, far from noise.
  SwdOptions o2 = test_options();
  o2.seed = 12;
  const auto more = blobs(kN + 48, 32, 1, 1);  // the first kN images are a's
  const SwdResult unequal = sliced_wasserstein(swd_descriptors(a.data(), kN, 32, 1, test_options()),
                                               swd_descriptors(more.data(), kN + 48, 32, 1, o2), test_options());
  const SwdResult to_noise = swd(a, kN, noise, kN, 1);
  EXPECT_LT(unequal.mean, 0.05 * to_noise.mean);
}

// The pyramid of a constant image: every Laplacian band is 0 and the coarsest (Gaussian) band is
// the constant, which checks the blur's normalisation, the x4 of the up-sampling and the mirrored
// borders at once. A random image's bands carry its detail (nonzero).
TEST(Swd, PyramidBands) {
  SwdOptions o;
  o.min_resolution = 8;
  std::vector<float> flat(32 * 32 * 3, 0.3f);
  const SwdDescriptors d = swd_descriptors(flat.data(), 1, 32, 3, o);
  ASSERT_EQ(d.levels.size(), 3u);
  for (int l = 0; l < 2; ++l)
    for (float v : d.levels[l].bands) ASSERT_NEAR(v, 0.0f, 1e-6f) << "level " << l;
  ASSERT_EQ(d.levels[2].bands.size(), 8u * 8 * 3);
  for (float v : d.levels[2].bands) ASSERT_NEAR(v, 0.3f, 1e-6f);
  // Per-channel sums cover patches_per_image 7x7 patches.
  EXPECT_NEAR(d.levels[2].channel_sum[1], 0.3 * 128 * 49, 1e-3);
  EXPECT_NEAR(d.levels[2].channel_sumsq[1], 0.09 * 128 * 49, 1e-3);

  const auto noise = uniform_noise(1, 32, 1, 5);
  const SwdDescriptors e = swd_descriptors(noise.data(), 1, 32, 1, o);
  double energy = 0;
  for (float v : e.levels[0].bands) energy += double{v} * v;
  EXPECT_GT(energy / (32 * 32), 0.05);  // white noise is mostly fine detail
}

// Union normalisation makes the value invariant to one affine intensity map applied to both sets,
// and the formula is symmetric in (a, b).
TEST(Swd, ScaleInvariantAndSymmetric) {
  const auto a = blobs(kN, 32, 3, 1), b = blurred(blobs(kN, 32, 3, 2), kN, 32, 3, 0.8f);
  auto squeeze = [](std::vector<float> v) {
    for (float& x : v) x = 0.5f * x - 0.2f;
    return v;
  };
  const SwdResult r = swd(a, kN, b, kN, 3), s = swd(squeeze(a), kN, squeeze(b), kN, 3), t = swd(b, kN, a, kN, 3);
  for (size_t l = 0; l < r.per_level.size(); ++l) EXPECT_NEAR(s.per_level[l], r.per_level[l], 1e-4 * r.per_level[l]);
  EXPECT_EQ(t.per_level, r.per_level);
  const SwdResult u1 = swd(a, kN, b, 80, 3), u2 = swd(b, 80, a, kN, 3);
  EXPECT_EQ(u1.per_level, u2.per_level);
}

// Every projection kernel this CPU can run against a double-precision reference, including the
// fused min / max, on a ragged block (rows and columns beyond the first tile).
TEST(Swd, ProjectionKernelsMatchReference) {
  using namespace detail;
  const int rows = 16, dim = 49 * 3;
  const int64_t cols = 3 * kProjectCols, m0 = kProjectCols, m1 = cols;
  std::vector<float> w(size_t(rows) * dim), x(size_t(cols) * dim);
  for (size_t i = 0; i < w.size(); ++i) w[i] = philox_normal(41, 0, i);
  for (size_t i = 0; i < x.size(); ++i) x[i] = philox_normal(42, 0, i);
  std::printf("  default kernel: %s\n", project_kernel());
  int ran = 0;
  for (const char* kernel : {"avx512", "avx2", "generic"}) {
    std::vector<float> out(size_t(rows) * cols, -7.0f), lo(rows, 1e30f), hi(rows, -1e30f);
    if (!project_with(kernel, w.data(), rows, dim, x.data(), m0, m1, out.data(), cols, lo.data(), hi.data())) continue;
    ++ran;
    SCOPED_TRACE(kernel);
    for (int p = 0; p < rows; ++p) {
      double mn = 1e300, mx = -1e300;
      for (int64_t m = 0; m < cols; ++m) {
        if (m < m0) {
          EXPECT_EQ(out[p * cols + m], -7.0f);  // outside [m0, m1): untouched
          continue;
        }
        double ref = 0, mag = 0;
        for (int k = 0; k < dim; ++k) {
          ref += double{w[p * dim + k]} * x[panel_index(m, k, dim)];
          mag += std::abs(double{w[p * dim + k]} * x[panel_index(m, k, dim)]);
        }
        EXPECT_NEAR(out[p * cols + m], ref, 1e-6 * mag);
        mn = std::min(mn, double{out[p * cols + m]});
        mx = std::max(mx, double{out[p * cols + m]});
      }
      EXPECT_EQ(lo[p], mn);
      EXPECT_EQ(hi[p], mx);
    }
  }
  std::printf("  kernels checked on this CPU: %d\n", ran);
  EXPECT_GE(ran, 2);  // the generic one always runs, plus the default
}

TEST(Swd, RejectsBadInput) {
  auto a = blobs(4, 32, 1, 1);
  EXPECT_THROW(sliced_wasserstein(a.data(), 0, a.data(), 4, 32, 1), Error);
  EXPECT_THROW(sliced_wasserstein(a.data(), 4, a.data(), 4, 32, 0), Error);
  EXPECT_THROW(sliced_wasserstein(nullptr, 4, a.data(), 4, 32, 1), Error);
  SwdOptions o;
  o.projections = 0;
  EXPECT_THROW(sliced_wasserstein(a.data(), 4, a.data(), 4, 32, 1, o), Error);
  // Sets described differently cannot be compared.
  const auto grey = swd_descriptors(a.data(), 4, 32, 1, {});
  const auto small = swd_descriptors(a.data(), 4, 16, 1, {});
  EXPECT_THROW(sliced_wasserstein(grey, small, {}), Error);
  // A diverged generator's NaN is reported, not averaged in.
  a[100] = std::nanf("");
  EXPECT_THROW(sliced_wasserstein(a.data(), 4, a.data(), 4, 32, 1), Error);
}

// Not a test: the cost at the size the training loop uses. Run with
//   test_metrics_math --gtest_also_run_disabled_tests --gtest_filter='*Timing*'
TEST(Swd, DISABLED_Timing) {
  using clock = std::chrono::steady_clock;
  std::printf("threads: %d, projection kernel: %s\n", cpu_threads(), detail::project_kernel());
  struct Config {
    int channels, repeats, projections;
    bool exact;
  };
  for (const Config& k :
       {Config{1, 4, 512, false}, Config{1, 4, 128, false}, Config{1, 1, 128, false}, Config{1, 4, 128, true},
        Config{3, 4, 512, false}, Config{3, 4, 128, false}, Config{3, 1, 128, false}}) {
    const int c = k.channels;
    const auto real = blobs(2048, 32, c, 1), fake = blurred(blobs(2048, 32, c, 2), 2048, 32, c, 0.7f);
    SwdOptions o;
    o.repeats = k.repeats;
    o.projections = k.projections;
    o.exact_sort = k.exact;
    const auto t0 = clock::now();
    const SwdDescriptors dr = swd_descriptors(real.data(), 2048, 32, c, o);
    const auto t1 = clock::now();
    const SwdResult r = sliced_wasserstein(dr, swd_descriptors(fake.data(), 2048, 32, c, o), o);
    const auto t2 = clock::now();
    std::printf(
        "2048 vs 2048, 32x32x%d, %d x %d directions%s: real descriptors %.3f s, evaluation (fake "
        "descriptors + distance) %.3f s; SWD %.3f (levels %.3f %.3f)\n",
        c, k.repeats, k.projections, k.exact ? ", exact sort" : "", std::chrono::duration<double>(t1 - t0).count(),
        std::chrono::duration<double>(t2 - t1).count(), r.mean, r.per_level[0], r.per_level[1]);
  }
}

// ---- Fréchet distance --------------------------------------------------------------------------

FeatureStats gaussian_stats(std::vector<double> mean, std::vector<double> cov) {
  FeatureStats s;
  s.dim = static_cast<int>(mean.size());
  s.count = 1000;
  s.mean = std::move(mean);
  s.cov = std::move(cov);
  return s;
}

TEST(Frechet, FeatureStatsOnKnownData) {
  // x = (1, 3, 5), y = (2, 4, 9): means 3 and 5; var x = 8/2, var y = 26/2, cov = 14/2.
  const std::vector<float> f = {1, 2, 3, 4, 5, 9};
  const FeatureStats s = feature_stats(f.data(), 3, 2);
  EXPECT_EQ(s.dim, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.mean[0], 3.0);
  EXPECT_DOUBLE_EQ(s.mean[1], 5.0);
  EXPECT_NEAR(s.cov[0], 4.0, 1e-12);
  EXPECT_NEAR(s.cov[1], 7.0, 1e-12);
  EXPECT_NEAR(s.cov[2], 7.0, 1e-12);
  EXPECT_NEAR(s.cov[3], 13.0, 1e-12);

  // Many rows (several chunks) with a large common offset against a naive two-pass reference.
  const int64_t n = 2500;
  const int dim = 5;
  std::vector<float> g(size_t(n) * dim);
  for (int64_t r = 0; r < n; ++r)
    for (int k = 0; k < dim; ++k)
      g[r * dim + k] = 1000.0f + philox_normal(3, k, r) + (k > 0 ? 0.5f * g[r * dim + k - 1] - 500.0f : 0.0f);
  const FeatureStats t = feature_stats(g.data(), n, dim);
  for (int i = 0; i < dim; ++i) {
    double m = 0;
    for (int64_t r = 0; r < n; ++r) m += g[r * dim + i];
    m /= n;
    EXPECT_NEAR(t.mean[i], m, 1e-9 * std::abs(m));
  }
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j < dim; ++j) {
      double c = 0;
      for (int64_t r = 0; r < n; ++r) c += (g[r * dim + i] - t.mean[i]) * (g[r * dim + j] - t.mean[j]);
      c /= (n - 1);
      EXPECT_NEAR(t.cov[i * dim + j], c, 1e-10);
      EXPECT_EQ(t.cov[i * dim + j], t.cov[j * dim + i]);
    }
  EXPECT_THROW(feature_stats(f.data(), 1, 2), Error);
}

TEST(Frechet, IdenticalStatsGiveZero) {
  // Features of a random (correlated) 64-dim set against themselves.
  const int64_t n = 400;
  const int dim = 64;
  std::vector<float> f(size_t(n) * dim);
  for (int64_t r = 0; r < n; ++r)
    for (int k = 0; k < dim; ++k) f[r * dim + k] = philox_normal(5, k, r) + (k ? 0.7f * f[r * dim + k - 1] : 0.0f);
  const FeatureStats s = feature_stats(f.data(), n, dim);
  double trace = 0;
  for (int k = 0; k < dim; ++k) trace += s.cov[k * dim + k];
  EXPECT_LT(std::abs(frechet_distance(s, s)), 1e-9 * trace);
}

TEST(Frechet, OneDimensionalGaussians) {
  // (mu1 - mu2)^2 + (s1 - s2)^2.
  const FeatureStats a = gaussian_stats({1.5}, {4.0}), b = gaussian_stats({-0.5}, {0.25});
  EXPECT_NEAR(frechet_distance(a, b), 4.0 + 1.5 * 1.5, 1e-12);
  EXPECT_NEAR(frechet_distance(b, a), 4.0 + 1.5 * 1.5, 1e-12);
}

TEST(Frechet, DiagonalCovariances) {
  const std::vector<double> ma = {0.0, 1.0, -2.0}, mb = {0.5, 1.0, 1.0}, va = {1.0, 4.0, 0.09}, vb = {2.25, 0.01, 9.0};
  auto diag = [](const std::vector<double>& v) {
    std::vector<double> m(9, 0.0);
    for (int i = 0; i < 3; ++i) m[i * 4] = v[i];
    return m;
  };
  double expected = 0;
  for (int i = 0; i < 3; ++i)
    expected += (ma[i] - mb[i]) * (ma[i] - mb[i]) + std::pow(std::sqrt(va[i]) - std::sqrt(vb[i]), 2);
  EXPECT_NEAR(frechet_distance(gaussian_stats(ma, diag(va)), gaussian_stats(mb, diag(vb))), expected, 1e-12 * expected);
}

// Non-commuting 2x2 covariances against the closed form Tr sqrt(A) = sqrt(tr A + 2 sqrt(det A))
// for a 2x2 A = S1 S2 with positive eigenvalues ((sqrt l1 + sqrt l2)^2 = l1 + l2 + 2 sqrt(l1 l2)).
TEST(Frechet, NonCommuting2x2) {
  const std::vector<double> s1 = {2.0, 0.8, 0.8, 1.0}, s2 = {0.5, -0.3, -0.3, 3.0};
  const double p00 = s1[0] * s2[0] + s1[1] * s2[2], p11 = s1[2] * s2[1] + s1[3] * s2[3];
  const double p01 = s1[0] * s2[1] + s1[1] * s2[3], p10 = s1[2] * s2[0] + s1[3] * s2[2];
  ASSERT_GT(std::abs(p01 - (s2[0] * s1[1] + s2[1] * s1[3])), 0.1);  // S1 S2 != S2 S1
  const double tr_sqrt = std::sqrt(p00 + p11 + 2 * std::sqrt(p00 * p11 - p01 * p10));
  const double expected = 1.0 * 1.0 + 2.0 * 2.0 + (s1[0] + s1[3] + s2[0] + s2[3]) - 2 * tr_sqrt;
  const double fd = frechet_distance(gaussian_stats({1.0, 0.0}, s1), gaussian_stats({0.0, 2.0}, s2));
  EXPECT_NEAR(fd, expected, 1e-12 * expected);
}

// Random 6x6 covariances against an independent route: Denman-Beavers iteration for the square root
// of the (non-symmetric) product S1 S2, Y <- (Y + Z^-1)/2, Z <- (Z + Y^-1)/2, Y -> (S1 S2)^{1/2}.
using Mat = std::vector<double>;
Mat matmul(const Mat& a, const Mat& b, int n) {
  Mat c(size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c;
}
Mat inverse(Mat a, int n) {  // Gauss-Jordan with partial pivoting
  Mat inv(size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i) inv[i * n + i] = 1;
  for (int col = 0; col < n; ++col) {
    int piv = col;
    for (int r = col + 1; r < n; ++r)
      if (std::abs(a[r * n + col]) > std::abs(a[piv * n + col])) piv = r;
    for (int j = 0; j < n; ++j) {
      std::swap(a[col * n + j], a[piv * n + j]);
      std::swap(inv[col * n + j], inv[piv * n + j]);
    }
    const double d = a[col * n + col];
    for (int j = 0; j < n; ++j) {
      a[col * n + j] /= d;
      inv[col * n + j] /= d;
    }
    for (int r = 0; r < n; ++r)
      if (r != col) {
        const double f = a[r * n + col];
        for (int j = 0; j < n; ++j) {
          a[r * n + j] -= f * a[col * n + j];
          inv[r * n + j] -= f * inv[col * n + j];
        }
      }
  }
  return inv;
}

TEST(Frechet, MatchesDenmanBeavers) {
  const int n = 6;
  auto random_cov = [&](uint64_t seed) {  // G G^T / n + 0.1 I: well-conditioned SPD
    Mat g(n * n), c(n * n, 0.0);
    for (int i = 0; i < n * n; ++i) g[i] = philox_normal(seed, 0, i);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        for (int k = 0; k < n; ++k) c[i * n + j] += g[i * n + k] * g[j * n + k] / n;
        if (i == j) c[i * n + j] += 0.1;
      }
    return c;
  };
  const Mat s1 = random_cov(21), s2 = random_cov(22);
  Mat y = matmul(s1, s2, n), z(n * n, 0.0);
  for (int i = 0; i < n; ++i) z[i * n + i] = 1;
  for (int it = 0; it < 60; ++it) {
    const Mat yi = inverse(y, n), zi = inverse(z, n);
    for (int i = 0; i < n * n; ++i) {
      y[i] = 0.5 * (y[i] + zi[i]);
      z[i] = 0.5 * (z[i] + yi[i]);
    }
  }
  // Y is the root: Y Y reproduces S1 S2.
  const Mat yy = matmul(y, y, n), p = matmul(s1, s2, n);
  for (int i = 0; i < n * n; ++i) ASSERT_NEAR(yy[i], p[i], 1e-10);
  std::vector<double> m1(n), m2(n);
  double expected = 0;
  for (int i = 0; i < n; ++i) {
    m1[i] = philox_normal(23, 0, i);
    m2[i] = philox_normal(24, 0, i);
    expected += (m1[i] - m2[i]) * (m1[i] - m2[i]) + s1[i * n + i] + s2[i * n + i] - 2 * y[i * n + i];
  }
  const double fd = frechet_distance(gaussian_stats(m1, s1), gaussian_stats(m2, s2));
  EXPECT_NEAR(fd, expected, 1e-10 * expected);
  EXPECT_NEAR(frechet_distance(gaussian_stats(m2, s2), gaussian_stats(m1, s1)), expected, 1e-10 * expected);
}

// Sample statistics of two known Gaussians approach the closed form, and a rank-deficient
// covariance (a feature that is always 0) is handled (eigenvalues clamped, no NaN).
TEST(Frechet, SampledGaussiansAndSingularCovariance) {
  const int64_t n = 20000;
  const int dim = 3;
  std::vector<float> a(size_t(n) * dim), b(size_t(n) * dim);
  for (int64_t r = 0; r < n; ++r) {
    a[r * dim + 0] = philox_normal(31, 0, r);
    a[r * dim + 1] = 2 * philox_normal(31, 1, r);
    a[r * dim + 2] = 0;  // dead feature
    b[r * dim + 0] = 1 + philox_normal(32, 0, r);
    b[r * dim + 1] = philox_normal(32, 1, r);
    b[r * dim + 2] = 0;
  }
  const double fd = frechet_distance(feature_stats(a.data(), n, dim), feature_stats(b.data(), n, dim));
  EXPECT_TRUE(std::isfinite(fd));
  EXPECT_NEAR(fd, 1.0 + 1.0, 0.1);  // (1 - 0)^2 + (2 - 1)^2
  const FeatureStats x = gaussian_stats({0.0}, {1.0});
  EXPECT_THROW(frechet_distance(x, gaussian_stats({0.0, 0.0}, {1, 0, 0, 1})), Error);
}

}  // namespace
}  // namespace ampgan::metrics
