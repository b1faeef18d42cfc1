// Cases: matrix products (all transposes, both output types, TF32), convolutions (every
// geometry, forward / backward data / backward filter), bias (backend.h "matrix products",
// "convolution", "bias"), with their gradient checks.
#include <cmath>

#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

// ---- gemm ----------------------------------------------------------------------------------------------

struct GemmDims {
  int m, n, k;
};
const GemmDims kGemmDims[] = {{37, 29, 53}, {16, 100, 128}, {1, 8, 300}};

std::string gemm_name(GemmDims d, bool ta, bool tb) {
  return "gemm_m" + std::to_string(d.m) + "n" + std::to_string(d.n) + "k" + std::to_string(d.k) + "_" +
         (ta ? "T" : "N") + (tb ? "T" : "N");
}

// C(m,n) = 1.5 op(A) op(B) + beta C; C in FP32, or (half_c) in the dtype of A and B.
CaseFn gemm_case(GemmDims d, bool ta, bool tb, bool half_c) {
  return [=](Backend& b, DType t, Outputs& out) {
    const DType ct = half_c ? t : DType::F32;
    Tensor a = input(b, Shape{int64_t(d.m) * d.k}, t, random_normal(size_t(d.m) * d.k, 41, 1.0f));
    Tensor bm = input(b, Shape{int64_t(d.k) * d.n}, t, random_normal(size_t(d.k) * d.n, 42, 0.1f));
    for (float beta : {0.0f, 0.75f}) {
      Tensor c = input(b, Shape{int64_t(d.m) * d.n}, ct, random_normal(size_t(d.m) * d.n, 43, 1.0f));
      b.gemm(ta, tb, d.m, d.n, d.k, 1.5f, a, bm, beta, c);
      // max(tol(A/B dtype), tol(C dtype)): the A/B dtype's, by the case's dtype.
      out.tensor("C (" + std::string(dtype_name(ct)) + ", beta " + fmt(beta) + ")", c, {norm(kReduceTol)});
    }
  };
}

// The gradients of C = alpha op(A) op(B) + beta C0 through the backend's own gemm.
GradFn gemm_grad(GemmDims d, bool ta, bool tb) {
  return [=](Backend& b) {
    const float alpha = 1.5f, beta = 0.75f;
    const int64_t na = int64_t(d.m) * d.k, nb = int64_t(d.k) * d.n, nc = int64_t(d.m) * d.n;
    Tensor a = input(b, Shape{na}, DType::F32, random_normal(na, 44, 1.0f));
    Tensor bm = input(b, Shape{nb}, DType::F32, random_normal(nb, 45, 1.0f));
    Tensor c0 = input(b, Shape{nc}, DType::F32, random_normal(nc, 46, 1.0f));
    Tensor c = blank(b, Shape{nc}, DType::F32);
    const std::vector<float> r = objective_weights(nc, 1);
    GradProblem p;
    p.inputs = {{"A", a}, {"B", bm}, {"C", c0}};
    p.objective = [=, &b]() mutable {
      b.copy(c0, c);
      b.gemm(ta, tb, d.m, d.n, d.k, alpha, a, bm, beta, c);
      return weighted_sum(b, c, r);
    };
    p.gradients = [=, &b]() {
      Tensor rt = input(b, Shape{nc}, DType::F32, r);
      Tensor da = blank(b, Shape{na}, DType::F32), db = blank(b, Shape{nb}, DType::F32);
      // d op(A) = alpha R op(B)^T, d op(B) = alpha op(A)^T R, each stored as its operand is.
      if (!ta)
        b.gemm(false, !tb, d.m, d.k, d.n, alpha, rt, bm, 0.0f, da);
      else
        b.gemm(tb, true, d.k, d.m, d.n, alpha, bm, rt, 0.0f, da);
      if (!tb)
        b.gemm(!ta, false, d.k, d.n, d.m, alpha, a, rt, 0.0f, db);
      else
        b.gemm(true, ta, d.n, d.k, d.m, alpha, rt, a, 0.0f, db);
      std::vector<float> dc(r);
      for (float& v : dc) v *= beta;
      return std::vector<Tensor>{da, db, input(b, Shape{nc}, DType::F32, dc)};
    };
    return p;
  };
}

