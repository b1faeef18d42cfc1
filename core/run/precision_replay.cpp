#include "core/run/precision_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/backend/elementwise.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/data/batch_loader.h"
#include "core/data/image_set.h"
#include "core/nn/class_embedding.h"
#include "core/run/checkpoint.h"
#include "core/run/run_folder.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

// Unit roundoff of the compute formats: 2^-11 (FP16's 10 stored mantissa bits), 2^-8 (BF16's 7).
double unit_roundoff(Precision p) { return p == Precision::BF16 ? 0x1p-8 : 0x1p-11; }

// Activations: each layer rounds its inputs and output once and accumulates in FP32, and the
// errors of the layers before it arrive with its input: 64 unit roundoffs (FP16 3.1%, BF16 25%)
// leave room for a network's depth, and an overflow or a saturating layer is far beyond it.
double activation_tolerance(Precision p) { return 64 * unit_roundoff(p); }
// A gradient's largest magnitude comes out of the whole backward pass: 256 unit roundoffs, at most
// one half (FP16 12.5%, BF16 50%).
double gradient_tolerance(Precision p) { return std::min(0.5, 256 * unit_roundoff(p)); }

// The newest checkpoint of the run before `step`; empty when there is none.
fs::path checkpoint_before(const fs::path& run_dir, int64_t step) {
  const fs::path dir = RunFolder(run_dir).checkpoints_dir();
  fs::path best;
  int64_t best_step = -1;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::error_code ec2;
      if (!e.is_regular_file(ec2)) continue;
      const int64_t s = step_of_checkpoint_name(e.path());
      if (s >= 0 && s < step && s > best_step) best_step = s, best = e.path();
    }
  return best;
}

std::vector<float> host_f32(Backend& b, const Tensor& t) {
  Tensor f = t;
  if (t.dtype() != DType::F32) {
    f = b.empty(t.shape(), DType::F32, MemCategory::Workspace);
    b.cast(t, f);
  }
  std::vector<float> v(static_cast<size_t>(f.numel()));
  b.download(f, v.data(), f.nbytes());
  return v;
}

struct Activation {
  std::string layer, type, input;
  std::vector<float> value;
};

// The step's forward passes, layer by layer, on the trainer's current weights (applies nothing:
// the staged batch-norm statistics are reset). real: one batch, host FP32 NHWC.
std::vector<Activation> forward_layers(Trainer& t, const float* real, const std::vector<int32_t>& real_classes,
                                       int64_t step) {
  Backend& b = t.backend();
  const TrainerConfig& c = t.config();
  const DType dt = compute_dtype(t.precision());
  Tensor counter = b.empty(Shape{2}, DType::F32, MemCategory::Workspace);
  float cv[2];
  ew::count_store(cv, static_cast<uint64_t>(step - 1));  // the counter step N's latents are drawn at
  b.upload(counter, cv, sizeof cv);
  Tensor z = b.empty(Shape{c.batch, 1, 1, c.model.latent}, dt, MemCategory::Workspace);
  b.fill_normal(z, c.seed, rng_stream::kTrainLatentBase, counter, 1.0f);
  const Shape image{c.batch, c.model.res, c.model.res, c.model.channels};
  Tensor x32 = b.empty(image, DType::F32, MemCategory::Workspace);
  b.upload(x32, real, x32.nbytes());
  Tensor x = x32;
  if (dt != DType::F32) {
    x = b.empty(image, dt, MemCategory::Workspace);
    b.cast(x32, x);
  }
  // A conditional model's classes: the batch's, and those step N generates (its last D step's).
  Tensor real_labels, fake_labels;
  if (c.model.classes > 0) {
    real_labels = b.empty(Shape{c.batch, c.model.classes}, DType::F32, MemCategory::Workspace);
    fake_labels = b.empty(Shape{c.batch, c.model.classes}, DType::F32, MemCategory::Workspace);
    upload_one_hot(b, real_labels, real_classes.empty() ? nullptr : real_classes.data(), c.model.classes);
    upload_one_hot(b, fake_labels, t.fake_classes(step - 1, c.n_dis - 1).data(), c.model.classes);
  }
  const Tensor* rl = real_labels.defined() ? &real_labels : nullptr;
  const Tensor* fl = fake_labels.defined() ? &fake_labels : nullptr;
  std::vector<Activation> out;
  auto run = [&](Sequential& net, const char* name, const Tensor& in, const Tensor* labels,
                 const char* input) -> const Tensor& {
    Context ctx{b, net.precision(), Mode::Train, false, false, true, labels};
    return net.forward(ctx, in, [&](size_t i, const Tensor& y) {
      out.push_back({std::string(name) + "." + std::to_string(i), net.layer(i).type(), input, host_f32(b, y)});
    });
  };
  const Tensor& fake = run(t.generator(), "G", z, fl, "latents");
  run(t.discriminator(), "D", x, rl, "real images");
  run(t.discriminator(), "D", fake, fl, "generated images");
  t.generator().reset_staged_running_stats(b);
  t.discriminator().reset_staged_running_stats(b);
  return out;
}

