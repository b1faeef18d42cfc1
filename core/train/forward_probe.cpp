#include "core/train/forward_probe.h"

#include <vector>

namespace ampgan {

namespace {
constexpr int kProbeSlots = 8;  // one GradStatSlots set per activation: found_inf first
}

ForwardProbe probe_forward(Trainer& t) {
  Backend& b = t.backend();
  b.synchronize();
  Sequential& g = t.generator();
  Sequential& d = t.discriminator();
  const int checks = static_cast<int>(g.size() + 2 * d.size());
  Tensor flags = b.empty(Shape{int64_t{kProbeSlots} * checks}, DType::F32, MemCategory::Workspace);
  Tensor unit = b.empty(Shape{2}, DType::F32, MemCategory::Workspace);
  const float one[2] = {1.0f, 0.0f};
  b.upload(unit, one, sizeof one);
  b.fill(flags, 0.0f);
  struct Where {
    std::string layer, type, input;
  };
  std::vector<Where> where;
  // Stream-ordered: each check reads its activation before a later pass overwrites the buffer.
  auto run = [&](Sequential& net, const char* name, const Tensor& in, const Tensor* labels,
                 const char* input) -> const Tensor* {
    Context ctx{b, net.precision(), Mode::Train, false, false, true, labels};
    // Through Sequential::forward, so layers kept in FP32 get their casts as in training.
    return &net.forward(ctx, in, [&](size_t i, const Tensor& y) {
      const int base = kProbeSlots * static_cast<int>(where.size());
      b.grad_stats({y}, unit, flags, GradStatSlots{base, base + 1, base + 2, base + 4, base + 6});
      where.push_back({std::string(name) + "." + std::to_string(i), net.layer(i).type(), input});
    });
  };
  const Tensor* fake = run(g, "G", t.last_latents(), t.last_fake_labels(), "latents");
  run(d, "D", t.last_real(), t.last_real_labels(), "real images");
  run(d, "D", *fake, t.last_fake_labels(), "generated images");
  // Applies nothing: the staged running statistics go back to the committed ones.
  g.reset_staged_running_stats(b);
  d.reset_staged_running_stats(b);
  std::vector<float> f(static_cast<size_t>(flags.numel()));
  b.download(flags, f.data(), flags.nbytes());
  ForwardProbe p;
  for (size_t k = 0; k < where.size(); ++k)
    if (f[kProbeSlots * k] != 0.0f) {
      p.found = true;
      p.layer = where[k].layer;
      p.type = where[k].type;
      p.input = where[k].input;
      break;
    }
  return p;
}

}  // namespace ampgan
