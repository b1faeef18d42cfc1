// Multi-scale SWD (Karras et al., ICLR 2018, appendix D). See swd.h for the method and for where
// it departs from the paper.
#include "core/metrics/swd.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/metrics/swd_project.h"

namespace ampgan::metrics {

namespace {

// Philox streams of this metric; local so that adding them shifts no other consumer's draws.
constexpr uint64_t kPatchStream = 0x5357440000000100ull;      // + level: patch positions
constexpr uint64_t kDirectionStream = 0x5357440000000200ull;  // + level: projection directions

constexpr int64_t kImagesPerChunk = 16;      // pyramid / patch work unit (fixed: thread-count independent)
constexpr int64_t kDirectionsPerBlock = 32;  // directions whose projections are kept in memory at once
static_assert(kDirectionsPerBlock % detail::kProjectRows == 0 && kDirectionsPerBlock <= detail::kProjectMaxRows);
constexpr int64_t kColumnsPerTask = 2048;  // patches per projection task (a multiple of the tile)
constexpr int kMaxGridBins = 1 << 16;

void fail(const std::string& what, const std::string& subject) {
  throw Error("sliced Wasserstein distance: " + what, subject,
              "check the image tensor layout (n, res, res, channels) and the SWD options");
}

// Mirrored border without repeating the edge pixel (reflect-101: d c b | a b c d | c b a), so a
// constant image stays constant through blur and up-sampling; r >= 3 here.
inline int mirror(int i, int r) { return i < 0 ? -i : (i >= r ? 2 * (r - 1) - i : i); }

// 5x5 binomial blur [1 4 6 4 1]/16 (separable) of an (r, r, c) image; tmp has r*r*c floats.
void blur(const float* src, int r, int c, float* tmp, float* dst) {
  static constexpr float k[5] = {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16};
  for (int y = 0; y < r; ++y)
    for (int x = 0; x < r; ++x)
      for (int ch = 0; ch < c; ++ch) {
        float s = 0;
        for (int t = -2; t <= 2; ++t) s += k[t + 2] * src[(int64_t{y} * r + mirror(x + t, r)) * c + ch];
        tmp[(int64_t{y} * r + x) * c + ch] = s;
      }
  for (int y = 0; y < r; ++y)
    for (int x = 0; x < r; ++x)
      for (int ch = 0; ch < c; ++ch) {
        float s = 0;
        for (int t = -2; t <= 2; ++t) s += k[t + 2] * tmp[(int64_t{mirror(y + t, r)} * r + x) * c + ch];
        dst[(int64_t{y} * r + x) * c + ch] = s;
      }
}

struct PyramidScratch {
  std::vector<std::vector<float>> gauss;  // Gaussian levels
  std::vector<float> tmp, tmp2, up;
};

// Builds one image's pyramid bands into out[l] (each (r_l, r_l, c)).
void build_pyramid(const float* image, const std::vector<int>& level_res, int c, PyramidScratch& s,
                   const std::vector<float*>& out) {
  const int levels = static_cast<int>(level_res.size());
  const int r0 = level_res[0];
  const size_t full = size_t(r0) * r0 * c;
  s.gauss.resize(levels);
  s.tmp.resize(full);
  s.tmp2.resize(full);
  s.up.resize(full);
  s.gauss[0].assign(image, image + full);
  for (int l = 1; l < levels; ++l) {  // G_l = (blur G_{l-1}) sampled at even pixels
    const int r = level_res[l - 1], rn = level_res[l];
    blur(s.gauss[l - 1].data(), r, c, s.tmp.data(), s.tmp2.data());
    s.gauss[l].resize(size_t(rn) * rn * c);
    for (int y = 0; y < rn; ++y)
      for (int x = 0; x < rn; ++x)
        for (int ch = 0; ch < c; ++ch)
          s.gauss[l][(size_t(y) * rn + x) * c + ch] = s.tmp2[(size_t(2 * y) * r + 2 * x) * c + ch];
  }
  for (int l = 0; l < levels; ++l) {
    const int r = level_res[l];
    const size_t sz = size_t(r) * r * c;
    if (l == levels - 1) {  // coarsest: the Gaussian level itself
      std::copy(s.gauss[l].begin(), s.gauss[l].end(), out[l]);
      continue;
    }
    // Up-sample G_{l+1}: zeros between samples, the same blur, x4 to restore the mean.
    const int rn = level_res[l + 1];
    std::fill(s.up.begin(), s.up.begin() + sz, 0.0f);
    for (int y = 0; y < rn; ++y)
      for (int x = 0; x < rn; ++x)
        for (int ch = 0; ch < c; ++ch)
          s.up[(size_t(2 * y) * r + 2 * x) * c + ch] = 4.0f * s.gauss[l + 1][(size_t(y) * rn + x) * c + ch];
    blur(s.up.data(), r, c, s.tmp.data(), s.tmp2.data());
    for (size_t i = 0; i < sz; ++i) out[l][i] = s.gauss[l][i] - s.tmp2[i];
  }
}

// Top-left corner of patch j of image i at level l: a pure function of its indices and the seed.
inline void patch_corner(uint64_t seed, int level, int64_t image, int ppi, int j, int span, int& y, int& x) {
  const Philox4 r = philox4x32(static_cast<uint64_t>(image) * ppi + j, kPatchStream + level, seed);
  y = static_cast<int>(r.v[0] % static_cast<uint32_t>(span));
  x = static_cast<int>(r.v[1] % static_cast<uint32_t>(span));
}

// All patches of one level, element order (dy, dx, ch), in the projection kernel's panel layout
// (cols / 32, dim, 32). Padding columns repeat the last patch, so the kernel's min / max over all
// columns are those of the real patches.
struct PatchMatrix {
  std::vector<float> xt;  // (cols / 32, dim, 32)
  int64_t count = 0, cols = 0;
};

PatchMatrix patch_matrix(const SwdDescriptors& d, int level) {
  const auto& L = d.levels[level];
  const int r = L.res, c = d.channels, ps = d.patch_size, ppi = d.patches_per_image;
  const int64_t dim = int64_t{ps} * ps * c, row_len = int64_t{ps} * c;
  PatchMatrix m;
  m.count = d.patches_per_level();
  m.cols = (m.count + detail::kProjectCols - 1) / detail::kProjectCols * detail::kProjectCols;
  m.xt.assign(size_t(dim * m.cols), 0.0f);
  parallel_for(d.n_images, kImagesPerChunk, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* img = L.bands.data() + i * r * r * c;
      for (int j = 0; j < ppi; ++j) {
        int y, x;
        patch_corner(d.seed, level, i, ppi, j, r - ps + 1, y, x);
        const int64_t col = i * ppi + j;
        for (int dy = 0; dy < ps; ++dy) {
          const float* src = img + ((int64_t{y} + dy) * r + x) * c;
          for (int t = 0; t < row_len; ++t)
            m.xt[detail::panel_index(col, static_cast<int>(dy * row_len + t), static_cast<int>(dim))] = src[t];
        }
      }
    }
  });
  for (int64_t col = m.count; col < m.cols; ++col)
    for (int k = 0; k < dim; ++k)
      m.xt[detail::panel_index(col, k, static_cast<int>(dim))] =
          m.xt[detail::panel_index(m.count - 1, k, static_cast<int>(dim))];
  return m;
}

