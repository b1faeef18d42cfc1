// The generator of a run that is not loaded as a Session (an opened run folder), rebuilt from
// the run's newest checkpoint, so Sample now and Export single samples use that run's generator
// and not whichever run the worker trained last. Used on the worker thread only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/io/image_io.h"

namespace ampgan {
class Backend;
class Trainer;
}  // namespace ampgan

namespace ampgan::ui {

class RunSampler {
 public:
  // Throws ampgan::Error when the checkpoint cannot be read.
  explicit RunSampler(const std::filesystem::path& checkpoint);
  ~RunSampler();

  // The run's 8 x 8 grid from its fixed latents (what Session::sample_grid shows).
  io::Image8 sample_grid();
  // n single PNGs from latents of `seed`, named as Session::export_samples names them.
  void export_samples(const std::filesystem::path& dir, int n, uint64_t seed);
  Trainer& trainer() { return *trainer_; }  // for the Explore tab's images
  int64_t step() const { return step_; }
  const std::vector<std::string>& class_names() const { return class_names_; }  // the run's, where known
  const std::filesystem::path& checkpoint() const { return checkpoint_; }

 private:
  std::filesystem::path checkpoint_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Trainer> trainer_;
  uint64_t seed_ = 0;
  int64_t step_ = 0;
  std::vector<std::string> class_names_;
};

}  // namespace ampgan::ui
