#include "core/metrics/diversity.h"

#include <algorithm>
#include <cmath>

namespace ampgan::metrics {

double mean_pairwise_distance(const float* images, int n, size_t image_size, int max_images) {
  const int m = std::min(n, max_images);
  if (m < 2) return 0.0;
  double sum = 0.0;
  for (int i = 0; i < m; ++i)
    for (int j = i + 1; j < m; ++j) {
      const float* a = images + static_cast<size_t>(i) * image_size;
      const float* b = images + static_cast<size_t>(j) * image_size;
      double sq = 0.0;
      for (size_t k = 0; k < image_size; ++k) {
        const double d = static_cast<double>(a[k]) - b[k];
        sq += d * d;
      }
      sum += std::sqrt(sq);
    }
  return sum / (0.5 * m * (m - 1));
}

}  // namespace ampgan::metrics
