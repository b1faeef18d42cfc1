// Sample quality during training: generates images from fixed latents, compares them with a
// fixed sample of real images by the multi-scale sliced Wasserstein distance (any dataset) and,
// for labelled datasets, by the Fréchet distance on features of a classifier trained on the
// labels with this engine. Results go to metrics.csv (swd, fd), events.jsonl and the GUI.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
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
  double swd = NAN;                // mean over pyramid levels, x1e3 (as Karras et al. report it)
  std::vector<int> swd_level_res;  // e.g. 32, 16
  std::vector<double> swd_levels;
  double fd = NAN;                   // Fréchet distance on classifier features (labelled data only)
  double classifier_accuracy = NAN;  // the feature classifier's accuracy on held-out real images
  // The samples' mean pairwise distance over the real sample's (diversity.h): about 1 when the
  // generator varies as much as the data, near 0 in mode collapse.
  double diversity = NAN;
  // A class-conditional generator's samples of class c classified as c, per class (Odena et
  // al.'s AC-GAN measure, with the feature classifier), and their mean; empty / NaN otherwise.
  std::vector<double> class_accuracy;
  double conditional_accuracy = NAN;
};

std::string describe(const EvalResult& r);
nlohmann::json to_json(const EvalResult& r);

struct EvaluatorOptions {
  std::function<void(const std::string&)> notice;  // e.g. "training the feature classifier..."
  std::function<void(int, int)> progress;          // classifier training progress
  int classifier_min_steps = 300;                  // see classifier_epochs() in evaluator.cpp
};

class Evaluator {
 public:
  using Options = EvaluatorOptions;
  // samples: generated and real images per evaluation; the real ones are drawn once (seeded).
  // The real set must outlive the evaluator.
  Evaluator(const data::ImageSet& real, int samples, uint64_t seed, Options opt = {});
  ~Evaluator();
  // Generates the fixed-latent samples with the trainer's generator and compares them.
  EvalResult evaluate(Trainer& trainer);
  // Compares any images (FP32 NHWC in [-1, 1], the dataset's size) with the real sample; with
  // classes (one per image, as a conditional generator was asked), also their class accuracy.
  EvalResult evaluate_images(const float* images, int n, const std::vector<int32_t>& classes = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampgan::metrics
