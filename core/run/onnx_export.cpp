#include "core/run/onnx_export.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/amp/precision.h"
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/onnx_model.h"
#include "core/nn/activation.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/class_embedding.h"
#include "core/nn/conditional_batchnorm2d.h"
#include "core/nn/conv2d.h"
#include "core/nn/conv_transpose2d.h"
#include "core/nn/linear.h"
#include "core/nn/residual.h"
#include "core/run/checkpoint.h"
#include "core/run/latent_explorer.h"
#include "core/run/run_folder.h"
#include "core/tensor/half.h"
#include "core/train/standing_stats.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

constexpr const char* kClassInput = "class";

std::vector<float> host_values(Backend& b, const Tensor& t) {
  AMPGAN_CHECK(t.dtype() == DType::F32, "ONNX export reads FP32 masters");
  std::vector<float> v(static_cast<size_t>(t.numel()));
  b.download(t, v.data(), v.size() * sizeof(float));
  return v;
}

// The parameter's name without its last part ("blocks.0.bn1.weight" -> "blocks.0.bn1.").
std::string prefix_of(const std::string& name) { return name.substr(0, name.rfind('.') + 1); }

// Inference-mode batch norm as y = scale * x + shift per channel, from the running statistics
// (in double: the fold multiplies the weights by scale once).
struct BnAffine {
  std::vector<double> scale, shift;
  std::string prefix;
};

BnAffine bn_affine(Backend& b, BatchNorm2d& bn) {
  const std::vector<Parameter*> p = bn.parameters();  // weight (gamma), bias (beta)
  const std::vector<StateBuffer*> s = bn.buffers();   // running_mean, running_var
  const std::vector<float> g = host_values(b, p[0]->master), beta = host_values(b, p[1]->master),
                           mean = host_values(b, s[0]->value), var = host_values(b, s[1]->value);
  BnAffine a;
  a.prefix = prefix_of(p[0]->name);
  for (size_t c = 0; c < g.size(); ++c) {
    const double k = g[c] / std::sqrt(static_cast<double>(var[c]) + bn.eps());
    a.scale.push_back(k);
    a.shift.push_back(beta[c] - mean[c] * k);
  }
  return a;
}

// Writes a Sequential's layers as ONNX nodes, NCHW, tracking our (NHWC) shape as it goes.
class GraphWriter {
 public:
  GraphWriter(io::OnnxModel& m, Backend& b, bool half) : m_(m), b_(b), half_(half) {}
  int conditional_bns() const { return conditional_bns_; }

  std::string sequence(Sequential& s, std::string x, Shape& shape) {
    for (size_t i = 0; i < s.size(); ++i) {
      Layer& l = s.layer(i);
      // A batch norm right after a convolution is folded into it (the next layer is skipped).
      auto* bn = i + 1 < s.size() ? dynamic_cast<BatchNorm2d*>(&s.layer(i + 1)) : nullptr;
      const Shape out = l.output_shape(shape);
      if (auto* ct = dynamic_cast<ConvTranspose2d*>(&l)) {
        x = conv_transpose(*ct, bn, x);
      } else if (auto* c = dynamic_cast<Conv2d*>(&l)) {
        x = conv(*c, bn, x);
      } else {
        bn = nullptr;
        x = layer(l, x, shape, out);
      }
      shape = out;
      if (bn) ++i;
    }
    return x;
  }

