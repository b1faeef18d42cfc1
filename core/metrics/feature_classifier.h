// A small CNN classifier trained on a labelled dataset's own labels, whose penultimate layer is
// the feature space of the Fréchet distance (as FID uses Inception features; no pretrained
// network can be downloaded here, so the features are learned from the data, the usual
// practice for MNIST-like GANs). Trained once per dataset with this engine in FP32 -- the metric
// must not depend on the precision under study -- and cached on disk.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/data/image_set.h"
#include "core/nn/layer.h"

namespace ampgan::metrics {

class FeatureClassifier {
 public:
  static constexpr int kFeatures = 128;

  FeatureClassifier(Backend& b, int res, int channels, int classes);
  ~FeatureClassifier();

  // Trains on set's images at the given indices (labels from the set); deterministic for a seed.
  void train(const data::ImageSet& set, const std::vector<int>& indices, int epochs, uint64_t seed,
             const std::function<void(int done, int total)>& progress = {});
  // Fraction of correctly classified images among the given indices.
  double accuracy(const data::ImageSet& set, const std::vector<int>& indices);
  // The class each of n FP32 NHWC images in [-1, 1] is classified as (eval mode).
  std::vector<int> predict(const float* images, int n);
  int classes() const { return classes_; }
  // Penultimate-layer features (n x kFeatures) of FP32 NHWC images in [-1, 1]; eval mode, so each
  // image's features do not depend on the others in its batch.
  std::vector<float> features(const float* images, int n);

  void save(const std::filesystem::path& file, double accuracy) const;
  // False (and nothing changed) when the file is missing or does not fit this network.
  bool load(const std::filesystem::path& file, double* accuracy);

 private:
  std::vector<float> forward_features(const float* images, int n, bool logits, Mode mode);
  Backend& b_;
  int res_, channels_, classes_;
  std::unique_ptr<Sequential> body_, head_;
};

// Where trained classifiers are cached: classifiers/ under cache_dir() (core/common/cache_dir.h),
// a file name derived from the dataset's identity and contents.
std::filesystem::path classifier_cache_path(const data::ImageSet& set);

}  // namespace ampgan::metrics
