// CPU backend: matrix products and convolutions. Convolutions are im2col + OpenBLAS SGEMM: half
// operands are widened to FP32 exactly, the product accumulates in FP32, and the result is
// rounded once into the output's dtype -- where a tensor core rounds.
//
// Two ways to cut the work. Tiled (the ResNet's 3x3 and 1x1 layers; every forward pass): the
// im2col rows are gathered a tile at a time (kTileFloats, which fits the L2 cache) and
// multiplied while hot, one thread per tile. The whole-batch im2col matrix of a 32x32, 64-channel
// 3x3 layer at batch 32 is 75 MiB, which went through memory twice. Chunked (the data gradient
// of strided or not "same"-padded layers, which is a scatter, and the filter gradient of wide
// filters, DCGAN's 4x4 layers): im2col of whole samples and one SGEMM split across the pool.
// With warm_openblas() below, the ResNet-32 step at width 16 went from 862 to 660 ms (fp32,
// median of 5 alternated rounds); the DCGAN's stayed at 457-460 ms. Tile and group boundaries depend only on the
// geometry, never on the thread count, so results are the same run to run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan {

namespace {

// im2col buffers are cut into chunks of whole samples of at most this many floats (32 MiB).
constexpr int64_t kColBudget = int64_t{8} << 20;

enum Scratch { kCol = 0, kWeights = 1, kRowsF = 2, kAccum = 3, kGemmA = 4, kGemmB = 5, kGemmC = 6, kTiles = 7 };

// One tile of im2col rows: 256 KiB, half of a Zen core's L2 (measured here: 4x larger tiles
// made the filter gradient slower, 4x smaller changed little).
constexpr int64_t kTileFloats = int64_t{64} << 10;
// Filter-gradient partial sums (groups x k x rsc floats) the tiled path may hold: 16 MiB.
constexpr int64_t kPartialFloats = int64_t{4} << 20;
constexpr int64_t kGroups = 8;

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

int64_t samples_per_chunk(const ConvGeometry& g) {
  const int64_t per_sample = int64_t{g.out_h()} * g.out_w() * g.r * g.s * g.c;
  return std::clamp<int64_t>(kColBudget / std::max<int64_t>(1, per_sample), 1, g.n);
}

// dx_f (samples [n0, n1), NHWC, FP32) = scatter-add of dcol; each sample's region is written by
// one task, in a fixed order, so the sums are deterministic.
void col2im(const ConvGeometry& g, const float* dcol, int n0, int n1, float* dxf) {
  const int oh = g.out_h(), ow = g.out_w();
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  const int64_t sample = int64_t{g.h} * g.w * g.c;
  parallel_chunks(n1 - n0, [&](int64_t job) {
    float* dx = dxf + job * sample;
    std::memset(dx, 0, sizeof(float) * sample);
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const float* src = dcol + ((job * oh + oy) * ow + ox) * rsc;
        for (int i = 0; i < g.r; ++i) {
          const int iy = oy * g.stride - g.pad + i;
          if (iy < 0 || iy >= g.h) continue;
          for (int j = 0; j < g.s; ++j) {
            const int ix = ox * g.stride - g.pad + j;
            if (ix < 0 || ix >= g.w) continue;
            const float* s = src + (int64_t{i} * g.s + j) * g.c;
            float* d = dx + (int64_t{iy} * g.w + ix) * g.c;
            for (int c = 0; c < g.c; ++c) d[c] += s[c];
          }
        }
      }
  });
}

