#include "core/models/resnet.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/models/dcgan.h"
#include "core/nn/activation.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/conditional_batchnorm2d.h"
#include "core/nn/conv2d.h"
#include "core/nn/flatten.h"
#include "core/nn/linear.h"
#include "core/nn/projection.h"
#include "core/nn/resample.h"
#include "core/nn/residual.h"

namespace ampgan {

void ResnetSpec::validate() const {
  if (res != 32 && res != 64 && res != 128)
    throw Error("resolution " + std::to_string(res) + " is not supported by the ResNet model", "--res",
                "use 32, 64 or 128");
  if (channels != 1 && channels != 3)
    throw Error("images must have 1 or 3 channels, not " + std::to_string(channels), "--nc", "use 1 (grey) or 3 (RGB)");
  if (width < 1 || width > 256)
    throw Error("width " + std::to_string(width) + " is out of range for the ResNet model", "--width",
                "use 1 to 256 (SNGAN uses 64 at 32 px; BigGAN 64 at 64 and 128 px)");
  if (latent < 1) throw Error("latent size must be positive", "latent");
  DcganSpec{.classes = classes}.validate();  // the same class limits
}

namespace {

struct Block {
  int in, out;
  bool resample;  // up (G) or down (D)
};

std::vector<Block> g_blocks(const ResnetSpec& s) {
  const int w = s.width;
  if (s.res == 32) return {{4 * w, 4 * w, true}, {4 * w, 4 * w, true}, {4 * w, 4 * w, true}};
  std::vector<int> outs = {16 * w, 8 * w, 4 * w, 2 * w};
  if (s.res == 128) outs.push_back(w);
  std::vector<Block> b;
  int in = 16 * w;
  for (int o : outs) {
    b.push_back({in, o, true});
    in = o;
  }
  return b;
}

std::vector<Block> d_blocks(const ResnetSpec& s) {
  const int w = s.width, nc = s.channels;
  if (s.res == 32) return {{nc, 2 * w, true}, {2 * w, 2 * w, true}, {2 * w, 2 * w, false}, {2 * w, 2 * w, false}};
  std::vector<Block> b = {{nc, w, true}, {w, 2 * w, true}, {2 * w, 4 * w, true}, {4 * w, 8 * w, true}};
  if (s.res == 128) b.push_back({8 * w, 16 * w, true});
  b.push_back({s.res == 128 ? 16 * w : 8 * w, 16 * w, false});
  return b;
}

}  // namespace

int resnet_g_base_channels(const ResnetSpec& spec) { return g_blocks(spec).front().in; }
int resnet_d_first_channels(const ResnetSpec& spec) { return d_blocks(spec).front().out; }

std::unique_ptr<Sequential> make_resnet_generator(Backend& b, const ResnetSpec& spec) {
  spec.validate();
  const std::vector<Block> blocks = g_blocks(spec);
  const int c0 = blocks.front().in;
  auto bn = [&](const std::string& name, int ch) -> std::unique_ptr<Layer> {
    if (spec.classes > 0) return std::make_unique<ConditionalBatchNorm2d>(b, name, ch, spec.classes);
    return std::make_unique<BatchNorm2d>(b, name, ch);
  };
  auto g = std::make_unique<Sequential>();
  g->add(std::make_unique<Flatten>(false));  // z arrives as (n, 1, 1, latent)
  g->add(std::make_unique<Linear>(b, "linear.", spec.latent, 4 * 4 * c0));
  g->add(std::make_unique<Unflatten>(4, 4, c0));
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& k = blocks[i];
    const std::string p = "blocks." + std::to_string(i) + ".";
    Sequential main, sc;
    main.add(bn(p + "bn1.", k.in));
    main.add(std::make_unique<Activation>(ew::Act::ReLU));
    main.add(std::make_unique<Upsample2x>());
    main.add(std::make_unique<Conv2d>(b, p + "conv1.", k.in, k.out, 3, 1, 1, true));
    main.add(bn(p + "bn2.", k.out));
    main.add(std::make_unique<Activation>(ew::Act::ReLU));
    main.add(std::make_unique<Conv2d>(b, p + "conv2.", k.out, k.out, 3, 1, 1, true));
    sc.add(std::make_unique<Upsample2x>());
    sc.add(std::make_unique<Conv2d>(b, p + "shortcut.", k.in, k.out, 1, 1, 0, true));
    g->add(std::make_unique<Residual>(std::move(main), std::move(sc)));
  }
  const int last = blocks.back().out;
  g->add(std::make_unique<BatchNorm2d>(b, "bn.", last));
  g->add(std::make_unique<Activation>(ew::Act::ReLU));
  g->add(std::make_unique<Conv2d>(b, "conv_out.", last, spec.channels, 3, 1, 1, true));
  g->add(std::make_unique<Activation>(ew::Act::Tanh));
  return g;
}