double rel_error(const std::vector<float>& a, const std::vector<float>& b, uint64_t* nonfinite) {
  double num = 0, den = 0;
  *nonfinite = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i])) {
      ++*nonfinite;
      continue;
    }
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::unique_ptr<Backend> make(const ReplayOptions& opt, const std::string& which) {
  return opt.make_backend ? opt.make_backend() : create_backend(which);
}

}  // namespace

ReplayResult replay_step(const fs::path& run_dir, int64_t step, const ReplayOptions& opt) {
  ReplayResult r;
  r.step = step;
  const fs::path ckpt = checkpoint_before(run_dir, step);
  // Without a checkpoint before step N the replay starts from the run's initialisation (its
  // config.json and seed: the weights of step 0 are a function of them), as most short runs need:
  // they write their first checkpoint at --checkpoint-every (1000) or when they stop.
  CheckpointInfo info;
  if (!ckpt.empty()) {
    r.checkpoint = ckpt.string();
    read_checkpoint(ckpt, &info);
  } else {
    r.checkpoint = "the run's initialisation (" + (RunFolder(run_dir).dir() / "config.json").string() + ")";
    r.from_start = true;
    info.config = RunFolder(run_dir).read_config();
    info.precision = info.config.precision;
  }
  const std::string source = ckpt.empty() ? (RunFolder(run_dir).dir() / "config.json").string() : ckpt.string();
  if (!is_mixed(info.precision))
    throw Error(std::string("the run trained in ") + precision_name(info.precision) + " at step " +
                    std::to_string(info.step) + ": there is no half precision to compare with FP32",
                source, "replay a step of a fp16 or bf16 run");
  r.checkpoint_step = info.step;
  r.precision = info.precision;
  r.activation_tolerance = activation_tolerance(info.precision);
  r.gradient_tolerance = gradient_tolerance(info.precision);
  const RunConfig& cfg = info.config;
  data::LoadOptions lo;
  lo.res = cfg.res;
  lo.channels = ckpt.empty() ? cfg.channels : info.channels;
  lo.synthetic_count = cfg.synthetic_count;
  lo.seed = cfg.seed;
  const data::ImageSet set = data::load_dataset(cfg.dataset, lo);
  if (ckpt.empty()) info.channels = set.channels;
  auto bh = make(opt, cfg.backend), bf = make(opt, cfg.backend);
  auto from_start = [&](Backend& b) {
    b.set_cpu_kernels(cfg.cpu_kernels);
    auto t = std::make_unique<Trainer>(b, cfg.trainer_config(info.channels, cfg.conditional ? set.num_classes : -1));
    t->set_layer_policy(cfg.layer_policy());
    t->set_precision(cfg.precision);
    return t;
  };
  auto half = ckpt.empty() ? from_start(*bh) : trainer_from_checkpoint(*bh, ckpt);
  auto full = ckpt.empty() ? from_start(*bf) : trainer_from_checkpoint(*bf, ckpt);
  data::BatchLoader loader(set, cfg.batch, cfg.seed, ckpt.empty() ? 0 : info.batches_consumed);
  // Both trainers take the same batches; the steps before N in the run's precision.
  const size_t per_batch = static_cast<size_t>(cfg.batch) * cfg.res * cfg.res * info.channels;
  std::vector<std::vector<float>> batches;
  std::vector<std::vector<int32_t>> classes;  // each batch's labels (a conditional run's)
  auto draw = [&] {
    batches.assign(static_cast<size_t>(cfg.n_dis), {});
    classes.assign(static_cast<size_t>(cfg.n_dis), {});
    for (size_t k = 0; k < batches.size(); ++k) {
      const float* p = loader.next();
      batches[k].assign(p, p + per_batch);
      classes[k] = loader.labels();
    }
  };
  auto batch = [&](size_t k) { return RealBatch{batches[k].data(), classes[k].empty() ? nullptr : classes[k].data()}; };
  auto feed = [&](Trainer& t) {
    size_t k = 0;
    t.step_batches([&] { return batch(k++); });
    t.collect(true);
  };
  for (int64_t s = info.step + 1; s < step; ++s) {
    draw();
    feed(*half);
    feed(*full);
  }
  draw();
  full->set_precision(Precision::FP32);
  if (opt.before_step) opt.before_step(*half);
  const auto act_h = forward_layers(*half, batches.back().data(), classes.back(), step);
  const auto act_f = forward_layers(*full, batches.back().data(), classes.back(), step);
  for (size_t i = 0; i < act_h.size() && i < act_f.size(); ++i) {
    ReplayActivation a{act_h[i].layer, act_h[i].type, act_h[i].input};
    a.rel_error = rel_error(act_h[i].value, act_f[i].value, &a.nonfinite);
    a.departs = a.nonfinite > 0 || !(a.rel_error <= r.activation_tolerance);
    if (a.departs && r.first_forward < 0) r.first_forward = static_cast<int>(r.forward.size());
    r.forward.push_back(a);
  }
  half->step_batches([&, k = size_t{0}]() mutable { return batch(k++); });
  full->step_batches([&, k = size_t{0}]() mutable { return batch(k++); });
  const StepMetrics mh = half->collect(true).back(), mf = full->collect(true).back();
  r.skipped_d = mh.skipped_d > 0;
  r.skipped_g = mh.skipped_g > 0;
  const std::vector<TensorName>& names = half->tensor_names();
  for (const char* net : {"D", "G"})
    for (size_t k = names.size(); k-- > 0;) {
      if (names[k].network != net || k >= mh.tensors.size() || k >= mf.tensors.size()) continue;
      ReplayGradient g{names[k].layer + "." + names[k].tensor, mh.tensors[k].max_abs, mf.tensors[k].max_abs};
      g.nonfinite = mh.tensors[k].nonfinite;
      g.rel_error = std::fabs(g.max_half - g.max_fp32) / std::max(g.max_fp32, 1e-30);
      g.departs = g.nonfinite > 0 || !(g.rel_error <= r.gradient_tolerance);
      if (g.departs && r.first_gradient < 0) r.first_gradient = static_cast<int>(r.gradients.size());
      r.gradients.push_back(g);
    }
  const std::string p = precision_name(r.precision);
  if (r.first_forward >= 0) {
    const ReplayActivation& a = r.forward[r.first_forward];
    r.verdict = "the first layer that departs is " + a.layer + " (" + a.type + ") on " + a.input + ": " +
                (a.nonfinite ? std::to_string(a.nonfinite) + " inf/NaN values in " + p
                             : "relative error " + std::to_string(a.rel_error) + " against FP32");
  } else if (r.first_gradient >= 0) {
    const ReplayGradient& g = r.gradients[r.first_gradient];
    r.verdict = "the forward passes stay within " + p +
                "'s error; the first gradient that departs (backward order) is " + g.name + ": " +
                (g.nonfinite ? std::to_string(g.nonfinite) + " inf/NaN values"
                             : "max |g| " + std::to_string(g.max_half) + " against " + std::to_string(g.max_fp32));
  } else {
    r.verdict = "no layer departs from FP32 beyond " + p + "'s expected error at step " + std::to_string(step);
  }
  return r;
}

