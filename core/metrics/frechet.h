// Fréchet distance between Gaussians fitted to two feature sets: the Wasserstein-2 distance
// between N(mu1, S1) and N(mu2, S2) (Dowson & Landau 1982), as used by FID (Heusel et al. 2017).
// Here the features come from a classifier trained on the dataset's own labels, not Inception.
#pragma once

#include <cstdint>
#include <vector>

namespace ampgan::metrics {

struct FeatureStats {
  int dim = 0;
  int64_t count = 0;
  std::vector<double> mean;  // (dim)
  std::vector<double> cov;   // (dim, dim), row-major, unbiased (divided by count - 1)
};

// features: (n, dim) row-major, n >= 2. Double precision throughout; centred before the products,
// so a large common offset costs no accuracy.
FeatureStats feature_stats(const float* features, int64_t n, int dim);

// ||mu1 - mu2||^2 + Tr(S1 + S2 - 2 (S1 S2)^{1/2}), with Tr (S1 S2)^{1/2} computed as
// Tr (S1^{1/2} S2 S1^{1/2})^{1/2} from two symmetric eigendecompositions (LAPACK dsyev); tiny
// negative eigenvalues from rounding are clamped to 0, and so is the result (it is a squared
// distance). Throws ampgan::Error when the dimensions differ or the stats are malformed.
double frechet_distance(const FeatureStats& a, const FeatureStats& b);

}  // namespace ampgan::metrics
