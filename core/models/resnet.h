// The ResNet GAN (SNGAN, Miyato et al. 2018; BigGAN, Brock et al. 2019; unconditional), NHWC,
// width W, latent 128, images res x res x nc:
//   G: z -> Linear(128 -> 4*4*c0) -> (4, 4, c0) -> up-blocks to res -> BN, ReLU, conv3x3 -> nc, Tanh
//      up-block(in -> out): main BN, ReLU, up x2, conv3x3 (in -> out), BN, ReLU, conv3x3 (out -> out);
//                           shortcut up x2, conv1x1 (in -> out)
//   D: down-blocks -> ReLU -> global sum pool -> Linear(c -> 1) -> FP32 logit
//      block(in -> out, down): main [ReLU], conv3x3 (in -> out), ReLU, conv3x3 (out -> out), [avg-pool];
//                              shortcut conv1x1 + [avg-pool] when in != out or down, else identity;
//      the first block without its leading ReLU (SNGAN's "optimized block").
//   Spectral norm on every D weight (core/nn/spectral_norm.h). Every conv and linear has a bias.
// Channel plans (multiples of W):
//   res 32 (SNGAN's CIFAR model): G c0 = 4W and 3 up-blocks 4W -> 4W (W = 64 gives SNGAN's 256);
//                                 D blocks 2W: nc -> 2W down, 2W -> 2W down, 2W -> 2W, 2W -> 2W.
//   res 64 (BigGAN):  G c0 = 16W, up-blocks out 16W, 8W, 4W, 2W (... then W at res 128);
//   res 128 (BigGAN): G c0 = 16W, up-blocks out 16W, 8W, 4W, 2W, W;
//                     D blocks out W, 2W, 4W, 8W, 16W (all down) then 16W -> 16W not down (res 64:
//                     out W, 2W, 4W, 8W down, then 16W not down).
// Class-conditional (classes > 0, SNGAN's and BigGAN's conditional models): every batch norm of
// G's up-blocks is class-conditional (core/nn/conditional_batchnorm2d.h; the last one stays
// plain), and D's logit gains the projection term <embed(y), h> on the pooled features
// ("embed.", core/nn/projection.h), spectrally normalised.
// With W = 64 at res 32, nc = 3: G 4,276,739 and D 1,053,825 parameters, SNGAN's CIFAR-10 sizes.
#pragma once

#include <cstdint>
#include <memory>

#include "core/nn/layer.h"

namespace ampgan {

struct ResnetSpec {
  int res = 32;
  int channels = 3;
  int width = 64;
  int latent = 128;
  int classes = 0;        // > 0: class-conditional
  void validate() const;  // throws Error naming the bad setting
};

// G's first feature map's channels (c0) and D's first block's output channels.
int resnet_g_base_channels(const ResnetSpec& spec);
int resnet_d_first_channels(const ResnetSpec& spec);

std::unique_ptr<Sequential> make_resnet_generator(Backend& b, const ResnetSpec& spec);
// Spectral norm on every weight, u and v drawn from Philox (seed, stream).
std::unique_ptr<Sequential> make_resnet_discriminator(Backend& b, const ResnetSpec& spec, uint64_t seed,
                                                      uint64_t stream);

// Weights N(0, sqrt(2 / (fan_in + fan_out))); the conditional batch norms' class gains and biases 0 (Xavier's normal
// variance, as SNGAN's initialiser in spirit; BigGAN uses orthogonal), biases 0, batch-norm scale 1 and shift 0.
void init_resnet(Backend& b, Sequential& net, uint64_t seed, uint64_t stream);

}  // namespace ampgan
