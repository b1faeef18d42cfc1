// A run's generator as an ONNX model (opset io::kOnnxOpset), for onnxruntime, Netron and the
// other tools that read ONNX. Input "z": float32 [batch, latent] (N(0, 1) latents, the batch
// symbolic); output "images": float32 [batch, channels, res, res] (NCHW) in [-1, 1]. A
// class-conditional generator has a second input "class": int64 [batch], each image's class
// (a Gather from the class tables: the runtime refuses one >= classes; negative ones count from
// the end, as Gather's do).
// Batch norm runs in inference mode, folded into the convolution before it where there is one
// (every DCGAN one, the ResNet's bn2), else one per-channel Mul and Add (a conditional batch
// norm's scale and shift gathered per class), on standing statistics of the exported weights
// (core/train/standing_stats.h; `ampgan sample --bn-stats standing` and the explorer compute
// the same) or the running averages training kept (`--bn-stats running`; an EMA generator's
// images fade on them). Sample's default, batch statistics, depends on which images
// share a batch, which no exported model can reproduce.
// Half: weights and every node in float16, with a Cast after the input and before the output, so
// that both models take and give float32.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/train/trainer.h"

namespace ampgan {

// How a sample's batch norm normalises: the batch's statistics (Trainer::generate, what training
// sees), the running averages, or standing statistics of the weights sampled
// (core/train/standing_stats.h: the explorer's and the exported model's, kStandingLatents latents).
enum class BnStats : uint8_t { Batch, Running, Standing };
constexpr int kStandingLatents = 512;
const char* bn_stats_name(BnStats s);  // "batch", "running", "standing"

struct OnnxExportOptions {
  bool ema = false;                // the EMA generator's weights (Error if the run keeps none)
  bool half = false;               // float16 weights and compute
  BnStats bn = BnStats::Standing;  // Running or Standing (a model has no batch to take statistics of)
};

struct OnnxExportResult {
  std::filesystem::path file, checkpoint;
  int64_t step = 0;
  int opset = 0;
  size_t nodes = 0;
  uint64_t bytes = 0;
  bool has_ema = false;  // whether the run keeps an EMA generator (exported or not)
  int classes = 0;       // a class-conditional generator's classes (its "class" input), else 0
};

// The checkpoint to export from `run`: a run folder's checkpoints/step_N.safetensors for step N,
// or its newest when step < 0; `run` may also be a checkpoint file (then step must be < 0).
// Throws Error naming the folder, with the steps it holds, when there is none such.
std::filesystem::path onnx_source_checkpoint(const std::filesystem::path& run, int64_t step);

// The .onnx file's bytes for the trainer's generator; source (the checkpoint) names it in errors
// and the metadata; *nodes: how many nodes the graph has; class_names (the run's, when it has
// one per class) go into the metadata of a conditional model.
std::string onnx_generator_model(Trainer& trainer, const OnnxExportOptions& options, const std::string& source = {},
                                 size_t* nodes = nullptr, const std::vector<std::string>& class_names = {});

// onnx_source_checkpoint, then the model, written atomically to `out` (whole or not at all).
// The caller checks `out` against its inputs and existing files first (cli/outputs.h).
OnnxExportResult export_onnx(const std::filesystem::path& run, int64_t step, const std::filesystem::path& out,
                             const OnnxExportOptions& options);

// Trainer::generate with the choice of statistics: images NHWC FP32 in [-1, 1], the EMA
// generator's when the run keeps one, in the trainer's precision. With running or standing
// statistics, per_forward images go through each forward pass (0: the trainer's batch; 1: an
// image's values then depend on its latent alone, not on the kernels a batch size selects), and
// progress(done, n) before each pass may return false to stop (Cancelled is thrown). Standing
// statistics are those of latents truncated at `truncation` (standing_latents), as the images'.
// A class-conditional generator draws image i as classes[i] (i % classes without them).
std::vector<float> generate_images(Trainer& trainer, const std::vector<float>& latents, int n, BnStats bn,
                                   int per_forward = 0, const std::function<bool(int, int)>& progress = {},
                                   float truncation = 0, const std::vector<int32_t>& classes = {});

}  // namespace ampgan