// 1-D Wasserstein-1 distance between the na values at va and the nb values at vb, on a grid of
// bins spanning [lo, hi] (their min and max): the values are rounded down to the grid (monotone, so the sorted
// pairing is kept), counted, and W1 = step * sum_k |F_a(k) - F_b(k)|, exact for the rounded
// values. With integer weights nb/g and na/g the counts need no division: exact and
// order-independent.
double w1_grid(const float* va, int64_t na, const float* vb, int64_t nb, float lo, float hi,
               std::vector<int64_t>& hist) {
  const int64_t n = na + nb;
  const float range = hi - lo;
  const int bins =
      static_cast<int>(std::clamp<int64_t>(std::bit_ceil(static_cast<uint64_t>(2 * n)), 1024, kMaxGridBins));
  const float scale = static_cast<float>(bins) / range;
  if (!(range > 0.0f) || !std::isfinite(scale)) return 0.0;  // all projections (nearly) equal
  const int64_t g = std::gcd(na, nb), wa = nb / g, wb = na / g;
  hist.assign(bins, 0);
  int32_t idx[256];
  for (int set = 0; set < 2; ++set) {
    const float* p = set ? vb : va;
    const int64_t cnt = set ? nb : na, w = set ? -wb : wa;
    for (int64_t s = 0; s < cnt; s += 256) {
      const int m = static_cast<int>(std::min<int64_t>(256, cnt - s));
      for (int t = 0; t < m; ++t)  // vectorised: rounding to the grid, kept apart from the scatter
        idx[t] = std::min(static_cast<int32_t>((p[s + t] - lo) * scale), bins - 1);
      for (int t = 0; t < m; ++t) hist[idx[t]] += w;
    }
  }
  int64_t run = 0;
  uint64_t total = 0;  // < bins * na * wa <= 2^16 * 2^40: no overflow for any realistic set
  for (int k = 0; k + 1 < bins; ++k) {
    run += hist[k];
    total += static_cast<uint64_t>(run < 0 ? -run : run);
  }
  return static_cast<double>(total) * (static_cast<double>(range) / bins) /
         (static_cast<double>(na) * static_cast<double>(wa));
}

