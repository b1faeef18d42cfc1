#include "core/run/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <regex>

#include "core/amp/loss_scaler.h"
#include "core/common/error.h"
#include "core/models/resnet.h"
#include "core/nn/batchnorm2d.h"
#include "core/run/checkpoint_integrity.h"
#include "core/run/run_folder.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

std::vector<int64_t> dims(const Shape& s) { return std::vector<int64_t>(s.d.begin(), s.d.begin() + s.rank); }

io::StTensor from_device(Backend& b, const std::string& name, const Tensor& t) {
  AMPGAN_CHECK(t.dtype() == DType::F32, "checkpoint tensors are FP32");
  io::StTensor st;
  st.name = name;
  st.dtype = "F32";
  st.shape = dims(t.shape());
  st.data.resize(t.nbytes());
  b.download(t, st.data.data(), t.nbytes());
  return st;
}

std::string meta_str(const io::StFile& f, const std::string& key, const fs::path& file) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw Error("checkpoint metadata lacks '" + key + "'", file.string(),
                "the file was not written by this version of AMP GAN Studio, or is damaged; use another checkpoint");
  return it->second;
}

// A whole number in [lo, hi], or Error naming the key and the file (never a bare "stoll").
int64_t meta_int(const io::StFile& f, const std::string& key, const fs::path& file, int64_t lo, int64_t hi) {
  const std::string v = meta_str(f, key, file);
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
    throw Error("checkpoint metadata '" + key + "' is '" + v.substr(0, 40) + "', not a whole number from " +
                    std::to_string(lo) + " to " + std::to_string(hi),
                file.string(), "the file is damaged or was edited; use another checkpoint (resume --checkpoint FILE)");
  return x;
}

}  // namespace

int64_t step_of_checkpoint_name(const fs::path& file) {
  static const std::regex re("step_([0-9]+)\\.safetensors");
  std::smatch m;
  const std::string n = file.filename().string();
  if (!std::regex_match(n, m, re)) return -1;
  int64_t x = 0;
  const std::string digits = m[1];
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
  if (ec != std::errc() || end != digits.data() + digits.size() || x > kMaxSteps)
    throw Error("the checkpoint file name's step number is out of range (at most " + std::to_string(kMaxSteps) + ")",
                file.string(), "no run writes such a file; rename or remove it");
  return x;
}

namespace {

// The shapes that encode width, resolution and channels, checked against the checkpoint's own
// configuration before a model of that configuration is allocated (a width of 1024 in an edited
// config would otherwise cost gigabytes before the first mismatch is noticed).
void check_shapes_fit_config(const io::StFile& f, const fs::path& file, const RunConfig& c, int channels) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> expect;
  const TrainerConfig tc = c.trainer_config(channels);
  if (c.model == ModelFamily::ResNet) {
    ResnetSpec r;
    r.res = c.res;
    r.width = c.width;
    r.channels = channels;
    r.latent = tc.model.latent;
    expect = {{"G.linear.weight", {int64_t{16} * resnet_g_base_channels(r), r.latent}},  // Linear (out, in)
              {"D.blocks.0.conv1.weight", {resnet_d_first_channels(r), 3, 3, int64_t{channels}}}};
  } else {
    DcganSpec spec = tc.model;
    const int64_t top = int64_t{spec.width} << (spec.blocks() - 1);
    expect = {{"G.0.weight", {spec.latent, 4, 4, top}},                // ConvTranspose2d (in, kH, kW, out)
              {"D.0.weight", {spec.width, 4, 4, int64_t{channels}}}};  // Conv2d (out, kH, kW, in)
  }
  for (const auto& [name, shape] : expect) {
    const io::StTensor* t = f.find(name);
    if (!t || t->shape != shape)
      throw Error(std::string("checkpoint's tensors do not fit its own configuration (res ") + std::to_string(c.res) +
                      ", width " + std::to_string(c.width) + ", " + std::to_string(channels) + " channels): '" + name +
                      "' is " + (t ? "of another shape" : "missing") + " for a " + model_family_name(c.model) +
                      " model",
                  file.string(), "the file is damaged or its metadata was edited; use another checkpoint");
  }
}

