// ImageSet: a whole dataset decoded once into memory at the model's resolution, and the one
// entry point that turns a dataset spec ("synthetic", "fashion-mnist", a file, a folder) into it.
// Keeping uint8 pixels (not floats) costs 4x less memory; batches are converted on the fly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ampgan::data {

// All images of a dataset, decoded once and kept in memory at the model resolution.
struct ImageSet {
  int count = 0, res = 0, channels = 0;  // NHWC uint8 images, res x res
  std::vector<uint8_t> pixels;           // (count, res, res, channels), 0..255
  std::vector<int32_t> labels;           // (count) or empty when the dataset has none
  int num_classes = 0;                   // 0 when unlabeled
  // (num_classes) where known, else empty: what a class number means, for the per-class
  // sample grids and reports ("Sneaker", a folder's name) instead of a bare number.
  std::vector<std::string> class_names;
  std::string name;                   // "fashion-mnist", "synthetic", folder or file name
  std::string source;                 // path(s) it came from, or "built-in"
  std::vector<std::string> warnings;  // e.g. "skipped 3 unreadable files: a.txt, ..."

  size_t image_size() const { return static_cast<size_t>(res) * res * channels; }
  const uint8_t* image(int i) const { return pixels.data() + static_cast<size_t>(i) * image_size(); }
  // Writes images indices[0..n) as FP32 NHWC in [-1, 1] (x / 127.5 - 1) to out:
  // (n, res, res, channels) floats.
  void to_float(const int* indices, int n, float* out) const;
};

// "16 images of 32x32x3, labelled, hash 0123456789abcdef": what a run trained on, kept in its
// checkpoints, so that resuming on a dataset that changed since (images added, removed or
// edited; other labels) is noticed. The same set always gives the same text.
std::string fingerprint(const ImageSet& set);

// Class c's name: set.class_names[c] when known, else "class c".
std::string class_name(const ImageSet& set, int c);

struct LoadOptions {
  int res = 32;      // 32, 64 or 128 (validated by the caller; loaders just resize to it)
  int channels = 0;  // 0: natural (1 for IDX; folder: 3 unless every image is grey -> 1);
                     // else force 1 or 3
  int synthetic_count = 10000;
  uint64_t seed = 0;
  bool test_split = false;  // fashion-mnist/mnist: use the t10k files instead of train
  // Optional; called on the calling thread between blocks of images.
  std::function<void(int done, int total)> progress;
  // Optional; when it becomes true the loader throws ampgan::Error("loading cancelled").
  const std::atomic<bool>* cancel = nullptr;
  // The most the loaded set may take in memory; 0: half of physical memory
  // (io::dataset_memory_budget). Checked from the file's headers before decoding.
  uint64_t max_bytes = 0;
};

// spec: "synthetic"; "fashion-mnist" (AMPGAN_FASHION_MNIST_DIR, else Debian's
// dataset-fashion-mnist files in /usr/share/datasets/fashion-mnist); "mnist" (AMPGAN_MNIST_DIR,
// else /usr/share/datasets/mnist); a path to an IDX images file (.gz or raw; the labels file
// beside it, named with "labels-idx1" in place of "images-idx3", is used when it exists); or a
// path to a folder of images. Throws ampgan::Error on bad input.
ImageSet load_dataset(const std::string& spec, const LoadOptions& opt);

}  // namespace ampgan::data
