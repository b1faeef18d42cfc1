// Everything that defines a run: written to the run folder's config.json, read back by resume,
// filled from the CLI's flags (or --config FILE.json, same keys) and the GUI's controls. Each
// setting is a row of core/settings/settings_table.h, from which the JSON, the options and the
// settings panel are derived.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/amp/precision.h"
#include "core/backend/elementwise.h"
#include "core/train/trainer.h"

namespace ampgan {

// The most training steps a run may have (and so the largest step a checkpoint may claim):
// far beyond any real run, far below where step arithmetic could overflow.
constexpr int64_t kMaxSteps = 1'000'000'000'000;

struct RunConfig {
  // data
  std::string dataset = "synthetic";  // synthetic | fashion-mnist | mnist | path to IDX file or image folder
  int channels = 0;                   // 0: the dataset's own (1 for IDX, 3 for colour folders)
  int synthetic_count = 10000;
  bool conditional = false;  // class-conditional G and D on the dataset's labels (core/models)
  // model and optimisation
  ModelFamily model = ModelFamily::DCGAN;  // dcgan | resnet (core/models/model_family.h)
  int res = 32;
  int width = 64;
  int batch = 64;
  int64_t steps = 2000;
  Precision precision = Precision::FP32;
  std::string backend = "auto";               // auto | cpu | cuda
  int gpu = 0;                                // which GPU (ampgan devices lists them) for auto and cuda
  CpuKernels cpu_kernels = CpuKernels::Auto;  // the CPU backend's product kernels (backend.h)
  LossKind loss = LossKind::BCEWithLogits;
  float lr_g = 2e-4f, lr_d = 2e-4f, beta1 = 0.5f, beta2 = 0.999f;
  int n_dis = 1;            // D steps per G step (SNGAN: 5; --model resnet sets it)
  float ema_decay = 0.0f;   // generator EMA: 0 = off, else e.g. 0.999 (samples, evaluation, export use it)
  float ema_rampup = 0.0f;  // 0 = none, else the decay ramps as (1 + t) / (rampup + t)
  uint64_t seed = 0;
  // mixed precision
  ew::ScalerConfig scaler;
  bool shared_scaler = false;
  bool bf16_loss_scaling = false;
  // per-layer precision (core/nn/layer_policy.h): layers kept in FP32 in half modes, by name,
  // and StyleGAN2-ADA's "half only in the N highest-resolution blocks" (-1: every block)
  std::vector<std::string> fp32_layers;
  int half_blocks = -1;
  float conv_clamp = 0.0f;  // activation clamp of half-precision convolutions (0: off; StyleGAN2-ADA: 256)
  AmpStrategy amp_strategy = AmpStrategy::Auto;  // scale | nan_to_num | none (auto: fp16 scales, bf16 not)
  bool use_graphs = true;
  // bookkeeping (0 = never; checkpoints are also written when a run stops)
  int sample_every = 100;
  bool tensorboard = true;  // events.out.tfevents.* in the run folder (core/run/tensorboard_log.h)
  int checkpoint_every = 1000;
  // Checkpoints kept: the newest N plus every 10th of the interval (step a multiple of
  // 10 x checkpoint_every); older ones are deleted as new ones are written. 0 keeps all.
  int keep_checkpoints = 5;
  int eval_every = 0;       // sample-quality metrics (SWD, FD); see core/metrics
  int eval_samples = 1024;  // generated and real images per evaluation
  int hist_every = 25;      // gradient exponent histograms for the GUI
  int layers_every = 50;    // per-tensor gradient statistics to layers.csv (and on every overflow)
  // The CPU memory a comparison's largest-batch search fills (core/train/max_batch.h); a GPU fills
  // 90% of its free memory instead.
  int memory_budget_mib = 1024;
  // where: out_dir, or runs_root/<date>-<name>
  std::string out_dir;
  std::string runs_root = "runs";
  std::string name;
  // Recorded, not a setting: how many ranks trained the run last (core/dist; 1 on one device).
  int world_size = 1;
  // Recorded: a conditional run's classes, and their names where the dataset has them (the
  // sampler and the studio need them without the dataset).
  int classes = 0;
  std::vector<std::string> class_names;

  nlohmann::json to_json() const;
  // Unknown keys are an error (a typo must not silently train something else).
  static RunConfig from_json(const nlohmann::json& j, const std::string& source);
  void apply_json(const nlohmann::json& j, const std::string& source);
  // Sets the numeric setting `key` (a JSON key, e.g. "width") through the settings table's
  // set_setting, which checks type and range before any narrowing: booleans, strings, fractions
  // where whole numbers belong, and values out of range (e.g. width 4294967304, "steps": 1e19,
  // "seed": -1) throw Error naming `where`.
  void set_number(const std::string& key, const nlohmann::json& v, const std::string& where);
  static bool is_number_setting(const std::string& key);
  void validate() const;  // throws Error naming the bad setting and what to use instead
  // classes: the run's (RunConfig::classes) unless given; a conditional run needs >= 2.
  TrainerConfig trainer_config(int dataset_channels, int dataset_classes = -1) const;
  std::string default_name() const;  // "<dataset>-<precision>"
  LayerPolicy layer_policy() const { return {fp32_layers, half_blocks, conv_clamp}; }
};

const char* loss_name(LossKind k);
LossKind parse_loss(const std::string& s);

}  // namespace ampgan