// TF32 products stay near the FP32 ones (a no-op on backends without TF32).
void gemm_tf32_case(Backend& b, DType, Outputs& out) {
  Tensor a = input(b, Shape{64 * 256}, DType::F32, random_normal(64 * 256, 51, 1.0f));
  Tensor bm = input(b, Shape{256 * 48}, DType::F32, random_normal(256 * 48, 52, 0.1f));
  Tensor c = blank(b, Shape{64 * 48}, DType::F32);
  b.set_allow_tf32(true);
  b.gemm(false, false, 64, 48, 256, 1.0f, a, bm, 0.0f, c);
  b.set_allow_tf32(false);
  out.tensor("gemm with TF32 allowed", c, {norm(all_dtypes(kTf32Tol))});
}

void conv_tf32_case(Backend& b, DType, Outputs& out) {
  ConvGeometry g;
  g.n = 4, g.h = g.w = 8, g.c = 64, g.k = 32, g.r = g.s = 4, g.stride = 2, g.pad = 1;
  Tensor x = input(b, g.x_shape(), DType::F32, random_normal(g.x_shape().numel(), 53, 1.0f));
  Tensor w = input(b, g.w_shape(), DType::F32, random_normal(g.w_shape().numel(), 54, 0.03f));
  Tensor y = blank(b, g.y_shape(), DType::F32);
  b.set_allow_tf32(true);
  b.conv2d_forward(g, x, w, y);
  b.set_allow_tf32(false);
  out.tensor("conv2d_forward with TF32 allowed", y, {norm(all_dtypes(kTf32Tol))});
  // And back to strict FP32: the cached TF32 plan must not be reused.
  b.conv2d_forward(g, x, w, y);
  out.tensor("conv2d_forward after TF32 is forbidden again", y, {norm(kReduceTol)});
}

// ---- convolutions -------------------------------------------------------------------------------------

float conv_wstd(const ConvGeometry& g) { return 1.0f / std::sqrt(float(g.r * g.s * g.c)); }

}  // namespace

CaseFn conv_case(const ConvCase& cc, bool deterministic) {
  return [cc, deterministic](Backend& b, DType t, Outputs& out) {
    const ConvGeometry g = cc.geometry();
    Tensor x = input(b, g.x_shape(), t, random_normal(g.x_shape().numel(), 61, 1.0f));
    Tensor w = input(b, g.w_shape(), t, random_normal(g.w_shape().numel(), 62, conv_wstd(g)));
    Tensor dy = input(b, g.y_shape(), t, random_normal(g.y_shape().numel(), 63, 1.0f));
    Tensor y = blank(b, g.y_shape(), t);
    b.conv2d_forward(g, x, w, y);
    out.tensor("conv2d_forward", y, {norm(kReduceTol)});
    Tensor dx = blank(b, g.x_shape(), t);
    b.conv2d_backward_data(g, dy, w, dx);
    out.tensor("conv2d_backward_data (= transposed conv forward)", dx, {norm(kReduceTol)});
    const auto dw0 = random_normal(g.w_shape().numel(), 64, 2.0f);
    for (bool acc : {false, true}) {
      Tensor dw = input(b, g.w_shape(), t, dw0);
      b.conv2d_backward_filter(g, x, dy, dw, acc);
      out.tensor("conv2d_backward_filter accumulate=" + bool_name(acc), dw, {norm(kReduceTol)});
    }
    if (!deterministic) return;
    // Run again: the cached plan and grown workspaces must give the same bits (determinism).
    Tensor y2 = blank(b, g.y_shape(), t);
    b.conv2d_forward(g, x, w, y2);
    EXPECT_TRUE(tensor_bits(b, y) == tensor_bits(b, y2))
        << "conv2d_forward repeated (cached plan, deterministic algorithm) " << cc.name() << " on " << b.name()
        << ": the bits differ";
  };
}

