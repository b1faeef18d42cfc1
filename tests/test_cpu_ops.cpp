// The CPU backend's ops against naive double-precision references, the rounding points of the
// half modes, and finite-difference gradient checks of every layer.
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_gemm.h"
#include "core/common/cpu_features.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/nn/activation.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/conv2d.h"
#include "core/nn/conv_transpose2d.h"
#include "core/nn/flatten.h"
#include "core/nn/linear.h"
#include "core/nn/resample.h"
#include "core/nn/residual.h"
#include "core/tensor/half.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

// y[n, oy, ox, k] = sum x[n, iy, ix, c] * w[k, i, j, c], in double.
std::vector<double> naive_conv(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(g.y_shape().numel(), 0.0);
  for (int n = 0; n < g.n; ++n)
    for (int oy = 0; oy < g.out_h(); ++oy)
      for (int ox = 0; ox < g.out_w(); ++ox)
        for (int k = 0; k < g.k; ++k) {
          double s = 0;
          for (int i = 0; i < g.r; ++i)
            for (int j = 0; j < g.s; ++j) {
              const int iy = oy * g.stride - g.pad + i, ix = ox * g.stride - g.pad + j;
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              for (int c = 0; c < g.c; ++c)
                s += double(x[((size_t(n) * g.h + iy) * g.w + ix) * g.c + c]) *
                     w[((size_t(k) * g.r + i) * g.s + j) * g.c + c];
            }
          y[((size_t(n) * g.out_h() + oy) * g.out_w() + ox) * g.k + k] = s;
        }
  return y;
}

// The two gradients of naive_conv in double, every element: dx = sum over the taps that read x,
// dw = sum over the positions that use w.
void naive_conv_grads(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
                      const std::vector<float>& dy, std::vector<double>& dx, std::vector<double>& dw) {
  dx.assign(x.size(), 0.0);
  dw.assign(w.size(), 0.0);
  for (int n = 0; n < g.n; ++n)
    for (int oy = 0; oy < g.out_h(); ++oy)
      for (int ox = 0; ox < g.out_w(); ++ox)
        for (int k = 0; k < g.k; ++k) {
          const double d = dy[((size_t(n) * g.out_h() + oy) * g.out_w() + ox) * g.k + k];
          for (int i = 0; i < g.r; ++i)
            for (int j = 0; j < g.s; ++j) {
              const int iy = oy * g.stride - g.pad + i, ix = ox * g.stride - g.pad + j;
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              const size_t xo = ((size_t(n) * g.h + iy) * g.w + ix) * g.c, wo = ((size_t(k) * g.r + i) * g.s + j) * g.c;
              for (int c = 0; c < g.c; ++c) {
                dx[xo + c] += d * w[wo + c];
                dw[wo + c] += d * x[xo + c];
              }
            }
        }
}

double rel_err(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

struct ConvCase {
  int n, h, w, c, k, r, stride, pad;
};

// The last three are the ResNet's 3x3 stride-1 layers cut so that cpu_linalg.cpp's tiles matter:
// several tiles that cross sample boundaries, filter-gradient groups left empty (3 tiles for 8
// groups) and groups of two tiles (11), the data gradient as the flipped forward convolution, and
// a 3-channel output layer.
const ConvCase kConvCases[] = {{2, 8, 8, 3, 5, 3, 1, 1},     {3, 16, 16, 1, 8, 4, 2, 1},  {2, 4, 4, 16, 1, 4, 1, 0},
                               {1, 9, 7, 8, 4, 4, 2, 1},     {4, 8, 8, 32, 16, 4, 2, 1},  {2, 5, 5, 2, 3, 1, 1, 0},
                               {4, 16, 16, 16, 16, 3, 1, 1}, {2, 24, 24, 64, 8, 3, 1, 1}, {2, 32, 32, 8, 3, 3, 1, 1}};

ConvGeometry geom(const ConvCase& c) {
  ConvGeometry g;
  g.n = c.n, g.h = c.h, g.w = c.w, g.c = c.c, g.k = c.k, g.r = g.s = c.r, g.stride = c.stride, g.pad = c.pad;
  return g;
}

}  // namespace

TEST(CpuConv, ForwardAndBackwardMatchNaiveReference) {
  CpuBackend b;
  uint64_t seed = 1;
  for (const ConvCase& cc : kConvCases) {
    const ConvGeometry g = geom(cc);
    const auto x = random_normal(g.x_shape().numel(), seed++);
    const auto w = random_normal(g.w_shape().numel(), seed++);
    const auto dy = random_normal(g.y_shape().numel(), seed++);
    Tensor tx = make_tensor(b, g.x_shape(), DType::F32, x), tw = make_tensor(b, g.w_shape(), DType::F32, w);
    Tensor tdy = make_tensor(b, g.y_shape(), DType::F32, dy);
    Tensor ty = b.empty(g.y_shape(), DType::F32, MemCategory::Data);
    b.conv2d_forward(g, tx, tw, ty);
    EXPECT_LT(rel_err(to_host(b, ty), naive_conv(g, x, w)), 1e-6) << "forward case c=" << cc.c;

    // Adjoint identities checked against the naive forward: <dy, conv(x)> = <dx, x> for every x
    // means dx is right; probe with unit vectors on a few coordinates.
    Tensor tdx = b.empty(g.x_shape(), DType::F32, MemCategory::Data);
    b.conv2d_backward_data(g, tdy, tw, tdx);
    Tensor tdw = b.empty(g.w_shape(), DType::F32, MemCategory::Data);
    b.conv2d_backward_filter(g, tx, tdy, tdw, false);
    const auto dx = to_host(b, tdx), dw = to_host(b, tdw);
    std::vector<double> dx_ref, dw_ref;
    naive_conv_grads(g, x, w, dy, dx_ref, dw_ref);
    EXPECT_LT(rel_err(dx, dx_ref), 1e-6) << "dx, every element, case n=" << cc.n << " h=" << cc.h << " c=" << cc.c;
    EXPECT_LT(rel_err(dw, dw_ref), 1e-6) << "dw, every element, case n=" << cc.n << " h=" << cc.h << " c=" << cc.c;
    for (int probe = 0; probe < 6; ++probe) {
      const size_t xi = philox_below(seed, 1, probe, x.size());
      std::vector<float> e(x.size(), 0.0f);
      e[xi] = 1.0f;
      const auto ye = naive_conv(g, e, w);
      double ref = 0;
      for (size_t i = 0; i < ye.size(); ++i) ref += ye[i] * dy[i];
      EXPECT_NEAR(dx[xi], ref, 1e-4 * (1 + std::fabs(ref))) << "dx case c=" << cc.c;
      const size_t wi = philox_below(seed, 2, probe, w.size());
      std::vector<float> ew(w.size(), 0.0f);
      ew[wi] = 1.0f;
      const auto yw = naive_conv(g, x, ew);
      double refw = 0;
      for (size_t i = 0; i < yw.size(); ++i) refw += yw[i] * dy[i];
      EXPECT_NEAR(dw[wi], refw, 1e-4 * (1 + std::fabs(refw))) << "dw case c=" << cc.c;
    }
    // accumulate adds to what is there
    b.conv2d_backward_filter(g, tx, tdy, tdw, true);
    const auto dw2 = to_host(b, tdw);
    for (size_t i = 0; i < dw.size(); ++i) ASSERT_NEAR(dw2[i], 2 * dw[i], 1e-5 * (1 + std::fabs(dw[i])));
  }
}