// [[key, kernel], ...] as save_checkpoint writes it; kernels this build does not know are
// dropped later, when reused.
std::vector<KernelChoice> read_kernel_choices(const std::string& text, const fs::path& file) {
  std::vector<KernelChoice> out;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_array() || j.size() > 100000) throw nlohmann::json::type_error::create(302, "not a list", nullptr);
    for (const nlohmann::json& e : j) out.emplace_back(e.at(0).get<std::string>(), e.at(1).get<std::string>());
  } catch (const nlohmann::json::exception&) {
    throw Error("checkpoint metadata 'cpu_kernels' is not a list of [product, kernel] pairs", file.string(),
                "the file is damaged");
  }
  return out;
}

}  // namespace

void save_checkpoint(const fs::path& file, Trainer& trainer, const RunConfig& config, int64_t batches_consumed,
                     const std::string& dataset_fingerprint) {
  trainer.backend().synchronize();
  io::StFile f;
  for (const StateEntry& e : trainer.state()) f.tensors.push_back(from_device(trainer.backend(), e.name, *e.tensor));
  f.metadata["format"] = kCheckpointFormat;
  f.metadata["step"] = std::to_string(trainer.iteration());
  f.metadata["batches_consumed"] = std::to_string(batches_consumed);
  f.metadata["precision"] = precision_name(trainer.precision());
  f.metadata["fp32_layers"] = join_layer_list(trainer.layer_policy().fp32_layers);
  f.metadata["half_blocks"] = std::to_string(trainer.layer_policy().half_blocks);
  f.metadata["conv_clamp"] = nlohmann::json(trainer.layer_policy().conv_clamp).dump();
  f.metadata["channels"] = std::to_string(trainer.config().model.channels);
  f.metadata["config"] = config.to_json().dump();
  if (const std::vector<KernelChoice> kc = trainer.backend().kernel_choices(); !kc.empty())
    f.metadata["cpu_kernels"] = nlohmann::json(kc).dump();
  if (!dataset_fingerprint.empty()) f.metadata["dataset"] = dataset_fingerprint;
  // A diverged state is never written: the last good checkpoint stays the newest.
  if (const std::vector<std::string> bad = nonfinite_tensors(f); !bad.empty())
    throw Error("not saving a checkpoint at step " + std::to_string(trainer.iteration()) + ": " +
                    std::to_string(bad.size()) + " state tensor(s) hold inf/NaN (" + name_list(bad) + ")",
                file.string(),
                "training diverged; the run's earlier checkpoints are kept: resume from one of them "
                "(resume --checkpoint FILE) with a lower learning rate or in fp32/bf16");
  f.metadata[kTensorCrcKey] = tensor_crc32(f);
  io::write_safetensors(file, f);
}