 private:
  std::string weight(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    if (!half_) return m_.weight(name, dims, v);
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      bits[i] = float_to_half_bits(v[i]);
      if (std::isfinite(v[i]) && (bits[i] & 0x7c00u) == 0x7c00u)
        throw Error("weight '" + name + "' holds " + std::to_string(v[i]) + ", beyond float16's range (65504)",
                    "--half", "export in float32 (without --half)");
    }
    return m_.weight_half(name, dims, bits);
  }

  // ConvTranspose2d: ours (in, k, k, out) -> ONNX (in, out, k, k); a following batch norm scales
  // each output channel and becomes the bias.
  std::string conv_transpose(ConvTranspose2d& l, BatchNorm2d* bn, const std::string& x) {
    Parameter& w = *l.parameters()[0];
    const int64_t ci = w.shape[0], k = w.shape[1], co = w.shape[3];
    const std::vector<float> src = host_values(b_, w.master);
    std::vector<float> dst(src.size());
    BnAffine a;
    if (bn) a = bn_affine(b_, *bn);
    for (int64_t i = 0; i < ci; ++i)
      for (int64_t y = 0; y < k; ++y)
        for (int64_t xx = 0; xx < k; ++xx)
          for (int64_t o = 0; o < co; ++o) {
            const float v = src[((i * k + y) * k + xx) * co + o];
            dst[((i * co + o) * k + y) * k + xx] = bn ? static_cast<float>(v * a.scale[o]) : v;
          }
    const std::string p = prefix_of(w.name);
    std::vector<std::string> in = {x, weight(p + "weight", {ci, co, k, k}, dst)};
    if (bn) in.push_back(weight(p + "bias", {co}, std::vector<float>(a.shift.begin(), a.shift.end())));
    return m_.node("ConvTranspose", in, geometry(k, l.stride(), l.pad()));
  }

  // Conv2d: ours KRSC (out, k, k, in) -> ONNX OIHW; a following batch norm folds in.
  std::string conv(Conv2d& l, BatchNorm2d* bn, const std::string& x) {
    if (l.spectral_norm())
      throw Error("a spectrally normalised convolution in the generator", "ONNX export",
                  "the export knows the generators of ampgan's model families, which have none");
    const std::vector<Parameter*> ps = l.parameters();
    Parameter& w = *ps[0];
    const int64_t co = w.shape[0], k = w.shape[1], ci = w.shape[3];
    const std::vector<float> src = host_values(b_, w.master);
    std::vector<float> bias = l.has_bias() ? host_values(b_, ps[1]->master) : std::vector<float>(co, 0.0f);
    BnAffine a;
    if (bn) a = bn_affine(b_, *bn);
    std::vector<float> dst(src.size());
    for (int64_t o = 0; o < co; ++o) {
      const double s = bn ? a.scale[o] : 1.0;
      for (int64_t y = 0; y < k; ++y)
        for (int64_t xx = 0; xx < k; ++xx)
          for (int64_t i = 0; i < ci; ++i)
            dst[((o * ci + i) * k + y) * k + xx] = static_cast<float>(src[((o * k + y) * k + xx) * ci + i] * s);
      if (bn) bias[o] = static_cast<float>(bias[o] * s + a.shift[o]);
    }
    const std::string p = prefix_of(w.name);
    std::vector<std::string> in = {x, weight(p + "weight", {co, ci, k, k}, dst)};
    if (l.has_bias() || bn) in.push_back(weight(p + "bias", {co}, bias));
    return m_.node("Conv", in, geometry(k, l.stride(), l.pad()));
  }

  static std::vector<io::OnnxAttr> geometry(int64_t k, int64_t stride, int64_t pad) {
    return {io::OnnxAttr::list("kernel_shape", {k, k}), io::OnnxAttr::list("strides", {stride, stride}),
            io::OnnxAttr::list("pads", {pad, pad, pad, pad})};
  }

  // Rows of a (classes, features) table for the batch's classes: (n, features).
  std::string class_rows(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    return m_.node("Gather", {weight(name, dims, v), kClassInput}, {io::OnnxAttr::i("axis", 0)});
  }

  // y = (scale x + shift) (1 + gain[c]) + bias[c] = x S[c] + H[c], with S = scale (1 + gain) and
  // H = shift (1 + gain) + bias precomputed per class (in double): one Gather, Mul and Add each
  // instead of the batch norm's affine and the class terms', and one rounding less in float16.
  std::string conditional_bn(ConditionalBatchNorm2d& l, const std::string& x) {
    ++conditional_bns_;
    const BnAffine a = bn_affine(b_, l.batch_norm());
    const std::vector<Parameter*> p = l.parameters();  // weight, bias, embed_gain, embed_bias
    const std::vector<float> gain = host_values(b_, p[2]->master), bias = host_values(b_, p[3]->master);
    const int64_t k = p[2]->shape[0], c = p[2]->shape[1];
    AMPGAN_CHECK(static_cast<int64_t>(a.scale.size()) == c, "conditional batch norm channels");
    std::vector<float> s(gain.size()), h(gain.size());
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < c; ++j) {
        const size_t at = static_cast<size_t>(i * c + j);
        const double g = 1.0 + gain[at];
        s[at] = static_cast<float>(a.scale[j] * g);
        h[at] = static_cast<float>(a.shift[j] * g + bias[at]);
      }
    const std::string per = m_.int64s(a.prefix + "class_shape", {-1, c, 1, 1});
    const std::string sv = m_.node("Reshape", {class_rows(a.prefix + "class_scale", {k, c}, s), per});
    const std::string hv = m_.node("Reshape", {class_rows(a.prefix + "class_shift", {k, c}, h), per});
    return m_.node("Add", {m_.node("Mul", {x, sv}), hv});
  }

  // Every other layer of a generator; `in` and `out` are our NHWC (or 2-D) shapes.
  std::string layer(Layer& l, const std::string& x, const Shape& in, const Shape& out) {
    const std::string t = l.type();
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&l)) {  // after a sum: a per-channel Mul and Add
      const BnAffine a = bn_affine(b_, *bn);
      const int64_t c = static_cast<int64_t>(a.scale.size());
      const std::string s =
          weight(a.prefix + "scale", {1, c, 1, 1}, std::vector<float>(a.scale.begin(), a.scale.end()));
      const std::string h =
          weight(a.prefix + "shift", {1, c, 1, 1}, std::vector<float>(a.shift.begin(), a.shift.end()));
      return m_.node("Add", {m_.node("Mul", {x, s}), h});
    }
    if (auto* cbn = dynamic_cast<ConditionalBatchNorm2d*>(&l)) return conditional_bn(*cbn, x);
    if (auto* e = dynamic_cast<ClassEmbedding*>(&l)) {
      // Each class's row is an NHWC map (h, w, c): reshaped so, then to NCHW like the features.
      AMPGAN_CHECK(out.rank == 4, "a class embedding's map " + out.str());
      Parameter& w = *e->parameters()[0];
      const std::string rows = class_rows(w.name, {w.shape[0], w.shape[1]}, host_values(b_, w.master));
      const std::string map = m_.int64s(prefix_of(w.name) + "map_shape", {-1, out[1], out[2], out[3]});
      return m_.node("Transpose", {m_.node("Reshape", {rows, map})}, {io::OnnxAttr::list("perm", {0, 3, 1, 2})});
    }
    if (t == "ReLU") return m_.node("Relu", {x});
    if (t == "Tanh") return m_.node("Tanh", {x});
    if (t == "LeakyReLU")
      return m_.node("LeakyRelu", {x}, {io::OnnxAttr::real("alpha", static_cast<Activation&>(l).alpha())});
    if (auto* lin = dynamic_cast<Linear*>(&l)) {
      const std::vector<Parameter*> ps = lin->parameters();
      std::vector<std::string> ins = {
          x, weight(ps[0]->name, {ps[0]->shape[0], ps[0]->shape[1]}, host_values(b_, ps[0]->master))};
      if (ps.size() > 1) ins.push_back(weight(ps[1]->name, {ps[1]->shape[0]}, host_values(b_, ps[1]->master)));
      return m_.node("Gemm", ins, {io::OnnxAttr::i("transB", 1)});
    }
    if (t == "Flatten" || t == "Flatten(fp32)") {
      // Our features are in (h, w, c) order: NCHW goes to NHWC first unless h = w = 1.
      const bool spatial = in.rank == 4 && in[1] * in[2] > 1;
      const std::string v = spatial ? m_.node("Transpose", {x}, {io::OnnxAttr::list("perm", {0, 2, 3, 1})}) : x;
      return m_.node("Flatten", {v}, {io::OnnxAttr::i("axis", 1)});
    }
    if (t == "Unflatten") {
      const std::string shape = m_.int64s("unflatten_" + std::to_string(m_.node_count()), {-1, out[1], out[2], out[3]});
      return m_.node("Transpose", {m_.node("Reshape", {x, shape})}, {io::OnnxAttr::list("perm", {0, 3, 1, 2})});
    }
    if (t == "Upsample2x") {
      // Nearest neighbour, each pixel repeated 2 x 2: "asymmetric" + "floor" maps output i to i / 2.
      if (scales_.empty()) scales_ = m_.weight("upsample_scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
      return m_.node(
          "Resize", {x, "", scales_},
          {io::OnnxAttr::str("mode", "nearest"), io::OnnxAttr::str("coordinate_transformation_mode", "asymmetric"),
           io::OnnxAttr::str("nearest_mode", "floor")});
    }
    if (auto* r = dynamic_cast<Residual*>(&l)) {
      // A batch norm after the block (the conditional DCGAN's first) normalises the sum: sequence()
      // folds one into a convolution it directly follows only, so it gets its own Mul and Add.
      Shape a = in, b = in;
      const std::string main = sequence(r->main_path(), x, a);
      const std::string sc = r->shortcut().size() ? sequence(r->shortcut(), x, b) : x;
      return m_.node("Add", {main, sc});
    }
    throw Error("the ONNX export does not know the layer type '" + t + "'", "ONNX export",
                "please report this with the run's config.json");
  }

  io::OnnxModel& m_;
  Backend& b_;
  bool half_;
  int conditional_bns_ = 0;
  std::string scales_;  // Resize's scales (float32 in every model), shared by every Upsample2x
};

}  // namespace

