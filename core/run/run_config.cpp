#include "core/run/run_config.h"

#include <cmath>
#include <tuple>
#include <limits>
#include <filesystem>

#include "core/amp/loss_scaler.h"
#include "core/common/error.h"
#include "core/common/utf8.h"

namespace ampgan {


const char* loss_name(LossKind k) { return k == LossKind::Hinge ? "hinge" : "bce"; }

LossKind parse_loss(const std::string& s) {
  if (s == "bce") return LossKind::BCEWithLogits;
  if (s == "hinge") return LossKind::Hinge;
  throw Error("unknown loss '" + s + "'", "--loss", "use bce (BCE with logits, as DCGAN) or hinge");
}

nlohmann::json RunConfig::to_json() const {
  nlohmann::json j;
  j["dataset"] = dataset;
  j["channels"] = channels;
  j["synthetic_count"] = synthetic_count;
  j["model"] = model_family_name(model);
  j["res"] = res;
  j["width"] = width;
  j["batch"] = batch;
  j["steps"] = steps;
  j["precision"] = precision_name(precision);
  j["backend"] = backend;
  j["gpu"] = gpu;
  j["loss"] = loss_name(loss);
  j["lr_g"] = lr_g;
  j["lr_d"] = lr_d;
  j["beta1"] = beta1;
  j["beta2"] = beta2;
  j["n_dis"] = n_dis;
  j["ema_decay"] = ema_decay;
  j["ema_rampup"] = ema_rampup;
  j["seed"] = seed;
  j["init_scale"] = scaler.init_scale;
  j["growth_factor"] = scaler.growth_factor;
  j["backoff_factor"] = scaler.backoff_factor;
  j["growth_interval"] = scaler.growth_interval;
  j["min_scale"] = scaler.min_scale;
  j["max_scale"] = scaler.max_scale;
  j["scaler"] = shared_scaler ? "shared" : "per-network";
  j["bf16_loss_scaling"] = bf16_loss_scaling;
  j["fp32_layers"] = fp32_layers;
  j["half_blocks"] = half_blocks;
  j["conv_clamp"] = conv_clamp;
  j["amp_strategy"] = amp_strategy_name(amp_strategy);
  j["cuda_graphs"] = use_graphs;
  j["sample_every"] = sample_every;
  j["checkpoint_every"] = checkpoint_every;
  j["keep_checkpoints"] = keep_checkpoints;
  j["eval_every"] = eval_every;
  j["eval_samples"] = eval_samples;
  j["hist_every"] = hist_every;
  j["layers_every"] = layers_every;
  j["name"] = name;
  j["world_size"] = world_size;
  return j;
}

namespace {

// The numeric settings, each with its allowed range: the one place where numbers from outside
// (CLI flags, JSON files, checkpoints' embedded configs via set_number; the GUI's fields via
// validate) are checked, and the only place they are narrowed to their fields' types, after the
// check. Semantic checks with more specific messages stay in validate().
struct IntSetting {
  const char* key;
  const char* flag;
  int64_t lo, hi;
  const char* hint;
  int64_t (*get)(const RunConfig&);
  void (*set)(RunConfig&, int64_t);
};

#define AMPGAN_INT_FIELD(field)                                \
  [](const RunConfig& c) -> int64_t { return c.field; },       \
      [](RunConfig& c, int64_t v) { c.field = static_cast<decltype(c.field)>(v); }

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

const IntSetting kIntSettings[] = {
    {"channels", "--nc", 0, 3, "use 0 (the dataset's own), 1 (grey) or 3 (RGB)", AMPGAN_INT_FIELD(channels)},
    {"synthetic_count", "--synthetic-count", 2, 1'000'000, "the default is 10000", AMPGAN_INT_FIELD(synthetic_count)},
    {"res", "--res", 32, 128, "use 32, 64 or 128", AMPGAN_INT_FIELD(res)},
    {"width", "--width", 1, 1024, "DCGAN uses 64", AMPGAN_INT_FIELD(width)},
    {"batch", "--batch", 2, 65536, "batch norm needs two samples; DCGAN uses 64", AMPGAN_INT_FIELD(batch)},
    {"n_dis", "--n-dis", 1, 100, "DCGAN uses 1, SNGAN 5", AMPGAN_INT_FIELD(n_dis)},
    {"steps", "--steps", 1, kMaxSteps, "the default is 2000", AMPGAN_INT_FIELD(steps)},
    {"gpu", "--gpu", 0, 1023, "'ampgan devices' lists the GPUs", AMPGAN_INT_FIELD(gpu)},
    {"growth_interval", "--growth-interval", 1, kIntMax, "the default is 2000", AMPGAN_INT_FIELD(scaler.growth_interval)},
    {"sample_every", "--sample-every", 0, kIntMax, "0 means only at the end", AMPGAN_INT_FIELD(sample_every)},
    {"checkpoint_every", "--checkpoint-every", 0, kIntMax, "0 means only at the end", AMPGAN_INT_FIELD(checkpoint_every)},
    {"keep_checkpoints", "--keep-checkpoints", 0, kIntMax, "0 keeps every checkpoint", AMPGAN_INT_FIELD(keep_checkpoints)},
    {"eval_every", "--eval-every", 0, kIntMax, "0 means never", AMPGAN_INT_FIELD(eval_every)},
    {"eval_samples", "--eval-samples", 2, 1'000'000, "use 1024 or more for stable numbers", AMPGAN_INT_FIELD(eval_samples)},
    {"hist_every", "hist_every", 0, kIntMax, "0 means never", AMPGAN_INT_FIELD(hist_every)},
    {"half_blocks", "--half-blocks", -1, 1024, "-1 keeps every block in half precision; StyleGAN2-ADA uses 4",
     AMPGAN_INT_FIELD(half_blocks)},
    {"layers_every", "--layers-every", 0, kIntMax, "0 means on overflow steps only", AMPGAN_INT_FIELD(layers_every)},
};
#undef AMPGAN_INT_FIELD

// FP32 settings: any number FP32 can hold gets through here (narrowing a larger double is
// undefined behaviour); their meaningful ranges are checked, with specific messages, in validate().
struct RealSetting {
  const char* key;
  void (*set)(RunConfig&, float);
};

const RealSetting kRealSettings[] = {
    {"lr", [](RunConfig& c, float v) { c.lr_g = c.lr_d = v; }},
    {"lr_g", [](RunConfig& c, float v) { c.lr_g = v; }},
    {"lr_d", [](RunConfig& c, float v) { c.lr_d = v; }},
    {"beta1", [](RunConfig& c, float v) { c.beta1 = v; }},
    {"beta2", [](RunConfig& c, float v) { c.beta2 = v; }},
    {"ema_decay", [](RunConfig& c, float v) { c.ema_decay = v; }},
    {"ema_rampup", [](RunConfig& c, float v) { c.ema_rampup = v; }},
    {"init_scale", [](RunConfig& c, float v) { c.scaler.init_scale = v; }},
    {"growth_factor", [](RunConfig& c, float v) { c.scaler.growth_factor = v; }},
    {"backoff_factor", [](RunConfig& c, float v) { c.scaler.backoff_factor = v; }},
    {"min_scale", [](RunConfig& c, float v) { c.scaler.min_scale = v; }},
    {"max_scale", [](RunConfig& c, float v) { c.scaler.max_scale = v; }},
    {"conv_clamp", [](RunConfig& c, float v) { c.conv_clamp = v; }},
};

const IntSetting* find_int(const std::string& key) {
  for (const IntSetting& s : kIntSettings)
    if (key == s.key) return &s;
  return nullptr;
}

const RealSetting* find_real(const std::string& key) {
  for (const RealSetting& s : kRealSettings)
    if (key == s.key) return &s;
  return nullptr;
}

std::string text_of(const nlohmann::json& v) { return v.dump().substr(0, 40); }

template <typename T>
[[noreturn]] void out_of_range(const std::string& value, const std::string& where, T lo, T hi, const std::string& hint) {
  throw Error(value + " is out of range", where,
              "use a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + "; " + hint);
}

// v as a whole number in [lo, hi] (uint64 for the seed), checked before any conversion: a bool,
// a string, a fraction, or a value beyond the range (even beyond int64, as 1e19) is refused.
template <typename T>
T whole_number(const nlohmann::json& v, const std::string& label, const std::string& where, T lo, T hi,
               const std::string& hint) {
  if (!v.is_number())
    throw Error(label + " must be a whole number, not " + text_of(v), where, "write it as a number without quotes, e.g. 64");
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(d == std::floor(d)))
      throw Error(label + " must be a whole number, not " + text_of(v), where, "write it without a fractional part");
    // Compared in long double, where every int64 and uint64 is exact (a double rounds
    // UINT64_MAX up to 2^64, which must not pass).
    const long double ld = d;
    if (!(ld >= static_cast<long double>(lo) && ld <= static_cast<long double>(hi)))
      out_of_range(label + " " + text_of(v), where, lo, hi, hint);
    return static_cast<T>(ld);
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo))) out_of_range(label + " " + text_of(v), where, lo, hi, hint);
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < 0 && lo >= 0) out_of_range(label + " " + text_of(v), where, lo, hi, hint);
  if (static_cast<T>(i) < lo || static_cast<T>(i) > hi)
    out_of_range(label + " " + text_of(v), where, lo, hi, hint);
  return static_cast<T>(i);
}

}  // namespace

