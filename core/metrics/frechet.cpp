// Fréchet (Wasserstein-2) distance between Gaussian fits of two feature sets; see frechet.h.
#include "core/metrics/frechet.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.h"
#include "core/common/parallel.h"

// LAPACK symmetric eigensolver; Debian's OpenBLAS exports it (it bundles LAPACK).
extern "C" void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                       double* work, const int* lwork, int* info);

namespace ampgan::metrics {

namespace {

constexpr int64_t kRowsPerChunk = 1024;  // fixed, so sums do not depend on the thread count

// Eigenvalues (ascending) and, with vectors, eigenvectors of the symmetric (n, n) matrix a, which
// is overwritten: afterwards a[i * n + k] is component k of eigenvector i (LAPACK's column i).
std::vector<double> symmetric_eig(std::vector<double>& a, int n, bool vectors) {
  std::vector<double> w(n);
  const char jobz = vectors ? 'V' : 'N', uplo = 'U';
  int info = 0, lwork = -1;
  double query = 0;
  dsyev_(&jobz, &uplo, &n, a.data(), &n, w.data(), &query, &lwork, &info);
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(lwork);
  if (info == 0) dsyev_(&jobz, &uplo, &n, a.data(), &n, w.data(), work.data(), &lwork, &info);
  if (info != 0)
    throw Error("Fréchet distance: the symmetric eigensolver (LAPACK dsyev) failed",
                "info=" + std::to_string(info) + ", dim=" + std::to_string(n),
                "the feature covariance may contain NaN or infinity");
  return w;
}

void check_stats(const FeatureStats& s, const char* name) {
  const size_t d = s.dim > 0 ? size_t(s.dim) : 0;
  if (s.dim <= 0 || s.mean.size() != d || s.cov.size() != d * d)
    throw Error("Fréchet distance: malformed feature statistics", name,
                "build them with feature_stats(features, n, dim)");
  for (double x : s.mean)
    if (!std::isfinite(x)) throw Error("Fréchet distance: the feature mean is not finite", name);
  for (double x : s.cov)
    if (!std::isfinite(x)) throw Error("Fréchet distance: the feature covariance is not finite", name);
}

}  // namespace

FeatureStats feature_stats(const float* features, int64_t n, int dim) {
  if (dim < 1) throw Error("feature statistics: dim must be at least 1", "dim=" + std::to_string(dim));
  if (n < 2)
    throw Error("feature statistics need at least 2 samples for a covariance", "n=" + std::to_string(n),
                "evaluate on more images");
  if (!features) throw Error("feature statistics: null feature pointer", "features");
  FeatureStats s;
  s.dim = dim;
  s.count = n;
  s.mean.assign(dim, 0.0);
  s.cov.assign(size_t(dim) * dim, 0.0);

  // Mean: per-chunk partial sums added in chunk order.
  const int64_t chunks = chunk_count(n, kRowsPerChunk);
  std::vector<double> partial(size_t(chunks) * dim, 0.0);
  parallel_chunks(chunks, [&](int64_t chunk) {
    double* p = partial.data() + chunk * dim;
    const int64_t r1 = std::min(n, (chunk + 1) * kRowsPerChunk);
    for (int64_t r = chunk * kRowsPerChunk; r < r1; ++r)
      for (int k = 0; k < dim; ++k) p[k] += features[r * dim + k];
  });
  for (int64_t chunk = 0; chunk < chunks; ++chunk)
    for (int k = 0; k < dim; ++k) s.mean[k] += partial[chunk * dim + k];
  for (int k = 0; k < dim; ++k) s.mean[k] /= static_cast<double>(n);

  // Covariance: sum of (x - mean)(x - mean)^T over centred row blocks (upper triangle, DSYRK).
  std::vector<double> centred(size_t(std::min(n, kRowsPerChunk)) * dim);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t r0 = chunk * kRowsPerChunk, rows = std::min(n, r0 + kRowsPerChunk) - r0;
    for (int64_t r = 0; r < rows; ++r)
      for (int k = 0; k < dim; ++k) centred[r * dim + k] = features[(r0 + r) * dim + k] - s.mean[k];
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, dim, static_cast<int>(rows), 1.0, centred.data(), dim, 1.0,
                s.cov.data(), dim);
  }
  const double inv = 1.0 / static_cast<double>(n - 1);
  for (int i = 0; i < dim; ++i)
    for (int j = i; j < dim; ++j) {
      const double v = s.cov[size_t(i) * dim + j] * inv;
      s.cov[size_t(i) * dim + j] = v;
      s.cov[size_t(j) * dim + i] = v;
    }
  return s;
}

double frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  check_stats(a, "first set");
  check_stats(b, "second set");
  if (a.dim != b.dim)
    throw Error("Fréchet distance: feature dimensions differ", std::to_string(a.dim) + " vs " + std::to_string(b.dim),
                "compute both statistics with the same feature extractor");
  const int n = a.dim;
  const size_t nn = size_t(n) * n;

  double mean_term = 0, trace = 0;
  for (int k = 0; k < n; ++k) {
    const double d = a.mean[k] - b.mean[k];
    mean_term += d * d;
    trace += a.cov[size_t(k) * n + k] + b.cov[size_t(k) * n + k];
  }

  // S1^{1/2} = V diag(sqrt(l)) V^T = B^T B with row i of B = l_i^{1/4} v_i.
  std::vector<double> v = a.cov;
  const std::vector<double> l = symmetric_eig(v, n, true);
  for (int i = 0; i < n; ++i) {
    const double s = std::sqrt(std::sqrt(std::max(0.0, l[i])));  // rounding can make l_i slightly < 0
    for (int k = 0; k < n; ++k) v[size_t(i) * n + k] *= s;
  }
  std::vector<double> root(nn), tmp(nn), m(nn);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, n, 1.0, v.data(), n, v.data(), n, 0.0, root.data(), n);
  // M = S1^{1/2} S2 S1^{1/2}: symmetric PSD and similar to S1 S2, so Tr (S1 S2)^{1/2} = sum sqrt(eig M).
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, root.data(), n, b.cov.data(), n, 0.0, tmp.data(),
              n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, tmp.data(), n, root.data(), n, 0.0, m.data(), n);
  for (int i = 0; i < n; ++i)  // remove rounding asymmetry before the symmetric solver
    for (int j = i + 1; j < n; ++j) {
      const double s = 0.5 * (m[size_t(i) * n + j] + m[size_t(j) * n + i]);
      m[size_t(i) * n + j] = m[size_t(j) * n + i] = s;
    }
  const std::vector<double> mu = symmetric_eig(m, n, false);
  double trace_sqrt = 0;
  for (double x : mu) trace_sqrt += std::sqrt(std::max(0.0, x));

  return std::max(0.0, mean_term + trace - 2.0 * trace_sqrt);
}

}  // namespace ampgan::metrics