fs::path onnx_source_checkpoint(const fs::path& run, int64_t step) {
  std::error_code ec;
  // Anything that is there and not a folder is read as a checkpoint file, whose reader names
  // what it is (a FIFO or a device is refused unread).
  if (fs::exists(fs::symlink_status(run, ec)) && !fs::is_directory(run, ec)) {
    if (step >= 0)
      throw Error("--step picks a checkpoint of a run folder, but this is a file", run.string(),
                  "give the run folder with --step, or the checkpoint file alone");
    return run;
  }
  if (!fs::is_directory(run, ec))
    throw Error("no such run folder", run.string(), "give the folder that 'ampgan train --out' wrote");
  // Every regular checkpoints/step_N.safetensors, by step (a folder of that name is no checkpoint).
  std::vector<std::pair<int64_t, fs::path>> found;
  for (const auto& e : fs::directory_iterator(RunFolder(run).checkpoints_dir(), ec)) {
    std::error_code ec2;
    const int64_t s = e.is_regular_file(ec2) ? step_of_checkpoint_name(e.path()) : -1;
    if (s >= 0) found.emplace_back(s, e.path());
  }
  std::sort(found.begin(), found.end());
  if (found.empty())
    throw Error("the run folder holds no checkpoint (checkpoints/step_N.safetensors)", run.string(),
                "a run writes one every --checkpoint-every steps and when it stops: let it train that far "
                "(ampgan resume), then export");
  if (step < 0) return found.back().second;
  for (const auto& [s, p] : found)
    if (s == step) return p;
  std::string steps;
  for (size_t i = 0; i < found.size() && i < 12; ++i) steps += (i ? ", " : "") + std::to_string(found[i].first);
  if (found.size() > 12) steps += ", ... " + std::to_string(found.back().first);
  throw Error("the run has no checkpoint of step " + std::to_string(step), run.string(),
              "its checkpoints are of steps " + steps + " (without --step: the newest)");
}

