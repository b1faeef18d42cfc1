#include "ui/worker/run_sampler.h"

#include <cstdio>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/nn/class_embedding.h"
#include "core/run/checkpoint.h"
#include "core/train/trainer.h"

namespace ampgan::ui {

namespace {
constexpr int kGridSide = 8;  // as the engine's sample grids
}

RunSampler::RunSampler(const std::filesystem::path& checkpoint) : checkpoint_(checkpoint) {
  // The CPU is enough for a grid of 64 images and leaves the GPU to training.
  backend_ = create_backend("cpu");
  CheckpointInfo info;
  trainer_ = trainer_from_checkpoint(*backend_, checkpoint, &info);
  seed_ = info.config.seed;
  class_names_ = info.config.class_names;
  step_ = info.step;
}

RunSampler::~RunSampler() = default;

io::Image8 RunSampler::sample_grid() {
  const DcganSpec& m = trainer_->config().model;
  std::vector<float> z(static_cast<size_t>(kGridSide * kGridSide) * m.latent);
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(seed_, rng_stream::kFixedLatents, i);
  const std::vector<float> imgs =
      trainer_->generate(z, kGridSide * kGridSide, grid_row_classes(kGridSide, kGridSide, m.classes));
  return io::make_grid(imgs.data(), kGridSide * kGridSide, m.res, m.channels, kGridSide);
}

void RunSampler::export_samples(const std::filesystem::path& dir, int n, uint64_t seed) {
  io::ensure_writable_dir(dir);
  const DcganSpec& m = trainer_->config().model;
  std::vector<float> z(static_cast<size_t>(n) * m.latent);
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(seed, rng_stream::kSampleLatents, i);
  const std::vector<float> imgs = trainer_->generate(z, n);
  for (int i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "sample_%05d.png", i);
    io::write_png(dir / name, io::to_image8(imgs.data(), i, m.res, m.channels));
  }
}

}  // namespace ampgan::ui
