// CPU backend: matrix products and convolutions. Convolutions are im2col + one OpenBLAS SGEMM
// per chunk of samples: half operands are widened to FP32 exactly, the product accumulates in
// FP32, and the result is rounded once into the output's dtype -- where a tensor core rounds.
#include <algorithm>
#include <cstring>

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

enum Scratch { kCol = 0, kWeights = 1, kRowsF = 2, kAccum = 3, kGemmA = 4, kGemmB = 5, kGemmC = 6 };

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

int64_t samples_per_chunk(const ConvGeometry& g) {
  const int64_t per_sample = int64_t{g.out_h()} * g.out_w() * g.r * g.s * g.c;
  return std::clamp<int64_t>(kColBudget / std::max<int64_t>(1, per_sample), 1, g.n);
}

// col(rows of samples [n0, n1), r*s*c) from x (NHWC); out-of-image taps are zero.
void im2col(const ConvGeometry& g, const Tensor& x, int n0, int n1, float* col) {
  const int oh = g.out_h(), ow = g.out_w();
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  parallel_chunks(int64_t{n1 - n0} * oh, [&](int64_t job) {
    const int n = n0 + static_cast<int>(job / oh), oy = static_cast<int>(job % oh);
    for (int ox = 0; ox < ow; ++ox) {
      float* dst = col + ((int64_t{n - n0} * oh + oy) * ow + ox) * rsc;
      for (int i = 0; i < g.r; ++i) {
        const int iy = oy * g.stride - g.pad + i;
        for (int j = 0; j < g.s; ++j) {
          const int ix = ox * g.stride - g.pad + j;
          float* d = dst + (int64_t{i} * g.s + j) * g.c;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
            std::memset(d, 0, sizeof(float) * g.c);
          } else {
            const int64_t off = ((int64_t{n} * g.h + iy) * g.w + ix) * g.c;
            cpu::widen(x.dtype(), cpu::at(x.data(), x.dtype(), off), d, g.c);
          }
        }
      }
    }
  });
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

}  // namespace

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
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
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
    float* col = scratch(kCol, size_t(rows * rsc));
    im2col(g, x, n0, n1, col);
    float* yf = y.dtype() == DType::F32 ? y.as<float>() + int64_t{n0} * spatial * g.k
                                        : scratch(kRowsF, size_t(rows * g.k));
    sgemm(false, true, static_cast<int>(rows), g.k,
                static_cast<int>(rsc), 1.0f, col, static_cast<int>(rsc), wf, static_cast<int>(rsc),
                0.0f, yf, g.k);
    if (y.dtype() != DType::F32) narrow(yf, y, int64_t{n0} * spatial * g.k, rows * g.k);
  }
}

void CpuBackend::conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                      Tensor& dx) {
  check(dy.dtype() == w.dtype() && w.dtype() == dx.dtype(), "conv2d_backward_data", "dtypes differ");
  check(dx.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() &&
            dy.numel() == g.y_shape().numel(),
        "conv2d_backward_data", "shapes do not match the geometry");
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
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
  if (dw.dtype() != DType::F32) narrow(dwf, dw, 0, g.k * rsc);
}

void CpuBackend::bias_add(Tensor& y, const Tensor& b) {
  check(b.dtype() == DType::F32 && y.numel() % b.numel() == 0, "bias_add", "bias must be FP32 (channels)");
  const int64_t c = b.numel(), rows = y.numel() / c;
  const float* bv = b.as<float>();
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using S = decltype(tag);
    auto* v = y.as<typename S::T>();
    parallel_for(rows, std::max<int64_t>(1, 32768 / c), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < c; ++j) v[r * c + j] = S::store(S::load(v[r * c + j]) + bv[j]);
    });
  });
}

void CpuBackend::bias_backward(const Tensor& dy, Tensor& db, bool accumulate) {
  check(db.dtype() == DType::F32 && dy.numel() % db.numel() == 0, "bias_backward", "db must be FP32 (channels)");
  const int64_t c = db.numel(), rows = dy.numel() / c;
  const int64_t grain = std::max<int64_t>(1, 32768 / c);
  std::vector<double> parts(chunk_count(rows, grain) * c, 0.0);
  dispatch_dtype(dy.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto* v = dy.as<typename S::T>();
    parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      double* p = parts.data() + (r0 / grain) * c;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < c; ++j) p[j] += S::load(v[r * c + j]);
    });
  });
  float* out = db.as<float>();
  for (int64_t j = 0; j < c; ++j) {
    double sum = accumulate ? out[j] : 0.0;
    for (size_t p = 0; p < parts.size() / c; ++p) sum += parts[p * c + j];
    out[j] = static_cast<float>(sum);
  }
}

}  // namespace ampgan