// Reference: sort the FP32 projections. Equal counts: mean |a_(i) - b_(i)| (the paper's formula);
// otherwise the integral of |F_a - F_b| along the merged order.
double w1_sorted(const float* va, int64_t na, const float* vb, int64_t nb, std::vector<float>& sa,
                 std::vector<float>& sb) {
  sa.assign(va, va + na);
  sb.assign(vb, vb + nb);
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  double acc = 0;
  if (na == nb) {
    for (int64_t i = 0; i < na; ++i) acc += std::abs(static_cast<double>(sa[i]) - sb[i]);
    return acc / static_cast<double>(na);
  }
  int64_t i = 0, j = 0;
  double prev = std::min(sa[0], sb[0]);
  while (i < na || j < nb) {
    const bool take_a = j == nb || (i < na && sa[i] <= sb[j]);
    const double x = take_a ? sa[i] : sb[j];
    acc += std::abs(static_cast<double>(i) / na - static_cast<double>(j) / nb) * (x - prev);
    prev = x;
    (take_a ? i : j)++;
  }
  return acc;
}

}  // namespace

std::vector<int> swd_levels(int res, const SwdOptions& opt) {
  if (opt.patch_size < 1) fail("patch_size must be at least 1", "patch_size=" + std::to_string(opt.patch_size));
  if (res < opt.patch_size)
    fail("images are smaller than one patch",
         "res=" + std::to_string(res) + ", patch_size=" + std::to_string(opt.patch_size));
  std::vector<int> levels{res};
  // Levels below 8 pixels are not made: the 5-tap mirrored blur needs a few pixels per side.
  const int floor_res = std::max({opt.min_resolution, opt.patch_size, 8});
  for (int r = res; r % 2 == 0 && r / 2 >= floor_res; r /= 2) levels.push_back(r / 2);
  return levels;
}