namespace {

// What the metadata says, checked, and the shapes its configuration fixes: everything that can be
// checked from the header, before a byte of the data is read.
void check_header(const io::StFile& f, const fs::path& file, CheckpointInfo& i) {
  auto fmt = f.metadata.find("format");
  if (fmt == f.metadata.end() || fmt->second != kCheckpointFormat)
    throw Error("not an AMP GAN Studio checkpoint (no '" + std::string(kCheckpointFormat) + "' format tag)",
                file.string(), "use a file from a run's checkpoints/ folder");
  i.step = meta_int(f, "step", file, 0, kMaxSteps);
  i.batches_consumed = meta_int(f, "batches_consumed", file, 0, kMaxSteps);
  i.channels = static_cast<int>(meta_int(f, "channels", file, 1, 3));
  if (i.channels == 2)
    throw Error("checkpoint metadata 'channels' is 2, not 1 or 3", file.string(), "the file is damaged");
  try {
    i.precision = parse_precision(meta_str(f, "precision", file));
  } catch (const Error& e) {
    if (e.subject() == file.string()) throw;
    throw Error("checkpoint metadata 'precision' is not fp32, tf32, fp16 or bf16", file.string(),
                "the file is damaged");
  }
  const std::string cfg = meta_str(f, "config", file);
  try {
    i.config = RunConfig::from_json(nlohmann::json::parse(cfg), file.string());
    i.config.validate();
  } catch (const nlohmann::json::exception&) {
    throw Error("checkpoint's configuration is not valid JSON", file.string(), "the file is damaged");
  } catch (const Error& e) {
    if (e.subject() == file.string()) throw;
    throw Error("checkpoint's embedded configuration is invalid: " + e.what_failed() + " (" + e.subject() + ")",
                file.string(), "the file is damaged or was edited; use another checkpoint (resume --checkpoint FILE)");
  }
  // Checkpoints from before per-layer precision have no policy: the configuration's.
  i.layer_policy = i.config.layer_policy();
  if (f.metadata.count("fp32_layers")) i.layer_policy.fp32_layers = parse_layer_list(f.metadata.at("fp32_layers"));
  if (f.metadata.count("conv_clamp")) {
    try {
      i.layer_policy.conv_clamp = nlohmann::json::parse(f.metadata.at("conv_clamp")).get<float>();
    } catch (const nlohmann::json::exception&) {
      throw Error("checkpoint metadata 'conv_clamp' is not a number", file.string(), "the file is damaged");
    }
  }
  if (f.metadata.count("half_blocks"))
    i.layer_policy.half_blocks = static_cast<int>(meta_int(f, "half_blocks", file, -1, 1024));
  if (f.metadata.count("cpu_kernels")) i.kernel_choices = read_kernel_choices(f.metadata.at("cpu_kernels"), file);
  i.dataset_fingerprint = f.metadata.count("dataset") ? f.metadata.at("dataset") : std::string();
  check_shapes_fit_config(f, file, i.config, i.channels);
}

// Each loss scaler's state [scale, clean steps] within what the run's settings allow, as the
// settings themselves are checked: a scale of 0, 1e-45 or -1 would train NaN weights.
void check_scaler_states(const io::StFile& f, const fs::path& file, const RunConfig& c) {
  for (const char* name : {"scaler_d", "scaler_g"}) {
    const io::StTensor* t = f.find(name);
    if (!t) continue;
    if (t->dtype != "F32" || t->shape != std::vector<int64_t>{2})
      throw Error(std::string("checkpoint's loss-scaler state '") + name + "' is " + t->dtype +
                      " of another shape, not F32 [2]",
                  file.string(),
                  "the file is damaged or was edited; use another checkpoint (resume --checkpoint FILE)");
    float v[2];
    std::memcpy(v, t->data.data(), sizeof v);
    try {
      check_scaler_state(v[0], v[1], c.scaler);
    } catch (const Error& e) {
      throw Error(std::string("checkpoint's loss-scaler state '") + name + "' is out of range: " + e.what_failed(),
                  file.string(),
                  "the file is damaged or was edited; use another checkpoint (resume --checkpoint FILE)");
    }
  }
}

}  // namespace

io::StFile read_checkpoint(const fs::path& file, CheckpointInfo* info) {
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw Error("no such checkpoint", file.string(),
                "give the path of a .safetensors file in a run's checkpoints/ folder");
  (void)step_of_checkpoint_name(file);  // an impossible step_N name is refused before reading
  // Everything is checked here, before a caller writes anything: resume trims the logs and
  // rewrites config.json on the strength of these numbers. The header is checked before the
  // data is read, so a damaged or hostile file costs at most its header.
  CheckpointInfo local;
  CheckpointInfo& i = info ? *info : local;
  io::StFile f = io::read_safetensors(file, [&](const io::StFile& header) { check_header(header, file, i); });
  verify_checkpoint_data(f, file);
  check_scaler_states(f, file, i.config);
  return f;
}

void check_step_matches_name(const CheckpointInfo& info, const fs::path& file) {
  const int64_t named = step_of_checkpoint_name(file);
  if (named >= 0 && named != info.step)
    throw Error("the checkpoint says step " + std::to_string(info.step) + " but its file name says step " +
                    std::to_string(named),
                file.string(), "the file was renamed or edited; rename it back, or use another checkpoint");
}

void load_checkpoint(const io::StFile& f, const fs::path& file, Trainer& trainer) {
  Backend& b = trainer.backend();
  for (const StateEntry& e : trainer.state()) {
    const io::StTensor* st = f.find(e.name);
    if (!st)
      throw Error("checkpoint has no tensor '" + e.name + "'", file.string(),
                  "it was written for another model (resolution, width, channels or scaler mode differ)");
    const std::vector<int64_t> want = dims(e.tensor->shape());
    if (e.count && st->dtype == "F32" && st->shape == std::vector<int64_t>{1} && e.tensor->numel() == 2) {
      // Written when counts were one FP32 value (exact below 2^24): the same count as [lo, hi].
      float v = 0;
      std::memcpy(&v, st->data.data(), sizeof v);
      float c[2];
      ew::count_store(c, v > 0 ? static_cast<uint64_t>(v) : 0);
      b.upload(*e.tensor, c, sizeof c);
      continue;
    }
    if (st->dtype != "F32" || st->shape != want) {
      std::string got = "(";
      for (size_t i = 0; i < st->shape.size(); ++i) got += (i ? ", " : "") + std::to_string(st->shape[i]);
      got += ")";
      throw Error("checkpoint is from another model shape: '" + e.name + "' is " + st->dtype + " " + got +
                      " in the file but F32 " + e.tensor->shape().str() + " here",
                  file.string(), "use the settings the checkpoint was written with (its run's config.json)");
    }
    b.upload(*e.tensor, st->data.data(), st->data.size());
  }
  trainer.state_loaded();
}