// Row-major C(m, n) = alpha op(A) op(B) + beta C, split across the thread pool with OpenBLAS
// single-threaded inside each task: one pool does all CPU work, because OpenBLAS's own threads
// spin (sched_yield) between calls and steal the cores our element-wise loops need. Each C
// element is still summed over k by one call, so the split does not change the result.
void sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  const int threads = cpu_threads();
  if (threads == 1 || double(m) * n * k < 4e6 || (m < 32 && n < 32)) {
    cblas_sgemm(CblasRowMajor, opa, opb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool split_rows = m >= n;
  const int len = split_rows ? m : n;
  const int part = (len / threads + 15) / 16 * 16;
  parallel_chunks(chunk_count(len, part), [&](int64_t i) {
    const int o = static_cast<int>(i) * part, l = std::min(part, len - o);
    if (split_rows)
      cblas_sgemm(CblasRowMajor, opa, opb, l, n, k, alpha, ta ? a + o : a + int64_t{o} * lda, lda, b, ldb,
                  beta, c + int64_t{o} * ldc, ldc);
    else
      cblas_sgemm(CblasRowMajor, opa, opb, m, l, k, alpha, a, lda, tb ? b + int64_t{o} * ldb : b + o, ldb,
                  beta, c + o, ldc);
  });
}

// At least 64 rows: shorter products (DCGAN's 2048-wide 4x4 layers would get 32) ran slower
// than the whole-batch product.
int64_t tile_rows(int64_t rsc) { return std::clamp<int64_t>(kTileFloats / rsc / 8 * 8, 64, 4096); }

// col(rows [r0, r1) of the flattened (n, out_h, out_w) output positions, r*s*c) from x (NHWC),
// widened to FP32; out-of-image taps are zero. Serial: called inside one tile's task.
void im2col_rows(const ConvGeometry& g, const Tensor& x, int64_t r0, int64_t r1, float* col) {
  const int oh = g.out_h(), ow = g.out_w();
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  for (int64_t row = r0; row < r1; ++row) {
    const int n = static_cast<int>(row / (int64_t{oh} * ow));
    const int pos = static_cast<int>(row % (int64_t{oh} * ow)), oy = pos / ow, ox = pos % ow;
    float* dst = col + (row - r0) * rsc;
    for (int i = 0; i < g.r; ++i) {
      const int iy = oy * g.stride - g.pad + i;
      for (int j = 0; j < g.s; ++j) {
        const int ix = ox * g.stride - g.pad + j;
        float* d = dst + (int64_t{i} * g.s + j) * g.c;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
          std::memset(d, 0, sizeof(float) * g.c);
        else
          cpu::widen(x.dtype(), cpu::at(x.data(), x.dtype(), ((int64_t{n} * g.h + iy) * g.w + ix) * g.c), d, g.c);
      }
    }
  }
}

// col(rows of samples [n0, n1), r*s*c) from x, for the chunked paths: one job per output row.
void im2col(const ConvGeometry& g, const Tensor& x, int n0, int n1, float* col) {
  const int64_t ow = g.out_w(), rsc = int64_t{g.r} * g.s * g.c, first = int64_t{n0} * g.out_h() * ow;
  parallel_chunks(int64_t{n1 - n0} * g.out_h(), [&](int64_t job) {
    im2col_rows(g, x, first + job * ow, first + (job + 1) * ow, col + job * ow * rsc);
  });
}

// Runs fn(tile, task) for every tile, each task (one per thread) taking the next tile until none
// is left; task indexes its own scratch. The scratch is the same at every batch size, so the
// memory a step needs stays linear in the batch (the largest-batch prediction relies on it).
int64_t task_count() { return cpu_threads(); }
void for_each_tile(int64_t tiles, const std::function<void(int64_t tile, int64_t task)>& fn) {
  std::atomic<int64_t> next{0};
  parallel_chunks(std::min<int64_t>(task_count(), tiles), [&](int64_t task) {
    for (int64_t t = next.fetch_add(1); t < tiles; t = next.fetch_add(1)) fn(t, task);
  });
}

// y (rows, k) = im2col(x) * wf^T, tile by tile; wf (k, rsc) FP32.
void forward_tiled(const ConvGeometry& g, const Tensor& x, const float* wf, Tensor& y, float* scratch) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c, rows = int64_t{g.n} * g.out_h() * g.out_w();
  const int64_t tr = tile_rows(rsc), per_task = tr * (rsc + g.k);
  const bool f32 = y.dtype() == DType::F32;
  for_each_tile(chunk_count(rows, tr), [&](int64_t t, int64_t task) {
    const int64_t r0 = t * tr, r1 = std::min(rows, r0 + tr);
    float* col = scratch + task * per_task;
    float* out = f32 ? y.as<float>() + r0 * g.k : col + tr * rsc;
    im2col_rows(g, x, r0, r1, col);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(r1 - r0), g.k, static_cast<int>(rsc), 1.0f,
                col, static_cast<int>(rsc), wf, static_cast<int>(rsc), 0.0f, out, g.k);
    if (!f32) cpu::narrow(y.dtype(), out, cpu::at(y.data(), y.dtype(), r0 * g.k), (r1 - r0) * g.k);
  });
}

int64_t forward_scratch(const ConvGeometry& g) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  return task_count() * tile_rows(rsc) * (rsc + g.k);
}