// In half modes the product of half inputs accumulates in FP32 and is rounded once: the result
// must equal the FP32 op on the (exactly widened) half inputs, rounded -- bit for bit.
// With a kernel that multiplies widened operands (OpenBLAS, oneDNN in FP32), for both dtypes
// alike: a half result is the FP32 result of the same values rounded once. (The BF16 kernel sums
// in another order; the op table compares it with a tolerance, tests/op_cases.h.)
TEST(CpuConv, HalfModesRoundOnceAfterFp32Accumulation) {
  for (cpu::GemmKernel kernel : {cpu::GemmKernel::OpenBlas, cpu::GemmKernel::OneDnnF32}) {
    if (kernel != cpu::GemmKernel::OpenBlas && !cpu::onednn_available()) continue;
    SCOPED_TRACE(cpu::gemm_kernel_name(kernel));
    CpuBackend b;
    b.force_kernel(kernel);
    for (DType dt : {DType::F16, DType::BF16}) {
      uint64_t seed = 100;
      for (const ConvCase& cc : kConvCases) {
        const ConvGeometry g = geom(cc);
        auto x = random_normal(g.x_shape().numel(), seed++);
        auto w = random_normal(g.w_shape().numel(), seed++, 0.1f);
        auto dy = random_normal(g.y_shape().numel(), seed++);
        Tensor hx = make_tensor(b, g.x_shape(), dt, x), hw = make_tensor(b, g.w_shape(), dt, w);
        Tensor hdy = make_tensor(b, g.y_shape(), dt, dy);
        // the same values widened to FP32
        Tensor fx = make_tensor(b, g.x_shape(), DType::F32, to_host(b, hx));
        Tensor fw = make_tensor(b, g.w_shape(), DType::F32, to_host(b, hw));
        Tensor fdy = make_tensor(b, g.y_shape(), DType::F32, to_host(b, hdy));
        auto round_to = [&](std::vector<float> v) {
          for (float& f : v) f = dt == DType::F16 ? round_half(f) : round_bf16(f);
          return v;
        };
        Tensor hy = b.empty(g.y_shape(), dt, MemCategory::Data),
               fy = b.empty(g.y_shape(), DType::F32, MemCategory::Data);
        b.conv2d_forward(g, hx, hw, hy);
        b.conv2d_forward(g, fx, fw, fy);
        EXPECT_EQ(to_host(b, hy), round_to(to_host(b, fy))) << dtype_name(dt) << " forward c=" << cc.c;
        Tensor hdx = b.empty(g.x_shape(), dt, MemCategory::Data),
               fdx = b.empty(g.x_shape(), DType::F32, MemCategory::Data);
        b.conv2d_backward_data(g, hdy, hw, hdx);
        b.conv2d_backward_data(g, fdy, fw, fdx);
        EXPECT_EQ(to_host(b, hdx), round_to(to_host(b, fdx))) << dtype_name(dt) << " backward data c=" << cc.c;
        Tensor hdw = b.empty(g.w_shape(), dt, MemCategory::Data),
               fdw = b.empty(g.w_shape(), DType::F32, MemCategory::Data);
        b.conv2d_backward_filter(g, hx, hdy, hdw, false);
        b.conv2d_backward_filter(g, fx, fdy, fdw, false);
        EXPECT_EQ(to_host(b, hdw), round_to(to_host(b, fdw))) << dtype_name(dt) << " backward filter c=" << cc.c;
      }
    }
  }
}

TEST(CpuConv, HalfOutputOverflowsToInfinity) {
  // A scaled gradient too large for FP16 must become inf in the half output (what loss scaling
  // detects), while BF16 keeps it finite.
  CpuBackend b;
  ConvGeometry g;
  g.n = 1, g.h = g.w = 1, g.c = 4, g.k = 1, g.r = g.s = 1;
  Tensor x = make_tensor(b, g.x_shape(), DType::F16, {30000, 30000, 30000, 30000});
  Tensor w = make_tensor(b, g.w_shape(), DType::F16, {1, 1, 1, 1});
  Tensor y = b.empty(g.y_shape(), DType::F16, MemCategory::Data);
  b.conv2d_forward(g, x, w, y);
  EXPECT_TRUE(std::isinf(to_host(b, y)[0]));
  Tensor xb = make_tensor(b, g.x_shape(), DType::BF16, {30000, 30000, 30000, 30000});
  Tensor wb = make_tensor(b, g.w_shape(), DType::BF16, {1, 1, 1, 1});
  Tensor yb = b.empty(g.y_shape(), DType::BF16, MemCategory::Data);
  b.conv2d_forward(g, xb, wb, yb);
  EXPECT_NEAR(to_host(b, yb)[0], 120000.0, 600.0);
}

TEST(CpuGemm, AllTransposesAndOutputTypes) {
  CpuBackend b;
  const int m = 7, n = 5, k = 9;
  const auto a = random_normal(m * k, 1), bb = random_normal(k * n, 2);
  // reference C = A B with A (m,k), B (k,n) row-major
  std::vector<double> ref(m * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) ref[i * n + j] += double(a[i * k + p]) * bb[p * n + j];
  std::vector<float> at(k * m), bt(n * k);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
  for (int p = 0; p < k; ++p)
    for (int j = 0; j < n; ++j) bt[j * k + p] = bb[p * n + j];
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor A = make_tensor(b, Shape{m * k}, DType::F32, ta ? at : a);
      Tensor B = make_tensor(b, Shape{k * n}, DType::F32, tb ? bt : bb);
      Tensor C = make_tensor(b, Shape{m * n}, DType::F32, std::vector<float>(m * n, 1.0f));
      b.gemm(ta, tb, m, n, k, 2.0f, A, B, 0.5f, C);
      std::vector<double> expect(m * n);
      for (int i = 0; i < m * n; ++i) expect[i] = 2 * ref[i] + 0.5;
      EXPECT_LT(rel_err(to_host(b, C), expect), 1e-6) << ta << tb;
    }
  // FP16 inputs with an FP32 output keep the FP32 accumulation unrounded.
  Tensor A = make_tensor(b, Shape{m * k}, DType::F16, a), B = make_tensor(b, Shape{k * n}, DType::F16, bb);
  Tensor C = b.empty(Shape{m * n}, DType::F32, MemCategory::Data);
  b.gemm(false, false, m, n, k, 1.0f, A, B, 0.0f, C);
  EXPECT_LT(rel_err(to_host(b, C), ref), 2e-3);
}

