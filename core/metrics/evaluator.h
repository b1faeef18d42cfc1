// Sample quality during training: generates images from fixed latents, compares them with a
// fixed sample of real images by the multi-scale sliced Wasserstein distance (any dataset) and,
// for labelled datasets, by the Fréchet distance on features of a classifier trained on the
// labels with this engine. Results go to metrics.csv (swd, fd), events.jsonl and the GUI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data/image_set.h"

namespace ampgan {
class Trainer;
}

namespace ampgan::metrics {

struct EvalResult {
  int64_t step = 0;
  int samples = 0;
  double swd = NAN;                  // mean over pyramid levels, x1e3 (as Karras et al. report it)
  std::vector<int> swd_level_res;    // e.g. 32, 16
  std::vector<double> swd_levels;
  double fd = NAN;                   // Fréchet distance on classifier features (labelled data only)
  double classifier_accuracy = NAN;  // the feature classifier's accuracy on held-out real images
};

std::string describe(const EvalResult& r);
nlohmann::json to_json(const EvalResult& r);

class Evaluator {
 public:
  // samples: generated and real images per evaluation; the real ones are drawn once (seeded).
  Evaluator(const data::ImageSet& real, int samples, uint64_t seed);
  ~Evaluator();
  EvalResult evaluate(Trainer& trainer);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampgan::metrics