// The data gradient of a stride-1 convolution is the forward convolution of dy with the filter
// flipped in space and its channel axes swapped, padded by r - 1 - pad: a gather, so it tiles
// like the forward pass instead of scattering through col2im. Only for "same" padding (3x3 pad
// 1, 1x1 pad 0), where the flipped convolution pads as little as the forward one (DCGAN's
// first 1x1 -> 4x4 layer would multiply 15 zero taps in 16), and not for a few input channels
// (an RGB image's gradient): a product with 1-3 output columns runs far below the GEMM rate.
bool backward_data_as_forward(const ConvGeometry& g) {
  return g.stride == 1 && g.r == g.s && 2 * g.pad == g.r - 1 && g.c >= 8;
}
ConvGeometry flipped(const ConvGeometry& g) {
  ConvGeometry f = g;
  f.h = g.out_h();
  f.w = g.out_w();
  f.c = g.k;
  f.k = g.c;
  f.pad = g.r - 1 - g.pad;
  return f;
}
// wt (c, r, s, k) from w (k, r, s, c): wt[c][r-1-i][s-1-j][k] = w[k][i][j][c], FP32.
void flip_weights(const ConvGeometry& g, const Tensor& w, float* wt) {
  const int64_t rs = int64_t{g.r} * g.s;
  parallel_chunks(g.k, [&](int64_t kk) {
    for (int64_t ij = 0; ij < rs; ++ij) {
      float row[512];
      for (int64_t c0 = 0; c0 < g.c; c0 += 512) {
        const int64_t cn = std::min<int64_t>(512, g.c - c0);
        cpu::widen(w.dtype(), cpu::at(w.data(), w.dtype(), (kk * rs + ij) * g.c + c0), row, cn);
        for (int64_t c = 0; c < cn; ++c) wt[((c0 + c) * rs + (rs - 1 - ij)) * g.k + kk] = row[c];
      }
    }
  });
}

// Whether the filter gradient tiles: each of kGroups groups of consecutive tiles sums into its
// own FP32 partial (k * rsc floats), and the partials are added in group order. Not for wide
// filters (rsc > 1024, DCGAN's deeper 4x4 layers): their partials are large and their tiles
// short, and the whole-batch product was 2.5x faster there.
bool filter_tiles(const ConvGeometry& g) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  return rsc <= 1024 && kGroups * g.k * rsc <= kPartialFloats;
}

}  // namespace

// OpenBLAS 0.3.21 (Debian 12, pthread build) ran the narrow products of a convolution (e.g.
// 112 x 64 x 576) at half its rate -- 18-20 GFLOP/s a core here instead of 36-40 -- in every
// thread that had not yet run one product with a wide B panel (n >= ~512); one 512^3 product
// per thread once is enough, and costs ~10 ms. Its GEMM buffers are taken per concurrent
// caller, so every pool thread runs it at the same time (they wait for each other), and each
// gets a warmed buffer.
void warm_openblas() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int threads = cpu_threads(), n = 512;
    std::vector<float> a(size_t(n) * n, 1.0f), b(size_t(n) * n, 0.5f);
    std::atomic<int> arrived{0};
    parallel_chunks(threads, [&](int64_t) {
      arrived.fetch_add(1);
      // Bounded: called from inside a parallel region, the chunks run one after another.
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (arrived.load() < threads && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      std::vector<float> c(size_t(n) * n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                  c.data(), n);
    });
  });
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a,
                      const Tensor& b, float beta, Tensor& c) {
  check(a.dtype() == b.dtype(), "gemm", "A and B must share a dtype");
  check(c.dtype() == DType::F32 || c.dtype() == a.dtype(), "gemm", "C must be FP32 or A's dtype");
  check(a.numel() >= int64_t{m} * k && b.numel() >= int64_t{k} * n && c.numel() >= int64_t{m} * n,
        "gemm", "operand smaller than m, n, k");
  const float* af = a.as<float>();
  const float* bf = b.as<float>();
  if (a.dtype() != DType::F32) {
    float* wa = scratch(kGemmA, size_t(m) * k);
    widen(a, 0, int64_t{m} * k, wa);
    float* wb = scratch(kGemmB, size_t(k) * n);
    widen(b, 0, int64_t{k} * n, wb);
    af = wa;
    bf = wb;
  }
  float* cf = c.dtype() == DType::F32 ? c.as<float>() : scratch(kGemmC, size_t(m) * n);
  if (c.dtype() != DType::F32 && beta != 0.0f) widen(c, 0, int64_t{m} * n, cf);
  sgemm(trans_a, trans_b, m, n, k, alpha, af, trans_a ? m : k, bf, trans_b ? k : n, beta, cf, n);
  if (c.dtype() != DType::F32) narrow(cf, c, 0, int64_t{m} * n);
}

