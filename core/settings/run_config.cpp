#include "core/settings/run_config.h"

#include <cmath>
#include <filesystem>
#include <tuple>

#include "core/amp/loss_scaler.h"
#include "core/common/error.h"
#include "core/common/utf8.h"
#include "core/settings/settings_table.h"

namespace ampgan {

namespace {
// "dataset, channels, ..., world_size": every key a configuration may hold.
std::string setting_keys() {
  std::string keys;
  for (const Setting& s : settings()) keys += (keys.empty() ? "" : ", ") + std::string(s.key);
  return keys;
}
}  // namespace

const char* loss_name(LossKind k) { return k == LossKind::Hinge ? "hinge" : "bce"; }

LossKind parse_loss(const std::string& s) {
  if (s == "bce") return LossKind::BCEWithLogits;
  if (s == "hinge") return LossKind::Hinge;
  throw Error("unknown loss '" + s + "'", "--loss", "use bce (BCE with logits, as DCGAN) or hinge");
}

nlohmann::json RunConfig::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Setting& s : settings())
    if (s.saved) j[s.key] = s.get(*this);
  return j;
}

bool RunConfig::is_number_setting(const std::string& key) {
  const Setting* s = find_setting(key);
  return s && (s->type == SettingType::Int || s->type == SettingType::Unsigned || s->type == SettingType::Real);
}

void RunConfig::set_number(const std::string& key, const nlohmann::json& v, const std::string& where) {
  if (!is_number_setting(key)) throw Error("unknown numeric setting '" + key + "'", where);
  set_setting(*this, *find_setting(key), v, where);
}

void RunConfig::apply_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object())
    throw Error(
        "configuration is not a JSON object", source,
        "write an object of settings, {\"steps\": 500, \"precision\": \"fp16\"}, as a run's config.json holds them");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    const Setting* s = find_setting(k);
    if (!s) throw Error("unknown setting '" + k + "'", source, "check the spelling; the keys are " + setting_keys());
    try {
      std::string where = "'" + k + "' in ";
      where += source;
      set_setting(*this, *s, v, where);
    } catch (const nlohmann::json::exception&) {
      throw Error("setting '" + k + "' has the wrong type (" + v.dump() + ")", source,
                  "use a number, string or boolean as a run's config.json does");
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
  check_setting_ranges(*this);  // each row's own range (integers and reals), whoever set the field
  if (!(scaler.min_scale > 0) || !(scaler.max_scale >= scaler.min_scale))
    throw Error("loss-scale floor must be positive and not above the ceiling", "--min-scale/--max-scale");
  if (bf16_loss_scaling && amp_strategy != AmpStrategy::Auto && amp_strategy != AmpStrategy::Scale)
    throw Error(std::string("--bf16-loss-scaling asks for loss scaling but the AMP strategy is ") +
                    amp_strategy_name(amp_strategy),
                "--amp-strategy", "drop --bf16-loss-scaling, or use --amp-strategy scale (it scales in bf16 too)");
  if (eval_every > 0 && eval_samples < 64)
    throw Error("evaluation needs at least 64 samples", "--eval-samples", "use 1024 or more for stable numbers");
  // These go into config.json, events and checkpoints, which hold only UTF-8: refused here,
  // before a run folder exists, instead of failing at the first write (or checkpoint).
  for (auto [text, flag, hint] : {std::tuple{&dataset, "--dataset",
                                             "give it under a UTF-8 name: make a link, e.g. ln -s 'PATH' data, and "
                                             "pass --dataset data"},
                                  std::tuple{&out_dir, "--out", "choose a folder name in UTF-8"},
                                  std::tuple{&runs_root, "runs_root", "choose a folder name in UTF-8"},
                                  std::tuple{&name, "--name", "use a name in UTF-8"}})
    if (!is_valid_utf8(*text))
      throw Error("'" + escape_invalid_utf8(*text) + "' is not valid UTF-8 (the \\xNN bytes)", flag, hint);
}

TrainerConfig RunConfig::trainer_config(int dataset_channels, int dataset_classes) const {
  TrainerConfig t;
  if (conditional) {
    t.model.classes = dataset_classes >= 0 ? dataset_classes : classes;
    if (t.model.classes < 2)
      throw Error(dataset_classes >= 0 ? "the dataset has no labels to condition on" : "the run records no classes",
                  "--conditional",
                  "use a labelled dataset (fashion-mnist, mnist, a folder with a subfolder per class, a zip with "
                  "dataset.json labels), or train without --conditional");
  }
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
