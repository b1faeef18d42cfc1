// Sample diversity: how far apart a set of images lie from one another, relative to the real
// data. A generator in mode collapse draws (nearly) the same image for every latent, so its
// samples' mean pairwise distance falls towards 0 while the real images' stays put; the ratio is
// the "does not collapse" measure the evaluator reports beside SWD (which mixes diversity with
// fidelity).
#pragma once

#include <cstddef>

namespace ampgan::metrics {

// Mean Euclidean distance over all pairs of the first min(n, max_images) images, each
// image_size floats. 0 for fewer than two images.
double mean_pairwise_distance(const float* images, int n, size_t image_size, int max_images = 64);

}  // namespace ampgan::metrics