void CpuBackend::conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  check(x.dtype() == w.dtype() && w.dtype() == y.dtype(), "conv2d_forward", "dtypes differ");
  check(x.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() &&
            y.numel() == g.y_shape().numel(),
        "conv2d_forward", "shapes do not match the geometry");
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  const float* wf = w.as<float>();
  if (w.dtype() != DType::F32) {
    float* t = scratch(kWeights, size_t(g.k) * rsc);
    widen(w, 0, g.k * rsc, t);
    wf = t;
  }
  forward_tiled(g, x, wf, y, scratch(kTiles, size_t(forward_scratch(g))));
}

void CpuBackend::conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                      Tensor& dx) {
  check(dy.dtype() == w.dtype() && w.dtype() == dx.dtype(), "conv2d_backward_data", "dtypes differ");
  check(dx.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() &&
            dy.numel() == g.y_shape().numel(),
        "conv2d_backward_data", "shapes do not match the geometry");
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
  if (backward_data_as_forward(g)) {
    const ConvGeometry f = flipped(g);
    float* wt = scratch(kWeights, size_t(g.k) * rsc);
    flip_weights(g, w, wt);
    forward_tiled(f, dy, wt, dx, scratch(kTiles, size_t(forward_scratch(f))));
    return;
  }
  const int64_t sample = int64_t{g.h} * g.w * g.c;
  const float* wf = w.as<float>();
  if (w.dtype() != DType::F32) {
    float* t = scratch(kWeights, size_t(g.k) * rsc);
    widen(w, 0, g.k * rsc, t);
    wf = t;
  }
  const int64_t chunk = samples_per_chunk(g);
  for (int n0 = 0; n0 < g.n; n0 += static_cast<int>(chunk)) {
    const int n1 = static_cast<int>(std::min<int64_t>(g.n, n0 + chunk));
    const int64_t rows = int64_t{n1 - n0} * spatial;
    const float* dyf = dy.as<float>() + int64_t{n0} * spatial * g.k;
    if (dy.dtype() != DType::F32) {
      float* t = scratch(kRowsF, size_t(rows * g.k));
      widen(dy, int64_t{n0} * spatial * g.k, rows * g.k, t);
      dyf = t;
    }
    float* dcol = scratch(kCol, size_t(rows * rsc));
    sgemm(false, false, static_cast<int>(rows),
                static_cast<int>(rsc), g.k, 1.0f, dyf, g.k, wf, static_cast<int>(rsc), 0.0f, dcol,
                static_cast<int>(rsc));
    float* dxf = dx.dtype() == DType::F32 ? dx.as<float>() + int64_t{n0} * sample
                                          : scratch(kAccum, size_t((n1 - n0) * sample));
    col2im(g, dcol, n0, n1, dxf);
    if (dx.dtype() != DType::F32) narrow(dxf, dx, int64_t{n0} * sample, (n1 - n0) * sample);
  }
}