const char* bn_stats_name(BnStats s) {
  return s == BnStats::Batch ? "batch" : s == BnStats::Running ? "running" : "standing";
}

namespace {

// Standing statistics of the trainer's generator as its weights are now (the EMA's inside
// with_generator_weights), in its precision, on whole training batches of latents.
void emplace_standing_stats(std::optional<StandingStats>& s, Trainer& t, float truncation) {
  const TrainerConfig& cfg = t.config();
  const int batches = (kStandingLatents + cfg.batch - 1) / cfg.batch;
  s.emplace(t.backend(), t.generator(), compute_dtype(t.precision()),
            standing_latents(batches * cfg.batch, cfg.model.latent, truncation), cfg.model.latent, cfg.batch,
            cfg.model.classes);
}

// The model's doc string and metadata_props: what a user of the file needs to feed and read it.
void describe(io::OnnxModel& m, Trainer& trainer, const OnnxExportOptions& o, const std::string& source,
              const std::vector<std::string>& class_names, bool conditional_bn) {
  const DcganSpec& s = trainer.config().model;
  const int classes = trainer.classes();
  const char* family = model_family_name(trainer.config().family);
  m.doc(std::string("AMP GAN Studio ") + family + " generator: z float32 [batch, " + std::to_string(s.latent) +
        "] ~ N(0, 1)" +
        (classes > 0 ? ", class int64 [batch] in [0, " + std::to_string(classes - 1) + "]" : std::string()) +
        " -> images float32 [batch, " + std::to_string(s.channels) + ", " + std::to_string(s.res) + ", " +
        std::to_string(s.res) + "] (NCHW) in [-1, 1]");
  m.metadata("latent_size", std::to_string(s.latent));
  if (classes > 0) {
    m.metadata("classes", std::to_string(classes));
    if (class_names.size() == static_cast<size_t>(classes))
      m.metadata("class_names", nlohmann::json(class_names).dump());  // a JSON array, class 0 first
  }
  m.metadata("output_range", "[-1, 1]");
  m.metadata("output_layout", "NCHW");
  m.metadata("model_family", family);
  m.metadata("resolution", std::to_string(s.res));
  m.metadata("channels", std::to_string(s.channels));
  m.metadata("step", std::to_string(trainer.iteration()));
  m.metadata("generator", o.ema ? "ema" : "trained");
  m.metadata("precision", o.half ? "float16 weights and compute, float32 input and output (Cast nodes)" : "float32");
  m.metadata("batch_norm",
             std::string(o.bn == BnStats::Standing ? "standing statistics of " + std::to_string(kStandingLatents) +
                                                         " latents with these weights"
                                                   : "the running statistics of training") +
                 ", folded into the preceding convolution where there is one" +
                 (conditional_bn ? "; a class-conditional one as a per-class scale and shift (Gather by class)" : ""));
  m.metadata("opset", std::to_string(io::kOnnxOpset));
  if (!source.empty()) m.metadata("checkpoint", fs::path(source).filename().string());
}

}  // namespace

