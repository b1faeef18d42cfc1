// CPU backend: spectral norm's power iteration, normalisation and backward pass, in FP32
// storage with double accumulation whatever the training precision: sigma of a large weight
// overflows FP16 (65504) and its reciprocal underflows it, so it never leaves FP32 here.
// The CUDA versions are gpu/kernels_spectral_norm.cu.
#include <cmath>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/backend/spectral_norm.h"
#include "core/common/parallel.h"

namespace ampgan {

namespace {

// x /= max(||x||, eps), in place.
void normalize(float* x, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const double inv = 1.0 / std::max(std::sqrt(ss), kSpectralNormEps);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * inv);
}

// out (rows) = W v, each row summed in double in column order.
void matvec(const float* w, const float* v, const SnMatrix& m, std::vector<double>& out) {
  out.assign(static_cast<size_t>(m.rows), 0.0);
  parallel_for(m.rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      double s = 0;
      for (int64_t j = 0; j < m.cols; ++j) s += double(w[i * m.cols + j]) * v[j];
      out[static_cast<size_t>(i)] = s;
    }
  });
}

}  // namespace

void CpuBackend::spectral_norm_power_iteration(const Tensor& w, Tensor& u, Tensor& v) {
  const SnMatrix m = sn_matrix(w, u, v, "spectral_norm_power_iteration");
  const float* W = w.as<float>();
  float* pu = u.as<float>();
  float* pv = v.as<float>();
  // v = W^T u: columns summed over rows in row order (double).
  std::vector<double> acc(static_cast<size_t>(m.cols), 0.0);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) acc[static_cast<size_t>(j)] += double(W[i * m.cols + j]) * pu[i];
  for (int64_t j = 0; j < m.cols; ++j) pv[j] = static_cast<float>(acc[static_cast<size_t>(j)]);
  normalize(pv, m.cols);
  std::vector<double> wv;
  matvec(W, pv, m, wv);
  for (int64_t i = 0; i < m.rows; ++i) pu[i] = static_cast<float>(wv[static_cast<size_t>(i)]);
  normalize(pu, m.rows);
}

void CpuBackend::spectral_norm_forward(const Tensor& w, const Tensor& u, const Tensor& v, Tensor& sigma, Tensor& w_sn) {
  const SnMatrix m = check_sn_forward(w, u, v, sigma, w_sn);
  const float* W = w.as<float>();
  const float* pu = u.as<float>();
  std::vector<double> wv;
  matvec(W, v.as<float>(), m, wv);
  double s = 0;
  for (int64_t i = 0; i < m.rows; ++i) s += double(pu[i]) * wv[static_cast<size_t>(i)];
  const float sig = static_cast<float>(s);
  sigma.as<float>()[0] = sig;
  dispatch_dtype(w_sn.dtype(), [&](auto tag) {
    using S = decltype(tag);
    auto* out = w_sn.as<typename S::T>();
    parallel_for(w.numel(), int64_t{1} << 15, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) out[i] = S::store(W[i] / sig);
    });
  });
}

void CpuBackend::spectral_norm_backward(const Tensor& g, const Tensor& w, const Tensor& u, const Tensor& v,
                                        const Tensor& sigma, Tensor& dw, bool accumulate) {
  const SnMatrix m = check_sn_backward(g, w, u, v, sigma, dw);
  const float* W = w.as<float>();
  const float* pu = u.as<float>();
  const float* pv = v.as<float>();
  const float sig = sigma.as<float>()[0];
  std::vector<float> gf(static_cast<size_t>(g.numel()));
  widen(g, 0, g.numel(), gf.data());
  // <g, W / sigma>, in double in element order (a scaled-gradient inf or NaN carries through).
  double dot = 0;
  for (int64_t i = 0; i < w.numel(); ++i) dot += double(gf[static_cast<size_t>(i)]) * (W[i] / sig);
  const float c = static_cast<float>(dot);
  dispatch_dtype(dw.dtype(), [&](auto tag) {
    using S = decltype(tag);
    auto* out = dw.as<typename S::T>();
    parallel_for(m.rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = 0; j < m.cols; ++j) {
          const int64_t k = i * m.cols + j;
          const float d = (gf[static_cast<size_t>(k)] - c * pu[i] * pv[j]) / sig;
          out[k] = S::store(accumulate ? S::load(out[k]) + d : d);
        }
    });
  });
}

}  // namespace ampgan