std::string replay_text(const ReplayResult& r) {
  char buf[256];
  std::string s;
  if (r.from_start)
    std::snprintf(buf, sizeof buf,
                  "step %lld replayed from the run's initialisation (no checkpoint before it) in %s and FP32\n",
                  static_cast<long long>(r.step), precision_name(r.precision));
  else
    std::snprintf(buf, sizeof buf, "step %lld replayed from checkpoint step %lld in %s and FP32\n",
                  static_cast<long long>(r.step), static_cast<long long>(r.checkpoint_step),
                  precision_name(r.precision));
  s += buf;
  std::snprintf(buf, sizeof buf, "\n%-8s %-16s %-17s %10s %9s\n", "layer", "type", "input", "rel.error", "inf/NaN");
  s += buf;
  for (const ReplayActivation& a : r.forward) {
    std::snprintf(buf, sizeof buf, "%-8s %-16s %-17s %10.2e %9llu%s\n", a.layer.c_str(), a.type.c_str(),
                  a.input.c_str(), a.rel_error, static_cast<unsigned long long>(a.nonfinite), a.departs ? "  <-" : "");
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "(tolerance %.3g)\n\n%-14s %12s %12s %10s %9s\n", r.activation_tolerance, "gradient",
                "max|g| half", "max|g| fp32", "rel.error", "inf/NaN");
  s += buf;
  for (const ReplayGradient& g : r.gradients) {
    std::snprintf(buf, sizeof buf, "%-14s %12.4g %12.4g %10.2e %9llu%s\n", g.name.c_str(), g.max_half, g.max_fp32,
                  g.rel_error, static_cast<unsigned long long>(g.nonfinite), g.departs ? "  <-" : "");
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "(tolerance %.3g)\n\n", r.gradient_tolerance);
  return s + buf + r.verdict + "\n";
}

}  // namespace ampgan