std::string onnx_generator_model(Trainer& trainer, const OnnxExportOptions& o, const std::string& source, size_t* nodes,
                                 const std::vector<std::string>& class_names) {
  AMPGAN_CHECK(o.bn != BnStats::Batch, "an exported model has no batch to take statistics of");
  if (o.ema && !trainer.has_ema())
    throw Error("the run keeps no EMA generator (ema_decay 0)", source,
                "export without --ema (the trained generator), or train with --ema-decay 0.999");
  const DcganSpec& s = trainer.config().model;
  const int64_t nz = s.latent;
  io::OnnxModel m("ampgan_generator", AMPGAN_VERSION);
  m.input("z", io::OnnxType::F32, {-1, nz});
  if (trainer.classes() > 0) m.input(kClassInput, io::OnnxType::I64, {-1});  // Gather's indices
  // Our generators take z as (n, 1, 1, nz) NHWC, which is (n, nz, 1, 1) NCHW.
  std::string x = m.node("Reshape", {"z", m.int64s("z_shape", {-1, nz, 1, 1})});
  if (o.half) x = m.cast(x, io::OnnxType::F16);
  Shape shape{1, 1, 1, nz};
  bool conditional_bn = false;
  auto build = [&] {
    std::optional<StandingStats> standing;
    if (o.bn == BnStats::Standing) emplace_standing_stats(standing, trainer, 0.0f);
    GraphWriter w(m, trainer.backend(), o.half);
    x = w.sequence(trainer.generator(), x, shape);
    conditional_bn = w.conditional_bns() > 0;
  };
  if (o.ema)
    trainer.with_generator_weights(build);
  else
    build();
  AMPGAN_CHECK(shape.rank == 4 && shape[1] == s.res && shape[2] == s.res && shape[3] == s.channels,
               "the generator's output shape " + shape.str());
  if (o.half)
    m.cast(x, io::OnnxType::F32, "images");
  else
    m.rename_output(x, "images");
  m.output("images", io::OnnxType::F32, {-1, s.channels, s.res, s.res});
  describe(m, trainer, o, source, class_names, conditional_bn);
  if (nodes) *nodes = m.node_count();
  return m.serialize();
}

