#include "core/models/dcgan.h"

#include <vector>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/nn/activation.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/class_embedding.h"
#include "core/nn/conv2d.h"
#include "core/nn/conv_transpose2d.h"
#include "core/nn/flatten.h"
#include "core/nn/projection.h"
#include "core/nn/residual.h"

namespace ampgan {

int DcganSpec::blocks() const {
  int b = 0;
  for (int r = res; r > 4; r /= 2) ++b;
  return b;
}

void DcganSpec::validate() const {
  if (res != 32 && res != 64 && res != 128)
    throw Error("resolution " + std::to_string(res) + " is not supported", "--res",
                "use 32, 64 or 128 (the DCGAN doubles 4x4 up to the image size)");
  if (channels != 1 && channels != 3)
    throw Error("images must have 1 or 3 channels, not " + std::to_string(channels), "--nc", "use 1 (grey) or 3 (RGB)");
  if (width < 1 || width > 1024)
    throw Error("width " + std::to_string(width) + " is out of range", "--width", "use 1 to 1024 (DCGAN uses 64)");
  if (latent < 1) throw Error("latent size must be positive", "latent");
  if (classes < 0 || classes > kMaxClasses)
    throw Error("a conditional model of " + std::to_string(classes) + " classes is not supported", "--conditional",
                "use a dataset of 2 to " + std::to_string(kMaxClasses) + " classes");
}

namespace {
std::string prefix(const Sequential& s) { return std::to_string(s.size()) + "."; }
}  // namespace

std::unique_ptr<Sequential> make_generator(Backend& b, const DcganSpec& spec) {
  spec.validate();
  auto g = std::make_unique<Sequential>();
  const int blocks = spec.blocks();
  int ch = spec.width << (blocks - 1);
  if (spec.classes > 0) {
    Sequential first, embed;
    first.add(std::make_unique<ConvTranspose2d>(b, prefix(*g), spec.latent, ch, 4, 1, 0));
    embed.add(std::make_unique<ClassEmbedding>(b, "embed.", spec.classes, Shape{4, 4, ch}));
    g->add(std::make_unique<Residual>(std::move(first), std::move(embed)));
  } else {
    g->add(std::make_unique<ConvTranspose2d>(b, prefix(*g), spec.latent, ch, 4, 1, 0));
  }
  g->add(std::make_unique<BatchNorm2d>(b, prefix(*g), ch));
  g->add(std::make_unique<Activation>(ew::Act::ReLU));
  for (int i = 0; i < blocks - 1; ++i) {
    g->add(std::make_unique<ConvTranspose2d>(b, prefix(*g), ch, ch / 2, 4, 2, 1));
    g->add(std::make_unique<BatchNorm2d>(b, prefix(*g), ch / 2));
    g->add(std::make_unique<Activation>(ew::Act::ReLU));
    ch /= 2;
  }
  g->add(std::make_unique<ConvTranspose2d>(b, prefix(*g), ch, spec.channels, 4, 2, 1));
  g->add(std::make_unique<Activation>(ew::Act::Tanh));
  return g;
}

std::unique_ptr<Sequential> make_discriminator(Backend& b, const DcganSpec& spec) {
  spec.validate();
  auto d = std::make_unique<Sequential>();
  const int blocks = spec.blocks();
  int ch = spec.width;
  d->add(std::make_unique<Conv2d>(b, prefix(*d), spec.channels, ch, 4, 2, 1, false));
  d->add(std::make_unique<Activation>(ew::Act::LeakyReLU, 0.2f));
  for (int i = 0; i < blocks - 1; ++i) {
    d->add(std::make_unique<Conv2d>(b, prefix(*d), ch, ch * 2, 4, 2, 1, false));
    d->add(std::make_unique<BatchNorm2d>(b, prefix(*d), ch * 2));
    d->add(std::make_unique<Activation>(ew::Act::LeakyReLU, 0.2f));
    ch *= 2;
  }
  if (spec.classes > 0) {
    Sequential head, projection;
    head.add(std::make_unique<Conv2d>(b, prefix(*d), ch, 1, 4, 1, 0, false));
    projection.add(std::make_unique<Projection>(b, "embed.", spec.classes, int64_t{4} * 4 * ch));
    d->add(std::make_unique<Residual>(std::move(head), std::move(projection)));
  } else {
    d->add(std::make_unique<Conv2d>(b, prefix(*d), ch, 1, 4, 1, 0, false));
  }
  d->add(std::make_unique<Flatten>(true));
  return d;
}

void init_dcgan(Backend& b, Sequential& net, uint64_t seed, uint64_t stream) {
  uint64_t index = 0;
  for (Parameter* p : net.parameters()) {
    std::vector<float> v(static_cast<size_t>(p->shape.numel()));
    const bool is_bias = p->name.size() >= 4 && p->name.compare(p->name.size() - 4, 4, "bias") == 0;
    const bool is_bn_scale = p->fp32_only && !is_bias;
    for (float& x : v) {
      const float n = philox_normal(seed, stream, index++);
      x = is_bias ? 0.0f : (is_bn_scale ? 1.0f + 0.02f * n : 0.02f * n);
    }
    b.upload(p->master, v.data(), v.size() * sizeof(float));
    p->refresh_working(b);
  }
}

}  // namespace ampgan
