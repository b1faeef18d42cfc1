#include "core/settings/settings_table.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/common/error.h"
#include "core/nn/layer_policy.h"
#include "core/settings/run_config.h"
#include "core/train/trainer.h"

namespace ampgan {

namespace {

// A row's field: get as JSON, set from a checked value (narrowed to the field's type here only).
#define AMPGAN_FIELD(field)                                            \
  .get = [](const RunConfig& c) -> nlohmann::json { return c.field; }, \
  .set = [](RunConfig& c, const nlohmann::json& v) { c.field = v.get<std::remove_cvref_t<decltype(c.field)>>(); }

// An enum field stored in JSON as its name.
#define AMPGAN_NAMED(field, name_of, parse)                                     \
  .get = [](const RunConfig& c) -> nlohmann::json { return name_of(c.field); }, \
  .set = [](RunConfig& c, const nlohmann::json& v) { c.field = parse(v.get<std::string>()); }

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr double kFp32Max = std::numeric_limits<float>::max();
constexpr double kFp32MinNormal = std::numeric_limits<float>::min();  // 1/S stays finite above it

constexpr SettingChoice kChannels[] = {{"0", "As the dataset"}, {"1", "Grey (1)"}, {"3", "Colour (3)"}};
constexpr SettingChoice kModels[] = {{"dcgan", "DCGAN"}, {"resnet", "ResNet (SNGAN/BigGAN)"}};
constexpr SettingChoice kResolutions[] = {{"32", "32 × 32"}, {"64", "64 × 64"}, {"128", "128 × 128"}};
constexpr SettingChoice kLosses[] = {{"bce", "BCE with logits"}, {"hinge", "Hinge"}};
constexpr SettingChoice kPrecisions[] = {{"fp32", "FP32"}, {"tf32", "TF32"}, {"fp16", "FP16"}, {"bf16", "BF16"}};
constexpr SettingChoice kBackends[] = {{"auto", "Automatic"}, {"cpu", "CPU"}, {"cuda", "CUDA"}};
constexpr SettingChoice kCpuKernels[] = {{"auto", "Fastest measured"}, {"openblas", "OpenBLAS"}, {"onednn", "oneDNN"}};
// Short: the panel's combo is narrow (at 1600 px "Automatic (FP16 sca…" was cut); the tooltip
// says what each does.
constexpr SettingChoice kAmpStrategies[] = {
    {"auto", "Automatic"}, {"scale", "Loss scaling"}, {"nan_to_num", "nan_to_num"}, {"none", "None"}};
constexpr SettingChoice kScalers[] = {{"per-network", "One per network (G, D)"}, {"shared", "Shared by G and D"}};

// SNGAN's recipe for the ResNet: hinge loss, TTUR, Adam beta1 = 0, five D steps, an EMA G.
void model_recipe(RunConfig& c) {
  if (c.model != ModelFamily::ResNet) return;
  c.loss = LossKind::Hinge;
  c.ema_decay = 0.999f;
  c.ema_rampup = 10.0f;
  c.lr_g = 1e-4f;
  c.lr_d = 4e-4f;
  c.beta1 = 0.0f;
  c.n_dis = 5;
}

bool parse_scaler_mode(const std::string& s) {
  if (s != "shared" && s != "per-network")
    throw Error("unknown scaler mode '" + s + "'", "--scaler", "use per-network or shared");
  return s == "shared";
}
const char* scaler_mode_name(bool shared) { return shared ? "shared" : "per-network"; }

CpuKernels parse_cpu_kernels_setting(const std::string& s) {
  CpuKernels k;
  if (!parse_cpu_kernels(s, &k))
    throw Error("unknown CPU kernels '" + s + "'", "--cpu-kernels", "use auto, openblas or onednn");
  return k;
}

// FP32 layers: one comma-separated string in JSON as on the command line; a list is read too.
nlohmann::json get_fp32_layers(const RunConfig& c) { return join_layer_list(c.fp32_layers); }
void set_fp32_layers(RunConfig& c, const nlohmann::json& v) {
  c.fp32_layers = v.is_array() ? v.get<std::vector<std::string>>() : parse_layer_list(v.get<std::string>());
}

// In the order of `ampgan train --help`; the panel shows a group's rows in this order too.
const Setting kSettings[] = {
    // ---- Data ----
    {.key = "dataset",
     .type = SettingType::Text,
     .flag = "dataset",
     .meta = "D",
     .help = "synthetic (default), fashion-mnist, mnist, an IDX file, an image folder or a zip\n"
             "of images (StyleGAN dataset_tool's layout, optional dataset.json labels)",
     .section = "Data",
     .example = R"("mnist")",
     .panel = PanelGroup::Data,
     .widget = PanelWidget::Custom,
     .label = "Dataset",
     AMPGAN_FIELD(dataset)},
    {.key = "channels",
     .type = SettingType::Int,
     .flag = "nc",
     .meta = "C",
     .help = "image channels: 1 or 3 (default: the dataset's own)",
     .section = "Data",
     .lo = 0,
     .hi = 3,
     .hint = "use 0 (the dataset's own), 1 (grey) or 3 (RGB)",
     .choices = kChannels,
     .example = "3",
     .panel = PanelGroup::Data,
     .panel_order = 1,
     .label = "Channels",
     .tip = "Image channels; by default the dataset's own (1 for MNIST-like files, 3 for colour folders)",
     AMPGAN_FIELD(channels)},
    {.key = "synthetic_count",
     .type = SettingType::Int,
     .flag = "synthetic-count",
     .meta = "N",
     .help = "images in the synthetic dataset (10000)",
     .section = "Data",
     .lo = 2,
     .hi = 1'000'000,
     .hint = "the default is 10000",
     .example = "512",
     .panel = PanelGroup::Data,
     .label = "Images",
     .tip = "How many synthetic images to generate",
     AMPGAN_FIELD(synthetic_count)},
    // ---- Model and optimiser ----
    {.key = "model",
     .type = SettingType::Choice,
     .flag = "model",
     .meta = "M",
     .help = "dcgan (default) or resnet (SNGAN/BigGAN-style, spectrally normalised D; also sets\n"
             "hinge loss, lr-g 0.0001, lr-d 0.0004, beta1 0, n-dis 5 and an EMA unless given)",
     .section = "Model and optimiser",
     .choices = kModels,
     .example = R"("resnet")",
     .panel = PanelGroup::Model,
     .label = "Model",
     .tip = "DCGAN: transposed convolutions, batch norm. ResNet: residual blocks, spectral norm on every "
            "discriminator weight (its sigma stays FP32 in every precision); choosing it sets SNGAN's recipe: "
            "hinge loss, LR G 1e-4, LR D 4e-4, beta1 0, 5 D steps per G step and an EMA of G.",
     .object_name = "model",
     .chosen = model_recipe,
     AMPGAN_NAMED(model, model_family_name, parse_model_family)},
    {.key = "res",
     .type = SettingType::Int,
     .flag = "res",
     .meta = "R",
     .help = "resolution: 32 (default), 64 or 128",
     .section = "Model and optimiser",
     .lo = 32,
     .hi = 128,
     .hint = "use 32, 64 or 128",
     .choices = kResolutions,
     .example = "64",
     .panel = PanelGroup::Model,
     .label = "Resolution",
     .tip = "Image resolution. The DCGAN doubles 4×4 up to this size.",
     AMPGAN_FIELD(res)},
    {.key = "width",
     .type = SettingType::Int,
     .flag = "width",
     .meta = "W",
     .help = "network width, DCGAN's ngf/ndf (64)",
     .section = "Model and optimiser",
     .lo = 1,
     .hi = 1024,
     .hint = "DCGAN uses 64",
     .example = "32",
     .panel = PanelGroup::Model,
     .label = "Width",
     .tip = "Network width (DCGAN's ngf/ndf). Compute grows with its square; 16-32 trains quickly on a CPU.",
     AMPGAN_FIELD(width)},
    {.key = "batch",
     .type = SettingType::Int,
     .flag = "batch",
     .meta = "B",
     .help = "batch size (64)",
     .section = "Model and optimiser",
     .lo = kMinBatch,
     .hi = kMaxBatch,
     .hint = "batch norm needs two samples; DCGAN uses 64",
     .example = "16",
     .panel = PanelGroup::Model,
     .label = "Batch",
     .tip = "Images per step. At least 2 (batch norm).",
     .object_name = "batch",
     AMPGAN_FIELD(batch)},
    {.key = "steps",
     .type = SettingType::Int,
     .flag = "steps",
     .meta = "N",
     .help = "training steps, n-dis D updates and one G update each (2000)",
     .section = "Model and optimiser",
     .lo = 1,
     .hi = kMaxSteps,
     .hint = "the default is 2000",
     .example = "300",
     .panel = PanelGroup::Model,
     .label = "Steps",
     .tip = "Training steps (one D and one G update each). Can be changed while training.",
     .panel_lo = 1,
     .panel_hi = kIntMax,
     .object_name = "steps",
     .live = true,
     AMPGAN_FIELD(steps)},
    {.key = "n_dis",
     .type = SettingType::Int,
     .flag = "n-dis",
     .meta = "N",
     .help = "D updates per G update, each on its own real batch (1; resnet: 5)",
     .section = "Model and optimiser",
     .lo = 1,
     .hi = kMaxDSteps,
     .hint = "DCGAN uses 1, SNGAN 5",
     .example = "5",
     .panel = PanelGroup::Optimiser,
     .panel_order = 1,
     .label = "D steps per G step",
     .tip = "Discriminator updates per generator update, each on its own real batch (DCGAN: 1, SNGAN: 5)",
     .object_name = "nDis",
     AMPGAN_FIELD(n_dis)},
    {.key = "loss",
     .type = SettingType::Choice,
     .flag = "loss",
     .meta = "L",
     .help = "bce (BCE with logits, default) or hinge",
     .section = "Model and optimiser",
     .choices = kLosses,
     .example = R"("hinge")",
     .panel = PanelGroup::Model,
     .label = "Loss",
     .tip = "GAN loss; computed in FP32 in every precision mode",
     AMPGAN_NAMED(loss, loss_name, parse_loss)},
    // Both rates at once; read, never written (config.json has lr_g and lr_d).
    {.key = "lr",
     .type = SettingType::Real,
     .flag = "lr",
     .meta = "LR",
     .help = "learning rate of both networks (0.0002)",
     .section = "Model and optimiser",
     .hint = "DCGAN uses 0.0002",
     .min = 0,
     .min_open = true,
     .max = 1,
     .example = "0.001",
     .saved = false,
     .get = [](const RunConfig& c) -> nlohmann::json {
       return c.lr_g == c.lr_d ? nlohmann::json(c.lr_g) : nlohmann::json();
     },
     .set = [](RunConfig& c, const nlohmann::json& v) { c.lr_g = c.lr_d = v.get<float>(); }},
    {.key = "lr_g",
     .type = SettingType::Real,
     .flag = "lr-g",
     .meta = "LR",
     .help = "generator learning rate",
     .section = "Model and optimiser",
     .hint = "DCGAN uses 0.0002",
     .min = 0,
     .min_open = true,
     .max = 1,
     .example = "5e-05",
     .panel = PanelGroup::Optimiser,
     .label = "LR G",
     .tip = "Generator learning rate (e.g. 2e-4); can be changed while training",
     .panel_lo = 1e-6,
     .panel_hi = 1,
     .object_name = "lrG",
     .live = true,
     AMPGAN_FIELD(lr_g)},
    {.key = "lr_d",
     .type = SettingType::Real,
     .flag = "lr-d",
     .meta = "LR",
     .help = "discriminator learning rate",
     .section = "Model and optimiser",
     .hint = "DCGAN uses 0.0002",
     .min = 0,
     .min_open = true,
     .max = 1,
     .example = "0.0004",
     .panel = PanelGroup::Optimiser,
     .label = "LR D",
     .tip = "Discriminator learning rate (e.g. 2e-4); can be changed while training",
     .panel_lo = 1e-6,
     .panel_hi = 1,
     .object_name = "lrD",
     .live = true,
     AMPGAN_FIELD(lr_d)},
    {.key = "beta1",
     .type = SettingType::Real,
     .flag = "beta1",
     .meta = "B1",
     .help = "Adam beta1 (0.5)",
     .section = "Model and optimiser",
     .hint = "DCGAN uses 0.5",
     .min = 0,
     .max = 1,
     .max_open = true,
     .example = "0",
     .panel = PanelGroup::Optimiser,
     .label = "β1",
     .tip = "Adam β1 (DCGAN: 0.5)",
     .panel_lo = 0,
     .panel_hi = 0.9999,
     .panel_step = 0.05,
     AMPGAN_FIELD(beta1)},
    {.key = "beta2",
     .type = SettingType::Real,
     .flag = "beta2",
     .meta = "B2",
     .help = "Adam beta2 (0.999)",
     .section = "Model and optimiser",
     .hint = "DCGAN uses 0.999",
     .min = 0,
     .max = 1,
     .max_open = true,
     .example = "0.99",
     .panel = PanelGroup::Optimiser,
     .label = "β2",
     .tip = "Adam β2",
     .panel_lo = 0,
     .panel_hi = 0.9999,
     .panel_step = 0.001,
     AMPGAN_FIELD(beta2)},
    {.key = "ema_decay",
     .type = SettingType::Real,
     .flag = "ema-decay",
     .meta = "D",
     .help = "generator EMA decay: 0 off (default), e.g. 0.999; samples, evaluation and\n"
             "export use the EMA generator; a skipped G step does not advance it",
     .section = "Model and optimiser",
     .hint = "use 0 (off) or e.g. 0.999",
     .min = 0,
     .max = 1,
     .max_open = true,
     .example = "0.999",
     AMPGAN_FIELD(ema_decay)},
    {.key = "ema_rampup",
     .type = SettingType::Real,
     .flag = "ema-rampup",
     .meta = "R",
     .help = "EMA ramp-up: the decay is min(D, (1 + t) / (R + t)) at G step t (0: none)",
     .section = "Model and optimiser",
     .hint = "use 0 (none) or e.g. 10",
     .min = 0,
     .max = 1e9,
     .example = "10",
     AMPGAN_FIELD(ema_rampup)},
    {.key = "seed",
     .type = SettingType::Unsigned,
     .flag = "seed",
     .meta = "S",
     .help = "seed of weights, data order and latents (0)",
     .section = "Model and optimiser",
     .hint = "the default is 0",
     .example = "42",
     .panel = PanelGroup::Optimiser,
     .label = "Seed",
     .tip = "Seed of the initial weights, the data order and the latents. The same seed gives the same run "
            "(bit-identical on the CPU).",
     .panel_lo = 0,
     .panel_hi = kIntMax,
     AMPGAN_FIELD(seed)},
    // ---- Precision ----
    {.key = "precision",
     .type = SettingType::Choice,
     .flag = "precision",
     .meta = "P",
     .help = "fp32 (default), tf32, fp16 (AMP with loss scaling) or bf16 (AMP)",
     .section = "Precision",
     .choices = kPrecisions,
     .example = R"("bf16")",
     .panel = PanelGroup::Precision,
     .widget = PanelWidget::Custom,
     .label = "Mode",
     .object_name = "precision",
     .live = true,
     AMPGAN_NAMED(precision, precision_name, parse_precision)},
    // Stored as named and checked against the choices in validate() (check_setting_ranges); the
    // panel's device list holds it with --gpu.
    {.key = "backend",
     .type = SettingType::Choice,
     .flag = "backend",
     .meta = "B",
     .help = "auto (GPU if usable, default), cpu or cuda",
     .section = "Precision",
     .choices = kBackends,
     .example = R"("cuda")",
     .panel = PanelGroup::Device,
     .widget = PanelWidget::Custom,
     .label = "Train on",
     AMPGAN_FIELD(backend)},
    {.key = "gpu",
     .type = SettingType::Int,
     .flag = "gpu",
     .meta = "N",
     .help = "which GPU, as 'ampgan devices' numbers them (0)",
     .section = "Precision",
     .lo = 0,
     .hi = 1023,
     .hint = "'ampgan devices' lists the GPUs",
     .example = "1",
     .panel = PanelGroup::Device,
     .widget = PanelWidget::Custom,
     .label = "GPU",
     AMPGAN_FIELD(gpu)},
    {.key = "cpu_kernels",
     .type = SettingType::Choice,
     .flag = "cpu-kernels",
     .meta = "K",
     .help = "the CPU's matrix-product library: auto (default: the fastest measured per\n"
             "layer; a resumed run keeps its choices), openblas, or onednn (BF16\n"
             "products in BF16 where the CPU has AVX512-BF16)",
     .section = "Precision",
     .choices = kCpuKernels,
     .example = R"("openblas")",
     .panel = PanelGroup::Device,
     .label = "CPU kernels",
     .tip = "Which library multiplies on the CPU. Fastest measured: OpenBLAS or oneDNN per layer, timed once on "
            "this machine (a resumed run keeps its choices). oneDNN multiplies BF16 in BF16 on CPUs with "
            "AVX512-BF16, which makes BF16 AMP faster than FP32 there.",
     AMPGAN_NAMED(cpu_kernels, cpu_kernels_name, parse_cpu_kernels_setting)},
    {.key = "init_scale",
     .type = SettingType::Real,
     .flag = "init-scale",
     .meta = "S",
     .help = "initial loss scale (65536 = 2^16)",
     .section = "Precision",
     .hint = "1/S must stay finite in FP32; the default is 65536 = 2^16",
     .min = kFp32MinNormal,
     .max = kFp32Max,
     .example = "1024",
     .panel = PanelGroup::Scaler,
     .widget = PanelWidget::Pow2,
     .label = "Initial scale",
     .glossary = "loss_scale",
     .panel_lo = -24,
     .panel_hi = 30,
     AMPGAN_FIELD(scaler.init_scale)},
    {.key = "growth_factor",
     .type = SettingType::Real,
     .flag = "growth",
     .meta = "F",
     .help = "loss-scale growth factor (2)",
     .section = "Precision",
     .hint = "the default is 2",
     .min = 1,
     .min_open = true,
     .max = kFp32Max,
     .example = "4",
     .panel = PanelGroup::Scaler,
     .label = "Growth factor",
     .glossary = "growth_factor",
     .panel_lo = 1.01,
     .panel_hi = 1024,
     .panel_step = 0.5,
     AMPGAN_FIELD(scaler.growth_factor)},
    {.key = "backoff_factor",
     .type = SettingType::Real,
     .flag = "backoff",
     .meta = "F",
     .help = "loss-scale backoff factor on overflow (0.5)",
     .section = "Precision",
     .hint = "the default is 0.5",
     .min = 0,
     .min_open = true,
     .max = 1,
     .max_open = true,
     .example = "0.25",
     .panel = PanelGroup::Scaler,
     .label = "Backoff factor",
     .glossary = "backoff_factor",
     .panel_lo = 0.01,
     .panel_hi = 0.99,
     .panel_step = 0.05,
     AMPGAN_FIELD(scaler.backoff_factor)},
    {.key = "growth_interval",
     .type = SettingType::Int,
     .flag = "growth-interval",
     .meta = "N",
     .help = "clean steps before the scale grows (2000)",
     .section = "Precision",
     .lo = 1,
     .hi = kIntMax,
     .hint = "the default is 2000",
     .example = "25",
     .panel = PanelGroup::Scaler,
     .label = "Growth interval",
     .glossary = "growth_interval",
     .panel_lo = 1,
     .panel_hi = 10'000'000,
     AMPGAN_FIELD(scaler.growth_interval)},
    {.key = "min_scale",
     .type = SettingType::Real,
     .flag = "min-scale",
     .meta = "S",
     .help = "loss-scale floor (1)",
     .section = "Precision",
     .hint = "1/S must stay finite in FP32; the default is 1",
     .min = kFp32MinNormal,
     .max = kFp32Max,
     .example = "0.5",
     .panel = PanelGroup::Scaler,
     .widget = PanelWidget::Pow2,
     .label = "Scale floor",
     .glossary = "min_max_scale",
     .panel_lo = -24,
     .panel_hi = 30,
     AMPGAN_FIELD(scaler.min_scale)},
    {.key = "max_scale",
     .type = SettingType::Real,
     .flag = "max-scale",
     .meta = "S",
     .help = "loss-scale ceiling (16777216 = 2^24)",
     .section = "Precision",
     .hint = "1/S must stay finite in FP32; the default is 16777216 = 2^24",
     .min = kFp32MinNormal,
     .max = kFp32Max,
     .example = "1048576",
     .panel = PanelGroup::Scaler,
     .widget = PanelWidget::Pow2,
     .label = "Scale ceiling",
     .glossary = "min_max_scale",
     .panel_lo = -24,
     .panel_hi = 60,
     AMPGAN_FIELD(scaler.max_scale)},
    {.key = "scaler",
     .type = SettingType::Choice,
     .flag = "scaler",
     .meta = "M",
     .help = "per-network (default: one scaler for G, one for D) or shared",
     .section = "Precision",
     .choices = kScalers,
     .example = R"("shared")",
     .panel = PanelGroup::Scaler,
     .label = "Scalers",
     .glossary = "shared_scaler",
     AMPGAN_NAMED(shared_scaler, scaler_mode_name, parse_scaler_mode)},
    {.key = "bf16_loss_scaling",
     .type = SettingType::Bool,
     .flag = "bf16-loss-scaling",
     .help = "use dynamic loss scaling in bf16 too (off by default)",
     .section = "Precision",
     .example = "true",
     .panel = PanelGroup::Precision,
     .label = "Loss scaling in BF16 too",
     .glossary = "bf16_loss_scaling",
     AMPGAN_FIELD(bf16_loss_scaling)},
    // How half precision is kept finite (docs/amp-guide.md, "Three ways to keep half precision finite").
    {.key = "amp_strategy",
     .type = SettingType::Choice,
     .flag = "amp-strategy",
     .meta = "S",
     .help = "how half gradients are guarded: auto (default: fp16 scales, bf16 does not),\n"
             "scale (dynamic loss scaling), nan_to_num (StyleGAN2-ADA: no scaling,\n"
             "NaN -> 0, inf -> 1e5, never skip) or none",
     .section = "Precision",
     .choices = kAmpStrategies,
     .example = R"("nan_to_num")",
     .panel = PanelGroup::Precision,
     .label = "AMP strategy",
     .tip = "How half-precision gradients are guarded. Automatic: FP16 scales the loss, BF16 does not. Loss "
            "scaling: dynamic loss scaling. nan_to_num (StyleGAN2-ADA): no scaling, NaN → 0, ±inf → ±1e5, no step "
            "is skipped. None: no guard.",
     AMPGAN_NAMED(amp_strategy, amp_strategy_name, parse_amp_strategy)},
    {.key = "conv_clamp",
     .type = SettingType::Real,
     .flag = "conv-clamp",
     .meta = "C",
     .help = "clamp half-precision convolution outputs to [-C, C] (0 = off, default;\nStyleGAN2-ADA: 256)",
     .section = "Precision",
     .hint = "use 0 (off) or a bound such as 256 (StyleGAN2-ADA's)",
     .min = 0,
     .max = kFp32Max,
     .example = "256",
     .panel = PanelGroup::Precision,
     .label = "Activation clamp",
     .tip = "Clamp the outputs of half-precision convolutions to ±C (StyleGAN2-ADA: 256); 0 = off. Can be "
            "changed while training.",
     .panel_lo = 0,
     .panel_hi = 65504,
     .panel_step = 16,
     .zero_text = "off",
     .live = true,
     AMPGAN_FIELD(conv_clamp)},
    {.key = "fp32_layers",
     .type = SettingType::Text,
     .flag = "fp32-layers",
     .meta = "NAMES",
     .help = "layers kept in FP32 in fp16/bf16, comma-separated, named as in layers.csv\n"
             "and the studio's Model view (e.g. D.2,D.3)",
     .section = "Precision",
     .example = R"("D.2,D.3")",
     .panel = PanelGroup::Precision,
     .label = "FP32 layers",
     .tip = "Layers kept in FP32 in FP16/BF16 runs, comma-separated, named as in the Layers and Model views. Can "
            "be changed while training.",
     .live = true,
     .get = get_fp32_layers,
     .set = set_fp32_layers},
    {.key = "half_blocks",
     .type = SettingType::Int,
     .flag = "half-blocks",
     .meta = "N",
     .help = "half precision only in each network's N highest-resolution blocks, the\n"
             "rest in FP32 (StyleGAN2-ADA: 4; -1 = every block, default)",
     .section = "Precision",
     .lo = -1,
     .hi = 1024,
     .hint = "-1 keeps every block in half precision; StyleGAN2-ADA uses 4",
     .example = "4",
     .panel = PanelGroup::Precision,
     .label = "Half blocks",
     .tip = "Half precision only in each network's N highest-resolution blocks, the rest in FP32 (StyleGAN2-ADA "
            "uses 4). Can be changed while training.",
     .zero_text = "all",
     .live = true,
     AMPGAN_FIELD(half_blocks)},
    {.key = "cuda_graphs",
     .type = SettingType::Bool,
     .flag = "no-cuda-graphs",
     .help = "launch each op instead of replaying the step as a CUDA graph",
     .section = "Precision",
     .switch_sets = false,
     .example = "false",
     .panel = PanelGroup::Precision,
     .label = "CUDA graphs",
     .glossary = "cuda_graphs",
     AMPGAN_FIELD(use_graphs)},
    // ---- Output ----
    // Where this one run goes: read from --config files, never written (a resumed run is where it is).
    {.key = "out",
     .type = SettingType::Text,
     .flag = "out",
     .meta = "DIR",
     .help = "run folder (default: runs/<date>-<dataset>-<precision>)",
     .section = "Output",
     .example = R"("runs/a-run")",
     .saved = false,
     AMPGAN_FIELD(out_dir)},
    {.key = "name",
     .type = SettingType::Text,
     .flag = "name",
     .meta = "NAME",
     .help = "run name used in the default folder",
     .section = "Output",
     .example = R"("my-run")",
     .panel = PanelGroup::Bookkeeping,
     .panel_order = 1,
     .widget = PanelWidget::Custom,
     .label = "Run name",
     AMPGAN_FIELD(name)},
    {.key = "sample_every",
     .type = SettingType::Int,
     .flag = "sample-every",
     .meta = "N",
     .help = "write a sample grid every N steps (100; 0 = only at the end)",
     .section = "Output",
     .lo = 0,
     .hi = kIntMax,
     .hint = "0 means only at the end",
     .example = "20",
     .panel = PanelGroup::Bookkeeping,
     .label = "Samples",
     .tip = "Write the 8×8 sample grid every N steps (0: only when the run ends)",
     .panel_lo = 0,
     .panel_hi = 1'000'000,
     .zero_text = "at the end",
     AMPGAN_FIELD(sample_every)},
    {.key = "checkpoint_every",
     .type = SettingType::Int,
     .flag = "checkpoint-every",
     .meta = "N",
     .help = "write a checkpoint every N steps (1000; 0 = only at the end)",
     .section = "Output",
     .lo = 0,
     .hi = kIntMax,
     .hint = "0 means only at the end",
     .example = "0",
     .panel = PanelGroup::Bookkeeping,
     .label = "Checkpoints",
     .tip = "Write a checkpoint every N steps (0: only when the run ends; Stop always writes one)",
     .panel_lo = 0,
     .panel_hi = 10'000'000,
     .zero_text = "at the end",
     AMPGAN_FIELD(checkpoint_every)},
    {.key = "keep_checkpoints",
     .type = SettingType::Int,
     .flag = "keep-checkpoints",
     .meta = "N",
     .help = "keep the newest N checkpoints plus every 10th interval's (5; 0 = all)",
     .section = "Output",
     .lo = 0,
     .hi = kIntMax,
     .hint = "0 keeps every checkpoint",
     .example = "0",
     .panel = PanelGroup::Bookkeeping,
     .label = "Keep checkpoints",
     .tip = "Keep the newest N checkpoints, plus one every ten checkpoint intervals; older ones are deleted as "
            "new ones are written (0: keep all)",
     .panel_lo = 0,
     .panel_hi = 1'000'000,
     .zero_text = "all",
     AMPGAN_FIELD(keep_checkpoints)},
    {.key = "eval_every",
     .type = SettingType::Int,
     .flag = "eval-every",
     .meta = "N",
     .help = "sample-quality metrics every N steps (0 = never)",
     .section = "Output",
     .lo = 0,
     .hi = kIntMax,
     .hint = "0 means never",
     .example = "500",
     .panel = PanelGroup::Bookkeeping,
     .label = "Evaluation",
     .tip = "0: never. Costs time: a few hundred steps is a good interval.",
     .glossary = "sample_quality",
     .panel_lo = 0,
     .panel_hi = 10'000'000,
     .zero_text = "never",
     AMPGAN_FIELD(eval_every)},
    {.key = "eval_samples",
     .type = SettingType::Int,
     .flag = "eval-samples",
     .meta = "N",
     .help = "images per evaluation (1024)",
     .section = "Output",
     .lo = 2,
     .hi = 1'000'000,
     .hint = "use 1024 or more for stable numbers",
     .example = "2048",
     .panel = PanelGroup::Bookkeeping,
     .label = "Eval images",
     .tip = "Generated and real images per evaluation",
     .panel_lo = 64,
     .panel_hi = 100'000,
     AMPGAN_FIELD(eval_samples)},
    {.key = "hist_every",
     .type = SettingType::Int,
     .flag = "hist-every",
     .meta = "N",
     .help = "gradient-exponent histograms of G and D to histograms.csv every N\n"
             "steps (25; 0 = never)",
     .section = "Output",
     .lo = 0,
     .hi = kIntMax,
     .hint = "0 means never",
     .example = "5",
     .panel = PanelGroup::Bookkeeping,
     .label = "Histograms",
     .tip = "Every N steps (0: never).",
     .glossary = "exponent_histogram",
     .panel_lo = 0,
     .panel_hi = 100'000,
     .zero_text = "never",
     AMPGAN_FIELD(hist_every)},
    {.key = "layers_every",
     .type = SettingType::Int,
     .flag = "layers-every",
     .meta = "N",
     .help = "per-layer gradient statistics to layers.csv every N steps\n"
             "(50; 0 = only on overflow steps, which always get them)",
     .section = "Output",
     .lo = 0,
     .hi = kIntMax,
     .hint = "0 means on overflow steps only",
     .example = "10",
     .panel = PanelGroup::Bookkeeping,
     .label = "Layers every",
     .tip = "Per-layer gradient statistics (max |g|, inf/NaN, underflow) to layers.csv and the Layers tab every N "
            "steps; overflow steps always (0: overflow steps only).",
     .panel_lo = 0,
     .panel_hi = 10'000'000,
     .zero_text = "overflows only",
     AMPGAN_FIELD(layers_every)},
    {.key = "tensorboard",
     .type = SettingType::Bool,
     .flag = "no-tensorboard",
     .help = "write no TensorBoard event file (events.out.tfevents.*) in the run folder",
     .section = "Output",
     .switch_sets = false,
     .example = "false",
     .panel = PanelGroup::Bookkeeping,
     .label = "TensorBoard",
     .tip = "Write the run's scalars, sample grids and histograms as a TensorBoard event file in the run folder "
            "(tensorboard --logdir runs/)",
     AMPGAN_FIELD(tensorboard)},
    // Compare's largest-batch search (core/run/compare.h); `ampgan compare --memory-budget` sets
    // it through this row, `ampgan train` has no use for it and so no option.
    {.key = "memory_budget_mib",
     .type = SettingType::Int,
     .lo = 16,
     .hi = 1 << 20,
     .hint = "the budget is in MiB, e.g. 1024 (1 GiB)",
     .example = "512",
     .panel = PanelGroup::Device,
     .panel_order = 1,
     .label = "Memory budget (MiB)",
     .tip = "The CPU memory Compare's largest-batch search fills (tick Largest batch in the Compare tab). On a "
            "GPU the search fills 90% of the GPU's free memory instead.",
     .object_name = "memoryBudget",
     AMPGAN_FIELD(memory_budget_mib)},
    // Recorded, not chosen: how many ranks trained the run last (core/dist).
    {.key = "world_size",
     .type = SettingType::Int,
     .lo = 1,
     .hi = 1 << 20,
     .hint = "it records how many ranks trained the run",
     .example = "2",
     AMPGAN_FIELD(world_size)},
};

#undef AMPGAN_FIELD
#undef AMPGAN_NAMED

std::string text_of(const nlohmann::json& v) { return v.dump().substr(0, 40); }

template <typename T>
[[noreturn]] void out_of_range(const std::string& value, const std::string& where, T lo, T hi,
                               const std::string& hint) {
  throw Error(value + " is out of range", where,
              "use a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + "; " + hint);
}

// v as a whole number in [lo, hi] (uint64 for the seed), checked before any conversion: a bool,
// a string, a fraction, or a value beyond the range (even beyond int64, as 1e19) is refused.
template <typename T>
T whole_number(const nlohmann::json& v, const std::string& label, const std::string& where, T lo, T hi,
               const std::string& hint) {
  if (!v.is_number())
    throw Error(label + " must be a whole number, not " + text_of(v), where,
                "write it as a number without quotes, e.g. 64");
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
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo)))
      out_of_range(label + " " + text_of(v), where, lo, hi, hint);
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < 0 && lo >= 0) out_of_range(label + " " + text_of(v), where, lo, hi, hint);
  if (static_cast<T>(i) < lo || static_cast<T>(i) > hi) out_of_range(label + " " + text_of(v), where, lo, hi, hint);
  return static_cast<T>(i);
}