OnnxExportResult export_onnx(const fs::path& run, int64_t step, const fs::path& out, const OnnxExportOptions& o) {
  OnnxExportResult r;
  r.checkpoint = onnx_source_checkpoint(run, step);
  auto backend = create_backend("cpu");
  CheckpointInfo info;
  auto trainer = trainer_from_checkpoint(*backend, r.checkpoint, &info);
  const std::string bytes = onnx_generator_model(*trainer, o, r.checkpoint.string(), &r.nodes, info.config.class_names);
  io::write_file_atomic(out, bytes);  // whole or not at all: never a half-written model
  r.file = out;
  r.step = info.step;
  r.opset = io::kOnnxOpset;
  r.bytes = bytes.size();
  r.has_ema = trainer->has_ema();
  r.classes = trainer->classes();
  return r;
}

std::vector<float> generate_images(Trainer& trainer, const std::vector<float>& latents, int n, BnStats bn,
                                   int per_forward, const std::function<bool(int, int)>& progress, float truncation,
                                   const std::vector<int32_t>& classes) {
  AMPGAN_CHECK(bn != BnStats::Batch || (per_forward == 0 && !progress), "batch statistics take whole batches");
  if (bn == BnStats::Batch) return trainer.generate(latents, n, classes);
  // Trainer::generate's loop in Mode::Eval (running statistics); here, not in the Trainer, so
  // that sampling's one variant does not touch the training step's header.
  const TrainerConfig& cfg = trainer.config();
  Backend& b = trainer.backend();
  const int nz = cfg.model.latent, per = cfg.model.res * cfg.model.res * cfg.model.channels;
  AMPGAN_CHECK(static_cast<int64_t>(latents.size()) >= int64_t{n} * nz, "too few latents");
  std::vector<float> out(static_cast<size_t>(n) * per);
  const DType dt = compute_dtype(trainer.precision());
  const int chunk = per_forward > 0 ? std::min(per_forward, cfg.batch) : cfg.batch;
  Tensor z32 = b.empty(Shape{chunk, 1, 1, nz}, DType::F32, MemCategory::Data);
  Tensor zc = dt == DType::F32 ? z32 : b.empty(Shape{chunk, 1, 1, nz}, dt, MemCategory::Data);
  Tensor img32;
  Context ctx{.backend = b, .dtype = dt, .mode = Mode::Eval, .param_grads = false, .accumulate = false};
  const int k = cfg.model.classes;
  Tensor one_hot = k > 0 ? b.empty(Shape{chunk, k}, DType::F32, MemCategory::Data) : Tensor(), labels;
  trainer.with_generator_weights([&] {
    std::optional<StandingStats> standing;
    if (bn == BnStats::Standing) emplace_standing_stats(standing, trainer, truncation);
    for (int i0 = 0; i0 < n; i0 += chunk) {
      if (progress && !progress(i0, n))
        throw Cancelled("stopped after " + std::to_string(i0) + " of " + std::to_string(n) + " images");
      const int m = std::min(chunk, n - i0);
      Tensor zv = z32.view(Shape{m, 1, 1, nz});
      b.upload(zv, latents.data() + static_cast<size_t>(i0) * nz, static_cast<size_t>(m) * nz * 4);
      Tensor zcv = zc.view(Shape{m, 1, 1, nz});
      if (!zcv.same_storage(zv)) b.cast(zv, zcv);
      if (k > 0) {
        labels = one_hot.view(Shape{m, k});
        upload_one_hot(b, labels, sample_classes(i0, m, k, classes).data(), k);
        ctx.labels = &labels;
      }
      const Tensor& img = trainer.generator().forward(ctx, zcv);
      float* dst = out.data() + static_cast<size_t>(i0) * per;
      if (img.dtype() == DType::F32) {
        b.download(img, dst, img.nbytes());
        continue;
      }
      if (!img32.defined() || img32.capacity_bytes() < static_cast<size_t>(img.numel()) * 4u)
        img32 = b.empty(img.shape(), DType::F32, MemCategory::Workspace);
      Tensor v = img32.view(img.shape());
      b.cast(img, v);
      b.download(v, dst, v.nbytes());
    }
  });
  if (progress) progress(n, n);
  return out;
}

}  // namespace ampgan