std::unique_ptr<Trainer> trainer_from_checkpoint(Backend& b, const fs::path& file, CheckpointInfo* info) {
  CheckpointInfo local;
  CheckpointInfo& i = info ? *info : local;
  const io::StFile f = read_checkpoint(file, &i);
  b.set_cpu_kernels(i.config.cpu_kernels);
  b.reuse_kernel_choices(i.kernel_choices);  // the run's own products, so samples match its own
  auto t = std::make_unique<Trainer>(b, i.config.trainer_config(i.channels));
  load_checkpoint(f, file, *t);
  check_step_matches_name(i, file);
  t->set_iteration(i.step);
  t->set_layer_policy(i.layer_policy);
  t->set_precision(i.precision);
  return t;
}

fs::path newest_checkpoint(const fs::path& run_dir) {
  const fs::path dir = RunFolder(run_dir).checkpoints_dir();
  fs::path best;
  int64_t best_step = -1;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      // Only regular files: a folder or a FIFO named like a checkpoint would hide the real
      // newest one, or block the reader forever.
      std::error_code ec2;
      if (!entry.is_regular_file(ec2)) continue;
      const int64_t step = step_of_checkpoint_name(entry.path());
      if (step > best_step) {
        best_step = step;
        best = entry.path();
      }
    }
  }
  if (best.empty())
    throw Error("the run folder holds no checkpoint", run_dir.string(),
                "a checkpoint is written every --checkpoint-every steps and when training stops; "
                "start a new run with 'ampgan train --out' another folder (or remove this one first)");
  return best;
}