void CpuBackend::conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                        Tensor& dw, bool accumulate) {
  check(x.dtype() == dy.dtype() && dy.dtype() == dw.dtype(), "conv2d_backward_filter", "dtypes differ");
  check(x.numel() == g.x_shape().numel() && dw.numel() == g.w_shape().numel() &&
            dy.numel() == g.y_shape().numel(),
        "conv2d_backward_filter", "shapes do not match the geometry");
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
  float* dwf = dw.dtype() == DType::F32 ? dw.as<float>() : scratch(kAccum, size_t(g.k * rsc));
  if (dw.dtype() != DType::F32 && accumulate) widen(dw, 0, g.k * rsc, dwf);
  if (filter_tiles(g)) {
    // Group q sums its consecutive tiles into partial q, kept transposed (col_tile^T * dy_tile,
    // rsc x k: OpenBLAS runs this shape 1.4x faster than k x rsc); the partials are then added
    // in group order, so the order of the sum is fixed by the geometry.
    const int64_t rows = int64_t{g.n} * spatial, tr = tile_rows(rsc), tiles = chunk_count(rows, tr);
    const int64_t per_task = tr * (rsc + g.k), groups = kGroups;
    float* partial = scratch(kTiles, size_t(groups * g.k * rsc + task_count() * per_task));
    float* task_scratch = partial + groups * g.k * rsc;
    const bool f32 = dy.dtype() == DType::F32;
    for_each_tile(groups, [&](int64_t q, int64_t task) {
      float* col = task_scratch + task * per_task;
      float* dyt = col + tr * rsc;
      float* out = partial + q * g.k * rsc;
      // (Fewer tiles than groups at tiny batches: an empty group adds zero.)
      if (q * tiles / groups == (q + 1) * tiles / groups) std::memset(out, 0, sizeof(float) * g.k * rsc);
      for (int64_t t = q * tiles / groups; t < (q + 1) * tiles / groups; ++t) {
        const int64_t r0 = t * tr, r1 = std::min(rows, r0 + tr);
        im2col_rows(g, x, r0, r1, col);
        const float* d = f32 ? dy.as<float>() + r0 * g.k : dyt;
        if (!f32) cpu::widen(dy.dtype(), cpu::at(dy.data(), dy.dtype(), r0 * g.k), dyt, (r1 - r0) * g.k);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(rsc), g.k, static_cast<int>(r1 - r0),
                    1.0f, col, static_cast<int>(rsc), d, g.k, t == q * tiles / groups ? 0.0f : 1.0f, out, g.k);
      }
    });
    parallel_chunks(g.k, [&](int64_t kk) {
      for (int64_t i = 0; i < rsc; ++i) {
        float sum = partial[i * g.k + kk];
        for (int64_t q = 1; q < groups; ++q) sum += partial[(q * rsc + i) * g.k + kk];
        float& o = dwf[kk * rsc + i];
        o = accumulate ? o + sum : sum;
      }
    });
  } else {
    float beta = accumulate ? 1.0f : 0.0f;
    const int64_t chunk = samples_per_chunk(g);
    for (int n0 = 0; n0 < g.n; n0 += static_cast<int>(chunk)) {
      const int n1 = static_cast<int>(std::min<int64_t>(g.n, n0 + chunk));
      const int64_t rows = int64_t{n1 - n0} * spatial;
      float* col = scratch(kCol, size_t(rows * rsc));
      im2col(g, x, n0, n1, col);
      const float* dyf = dy.as<float>() + int64_t{n0} * spatial * g.k;
      if (dy.dtype() != DType::F32) {
        float* t = scratch(kRowsF, size_t(rows * g.k));
        widen(dy, int64_t{n0} * spatial * g.k, rows * g.k, t);
        dyf = t;
      }
      sgemm(true, false, g.k, static_cast<int>(rsc),
                  static_cast<int>(rows), 1.0f, dyf, g.k, col, static_cast<int>(rsc), beta, dwf,
                  static_cast<int>(rsc));
      beta = 1.0f;
    }
  }
  if (dw.dtype() != DType::F32) narrow(dwf, dw, 0, g.k * rsc);
}

// Both bias loops convert a tile of a row's channels at a time (vectorised), not value by value.
void CpuBackend::bias_add(Tensor& y, const Tensor& b) {
  check(b.dtype() == DType::F32 && y.numel() % b.numel() == 0, "bias_add", "bias must be FP32 (channels)");
  const int64_t c = b.numel(), rows = y.numel() / c;
  const float* bv = b.as<float>();
  const DType dt = y.dtype();
  parallel_for(rows, std::max<int64_t>(1, 32768 / c), [&](int64_t r0, int64_t r1) {
    float buf[cpu::kTile];
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c0 = 0; c0 < c; c0 += cpu::kTile) {
        const int64_t m = std::min<int64_t>(cpu::kTile, c - c0);
        void* v = cpu::at(y.data(), dt, r * c + c0);
        cpu::widen(dt, v, buf, m);
        for (int64_t j = 0; j < m; ++j) buf[j] += bv[c0 + j];
        cpu::narrow(dt, buf, v, m);
      }
  });
}

void CpuBackend::bias_backward(const Tensor& dy, Tensor& db, bool accumulate) {
  check(db.dtype() == DType::F32 && dy.numel() % db.numel() == 0, "bias_backward", "db must be FP32 (channels)");
  const int64_t c = db.numel(), rows = dy.numel() / c;
  const int64_t grain = std::max<int64_t>(1, 32768 / c);
  std::vector<double> parts(chunk_count(rows, grain) * c, 0.0);
  const DType dt = dy.dtype();
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    double* p = parts.data() + (r0 / grain) * c;
    float buf[cpu::kTile];
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c0 = 0; c0 < c; c0 += cpu::kTile) {
        const int64_t m = std::min<int64_t>(cpu::kTile, c - c0);
        cpu::widen(dt, cpu::at(dy.data(), dt, r * c + c0), buf, m);
        for (int64_t j = 0; j < m; ++j) p[c0 + j] += buf[j];
      }
  });
  float* out = db.as<float>();
  for (int64_t j = 0; j < c; ++j) {
    double sum = accumulate ? out[j] : 0.0;
    for (size_t p = 0; p < parts.size() / c; ++p) sum += parts[p * c + j];
    out[j] = static_cast<float>(sum);
  }
}

}  // namespace ampgan