SwdDescriptors swd_descriptors(const float* images, int n, int res, int channels, const SwdOptions& opt) {
  if (n < 1) fail("no images", "n=" + std::to_string(n));
  if (!images) fail("null image pointer", "images");
  if (channels < 1) fail("channels must be at least 1", "channels=" + std::to_string(channels));
  if (opt.patches_per_image < 1)
    fail("patches_per_image must be at least 1", "patches_per_image=" + std::to_string(opt.patches_per_image));
  const std::vector<int> level_res = swd_levels(res, opt);
  const int levels = static_cast<int>(level_res.size()), c = channels, ps = opt.patch_size;
  const int64_t image_size = int64_t{res} * res * c;

  SwdDescriptors d;
  d.res = res;
  d.channels = c;
  d.n_images = n;
  d.patch_size = ps;
  d.patches_per_image = opt.patches_per_image;
  d.seed = opt.seed;
  d.levels.resize(levels);
  for (int l = 0; l < levels; ++l) {
    d.levels[l].res = level_res[l];
    d.levels[l].bands.resize(size_t(n) * level_res[l] * level_res[l] * c);
  }

  // Per chunk of images: pyramid bands, then per-channel sums over the sampled patches; the
  // partial sums are added in chunk order, so the result does not depend on the thread count.
  const int64_t chunks = chunk_count(n, kImagesPerChunk);
  std::vector<double> partial(size_t(chunks) * levels * 2 * c, 0.0);
  std::vector<int> bad(size_t(chunks), -1);
  parallel_chunks(chunks, [&](int64_t chunk) {
    PyramidScratch scratch;
    std::vector<float*> out(levels);
    const int64_t i0 = chunk * kImagesPerChunk, i1 = std::min<int64_t>(n, i0 + kImagesPerChunk);
    double* part = partial.data() + chunk * levels * 2 * c;
    for (int64_t i = i0; i < i1; ++i) {
      const float* img = images + i * image_size;
      for (int64_t k = 0; k < image_size; ++k)
        if (!std::isfinite(img[k])) {
          bad[chunk] = static_cast<int>(i);
          return;
        }
      for (int l = 0; l < levels; ++l) out[l] = d.levels[l].bands.data() + i * level_res[l] * level_res[l] * c;
      build_pyramid(img, level_res, c, scratch, out);
      for (int l = 0; l < levels; ++l) {
        const int r = level_res[l];
        double* sum = part + l * 2 * c;
        double* sumsq = sum + c;
        for (int j = 0; j < opt.patches_per_image; ++j) {
          int y, x;
          patch_corner(opt.seed, l, i, opt.patches_per_image, j, r - ps + 1, y, x);
          for (int dy = 0; dy < ps; ++dy) {
            const float* p = out[l] + ((int64_t{y} + dy) * r + x) * c;
            for (int dx = 0; dx < ps; ++dx)
              for (int ch = 0; ch < c; ++ch) {
                const double v = p[dx * c + ch];
                sum[ch] += v;
                sumsq[ch] += v * v;
              }
          }
        }
      }
    }
  });
  for (int64_t chunk = 0; chunk < chunks; ++chunk)
    if (bad[chunk] >= 0)
      throw Error("sliced Wasserstein distance: an image contains NaN or infinity",
                  "image " + std::to_string(bad[chunk]),
                  "the generator may have diverged; check the loss scale and the loss curves");
  for (int l = 0; l < levels; ++l) {
    d.levels[l].channel_sum.assign(c, 0.0);
    d.levels[l].channel_sumsq.assign(c, 0.0);
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int ch = 0; ch < c; ++ch) {
        d.levels[l].channel_sum[ch] += partial[(chunk * levels + l) * 2 * c + ch];
        d.levels[l].channel_sumsq[ch] += partial[(chunk * levels + l) * 2 * c + c + ch];
      }
  }
  return d;
}

