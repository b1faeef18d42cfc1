#include "core/train/run_config.h"

#include <cmath>
#include <filesystem>

#include "core/amp/loss_scaler.h"
#include "core/common/error.h"

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
  j["seed"] = seed;
  j["init_scale"] = scaler.init_scale;
  j["growth_factor"] = scaler.growth_factor;
  j["backoff_factor"] = scaler.backoff_factor;
  j["growth_interval"] = scaler.growth_interval;
  j["min_scale"] = scaler.min_scale;
  j["max_scale"] = scaler.max_scale;
  j["scaler"] = shared_scaler ? "shared" : "per-network";
  j["bf16_loss_scaling"] = bf16_loss_scaling;
  j["cuda_graphs"] = use_graphs;
  j["sample_every"] = sample_every;
  j["checkpoint_every"] = checkpoint_every;
  j["eval_every"] = eval_every;
  j["eval_samples"] = eval_samples;
  j["hist_every"] = hist_every;
  j["name"] = name;
  return j;
}

void RunConfig::apply_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error("configuration is not a JSON object", source, "see README.md for an example");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    try {
      if (k == "dataset") dataset = v.get<std::string>();
      else if (k == "channels") channels = v.get<int>();
      else if (k == "synthetic_count") synthetic_count = v.get<int>();
      else if (k == "res") res = v.get<int>();
      else if (k == "width") width = v.get<int>();
      else if (k == "batch") batch = v.get<int>();
      else if (k == "steps") steps = v.get<int64_t>();
      else if (k == "precision") precision = parse_precision(v.get<std::string>());
      else if (k == "backend") backend = v.get<std::string>();
      else if (k == "gpu") gpu = v.get<int>();
      else if (k == "loss") loss = parse_loss(v.get<std::string>());
      else if (k == "lr") lr_g = lr_d = v.get<float>();
      else if (k == "lr_g") lr_g = v.get<float>();
      else if (k == "lr_d") lr_d = v.get<float>();
      else if (k == "beta1") beta1 = v.get<float>();
      else if (k == "beta2") beta2 = v.get<float>();
      else if (k == "seed") seed = v.get<uint64_t>();
      else if (k == "init_scale") scaler.init_scale = v.get<float>();
      else if (k == "growth_factor") scaler.growth_factor = v.get<float>();
      else if (k == "backoff_factor") scaler.backoff_factor = v.get<float>();
      else if (k == "growth_interval") scaler.growth_interval = v.get<int>();
      else if (k == "min_scale") scaler.min_scale = v.get<float>();
      else if (k == "max_scale") scaler.max_scale = v.get<float>();
      else if (k == "scaler") {
        const std::string s = v.get<std::string>();
        if (s != "shared" && s != "per-network")
          throw Error("unknown scaler mode '" + s + "'", "--scaler", "use per-network or shared");
        shared_scaler = s == "shared";
      } else if (k == "bf16_loss_scaling") bf16_loss_scaling = v.get<bool>();
      else if (k == "cuda_graphs") use_graphs = v.get<bool>();
      else if (k == "sample_every") sample_every = v.get<int>();
      else if (k == "checkpoint_every") checkpoint_every = v.get<int>();
      else if (k == "eval_every") eval_every = v.get<int>();
      else if (k == "eval_samples") eval_samples = v.get<int>();
      else if (k == "hist_every") hist_every = v.get<int>();
      else if (k == "name") name = v.get<std::string>();
      else if (k == "out") out_dir = v.get<std::string>();
      else throw Error("unknown setting '" + k + "'", source, "check the spelling; README.md lists the keys");
    } catch (const nlohmann::json::exception&) {
      throw Error("setting '" + k + "' has the wrong type (" + v.dump() + ")", source,
                  "use a number, string or boolean as in README.md");
    }
  }
}

RunConfig RunConfig::from_json(const nlohmann::json& j, const std::string& source) {
  RunConfig c;
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
  if (sample_every < 0 || checkpoint_every < 0 || eval_every < 0 || hist_every < 0)
    throw Error("intervals must be 0 (never) or positive", "--sample-every/--checkpoint-every/--eval-every");
  if (eval_every > 0 && eval_samples < 64)
    throw Error("evaluation needs at least 64 samples", "--eval-samples", "use 1024 or more for stable numbers");
  if (synthetic_count < 2) throw Error("synthetic dataset needs at least 2 images", "--synthetic-count");
}

TrainerConfig RunConfig::trainer_config(int dataset_channels) const {
  TrainerConfig t;
  t.model.res = res;
  t.model.width = width;
  t.model.channels = dataset_channels;
  t.batch = batch;
  t.precision = precision;
  t.loss = loss;
  t.adam_g = {lr_g, beta1, beta2, 1e-8f};
  t.adam_d = {lr_d, beta1, beta2, 1e-8f};
  t.scaler = scaler;
  t.shared_scaler = shared_scaler;
  t.bf16_loss_scaling = bf16_loss_scaling;
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