// "0.0002", "1.18e-38", "3.4e38", "nan": a Real for messages.
std::string number_text(double x, int digits = 3) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  std::string t = buf;
  if (const auto e = t.find("e+"); e != std::string::npos) t.erase(e + 1, 1);
  for (size_t e = t.find('e'); e != std::string::npos && e + 1 < t.size();) {
    const size_t d = t[e + 1] == '-' ? e + 2 : e + 1;
    if (d + 1 < t.size() && t[d] == '0')
      t.erase(d, 1);
    else
      break;
  }
  return t;
}

// "above 0 and at most 1", "from 0 to below 1", "above 1": a Real row's range in words.
std::string real_range(const Setting& s) {
  const bool lo = std::isfinite(s.min), hi = std::isfinite(s.max);
  std::string out;
  if (lo) out += (s.min_open ? "above " : "from ") + number_text(s.min);
  if (lo && hi) out += s.min_open ? " and " : " ";
  if (hi)
    out += (s.max_open ? (lo && !s.min_open ? "to below " : "below ") : (lo && !s.min_open ? "to " : "at most ")) +
           number_text(s.max);
  return out;
}

void check_real_range(const Setting& s, double d, const std::string& where) {
  const bool above_min = d > s.min || (!s.min_open && d == s.min);
  const bool below_max = d < s.max || (!s.max_open && d == s.max);
  if (!above_min || !below_max)  // NaN fails both
    throw Error(std::string(s.key) + " " + number_text(d, 9) + " is out of range", where,
                "use a number " + real_range(s) + (*s.hint ? std::string("; ") + s.hint : std::string()));
}

}  // namespace