SwdResult sliced_wasserstein(const SwdDescriptors& a, const SwdDescriptors& b, const SwdOptions& opt) {
  if (a.levels.empty() || b.levels.empty()) fail("empty descriptor set", "SwdDescriptors");
  if (a.res != b.res || a.channels != b.channels || a.patch_size != b.patch_size || a.levels.size() != b.levels.size())
    fail("the two sets were described differently",
         "res " + std::to_string(a.res) + " vs " + std::to_string(b.res) + ", channels " + std::to_string(a.channels) +
             " vs " + std::to_string(b.channels) + ", levels " + std::to_string(a.levels.size()) + " vs " +
             std::to_string(b.levels.size()));
  if (opt.projections < 1 || opt.repeats < 1)
    fail("projections and repeats must be at least 1",
         "projections=" + std::to_string(opt.projections) + ", repeats=" + std::to_string(opt.repeats));
  const int c = a.channels, ps = a.patch_size, dim = ps * ps * c;
  const int64_t na = a.patches_per_level(), nb = b.patches_per_level();
  const int64_t directions = int64_t{opt.projections} * opt.repeats;

  SwdResult result;
  for (size_t l = 0; l < a.levels.size(); ++l) {
    const int level = static_cast<int>(l);
    const PatchMatrix xa = patch_matrix(a, level), xb = patch_matrix(b, level);

    // Union normalisation per channel, each set weighted 1/2: x -> (x - mean_c) / std_c. The
    // shift moves both sets' projections by the same amount, which W1 ignores, so only the
    // scale is applied, folded into the directions.
    const double count_a = static_cast<double>(na) * ps * ps, count_b = static_cast<double>(nb) * ps * ps;
    std::vector<double> inv_std(c);
    for (int ch = 0; ch < c; ++ch) {
      const double mean = 0.5 * (a.levels[l].channel_sum[ch] / count_a + b.levels[l].channel_sum[ch] / count_b);
      const double sq = 0.5 * (a.levels[l].channel_sumsq[ch] / count_a + b.levels[l].channel_sumsq[ch] / count_b);
      const double sd = std::sqrt(std::max(0.0, sq - mean * mean));
      inv_std[ch] = sd > 1e-12 ? 1.0 / sd : 1.0;  // a constant channel: nothing to scale
    }
    // Directions: Gaussian vectors normalised to unit length (uniform on the sphere),
    // (directions padded to the tile height, dim); the padding rows stay 0 and are ignored.
    const int64_t padded = (directions + detail::kProjectRows - 1) / detail::kProjectRows * detail::kProjectRows;
    std::vector<float> dirs(size_t(padded) * dim, 0.0f);
    parallel_for(directions, 64, [&](int64_t p0, int64_t p1) {
      std::vector<double> v(dim);
      for (int64_t p = p0; p < p1; ++p) {
        double norm = 0;
        for (int k = 0; k < dim; ++k) {
          v[k] = philox_normal(opt.seed, kDirectionStream + l, static_cast<uint64_t>(p) * dim + k);
          norm += v[k] * v[k];
        }
        norm = std::sqrt(norm);
        for (int k = 0; k < dim; ++k) dirs[p * dim + k] = static_cast<float>(v[k] / norm * inv_std[k % c]);
      }
    });

    // Row p of proj: direction p0+p projected on a's patches (xa.cols), then on b's (xb.cols).
    const int64_t row = xa.cols + xb.cols;
    const int64_t blocks_a = chunk_count(xa.cols, kColumnsPerTask), blocks_b = chunk_count(xb.cols, kColumnsPerTask);
    std::vector<double> w1(static_cast<size_t>(directions));
    const int64_t tasks = blocks_a + blocks_b;
    const int64_t block_rows = std::min(padded, kDirectionsPerBlock);
    std::vector<float> proj(size_t(block_rows * row));
    std::vector<float> lo(size_t(tasks * block_rows)), hi(size_t(tasks * block_rows));  // (task, direction)
    for (int64_t p0 = 0; p0 < directions; p0 += kDirectionsPerBlock) {
      const int rows = static_cast<int>(std::min(kDirectionsPerBlock, padded - p0));
      const float* w = dirs.data() + p0 * dim;
      parallel_chunks(tasks, [&](int64_t blk) {
        const bool is_a = blk < blocks_a;
        const PatchMatrix& x = is_a ? xa : xb;
        const int64_t m0 = (is_a ? blk : blk - blocks_a) * kColumnsPerTask, m1 = std::min(x.cols, m0 + kColumnsPerTask);
        float* tlo = lo.data() + blk * block_rows;
        float* thi = hi.data() + blk * block_rows;
        std::fill(tlo, tlo + rows, std::numeric_limits<float>::infinity());
        std::fill(thi, thi + rows, -std::numeric_limits<float>::infinity());
        detail::project(w, rows, dim, x.xt.data(), m0, m1, proj.data() + (is_a ? 0 : xa.cols), row, tlo, thi);
      });
      const int64_t real_rows = std::min<int64_t>(rows, directions - p0);
      parallel_chunks(real_rows, [&](int64_t p) {
        thread_local std::vector<int64_t> hist;
        thread_local std::vector<float> sa, sb;
        const float* va = proj.data() + p * row;
        const float* vb = va + xa.cols;
        if (opt.exact_sort) {
          w1[p0 + p] = w1_sorted(va, na, vb, nb, sa, sb);
          return;
        }
        float vlo = lo[p], vhi = hi[p];
        for (int64_t t = 1; t < tasks; ++t) {
          vlo = std::min(vlo, lo[t * block_rows + p]);
          vhi = std::max(vhi, hi[t * block_rows + p]);
        }
        w1[p0 + p] = w1_grid(va, na, vb, nb, vlo, vhi, hist);
      });
    }
    double sum = 0;  // in direction order: the mean over repeats of the mean over each repeat's directions
    for (double x : w1) sum += x;
    result.level_res.push_back(a.levels[l].res);
    result.per_level.push_back(1e3 * sum / static_cast<double>(directions));
  }
  double total = 0;
  for (double x : result.per_level) total += x;
  result.mean = total / static_cast<double>(result.per_level.size());
  return result;
}

SwdResult sliced_wasserstein(const float* a, int n_a, const float* b, int n_b, int res, int channels,
                             const SwdOptions& opt) {
  return sliced_wasserstein(swd_descriptors(a, n_a, res, channels, opt), swd_descriptors(b, n_b, res, channels, opt),
                            opt);
}

}  // namespace ampgan::metrics