TEST(CpuBatchNorm, ForwardBackwardMatchNaive) {
  CpuBackend b;
  const int rows = 50, c = 6;
  auto x = random_normal(rows * c, 3, 2.0f);
  for (int i = 0; i < rows * c; ++i) x[i] += float(i % c);  // per-channel offsets
  const auto dy = random_normal(rows * c, 4);
  std::vector<float> gamma = {1, 2, 0.5f, -1, 1.5f, 0.1f}, beta = {0, 1, -1, 0.5f, 0, 2};
  Tensor tx = make_tensor(b, Shape{rows, c}, DType::F32, x), tdy = make_tensor(b, Shape{rows, c}, DType::F32, dy);
  Tensor tg = make_tensor(b, Shape{c}, DType::F32, gamma), tb = make_tensor(b, Shape{c}, DType::F32, beta);
  Tensor rm = make_tensor(b, Shape{c}, DType::F32, std::vector<float>(c, 0.f));
  Tensor rv = make_tensor(b, Shape{c}, DType::F32, std::vector<float>(c, 1.f));
  Tensor y = b.empty(Shape{rows, c}, DType::F32, MemCategory::Data),
         sm = b.empty(Shape{c}, DType::F32, MemCategory::Data), si = b.empty(Shape{c}, DType::F32, MemCategory::Data);
  b.batchnorm_forward_train(tx, tg, tb, rm, rv, 0.1f, 1e-5f, true, y, sm, si);
  const auto yh = to_host(b, y), rmh = to_host(b, rm), rvh = to_host(b, rv);
  Tensor dx = b.empty(Shape{rows, c}, DType::F32, MemCategory::Data),
         dg = b.empty(Shape{c}, DType::F32, MemCategory::Data), db = b.empty(Shape{c}, DType::F32, MemCategory::Data);
  b.batchnorm_backward(tx, tdy, tg, sm, si, dx, dg, db, false);
  const auto dxh = to_host(b, dx), dgh = to_host(b, dg), dbh = to_host(b, db);
  for (int j = 0; j < c; ++j) {
    double mean = 0, var = 0;
    for (int r = 0; r < rows; ++r) mean += x[r * c + j];
    mean /= rows;
    for (int r = 0; r < rows; ++r) var += (x[r * c + j] - mean) * (x[r * c + j] - mean);
    var /= rows;
    const double inv = 1 / std::sqrt(var + 1e-5);
    EXPECT_NEAR(rmh[j], 0.1 * mean, 1e-5);
    EXPECT_NEAR(rvh[j], 0.9 + 0.1 * var * rows / (rows - 1), 1e-5);  // unbiased, as PyTorch
    double sdy = 0, sdyx = 0;
    for (int r = 0; r < rows; ++r) {
      const double xh = (x[r * c + j] - mean) * inv;
      EXPECT_NEAR(yh[r * c + j], xh * gamma[j] + beta[j], 1e-4);
      sdy += dy[r * c + j];
      sdyx += dy[r * c + j] * xh;
    }
    EXPECT_NEAR(dbh[j], sdy, 1e-4);
    EXPECT_NEAR(dgh[j], sdyx, 1e-4);
    for (int r = 0; r < rows; ++r) {
      const double xh = (x[r * c + j] - mean) * inv;
      const double ref = gamma[j] * inv * (dy[r * c + j] - sdy / rows - xh * sdyx / rows);
      EXPECT_NEAR(dxh[r * c + j], ref, 1e-4);
    }
  }
  // Sampling mode: batch statistics, running averages untouched.
  b.batchnorm_forward_train(tx, tg, tb, rm, rv, 0.1f, 1e-5f, false, y, sm, si);
  EXPECT_EQ(to_host(b, rm), rmh);
  EXPECT_EQ(to_host(b, rv), rvh);
}

// Staged running statistics are committed when no skip flag is set and reverted otherwise.
TEST(CpuBatchNorm, CommitRunningFollowsTheFoundInfFlags) {
  CpuBackend b;
  Tensor scalars = make_tensor(b, Shape{3}, DType::F32, {0.0f, 1.0f, 0.0f});
  auto pair = [&] {
    return std::pair{make_tensor(b, Shape{3}, DType::F32, {1, 2, 3}), make_tensor(b, Shape{3}, DType::F32, {7, 8, 9})};
  };
  auto [r1, s1] = pair();
  b.batchnorm_commit_running({r1}, {s1}, scalars, {0, 2});
  EXPECT_EQ(to_host(b, r1), (std::vector<float>{7, 8, 9})) << "clean step: committed";
  EXPECT_EQ(to_host(b, s1), (std::vector<float>{7, 8, 9}));
  auto [r2, s2] = pair();
  b.batchnorm_commit_running({r2}, {s2}, scalars, {0, 1});
  EXPECT_EQ(to_host(b, r2), (std::vector<float>{1, 2, 3})) << "skipped step: reverted";
  EXPECT_EQ(to_host(b, s2), (std::vector<float>{1, 2, 3}));
}

TEST(CpuLoss, StableAtLargeLogits) {
  CpuBackend b;
  Tensor logits = make_tensor(b, Shape{4}, DType::F32, {100.f, -100.f, 0.f, 3.f});
  Tensor state = make_tensor(b, Shape{2}, DType::F32, {1024.f, 0.f});
  Tensor dl = b.empty(Shape{4}, DType::F32, MemCategory::Data);
  Tensor s = make_tensor(b, Shape{4}, DType::F32, {0, 0, 0, 0});
  b.gan_loss(LossKind::BCEWithLogits, LossRole::DReal, logits, state, dl, s, 0, 1);
  const auto sh = to_host(b, s), d = to_host(b, dl);
  // BCE(100, 1) ~ 0, BCE(-100, 1) = 100, BCE(0, 1) = log 2, BCE(3, 1) = log(1 + e^-3)
  EXPECT_NEAR(sh[0], (0 + 100 + std::log(2.0) + std::log1p(std::exp(-3.0))) / 4, 1e-4);
  EXPECT_NEAR(sh[1], (1 + 0 + 0.5 + 1 / (1 + std::exp(-3.0))) / 4, 1e-6);
  EXPECT_NEAR(d[0], 0.0, 1e-30);
  EXPECT_NEAR(d[1], -1024.0 / 4, 1e-3);  // sigmoid(-100) - 1, times scale / n
  EXPECT_NEAR(d[2], -0.5 * 1024 / 4, 1e-3);
  // the generated side and hinge
  Tensor s2 = make_tensor(b, Shape{4}, DType::F32, {0, 0, 0, 0});
  b.gan_loss(LossKind::BCEWithLogits, LossRole::DFake, logits, state, dl, s2, 0, -1);
  EXPECT_NEAR(to_host(b, s2)[0], (100 + 0 + std::log(2.0) + 3 + std::log1p(std::exp(-3.0))) / 4, 1e-4);
  Tensor s3 = make_tensor(b, Shape{4}, DType::F32, {0, 0, 0, 0});
  b.gan_loss(LossKind::Hinge, LossRole::DReal, logits, state, dl, s3, 0, -1);
  EXPECT_NEAR(to_host(b, s3)[0], (0 + 101 + 1 + 0) / 4.0, 1e-5);
  const auto dh = to_host(b, dl);
  EXPECT_EQ(dh[0], 0.0f);
  EXPECT_EQ(dh[1], -1024.0f / 4);
}

TEST(CpuAmp, GradStatsCountsAndFlags) {
  CpuBackend b;
  const float sub = std::ldexp(1.0f, -20);  // FP16 subnormal
  Tensor g16 = make_tensor(b, Shape{6}, DType::F16, {0.f, sub, 2.f, -sub, 0.f, 4.f});
  Tensor g32 = make_tensor(b, Shape{2}, DType::F32, {3.f, 0.f});
  Tensor state = make_tensor(b, Shape{2}, DType::F32, {2.f, 0.f});
  Tensor s = b.empty(Shape{9}, DType::F32, MemCategory::Data);
  b.fill(s, 7.0f);
  const GradStatSlots slots{0, 1, 2, 4, 6};  // counts take [slot, slot + 1]
  b.grad_stats({g16, g32}, state, s, slots);
  auto sh = to_host(b, s);
  EXPECT_EQ(sh[0], 0.0f);  // found_inf overwritten, not accumulated
  EXPECT_NEAR(sh[1], (1.0 + 4.0 + 2 * std::pow(sub / 2.0, 2) + 1.5 * 1.5), 1e-6);  // (g / 2)^2
  EXPECT_EQ(sh[2], 3.0f);                                                          // zeros: two half, one float
  EXPECT_EQ(sh[3], 0.0f);                                                          // (its high slot)
  EXPECT_EQ(sh[4], 2.0f);                                                          // two half subnormals
  EXPECT_EQ(sh[5], 0.0f);
  EXPECT_EQ(sh[6], 8.0f);
  EXPECT_EQ(sh[7], 0.0f);
  EXPECT_EQ(sh[8], 7.0f);  // untouched
  Tensor bad = make_tensor(b, Shape{3}, DType::F16, {1.f, INFINITY, 1.f});
  b.grad_stats({g16, bad}, state, s, slots);
  EXPECT_EQ(to_host(b, s)[0], 1.0f);
  Tensor nan = make_tensor(b, Shape{1}, DType::F32, {NAN});
  b.grad_stats({nan}, state, s, slots);
  EXPECT_EQ(to_host(b, s)[0], 1.0f);
  // A count's high slot past the end is refused, not written out of bounds.
  EXPECT_THROW(b.grad_stats({g32}, state, s, GradStatSlots{0, 1, 2, 4, 8}), Error);
}