std::unique_ptr<Sequential> make_resnet_discriminator(Backend& b, const ResnetSpec& spec, uint64_t seed,
                                                      uint64_t stream) {
  spec.validate();
  const std::vector<Block> blocks = d_blocks(spec);
  uint64_t sn_stream = stream;  // one Philox stream per normalised weight
  auto sn_conv = [&](const std::string& name, int in, int out, int k) {
    auto c = std::make_unique<Conv2d>(b, name, in, out, k, 1, k / 2, true);
    c->enable_spectral_norm(b, seed, sn_stream++);
    return c;
  };
  auto d = std::make_unique<Sequential>();
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& k = blocks[i];
    const std::string p = "blocks." + std::to_string(i) + ".";
    Sequential main, sc;
    if (i > 0) main.add(std::make_unique<Activation>(ew::Act::ReLU));
    main.add(sn_conv(p + "conv1.", k.in, k.out, 3));
    main.add(std::make_unique<Activation>(ew::Act::ReLU));
    main.add(sn_conv(p + "conv2.", k.out, k.out, 3));
    if (k.resample) main.add(std::make_unique<AvgPool2x>());
    if (k.in != k.out || k.resample) {
      sc.add(sn_conv(p + "shortcut.", k.in, k.out, 1));
      if (k.resample) sc.add(std::make_unique<AvgPool2x>());
    }
    d->add(std::make_unique<Residual>(std::move(main), std::move(sc)));
  }
  const int last = blocks.back().out;
  d->add(std::make_unique<Activation>(ew::Act::ReLU));
  d->add(std::make_unique<GlobalSumPool>());
  auto head = std::make_unique<Linear>(b, "linear.", last, 1);
  head->enable_spectral_norm(b, seed, sn_stream++);
  if (spec.classes > 0) {
    Sequential unconditional, projection;
    unconditional.add(std::move(head));
    auto embed = std::make_unique<Projection>(b, "embed.", spec.classes, last);
    embed->enable_spectral_norm(b, seed, sn_stream++);
    projection.add(std::move(embed));
    d->add(std::make_unique<Residual>(std::move(unconditional), std::move(projection)));
  } else {
    d->add(std::move(head));
  }
  d->add(std::make_unique<Flatten>(true));  // the logit leaves half precision here, as in the DCGAN
  return d;
}

void init_resnet(Backend& b, Sequential& net, uint64_t seed, uint64_t stream) {
  uint64_t index = 0;
  for (Parameter* p : net.parameters()) {
    std::vector<float> v(static_cast<size_t>(p->shape.numel()));
    const std::string& n = p->name;
    const bool is_bias = n.size() >= 4 && n.compare(n.size() - 4, 4, "bias") == 0;
    if (n.find("embed_") != std::string::npos) {  // conditional batch norm's class terms
      for (float& x : v) x = 0.0f;
    } else if (p->fp32_only) {  // batch norm: scale 1, shift 0
      for (float& x : v) x = is_bias ? 0.0f : 1.0f;
    } else if (is_bias) {
      for (float& x : v) x = 0.0f;
    } else {
      // KRSC / (out, in): fan_out = out x kernel, fan_in = everything but out.
      const double fan_in = double(p->shape.numel()) / p->shape[0];
      const double fan_out = p->shape.rank == 4 ? double(p->shape[0]) * p->shape[1] * p->shape[2] : double(p->shape[0]);
      const float sd = static_cast<float>(std::sqrt(2.0 / (fan_in + fan_out)));
      for (float& x : v) x = sd * philox_normal(seed, stream, index++);
    }
    b.upload(p->master, v.data(), v.size() * sizeof(float));
    p->refresh_working(b);
  }
}

}  // namespace ampgan
