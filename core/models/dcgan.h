// The DCGAN generator and discriminator (Radford et al., 2016), layer for layer the models of
// the PyTorch peer (bench/peers/pytorch_dcgan.py), so that both run
// the same work and exported weights load into the peer. Width W, latent 100, L = log2(res) - 2:
//   G: ConvT(100 -> W*2^(L-1), k4 s1 p0) BN ReLU, (L-1) x [ConvT k4 s2 p1 halving, BN, ReLU],
//      ConvT(-> nc, k4 s2 p1), Tanh.
//   D: Conv(nc -> W, k4 s2 p1) LReLU(0.2), (L-1) x [Conv k4 s2 p1 doubling, BN, LReLU(0.2)],
//      Conv(-> 1, k4 s1 p0), Flatten (to an FP32 logit).
// Class-conditional (classes > 0): G's first ConvT is summed with a class embedding of its 4x4
// output ("embed.", core/nn/class_embedding.h: a one-hot class concatenated to z); D's logit
// gains the projection term <embed(y), h> over its last 4x4 feature map ("embed.",
// core/nn/projection.h).
#pragma once

#include <cstdint>
#include <memory>

#include "core/nn/layer.h"

namespace ampgan {

constexpr int kMaxClasses = 1000;  // ImageNet's; a one-hot batch of more would dwarf the model

struct DcganSpec {
  int res = 32;      // 32, 64 or 128
  int channels = 1;  // 1 (grey) or 3 (RGB)
  int width = 64;    // W above
  int latent = 100;
  int classes = 0;  // > 0: class-conditional on this many classes (both families)
  int blocks() const;
  void validate() const;  // throws Error naming the bad setting
};

std::unique_ptr<Sequential> make_generator(Backend& b, const DcganSpec& spec);
std::unique_ptr<Sequential> make_discriminator(Backend& b, const DcganSpec& spec);

// DCGAN initialisation: weights N(0, 0.02), batch-norm scale N(1, 0.02), shifts 0. Drawn from a
// Philox stream on the host, so every backend starts from the same weights.
void init_dcgan(Backend& b, Sequential& net, uint64_t seed, uint64_t stream);

}  // namespace ampgan