bool RunConfig::is_number_setting(const std::string& key) {
  return key == "seed" || find_int(key) || find_real(key);
}

void RunConfig::set_number(const std::string& key, const nlohmann::json& v, const std::string& where) {
  if (key == "seed") {
    seed = whole_number<uint64_t>(v, key, where, 0, std::numeric_limits<uint64_t>::max(), "the default is 0");
  } else if (const IntSetting* s = find_int(key)) {
    s->set(*this, whole_number<int64_t>(v, key, where, s->lo, s->hi, s->hint));
  } else if (const RealSetting* r = find_real(key)) {
    if (!v.is_number()) throw Error(key + " must be a number, not " + text_of(v), where, "write it as a number without quotes");
    const double d = v.get<double>();
    if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
      throw Error(key + " " + text_of(v) + " is beyond FP32's range (3.4e38)", where, "use a smaller number");
    r->set(*this, static_cast<float>(d));
  } else {
    throw Error("unknown numeric setting '" + key + "'", where);
  }
}

void RunConfig::apply_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error("configuration is not a JSON object", source, "see README.md for an example");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    try {
      if (is_number_setting(k)) set_number(k, v, "'" + k + "' in " + source);
      else if (k == "dataset") dataset = v.get<std::string>();
      else if (k == "model") model = parse_model_family(v.get<std::string>());
      else if (k == "precision") precision = parse_precision(v.get<std::string>());
      else if (k == "backend") backend = v.get<std::string>();
      else if (k == "loss") loss = parse_loss(v.get<std::string>());
      else if (k == "scaler") {
        const std::string s = v.get<std::string>();
        if (s != "shared" && s != "per-network")
          throw Error("unknown scaler mode '" + s + "'", "--scaler", "use per-network or shared");
        shared_scaler = s == "shared";
      } else if (k == "bf16_loss_scaling") bf16_loss_scaling = v.get<bool>();
      else if (k == "amp_strategy") amp_strategy = parse_amp_strategy(v.get<std::string>());
      else if (k == "fp32_layers") {
        // A list of names, or one comma-separated string as on the command line.
        fp32_layers = v.is_string() ? parse_layer_list(v.get<std::string>()) : v.get<std::vector<std::string>>();
      }
      else if (k == "cuda_graphs") use_graphs = v.get<bool>();
      else if (k == "name") name = v.get<std::string>();
      else if (k == "out") out_dir = v.get<std::string>();
      else if (k == "world_size")
        world_size = whole_number<int>(v, k, "'" + k + "' in " + source, 1, 1 << 20, "it records how many ranks trained the run");
      else throw Error("unknown setting '" + k + "'", source, "check the spelling; README.md lists the keys");
    } catch (const nlohmann::json::exception&) {
      throw Error("setting '" + k + "' has the wrong type (" + v.dump() + ")", source,
                  "use a number, string or boolean as in README.md");
    }
  }
}

