// Checkpoints: every tensor of the training state (FP32 master weights, Adam moments and step
// counts, batch-norm running averages, loss-scaler states) plus, as metadata, the step, the
// data-order position, the precision in use and the run's configuration. The random numbers
// need no saved state: latents are drawn from Philox streams indexed by the step, so a resumed
// run draws exactly what the uninterrupted run would have.
#pragma once

#include <filesystem>

#include "core/io/safetensors.h"
#include "core/settings/run_config.h"
#include "core/train/trainer.h"

namespace ampgan {

struct CheckpointInfo {
  int64_t step = 0;
  int64_t batches_consumed = 0;
  Precision precision = Precision::FP32;
  LayerPolicy layer_policy;  // the policy at the checkpoint (it may have been switched since the start)
  int channels = 1;
  RunConfig config;
  // The CPU backend's product kernels the run had chosen (backend.h): a resumed run reuses them,
  // so that it continues bit for bit on the same host. Empty for other backends and older files.
  std::vector<KernelChoice> kernel_choices;
  // The dataset the run trained on (data::fingerprint); empty in checkpoints from before it was kept.
  std::string dataset_fingerprint;
};

constexpr const char* kCheckpointFormat = "ampgan-checkpoint-1";

// dataset_fingerprint: data::fingerprint of the set it trains on (resume compares it).
void save_checkpoint(const std::filesystem::path& file, Trainer& trainer, const RunConfig& config,
                     int64_t batches_consumed, const std::string& dataset_fingerprint = {});
// Reads and validates a checkpoint file: format; metadata (step in range and equal to the one in a
// step_N file name, data position, channels, precision, the embedded configuration); and the
// shapes that the configuration fixes, all from the header before any data is read; then the
// data's CRC, that it is finite, and the loss scalers' states against the configuration's range.
// Throws Error naming the file.
io::StFile read_checkpoint(const std::filesystem::path& file, CheckpointInfo* info);
// Throws Error if file is named step_N.safetensors and N is not info.step (a renamed or edited
// file, which would misplace the run's history). Separate from read_checkpoint so that a file of
// another model is reported as that first (by load_checkpoint).
void check_step_matches_name(const CheckpointInfo& info, const std::filesystem::path& file);
// Writes the file's tensors into the trainer; every name and shape must match.
void load_checkpoint(const io::StFile& f, const std::filesystem::path& file, Trainer& trainer);
// The regular file checkpoints/step_N.safetensors with the highest step (folders and FIFOs of
// such names are ignored); throws Error if there is none.
std::filesystem::path newest_checkpoint(const std::filesystem::path& run_dir);
// The step in a checkpoint file name "step_N.safetensors"; -1 for other names. Throws Error for a
// step beyond kMaxSteps (a name no run writes, e.g. step_99999999999999999999).
int64_t step_of_checkpoint_name(const std::filesystem::path& file);

// A Trainer rebuilt from a checkpoint alone (its metadata holds the configuration), in the
// precision it was saved in; for sampling, export and evaluation.
std::unique_ptr<Trainer> trainer_from_checkpoint(Backend& b, const std::filesystem::path& file,
                                                 CheckpointInfo* info = nullptr);

// The generator's weights under the PyTorch peer's state_dict names and layouts (ConvTranspose2d
// weight (in, out, kH, kW); batch norm weight, bias, running_mean, running_var and
// num_batches_tracked), FP32: loads with load_state_dict into bench/peers/pytorch_dcgan.py's
// generator() (pytorch_resnet.py's for a ResNet run). A class-conditional run's class parameters
// too (metadata "classes"; the DCGAN's embed.weight rows in the peer's (c, 4, 4) order), for the
// peer's generator(..., classes=K).
io::StFile export_generator(Trainer& trainer);

}  // namespace ampgan