std::span<const Setting> settings() { return kSettings; }

const Setting* find_setting(const std::string& key) {
  for (const Setting& s : kSettings)
    if (key == s.key) return &s;
  return nullptr;
}

const Setting* find_setting_by_flag(const std::string& flag) {
  for (const Setting& s : kSettings)
    if (s.flag && flag == s.flag) return &s;
  return nullptr;
}

void set_setting(RunConfig& c, const Setting& s, const nlohmann::json& v, const std::string& where) {
  const std::string key = s.key;
  switch (s.type) {
    case SettingType::Int:
      s.set(c, whole_number<int64_t>(v, key, where, s.lo, s.hi, s.hint));
      return;
    case SettingType::Unsigned:
      s.set(c, whole_number<uint64_t>(v, key, where, 0, std::numeric_limits<uint64_t>::max(), s.hint));
      return;
    case SettingType::Real: {
      // Beyond FP32 is refused before narrowing (narrowing a larger double is undefined behaviour).
      if (!v.is_number())
        throw Error(key + " must be a number, not " + text_of(v), where, "write it as a number without quotes");
      const double d = v.get<double>();
      if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
        throw Error(key + " " + text_of(v) + " is beyond FP32's range (3.4e38)", where, "use a smaller number");
      check_real_range(s, d, where);
      s.set(c, static_cast<float>(d));
      return;
    }
    case SettingType::Bool:
    case SettingType::Text:
    case SettingType::Choice:
      s.set(c, v);  // the field's own parser (parse_loss, ...) names the option and the choices
      return;
  }
}

void check_setting_ranges(const RunConfig& c) {
  for (const Setting& s : kSettings) {
    if (s.type == SettingType::Int) {
      const int64_t v = s.get(c).get<int64_t>();
      if (v < s.lo || v > s.hi)
        out_of_range(std::string(s.key) + " " + std::to_string(v), s.where(), s.lo, s.hi, s.hint);
    } else if (s.type == SettingType::Real && s.saved) {  // --lr (not saved) is lr_g and lr_d
      check_real_range(s, s.get(c).get<double>(), s.where());
    } else if (s.type == SettingType::Choice && !s.choices.empty()) {
      const std::string v = s.get(c).get<std::string>();
      bool known = false;
      std::string names;  // "auto, cpu or cuda"
      for (size_t i = 0; i < s.choices.size(); ++i) {
        known |= v == s.choices[i].value;
        names += (i == 0 ? "" : i + 1 == s.choices.size() ? " or " : ", ") + std::string(s.choices[i].value);
      }
      if (!known) throw Error("unknown " + std::string(s.key) + " '" + v + "'", s.where(), "use " + names);
    }
  }
}

nlohmann::json setting_example(const Setting& s) { return nlohmann::json::parse(s.example); }

}  // namespace ampgan