RunConfig RunConfig::from_json(const nlohmann::json& j, const std::string& source) {
  RunConfig c;
  // A run started before checkpoints were pruned expects to keep them all.
  if (j.is_object() && !j.contains("keep_checkpoints")) c.keep_checkpoints = 0;
  c.apply_json(j, source);
  return c;
}

void RunConfig::validate() const {
  DcganSpec spec;
  spec.res = res;
  spec.width = width;
  spec.channels = channels == 0 ? 1 : channels;
  spec.validate();
  if (channels != 0 && channels != 1 && channels != 3)
    throw Error("channels must be 0 (the dataset's), 1 or 3, not " + std::to_string(channels), "--nc");
  if (batch < 2)
    throw Error("batch size " + std::to_string(batch) + " is too small", "--batch",
                "use at least 2 (batch norm needs two samples); DCGAN uses 64");
  if (batch > 65536) throw Error("batch size " + std::to_string(batch) + " is too large", "--batch", "use at most 65536");
  if (steps < 1) throw Error("the number of steps must be at least 1", "--steps");
  for (auto [v, flag] : {std::pair{lr_g, "--lr-g"}, std::pair{lr_d, "--lr-d"}})
    if (!(v > 0.0f) || !std::isfinite(v) || v > 1.0f)
      throw Error("learning rate " + std::to_string(v) + " is not a positive finite number up to 1", flag,
                  "DCGAN uses 0.0002");
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
    throw Error("Adam betas must lie in [0, 1)", "--beta1/--beta2", "DCGAN uses 0.5 and 0.999");
  if (!(ema_decay >= 0 && ema_decay < 1))
    throw Error("EMA decay must lie in [0, 1)", "--ema-decay", "use 0 (off) or e.g. 0.999");
  if (!(ema_rampup >= 0 && ema_rampup <= 1e9))
    throw Error("EMA ramp-up must lie in [0, 1e9]", "--ema-rampup", "use 0 (none) or e.g. 10");
  if (gpu < 0) throw Error("GPU index must not be negative", "--gpu", "'ampgan devices' lists the GPUs");
  if (backend != "auto" && backend != "cpu" && backend != "cuda")
    throw Error("unknown backend '" + backend + "'", "--backend", "use auto, cpu or cuda");
  check_loss_scale(scaler.init_scale, "--init-scale", "initial loss scale", "the default is 65536 = 2^16");
  check_loss_scale(scaler.min_scale, "--min-scale", "loss-scale floor", "the default is 1");
  check_loss_scale(scaler.max_scale, "--max-scale", "loss-scale ceiling", "the default is 16777216 = 2^24");
  if (!(scaler.growth_factor > 1)) throw Error("loss-scale growth factor must be above 1", "--growth");
  if (!(scaler.backoff_factor > 0 && scaler.backoff_factor < 1))
    throw Error("loss-scale backoff factor must lie between 0 and 1", "--backoff");
  if (scaler.growth_interval < 1) throw Error("loss-scale growth interval must be at least 1", "--growth-interval");
  if (!(scaler.min_scale > 0) || !(scaler.max_scale >= scaler.min_scale))
    throw Error("loss-scale floor must be positive and not above the ceiling", "--min-scale/--max-scale");
  if (!(conv_clamp >= 0.0f) || !std::isfinite(conv_clamp))
    throw Error("activation clamp " + std::to_string(conv_clamp) + " is not a finite number >= 0", "--conv-clamp",
                "use 0 (off) or a bound such as 256 (StyleGAN2-ADA's)");
  if (bf16_loss_scaling && amp_strategy != AmpStrategy::Auto && amp_strategy != AmpStrategy::Scale)
    throw Error(std::string("--bf16-loss-scaling asks for loss scaling but the AMP strategy is ") +
                    amp_strategy_name(amp_strategy),
                "--amp-strategy", "drop --bf16-loss-scaling, or use --amp-strategy scale (it scales in bf16 too)");
  if (sample_every < 0 || checkpoint_every < 0 || eval_every < 0 || hist_every < 0)
    throw Error("intervals must be 0 (never) or positive", "--sample-every/--checkpoint-every/--eval-every");
  if (eval_every > 0 && eval_samples < 64)
    throw Error("evaluation needs at least 64 samples", "--eval-samples", "use 1024 or more for stable numbers");
  if (synthetic_count < 2) throw Error("synthetic dataset needs at least 2 images", "--synthetic-count");
  // These go into config.json, events and checkpoints, which hold only UTF-8: refused here,
  // before a run folder exists, instead of failing at the first write (or checkpoint).
  for (auto [text, flag, hint] :
       {std::tuple{&dataset, "--dataset", "give it under a UTF-8 name: make a link, e.g. ln -s 'PATH' data, and "
                                          "pass --dataset data"},
        std::tuple{&out_dir, "--out", "choose a folder name in UTF-8"},
        std::tuple{&runs_root, "runs_root", "choose a folder name in UTF-8"},
        std::tuple{&name, "--name", "use a name in UTF-8"}})
    if (!is_valid_utf8(*text))
      throw Error("'" + escape_invalid_utf8(*text) + "' is not valid UTF-8 (the \\xNN bytes)", flag, hint);
  // Every integer within its range, whoever set it (the GUI sets fields directly).
  for (const IntSetting& s : kIntSettings) {
    const int64_t v = s.get(*this);
    if (v < s.lo || v > s.hi) out_of_range(std::string(s.key) + " " + std::to_string(v), s.flag, s.lo, s.hi, s.hint);
  }
}