// FP32 stops counting at 2^24 (2^24 + 1 rounds back to 2^24): counts are [lo, hi] slot pairs.
TEST(CpuAmp, CountsStayExactPast2To24) {
  ASSERT_EQ(16777216.0f + 1.0f, 16777216.0f) << "the failure the [lo, hi] counts exist for";
  float c[2];
  for (uint64_t n : {uint64_t{0}, uint64_t{16777215}, uint64_t{16777216}, uint64_t{16777217},
                     (uint64_t{1} << 40) + 12345, (uint64_t{1} << 48) - 1}) {
    ew::count_store(c, n);
    EXPECT_EQ(ew::count_load(c), n);
    EXPECT_LT(c[0], ew::kCountRadix);
  }
  ew::count_store(c, 16777214);
  for (int i = 0; i < 3; ++i) ew::count_increment(c);
  EXPECT_EQ(ew::count_load(c), uint64_t{16777217});
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], 1.0f);
  ew::count_store(c, 1234);
  EXPECT_EQ(c[0], 1234.0f) << "below 2^24 the low slot is the plain FP32 count";
  EXPECT_EQ(c[1], 0.0f);

  CpuBackend b;
  Tensor t = make_tensor(b, Shape{2}, DType::F32, {16777215.0f, 0.0f});
  b.count_increment(t);
  b.count_increment(t);
  EXPECT_EQ(to_host(b, t), (std::vector<float>{1.0f, 1.0f}));
  Tensor one = make_tensor(b, Shape{1}, DType::F32, {0.0f});
  EXPECT_THROW(b.count_increment(one), Error);
}

TEST(CpuAmp, GradStatsCountMoreThan2To24Values) {
  CpuBackend b;
  const int64_t n = (int64_t{1} << 24) + 3;  // as one float: 2^24 + 4
  Tensor g = b.empty(Shape{n}, DType::F16, MemCategory::Gradient);
  b.fill(g, 0.0f);
  Tensor state = make_tensor(b, Shape{2}, DType::F32, {1.0f, 0.0f});
  Tensor s = b.empty(Shape{8}, DType::F32, MemCategory::Data);
  b.grad_stats({g}, state, s, {0, 1, 2, 4, 6});
  const auto sh = to_host(b, s);
  EXPECT_EQ(ew::count_load(&sh[2]), static_cast<uint64_t>(n)) << "zeros";
  EXPECT_EQ(ew::count_load(&sh[4]), uint64_t{0}) << "subnormals";
  EXPECT_EQ(ew::count_load(&sh[6]), static_cast<uint64_t>(n)) << "values";
}

TEST(CpuAmp, FillNormalCounterPast2To24DrawsItsOwnStream) {
  CpuBackend b;
  const uint64_t base = 77, count = 16777217;  // 2^24 + 1: as one float it would read 2^24
  float c[2];
  ew::count_store(c, count);
  Tensor counter = make_tensor(b, Shape{2}, DType::F32, {c[0], c[1]});
  Tensor x = b.empty(Shape{64}, DType::F32, MemCategory::Data);
  Tensor want = b.empty(Shape{64}, DType::F32, MemCategory::Data);
  Tensor prev = b.empty(Shape{64}, DType::F32, MemCategory::Data);
  b.fill_normal(x, 1234, base, counter, 1.0f);
  b.fill_normal(want, 1234, base + count, Tensor{}, 1.0f);
  b.fill_normal(prev, 1234, base + count - 1, Tensor{}, 1.0f);
  EXPECT_EQ(to_host(b, x), to_host(b, want)) << "stream + the exact count";
  EXPECT_NE(to_host(b, x), to_host(b, prev)) << "a different step draws different numbers";
}

TEST(CpuAmp, EmaFollowsTheRampedDecayAndSkipsWithG) {
  CpuBackend b;
  Tensor sh = make_tensor(b, Shape{3}, DType::F32, {1.0f, -2.0f, 0.5f});
  Tensor p = make_tensor(b, Shape{3}, DType::F32, {3.0f, 2.0f, 0.5f});
  Tensor t = b.empty(Shape{2}, DType::F32, MemCategory::Optimizer);
  ew::count_store(t.as<float>(), 5);  // G's 5th applied step
  Tensor s = make_tensor(b, Shape{4}, DType::F32, {0, 0, 0, 0});
  b.ema_update({sh}, {p}, 0.999f, 10.0f, t, s, 2);
  const float d = 6.0f / 15.0f;  // (1 + 5) / (10 + 5) < 0.999
  const auto h = to_host(b, sh);
  EXPECT_FLOAT_EQ(h[0], d * 1.0f + (1 - d) * 3.0f);
  EXPECT_FLOAT_EQ(h[1], d * -2.0f + (1 - d) * 2.0f);
  EXPECT_EQ(h[2], 0.5f);
  s.as<float>()[2] = 1.0f;  // G's step was skipped: the average stays
  b.ema_update({sh}, {p}, 0.999f, 10.0f, t, s, 2);
  EXPECT_EQ(to_host(b, sh), h);
  s.as<float>()[2] = 0.0f;
  b.ema_update({sh}, {p}, 0.5f, 0.0f, t, s, 2);  // no ramp: the decay itself
  EXPECT_FLOAT_EQ(to_host(b, sh)[0], 0.5f * h[0] + 0.5f * 3.0f);
}

TEST(CpuAmp, HistogramBinsExponents) {
  CpuBackend b;
  Tensor g = make_tensor(b, Shape{6}, DType::F16, {1.0f, 1.5f, 0.25f, 0.0f, INFINITY, std::ldexp(1.0f, -24)});
  Tensor h = b.empty(Shape{ew::kHistBins}, DType::F32, MemCategory::Data);
  b.grad_histogram({g}, h);
  const auto hh = to_host(b, h);
  EXPECT_EQ(hh[0 - ew::kHistMinExp], 2.0f);    // 1.0 and 1.5: exponent 0
  EXPECT_EQ(hh[-2 - ew::kHistMinExp], 1.0f);   // 0.25
  EXPECT_EQ(hh[-24 - ew::kHistMinExp], 1.0f);  // smallest FP16 subnormal
  EXPECT_EQ(hh[ew::kHistZeroBin], 1.0f);
  EXPECT_EQ(hh[ew::kHistNonFiniteBin], 1.0f);
  double total = 0;
  for (float v : hh) total += v;
  EXPECT_EQ(total, 6.0);
}