namespace {

// The ResNet generator under bench/peers/pytorch_resnet.py's names: convolutions KRSC -> OIHW,
// and the first Linear's rows from our NHWC (h, w, c) order to PyTorch's view(c0, 4, 4).
void export_resnet_generator(Trainer& trainer, io::StFile& f) {
  Backend& b = trainer.backend();
  Sequential& g = trainer.generator();
  for (Parameter* p : g.parameters()) {
    io::StTensor st = from_device(b, p->name, p->master);
    std::vector<float> src(st.data.size() / 4), dst(src.size());
    std::memcpy(src.data(), st.data.data(), st.data.size());
    if (p->shape.rank == 4) {
      const int64_t co = p->shape[0], kh = p->shape[1], kw = p->shape[2], ci = p->shape[3];
      for (int64_t o = 0; o < co; ++o)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x)
            for (int64_t c = 0; c < ci; ++c)
              dst[((o * ci + c) * kh + y) * kw + x] = src[((o * kh + y) * kw + x) * ci + c];
      st.shape = {co, ci, kh, kw};
    } else if (p->name.rfind("linear.", 0) == 0) {
      const int64_t rows = p->shape[0], cols = p->shape.rank == 2 ? p->shape[1] : 1, c0 = rows / 16;
      for (int64_t hw = 0; hw < 16; ++hw)
        for (int64_t c = 0; c < c0; ++c)
          std::memcpy(&dst[(c * 16 + hw) * cols], &src[(hw * c0 + c) * cols], cols * sizeof(float));
    } else {
      dst = src;
    }
    std::memcpy(st.data.data(), dst.data(), st.data.size());
    f.tensors.push_back(std::move(st));
  }
  for (StateBuffer* s : g.buffers()) {
    f.tensors.push_back(from_device(b, s->name, s->value));
    const std::string suffix = "running_mean";
    if (s->name.size() > suffix.size() && s->name.compare(s->name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      io::StTensor n;
      n.name = s->name.substr(0, s->name.size() - suffix.size()) + "num_batches_tracked";
      n.dtype = "I64";
      // Training-mode forwards of G: one per D step.
      const int64_t v = trainer.iteration() * trainer.config().n_dis;
      n.data.resize(8);
      std::memcpy(n.data.data(), &v, 8);
      f.tensors.push_back(std::move(n));
    }
  }
}

// A DCGAN layer's parameters: ConvTranspose2d (in, kH, kW, out) -> PyTorch's (in, out, kH, kW);
// the class embedding's rows from our NHWC (4, 4, c) maps to (c, 4, 4), the peer's
// embed(y).view(n, c, 4, 4), as the ResNet's first Linear is permuted to its view above. The
// permutation is done here, not in the peer, so that the peer stays plain PyTorch.
void export_dcgan_parameters(Backend& b, Layer& layer, io::StFile& f) {
  const std::vector<Sequential*> paths = layer.children();  // the conditional first layer's
  for (Sequential* s : paths)
    for (size_t i = 0; i < s->size(); ++i) export_dcgan_parameters(b, s->layer(i), f);
  if (!paths.empty()) return;
  for (Parameter* p : layer.parameters()) {
    io::StTensor st = from_device(b, p->name, p->master);
    std::vector<float> src(st.data.size() / 4), dst(src.size());
    std::memcpy(src.data(), st.data.data(), st.data.size());
    if (layer.type() == "ConvTranspose2d") {
      const int64_t ci = p->shape[0], kh = p->shape[1], kw = p->shape[2], co = p->shape[3];
      for (int64_t a = 0; a < ci; ++a)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x)
            for (int64_t o = 0; o < co; ++o)
              dst[((a * co + o) * kh + y) * kw + x] = src[((a * kh + y) * kw + x) * co + o];
      st.shape = {ci, co, kh, kw};
    } else if (layer.type() == "ClassEmbedding") {
      const int64_t classes = p->shape[0], features = p->shape[1], c = features / 16;
      AMPGAN_CHECK(features == 16 * c, "the DCGAN's class embedding is a 4x4 map");
      for (int64_t k = 0; k < classes; ++k)
        for (int64_t hw = 0; hw < 16; ++hw)
          for (int64_t ch = 0; ch < c; ++ch) dst[(k * c + ch) * 16 + hw] = src[(k * 16 + hw) * c + ch];
    } else {
      dst = src;
    }
    std::memcpy(st.data.data(), dst.data(), st.data.size());
    f.tensors.push_back(std::move(st));
  }
}

// The DCGAN generator under bench/peers/pytorch_dcgan.py's names (nn.Sequential's "0.", "1.", ...
// and, conditional, "embed.").
void export_dcgan_generator(Trainer& trainer, io::StFile& f) {
  Backend& b = trainer.backend();
  Sequential& g = trainer.generator();
  for (size_t i = 0; i < g.size(); ++i) {
    Layer& layer = g.layer(i);
    export_dcgan_parameters(b, layer, f);
    for (StateBuffer* s : layer.buffers()) f.tensors.push_back(from_device(b, s->name, s->value));
    if (dynamic_cast<BatchNorm2d*>(&layer)) {
      io::StTensor n;
      n.name = std::to_string(i) + ".num_batches_tracked";
      n.dtype = "I64";
      const int64_t v = trainer.iteration();  // one training-mode forward pass of G per step
      n.data.resize(8);
      std::memcpy(n.data.data(), &v, 8);
      f.tensors.push_back(std::move(n));
    }
  }
}

}  // namespace

io::StFile export_generator(Trainer& trainer) {
  io::StFile f;
  // The EMA generator's weights when the run keeps an EMA (what its samples show).
  trainer.with_generator_weights([&] {
    if (trainer.config().family == ModelFamily::ResNet) return export_resnet_generator(trainer, f);
    export_dcgan_generator(trainer, f);
  });
  const DcganSpec& s = trainer.config().model;
  f.metadata["ema"] = trainer.has_ema() ? "1" : "0";
  f.metadata["format"] = "ampgan-generator-1";
  f.metadata["model"] = model_family_name(trainer.config().family);
  f.metadata["layout"] = "pytorch";
  f.metadata["res"] = std::to_string(s.res);
  f.metadata["nc"] = std::to_string(s.channels);
  f.metadata["width"] = std::to_string(s.width);
  f.metadata["latent"] = std::to_string(s.latent);
  f.metadata["classes"] = std::to_string(trainer.classes());  // 0: unconditional
  f.metadata["step"] = std::to_string(trainer.iteration());
  return f;
}

}  // namespace ampgan