TrainerConfig RunConfig::trainer_config(int dataset_channels) const {
  TrainerConfig t;
  t.family = model;
  if (model == ModelFamily::ResNet) t.model.latent = 128;  // SNGAN's and BigGAN's z
  t.model.res = res;
  t.model.width = width;
  t.model.channels = dataset_channels;
  t.batch = batch;
  t.precision = precision;
  t.loss = loss;
  t.adam_g = {lr_g, beta1, beta2, 1e-8f};
  t.adam_d = {lr_d, beta1, beta2, 1e-8f};
  t.n_dis = n_dis;
  t.ema_decay = ema_decay;
  t.ema_rampup = ema_rampup;
  t.scaler = scaler;
  t.shared_scaler = shared_scaler;
  t.bf16_loss_scaling = bf16_loss_scaling;
  t.layer_policy = layer_policy();
  t.amp_strategy = amp_strategy;
  t.use_graphs = use_graphs;
  t.seed = seed;
  return t;
}

std::string RunConfig::default_name() const {
  std::string d = dataset;
  if (d != "synthetic" && d != "fashion-mnist" && d != "mnist") {
    d = std::filesystem::path(dataset).filename().string();
    if (d.empty()) d = std::filesystem::path(dataset).parent_path().filename().string();
  }
  return d + "-" + precision_name(precision);
}

}  // namespace ampgan