TEST(CpuAmp, AdamMatchesHandComputationAndSkips) {
  CpuBackend b;
  Tensor w = make_tensor(b, Shape{2}, DType::F32, {1.0f, -2.0f});
  Tensor m = make_tensor(b, Shape{2}, DType::F32, {0, 0}), v = make_tensor(b, Shape{2}, DType::F32, {0, 0});
  Tensor g = make_tensor(b, Shape{2}, DType::F16, {0.5f * 8, -1.0f * 8});  // scaled by 8
  Tensor half = b.empty(Shape{2}, DType::F16, MemCategory::HalfCopy);
  Tensor t = make_tensor(b, Shape{2}, DType::F32, {0, 0});  // [lo, hi] count
  Tensor state = make_tensor(b, Shape{2}, DType::F32, {8.0f, 0.0f});
  Tensor s = make_tensor(b, Shape{1}, DType::F32, {0});
  AdamConfig cfg;
  cfg.lr = 0.1f;
  b.adam_step({{w, g, m, v, half}}, cfg, t, state, s, 0);
  // step 1: m = 0.5 g, v = 0.001 g^2, m_hat = g, v_hat = g^2 -> w -= lr * sign(g) (eps aside)
  auto wh = to_host(b, w);
  EXPECT_NEAR(wh[0], 1.0 - 0.1, 1e-6);
  EXPECT_NEAR(wh[1], -2.0 + 0.1, 1e-6);
  EXPECT_EQ(to_host(b, half)[0], round_half(wh[0]));
  EXPECT_EQ(to_host(b, t), (std::vector<float>{1.0f, 0.0f}));
  // a flagged step changes nothing at all
  Tensor s_bad = make_tensor(b, Shape{1}, DType::F32, {1});
  const auto mh = to_host(b, m);
  b.adam_step({{w, g, m, v, half}}, cfg, t, state, s_bad, 0);
  EXPECT_EQ(to_host(b, w), wh);
  EXPECT_EQ(to_host(b, m), mh);
  EXPECT_EQ(to_host(b, t), (std::vector<float>{1.0f, 0.0f}));
  // Past 2^24 steps t keeps counting (one float would stay at 2^24 for ever).
  Tensor t2 = make_tensor(b, Shape{2}, DType::F32, {16777215.0f, 0.0f});
  b.adam_step({{w, g, m, v, half}}, cfg, t2, state, s, 0);
  b.adam_step({{w, g, m, v, half}}, cfg, t2, state, s, 0);
  EXPECT_EQ(to_host(b, t2), (std::vector<float>{1.0f, 1.0f}));
}

// ---- finite-difference gradient checks of every layer ----------------------------------------

namespace {

// loss = sum(u * layer(x)); checks dx and every parameter gradient on random coordinates.
void gradient_check(Backend& b, Layer& layer, Shape in_shape, uint64_t seed, double tol) {
  Context ctx{b, DType::F32, Mode::Train, true, false};
  for (Parameter* p : layer.parameters()) {
    auto v = random_normal(p->shape.numel(), seed++, 0.5f);
    b.upload(p->master, v.data(), v.size() * 4);
    p->set_precision(b, DType::F32);
  }
  auto x = random_normal(in_shape.numel(), seed++);
  Tensor tx = make_tensor(b, in_shape, DType::F32, x);
  const Shape out_shape = layer.output_shape(in_shape);
  const auto u = random_normal(out_shape.numel(), seed++);
  Tensor tu = make_tensor(b, out_shape, DType::F32, u);
  auto loss = [&]() {
    const Tensor& y = layer.forward(ctx, tx);
    const auto yh = to_host(b, y);
    double s = 0;
    for (size_t i = 0; i < yh.size(); ++i) s += double(u[i]) * yh[i];
    return s;
  };
  loss();
  const auto dx = to_host(b, layer.backward(ctx, tu, InputGrad::Return));
  std::vector<std::vector<float>> dparams;
  for (Parameter* p : layer.parameters()) dparams.push_back(to_host(b, p->grad));
  const float eps = 1e-2f;
  auto check_coord = [&](float* host_val, std::function<void()> push, double analytic, const std::string& what) {
    const float orig = *host_val;
    *host_val = orig + eps;
    push();
    const double lp = loss();
    *host_val = orig - eps;
    push();
    const double lm = loss();
    *host_val = orig;
    push();
    const double numeric = (lp - lm) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, tol * (1 + std::fabs(numeric))) << layer.type() << " " << what;
  };
  for (int probe = 0; probe < 8; ++probe) {
    const size_t i = philox_below(seed, 3, probe, x.size());
    check_coord(
        &x[i], [&] { b.upload(tx, x.data(), x.size() * 4); }, dx[i], "dx[" + std::to_string(i) + "]");
  }
  size_t pi = 0;
  for (Parameter* p : layer.parameters()) {
    auto v = to_host(b, p->master);
    for (int probe = 0; probe < 6; ++probe) {
      const size_t i = philox_below(seed, 4 + pi, probe, v.size());
      check_coord(
          &v[i], [&] { b.upload(p->master, v.data(), v.size() * 4); }, dparams[pi][i],
          p->name + "[" + std::to_string(i) + "]");
    }
    ++pi;
  }
}

}  // namespace

TEST(GradientCheck, Conv2d) {
  CpuBackend b;
  Conv2d conv(b, "0.", 3, 4, 4, 2, 1, true);
  gradient_check(b, conv, Shape{2, 8, 8, 3}, 10, 2e-3);
}

TEST(GradientCheck, ConvTranspose2d) {
  CpuBackend b;
  ConvTranspose2d up(b, "0.", 5, 3, 4, 2, 1);
  gradient_check(b, up, Shape{2, 4, 4, 5}, 20, 2e-3);
  ConvTranspose2d first(b, "0.", 6, 4, 4, 1, 0);  // the generator's 1x1 -> 4x4 layer
  gradient_check(b, first, Shape{3, 1, 1, 6}, 21, 2e-3);
}

TEST(GradientCheck, BatchNorm2d) {
  CpuBackend b;
  BatchNorm2d bn(b, "0.", 4);
  gradient_check(b, bn, Shape{3, 3, 3, 4}, 30, 5e-3);
}

TEST(GradientCheck, Linear) {
  CpuBackend b;
  Linear fc(b, "0.", 12, 5, true);
  gradient_check(b, fc, Shape{4, 12}, 40, 2e-3);
}

TEST(GradientCheck, Activations) {
  CpuBackend b;
  Activation tanh_layer(ew::Act::Tanh);
  gradient_check(b, tanh_layer, Shape{2, 3, 3, 2}, 50, 2e-3);
  // ReLU-type kinks: finite differences across 0 are wrong by design, so inputs sit away from 0
  // with probability ~1 at eps = 1e-2 for N(0,1) inputs; the tolerance covers the rare miss.
  Activation leaky(ew::Act::LeakyReLU, 0.2f);
  gradient_check(b, leaky, Shape{2, 3, 3, 2}, 51, 2e-3);
  Activation relu(ew::Act::ReLU);
  gradient_check(b, relu, Shape{2, 3, 3, 2}, 52, 2e-3);
}

// ---- residual sums and resampling (the ResNet GAN) -------------------------------------------

namespace {

// Naive double references, NHWC.
std::vector<double> naive_upsample(const std::vector<float>& x, int n, int h, int w, int c) {
  std::vector<double> y(size_t(n) * 4 * h * w * c);
  for (int b = 0; b < n; ++b)
    for (int oy = 0; oy < 2 * h; ++oy)
      for (int ox = 0; ox < 2 * w; ++ox)
        for (int ch = 0; ch < c; ++ch)
          y[((size_t(b) * 2 * h + oy) * 2 * w + ox) * c + ch] = x[((size_t(b) * h + oy / 2) * w + ox / 2) * c + ch];
  return y;
}
std::vector<double> naive_avgpool(const std::vector<float>& x, int n, int h, int w, int c) {  // h, w of the output
  std::vector<double> y(size_t(n) * h * w * c, 0.0);
  for (int b = 0; b < n; ++b)
    for (int oy = 0; oy < 2 * h; ++oy)
      for (int ox = 0; ox < 2 * w; ++ox)
        for (int ch = 0; ch < c; ++ch)
          y[((size_t(b) * h + oy / 2) * w + ox / 2) * c + ch] +=
              0.25 * x[((size_t(b) * 2 * h + oy) * 2 * w + ox) * c + ch];
  return y;
}
std::vector<double> naive_sum_pool(const std::vector<float>& x, int n, int hw, int c) {
  std::vector<double> y(size_t(n) * c, 0.0);
  for (int b = 0; b < n; ++b)
    for (int p = 0; p < hw; ++p)
      for (int ch = 0; ch < c; ++ch) y[size_t(b) * c + ch] += x[(size_t(b) * hw + p) * c + ch];
  return y;
}

}  // namespace

