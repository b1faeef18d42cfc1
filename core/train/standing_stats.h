// BigGAN's "standing statistics" (Brock et al. 2019, appendix C): batch norm in a generator made
// for sampling normalises with the average statistics of many batches of its own output, taken
// with the weights in use, instead of the running averages training kept. Those averages trail
// the weights (momentum 0.1), and belong to the trained weights, not the EMA generator's, so an
// EMA generator on running averages makes washed-out, low-contrast images where the same weights
// on batch statistics make vivid ones; standing statistics give each image batch statistics'
// look while it still depends on its own latent only.
#pragma once

#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

class Sequential;

// For its lifetime, every BatchNorm2d of `net` (nested blocks included) holds the average of the
// batch statistics of net's forward passes on `latents` (nz values each, `batch` a forward pass,
// whole batches only), computed in dtype dt. Its destructor puts back the running averages,
// momentum and batch counts, so that training and checkpoints never see them.
class StandingStats {
 public:
  // classes > 0: a class-conditional generator, latent i drawn as class i % classes.
  StandingStats(Backend& b, Sequential& net, DType dt, const std::vector<float>& latents, int nz, int batch,
                int classes = 0);
  ~StandingStats();
  StandingStats(const StandingStats&) = delete;
  StandingStats& operator=(const StandingStats&) = delete;

 private:
  void restore();

  Backend& b_;
  Sequential& net_;
  std::vector<Tensor> saved_;  // the running averages, in net.buffers() order
  std::vector<float> momentum_;
  std::vector<int64_t> tracked_;
};

}  // namespace ampgan