namespace {

// dx = backward_data(r), dw = backward_filter(x, r): the gradients of sum(r * conv(x, w)).
GradFn conv_grad(ConvCase cc) {
  return [cc](Backend& b) {
    const ConvGeometry g = cc.geometry();
    Tensor x = input(b, g.x_shape(), DType::F32, random_normal(g.x_shape().numel(), 65, 1.0f));
    Tensor w = input(b, g.w_shape(), DType::F32, random_normal(g.w_shape().numel(), 66, conv_wstd(g)));
    Tensor y = blank(b, g.y_shape(), DType::F32);
    const std::vector<float> r = objective_weights(g.y_shape().numel(), 2);
    GradProblem p;
    p.inputs = {{"x", x}, {"w", w}};
    p.objective = [=, &b]() mutable {
      b.conv2d_forward(g, x, w, y);
      return weighted_sum(b, y, r);
    };
    p.gradients = [=, &b]() {
      Tensor rt = input(b, g.y_shape(), DType::F32, r);
      Tensor dx = blank(b, g.x_shape(), DType::F32), dw = blank(b, g.w_shape(), DType::F32);
      b.conv2d_backward_data(g, rt, w, dx);
      b.conv2d_backward_filter(g, x, rt, dw, false);
      return std::vector<Tensor>{dx, dw};
    };
    return p;
  };
}

// ---- bias ------------------------------------------------------------------------------------------------

constexpr int kBiasRows = 517;
const int kBiasChannels[] = {1, 3, 64, 100};

CaseFn bias_case(int c) {
  return [c](Backend& b, DType t, Outputs& out) {
    const int rows = kBiasRows;
    Tensor y = input(b, Shape{rows, c}, t, random_normal(size_t(rows) * c, 31 + c, 1.0f));
    Tensor bias = input(b, Shape{c}, DType::F32, random_normal(c, 32 + c, 0.5f));
    b.bias_add(y, bias);
    out.tensor("bias_add", y, {bits_exact()});
    Tensor dy = input(b, Shape{rows, c}, t, random_normal(size_t(rows) * c, 33 + c, 1.0f));
    for (bool acc : {false, true}) {
      Tensor db = input(b, Shape{c}, DType::F32, random_normal(c, 34 + c, 1.0f));
      b.bias_backward(dy, db, acc);
      out.tensor("bias_backward accumulate=" + bool_name(acc), db, {norm(kFp32Tol)});
    }
  };
}

// d/dy0 = r, d/db = bias_backward(r), of sum(r * (y0 + b)).
GradFn bias_grad(int c) {
  return [c](Backend& b) {
    const int rows = kBiasRows;
    Tensor y0 = input(b, Shape{rows, c}, DType::F32, random_normal(size_t(rows) * c, 35 + c, 1.0f));
    Tensor bias = input(b, Shape{c}, DType::F32, random_normal(c, 36 + c, 0.5f));
    Tensor y = blank(b, Shape{rows, c}, DType::F32);
    const std::vector<float> r = objective_weights(size_t(rows) * c, 3);
    GradProblem p;
    p.inputs = {{"y", y0}, {"b", bias}};
    p.objective = [=, &b]() mutable {
      b.copy(y0, y);
      b.bias_add(y, bias);
      return weighted_sum(b, y, r);
    };
    p.gradients = [=, &b]() {
      Tensor rt = input(b, Shape{rows, c}, DType::F32, r);
      Tensor db = blank(b, Shape{c}, DType::F32);
      b.bias_backward(rt, db, false);
      return std::vector<Tensor>{rt, db};
    };
    return p;
  };
}

}  // namespace

void add_linalg_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads) {
  const std::vector<DType> halves = {DType::F16, DType::BF16};
  for (GemmDims d : kGemmDims)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        ops.push_back({gemm_name(d, ta, tb) + "_cf32", all_types(), gemm_case(d, ta, tb, false)});
        ops.push_back({gemm_name(d, ta, tb) + "_chalf", halves, gemm_case(d, ta, tb, true)});
        grads.push_back({gemm_name(d, ta, tb), gemm_grad(d, ta, tb)});
      }
  ops.push_back({"gemm_tf32_m64n48k256", f32_only(), gemm_tf32_case});
  ops.push_back({"conv2d_tf32_k4s2p1_n4h8w8c64k32", f32_only(), conv_tf32_case});
  for (const ConvCase& cc : conv_cases()) {
    ops.push_back({"conv2d_" + cc.name(), all_types(), conv_case(cc, true)});
    grads.push_back({"conv2d_" + cc.name(), conv_grad(cc)});
  }
  for (int c : kBiasChannels) {
    ops.push_back({"bias_r517c" + std::to_string(c), all_types(), bias_case(c)});
    grads.push_back({"bias_r517c" + std::to_string(c), bias_grad(c)});
  }
}

}  // namespace ampgan::testing