TEST(CpuResample, ForwardMatchesNaiveReferenceAndHalfModesRoundOnce) {
  CpuBackend b;
  const int n = 3, h = 4, w = 6, c = 5;
  const auto small = random_normal(size_t(n) * h * w * c, 300);
  const auto big = random_normal(size_t(n) * 4 * h * w * c, 301);
  const auto other = random_normal(size_t(n) * h * w * c, 302);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    // Inputs rounded to dt first, so the reference sees exactly what the op sees.
    Tensor xs = make_tensor(b, Shape{n, h, w, c}, dt, small), xb = make_tensor(b, Shape{n, 2 * h, 2 * w, c}, dt, big);
    Tensor xo = make_tensor(b, Shape{n, h, w, c}, dt, other);
    const auto hs = to_host(b, xs), hb = to_host(b, xb), ho = to_host(b, xo);
    auto round_to = [&](const std::vector<double>& v) {
      std::vector<float> r(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        const float f = static_cast<float>(v[i]);
        r[i] = dt == DType::F32 ? f : dt == DType::F16 ? round_half(f) : round_bf16(f);
      }
      return r;
    };
    Tensor up = b.empty(Shape{n, 2 * h, 2 * w, c}, dt, MemCategory::Data);
    b.upsample2x_forward(xs, up);
    EXPECT_EQ(to_host(b, up), round_to(naive_upsample(hs, n, h, w, c))) << dtype_name(dt) << " upsample (a copy)";
    // Pools: FP32 against the naive reference; half modes must equal the FP32 op on the
    // widened inputs, rounded once (FP32 arithmetic, one rounding) -- bit for bit.
    Tensor fb = make_tensor(b, Shape{n, 2 * h, 2 * w, c}, DType::F32, hb);
    Tensor pool = b.empty(Shape{n, h, w, c}, dt, MemCategory::Data),
           fpool = b.empty(Shape{n, h, w, c}, DType::F32, MemCategory::Data);
    b.avgpool2x_forward(xb, pool);
    b.avgpool2x_forward(fb, fpool);
    Tensor sum = b.empty(Shape{n, c}, dt, MemCategory::Data),
           fsum = b.empty(Shape{n, c}, DType::F32, MemCategory::Data);
    b.global_sum_pool_forward(xb, sum);
    b.global_sum_pool_forward(fb, fsum);
    EXPECT_LT(rel_err(to_host(b, fpool), naive_avgpool(hb, n, h, w, c)), 1e-7) << dtype_name(dt) << " avgpool";
    EXPECT_LT(rel_err(to_host(b, fsum), naive_sum_pool(hb, n, 4 * h * w, c)), 1e-6) << dtype_name(dt) << " sum pool";
    auto rounded = [&](const std::vector<float>& v) {
      std::vector<double> d(v.begin(), v.end());
      return round_to(d);
    };
    EXPECT_EQ(to_host(b, pool), rounded(to_host(b, fpool))) << dtype_name(dt) << " avgpool rounds once";
    EXPECT_EQ(to_host(b, sum), rounded(to_host(b, fsum))) << dtype_name(dt) << " sum pool rounds once";
    Tensor y = b.empty(Shape{n, h, w, c}, dt, MemCategory::Data);
    b.add(xs, xo, y);
    std::vector<double> sref2(hs.size());
    for (size_t i = 0; i < hs.size(); ++i) sref2[i] = double(hs[i]) + ho[i];
    EXPECT_EQ(to_host(b, y), round_to(sref2)) << dtype_name(dt) << " add: exact sum rounded once";
  }
}

// The resampling and bias ops convert half-precision pixels (rows) a run at a time; these shapes
// put chunk ends inside rows of the image and rows of the bias: w 30 at c 24 is two runs of 21
// pixels and 9 (512-value tiles), c 600 is wider than a tile (one pixel at a time), c 5 fits
// many pixels in one run. Every output is a fixed FP32 expression of its inputs rounded once,
// so it must equal that expression bit for bit in every dtype.
TEST(CpuResample, ChunkedConversionsGiveEveryPixelItsOwnValue) {
  CpuBackend b;
  struct Geometry {
    int n, h, w, c;
  };
  for (const Geometry g : {Geometry{2, 2, 30, 24}, Geometry{1, 2, 3, 600}, Geometry{3, 2, 7, 5}}) {
    const int n = g.n, h = g.h, w = g.w, c = g.c;
    const size_t small_n = size_t(n) * h * w * c, big_n = 4 * small_n;
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      const std::string what = std::string(dtype_name(dt)) + " c" + std::to_string(c) + " w" + std::to_string(w);
      auto round_to = [&](float f) { return dt == DType::F32 ? f : dt == DType::F16 ? round_half(f) : round_bf16(f); };
      Tensor small = make_tensor(b, Shape{n, h, w, c}, dt, random_normal(small_n, 310 + c));
      Tensor big = make_tensor(b, Shape{n, 2 * h, 2 * w, c}, dt, random_normal(big_n, 311 + c));
      const auto hs = to_host(b, small), hb = to_host(b, big);
      auto big_at = [&](int s, int y, int x, int ch) { return hb[((size_t(s) * 2 * h + y) * 2 * w + x) * c + ch]; };
      Tensor pooled = b.empty(Shape{n, h, w, c}, dt, MemCategory::Data);
      Tensor summed = b.empty(Shape{n, h, w, c}, dt, MemCategory::Data);
      Tensor spread = b.empty(Shape{n, 2 * h, 2 * w, c}, dt, MemCategory::Data);
      b.avgpool2x_forward(big, pooled);
      b.upsample2x_backward(big, summed);
      b.avgpool2x_backward(small, spread);
      const auto hp = to_host(b, pooled), hsum = to_host(b, summed), hspread = to_host(b, spread);
      size_t wrong_pool = 0, wrong_sum = 0, wrong_spread = 0;
      for (int s = 0; s < n; ++s)
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x)
            for (int ch = 0; ch < c; ++ch) {
              const size_t i = ((size_t(s) * h + y) * w + x) * c + ch;
              const float a = big_at(s, 2 * y, 2 * x, ch), bb = big_at(s, 2 * y, 2 * x + 1, ch),
                          cc = big_at(s, 2 * y + 1, 2 * x, ch), d = big_at(s, 2 * y + 1, 2 * x + 1, ch);
              wrong_pool += hp[i] != round_to(((a + bb) + cc + d) * 0.25f);
              wrong_sum += hsum[i] != round_to(((a + bb) + cc) + d);
              for (int q = 0; q < 4; ++q) {
                const size_t o = ((size_t(s) * 2 * h + 2 * y + q / 2) * 2 * w + 2 * x + q % 2) * c + ch;
                wrong_spread += hspread[o] != round_to(hs[i] * 0.25f);
              }
            }
      EXPECT_EQ(wrong_pool, 0u) << what << " avgpool2x_forward";
      EXPECT_EQ(wrong_sum, 0u) << what << " upsample2x_backward";
      EXPECT_EQ(wrong_spread, 0u) << what << " avgpool2x_backward";

      // Bias over rows of c channels: 517 rows is not a whole number of runs for any c here.
      const int rows = 517;
      Tensor y = make_tensor(b, Shape{rows, c}, dt, random_normal(size_t(rows) * c, 320 + c));
      const auto hy = to_host(b, y);
      const auto bias = random_normal(size_t(c), 321 + c);
      Tensor bt = make_tensor(b, Shape{c}, DType::F32, bias);
      b.bias_add(y, bt);
      const auto after = to_host(b, y);
      size_t wrong_bias = 0;
      for (size_t i = 0; i < after.size(); ++i) wrong_bias += after[i] != round_to(hy[i] + bias[i % c]);
      EXPECT_EQ(wrong_bias, 0u) << what << " bias_add";
      Tensor db = b.empty(Shape{c}, DType::F32, MemCategory::Data);
      b.bias_backward(y, db, false);
      const auto hdb = to_host(b, db);
      for (int ch = 0; ch < c; ++ch) {
        double ref = 0;  // the op sums in double: only the final rounding to FP32 can differ
        for (int r = 0; r < rows; ++r) ref += after[size_t(r) * c + ch];
        ASSERT_NEAR(hdb[ch], ref, 1e-6 * std::abs(ref) + 1e-6) << what << " bias_backward channel " << ch;
      }
    }
  }
}

TEST(CpuResample, HalfAddOverflowsToInfinityAsOnAGpu) {
  CpuBackend b;
  Tensor a = make_tensor(b, Shape{2}, DType::F16, {40000, -1}), c = make_tensor(b, Shape{2}, DType::F16, {40000, 1});
  Tensor y = b.empty(Shape{2}, DType::F16, MemCategory::Data);
  b.add(a, c, y);
  const auto v = to_host(b, y);
  EXPECT_TRUE(std::isinf(v[0]));
  EXPECT_EQ(v[1], 0.0f);
}

TEST(GradientCheck, ResamplingLayers) {
  CpuBackend b;
  Upsample2x up;
  gradient_check(b, up, Shape{2, 3, 4, 3}, 60, 2e-3);
  AvgPool2x pool;
  gradient_check(b, pool, Shape{2, 4, 6, 3}, 61, 2e-3);
  GlobalSumPool sum;
  gradient_check(b, sum, Shape{3, 4, 4, 5}, 62, 2e-3);
}

TEST(GradientCheck, ResidualBlockFansTheGradientIn) {
  CpuBackend b;
  // An SNGAN-style down block: main = act, conv 3x3, act, conv 3x3, avg-pool; shortcut =
  // conv 1x1, avg-pool. The input gradient is the sum of both paths' (the fan-in). Tanh stands
  // in for SNGAN's ReLU: a bias nudged by the finite-difference step moves a whole channel
  // across ReLU's kink and the numeric derivative is then wrong, not the analytic one.
  Sequential main, shortcut;
  main.add(std::make_unique<Activation>(ew::Act::Tanh));
  main.add(std::make_unique<Conv2d>(b, "main.0.", 3, 4, 3, 1, 1, true));
  main.add(std::make_unique<Activation>(ew::Act::Tanh));
  main.add(std::make_unique<Conv2d>(b, "main.1.", 4, 4, 3, 1, 1, true));
  main.add(std::make_unique<AvgPool2x>());
  shortcut.add(std::make_unique<Conv2d>(b, "shortcut.", 3, 4, 1, 1, 0, true));
  shortcut.add(std::make_unique<AvgPool2x>());
  Residual block(std::move(main), std::move(shortcut));
  EXPECT_EQ(block.parameters().size(), 6u);
  gradient_check(b, block, Shape{2, 6, 6, 3}, 70, 5e-3);
  // With the identity shortcut, dx = main's dx + dy.
  Sequential m2;
  m2.add(std::make_unique<Conv2d>(b, "m.", 3, 3, 3, 1, 1, true));
  Residual identity(std::move(m2), Sequential{});
  gradient_check(b, identity, Shape{2, 5, 5, 3}, 71, 2e-3);
}

// ---- spectral norm -------------------------------------------------------------------------------

namespace {

// The largest singular value of a (rows, cols) matrix, by 300 power iterations in double.
double host_sigma(const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<double> u(rows, 1.0), v(cols);
  double s = 0;
  for (int it = 0; it < 300; ++it) {
    double nv = 0;
    for (int64_t j = 0; j < cols; ++j) {
      v[j] = 0;
      for (int64_t i = 0; i < rows; ++i) v[j] += w[i * cols + j] * u[i];
      nv += v[j] * v[j];
    }
    for (double& x : v) x /= std::sqrt(nv);
    double nu = 0;
    for (int64_t i = 0; i < rows; ++i) {
      u[i] = 0;
      for (int64_t j = 0; j < cols; ++j) u[i] += w[i * cols + j] * v[j];
      nu += u[i] * u[i];
    }
    s = std::sqrt(nu);
    for (double& x : u) x /= s;
  }
  return s;
}

}  // namespace

TEST(GradientCheck, SpectralNormConv2d) {
  CpuBackend b;
  Conv2d conv(b, "0.", 3, 4, 3, 1, 1, true);
  conv.enable_spectral_norm(b, 5, 6);
  EXPECT_EQ(conv.buffers().size(), 2u);  // u and v are saved with the model
  // sigma depends on W here (u, v fixed within the check, as in PyTorch's backward).
  gradient_check(b, conv, Shape{2, 5, 5, 3}, 80, 3e-3);
}

TEST(GradientCheck, SpectralNormLinear) {
  CpuBackend b;
  Linear fc(b, "0.", 12, 5, true);
  fc.enable_spectral_norm(b, 7, 8);  // random unit u, v (a power iteration of the still-zero W would zero them)
  gradient_check(b, fc, Shape{4, 12}, 81, 3e-3);
}

TEST(SpectralNorm, SigmaStaysFp32WhereHalfPrecisionWouldOverflowOrUnderflow) {
  CpuBackend b;
  // W ~ 20000 N(0, 1): sigma ~ 3e5, beyond FP16's 65504 (as are the squares of the entries).
  // W ~ 1e-5: the squares (1e-10) underflow FP16 to zero, so a half-precision sigma would be 0
  // and W / sigma infinite. In FP32 both normalise to a largest singular value of 1.
  for (float scale : {20000.0f, 1e-5f})
    for (DType dt : {DType::F16, DType::BF16}) {
      Conv2d conv(b, "0.", 8, 16, 3, 1, 1, false);
      conv.enable_spectral_norm(b, 1, 2);
      Parameter& w = *conv.parameters()[0];
      const int64_t rows = 16, cols = 3 * 3 * 8;
      auto wv = random_normal(rows * cols, 90, scale);
      b.upload(w.master, wv.data(), wv.size() * 4);
      w.set_precision(b, dt);
      for (int i = 0; i < 60; ++i) conv.update_spectral_norm(b);
      Context ctx{b, dt, Mode::Train, true, false};
      Tensor x = make_tensor(b, Shape{1, 4, 4, 8}, dt, random_normal(128, 91));
      conv.forward(ctx, x);
      const double want = host_sigma(wv, rows, cols);
      const float sigma = to_host(b, conv.spectral_norm()->sigma())[0];
      EXPECT_NEAR(sigma / want, 1.0, 1e-4) << "scale " << scale << " " << dtype_name(dt);
      // The normalised weight the convolution used, read back from its half copy: largest
      // singular value 1 up to the half rounding of its entries.
      const std::vector<float> wsn = to_host(b, conv.spectral_norm()->last_normalized());
      ASSERT_EQ(conv.spectral_norm()->last_normalized().dtype(), dt);
      EXPECT_NEAR(host_sigma(wsn, rows, cols), 1.0, dt == DType::F16 ? 2e-3 : 1e-2) << "scale " << scale;
      for (float f : to_host(b, conv.forward(ctx, x))) ASSERT_TRUE(std::isfinite(f)) << "scale " << scale;
    }
}

// Per-tensor statistics from the fused pass equal a separate computation on the host copies:
// max |g / scale| over the finite values, inf/NaN count, zero-or-subnormal count (judged by
// the storage format's smallest normal), for tensors spanning several parallel chunks.
TEST(CpuAmp, GradStatsPerTensorMatchesReference) {
  CpuBackend b;
  const float scale = 1024.0f;
  Tensor state = make_tensor(b, Shape{2}, DType::F32, {scale, 0.0f});
  for (DType dt : {DType::F16, DType::BF16, DType::F32}) {
    const float smallest_normal = dt == DType::F16 ? std::ldexp(1.0f, -14) : std::ldexp(1.0f, -126);
    std::vector<Tensor> grads;
    std::vector<std::vector<float>> values;
    const int64_t sizes[] = {300000, 7, 70001, 1};
    for (size_t t = 0; t < 4; ++t) {
      std::vector<float> v = random_normal(static_cast<size_t>(sizes[t]), 40 + t);
      for (size_t i = 0; i < v.size(); ++i) {
        const float r = v[i] * std::ldexp(1.0f, static_cast<int>(i % 40) - 30);  // many exponents
        v[i] = i % 9 == 0 ? 0.0f : r;
      }
      if (t == 0) {  // inf and NaN in two different chunks of a large tensor
        v[5] = INFINITY;
        v[250000] = NAN;
        v[250001] = -INFINITY;
      }
      if (t == 2) v[70000] = 3000.0f;  // the largest value, last in its tensor
      grads.push_back(make_tensor(b, Shape{sizes[t]}, dt, v));
      values.push_back(to_host(b, grads.back()));  // as stored (rounded into dt)
    }
    const int base = 10;
    Tensor s = b.empty(Shape{base + kTensorStatSlots * 4 + 1}, DType::F32, MemCategory::Data);
    b.fill(s, 7.0f);
    b.grad_stats(grads, state, s, GradStatSlots{0, 1, 2, 4, 6, base});
    const auto sh = to_host(b, s);
    for (size_t t = 0; t < 4; ++t) {
      float mx = 0.0f;
      uint64_t nonfinite = 0, under = 0;
      for (float x : values[t]) {
        if (!std::isfinite(x)) {
          ++nonfinite;
          continue;
        }
        mx = std::max(mx, std::fabs(x / scale));
        under += std::fabs(x) < smallest_normal;
      }
      const float* o = &sh[base + kTensorStatSlots * t];
      const std::string what = std::string(dtype_name(dt)) + " tensor " + std::to_string(t);
      EXPECT_EQ(o[kTensorMaxAbs], mx) << what;
      EXPECT_EQ(ew::count_load(o + kTensorNonFinite), nonfinite) << what;
      EXPECT_EQ(ew::count_load(o + kTensorUnderflow), under) << what;
    }
    EXPECT_EQ(ew::count_load(&sh[base + kTensorNonFinite]), 3u) << "the planted values are counted";
    EXPECT_GT(ew::count_load(&sh[base + kTensorStatSlots * 2 + kTensorUnderflow]), 0u);
    EXPECT_EQ(sh[base + kTensorStatSlots * 4], 7.0f) << "the slot after the last tensor is untouched";
    EXPECT_EQ(sh[0], 1.0f);
    // The totals are those of the pass without per-tensor slots.
    Tensor s2 = b.empty(Shape{8}, DType::F32, MemCategory::Data);
    b.grad_stats(grads, state, s2, GradStatSlots{0, 1, 2, 4, 6});
    const auto s2h = to_host(b, s2);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(s2h[i], sh[i]) << "slot " << i;
  }
  Tensor g = make_tensor(b, Shape{2}, DType::F32, {1.0f, 2.0f});
  Tensor small = b.empty(Shape{10}, DType::F32, MemCategory::Data);
  EXPECT_THROW(b.grad_stats({g}, state, small, GradStatSlots{0, 1, 2, 4, 6, 6}), Error)
      << "per-tensor slots past the end";
}

// What the BF16 kernel changes (cpu_gemm.h): VDPBF16PS multiplies BF16 values exactly in FP32 but
// treats subnormal BF16 inputs (below 2^-126) as zero, where the widening kernels keep them. With
// loss scaling or without, activations and gradients that small are far below anything a GAN's
// step uses, so the kernels agree on real data (the op table, tests/op_cases.h).
TEST(CpuGemm, Bf16KernelTreatsSubnormalBf16InputsAsZero) {
  if (!cpu::onednn_available() || !cpu_features().avx512_bf16)
    GTEST_SKIP() << "no oneDNN BF16 kernel here: " << cpu::onednn_summary() << ", " << cpu_features().summary();
  const float tiny = std::ldexp(1.0f, -130), big = std::ldexp(1.0f, 100);  // tiny is subnormal in BF16
  for (cpu::GemmKernel kernel : {cpu::GemmKernel::OpenBlas, cpu::GemmKernel::OneDnnBf16}) {
    CpuBackend b;
    b.force_kernel(kernel);
    // C (1 x 1) = [tiny, 1] . [big, 2^-40]: exactly 2^-30 + 2^-40.
    Tensor a = make_tensor(b, Shape{1, 2}, DType::BF16, {tiny, 1.0f});
    Tensor w = make_tensor(b, Shape{2, 1}, DType::BF16, {big, std::ldexp(1.0f, -40)});
    Tensor c = b.empty(Shape{1, 1}, DType::F32, MemCategory::Workspace);
    b.gemm(false, false, 1, 1, 2, 1.0f, a, w, 0.0f, c);
    const float got = to_host(b, c)[0];
    if (kernel == cpu::GemmKernel::OpenBlas)
      EXPECT_EQ(got, std::ldexp(1.0f, -30) + std::ldexp(1.0f, -40));
    else
      EXPECT_EQ(got, std::ldexp(1.0f, -40)) << "the subnormal input counted as zero";
  }
}

// The BF16 kernel on blocks of wider matrices (the weight gradient's column tiles: ld > the
// block's width), every transpose, with and without beta: the same as OpenBLAS on the same
// BF16-valued inputs up to the order of the sum (BF16 products are exact in FP32), and nothing
// outside the block of C written. oneDNN picks its implementation by shape and layout (here
// gemm:jit for the strided blocks, brgemm for dense ones), and each must hold this.
TEST(CpuGemm, Bf16KernelOnBlocksOfWiderMatricesMatchesFp32Products) {
  if (!cpu::onednn_available() || !cpu_features().avx512_bf16)
    GTEST_SKIP() << "no oneDNN BF16 kernel here: " << cpu::onednn_summary() << ", " << cpu_features().summary();
  const int m = 48, n = 40, k = 64, pad = 24;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 0.5f}) {
        cpu::GemmShape s{ta, tb, m, n, k, (ta ? m : k) + pad, (tb ? k : n) + pad, n + pad, 2.0f, beta};
        const int a_rows = ta ? k : m, b_rows = tb ? n : k;
        std::vector<float> a = random_normal(size_t(a_rows) * s.lda, 11), b = random_normal(size_t(b_rows) * s.ldb, 12);
        std::vector<uint16_t> a16(a.size()), b16(b.size());
        for (size_t i = 0; i < a.size(); ++i) a[i] = bf16_bits_to_float(a16[i] = float_to_bf16_bits(a[i]));
        for (size_t i = 0; i < b.size(); ++i) b[i] = bf16_bits_to_float(b16[i] = float_to_bf16_bits(b[i]));
        const std::vector<float> c0 = random_normal(size_t(m) * s.ldc, 13);
        std::vector<float> want = c0, got = c0;
        cpu::gemm_serial(cpu::GemmKernel::OpenBlas, s, a.data(), b.data(), want.data());
        cpu::gemm_serial(cpu::GemmKernel::OneDnnBf16, s, a16.data(), b16.data(), got.data());
        float worst = 0;
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < s.ldc; ++j) {
            const size_t at = size_t(i) * s.ldc + j;
            if (j >= n) {
              ASSERT_EQ(got[at], c0[at]) << "C written outside the block at " << i << "," << j;
              continue;
            }
            worst = std::max(worst, std::fabs(got[at] - want[at]) / (1.0f + std::fabs(want[at])));
          }
        // 64 terms of order 1 summed in another order: a few FP32 ulps of the sum.
        EXPECT_LT(worst, 1e-5f) << "ta " << ta << " tb " << tb << " beta " << beta;
      }
}
