// BatchLoader: shuffled FP32 batches, prepared on a background thread so the training step
// never waits for data.
//
// Shuffling: epoch e visits the images in the permutation produced by a Fisher-Yates shuffle
// of 0..count-1 whose swap partner for position i is
//   philox_below(seed, rng_stream::kShuffle, (e << 32) | i, i + 1).
// It depends only on (seed, e), so a loader resumed at any batch draws exactly what the
// uninterrupted one would have drawn. Each epoch has floor(count / batch) batches; the tail of
// the permutation is dropped (PyTorch's drop_last), so every batch has the same shape.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/data/image_set.h"

namespace ampgan::data {

class BatchLoader {
 public:
  // start_batch: batches already consumed (resume). The ImageSet must outlive the loader.
  // Throws ampgan::Error when batch < 1 or batch > set.count.
  BatchLoader(const ImageSet& set, int batch, uint64_t seed, int64_t start_batch = 0);
  ~BatchLoader();  // stops the thread promptly
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next batch as FP32 NHWC in [-1, 1], (batch, res, res, channels); valid until the next
  // call. Blocks until ready; rethrows an exception raised on the loader thread.
  const float* next();
  const std::vector<int32_t>& labels() const;  // labels of the batch last returned (empty if none)
  int64_t batches_consumed() const;            // position to save in checkpoints
  int64_t epoch() const;                       // epochs completed = epoch of the next batch
  int batch() const { return batch_; }
  int64_t batches_per_epoch() const { return per_epoch_; }

 private:
  struct Slot {
    std::vector<float> data;      // (batch, res, res, channels)
    std::vector<int32_t> labels;  // (batch) or empty
  };
  static constexpr int kSlots = 3;  // one held by the caller + two prefetched
  static constexpr int kPrefetch = 2;

  void run();
  void fill(Slot& slot, int64_t global_batch);

  const ImageSet& set_;
  const int batch_;
  const uint64_t seed_;
  int64_t per_epoch_ = 0;
  Slot slots_[kSlots];       // batch g lives in slot g % kSlots
  std::vector<int> perm_;    // loader thread only
  int64_t perm_epoch_ = -1;  // loader thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_ = 0;                                   // next batch the caller gets; guarded by mu_
  int64_t produced_ = 0;                               // batches [.., produced_) are ready; guarded by mu_
  const std::vector<int32_t>* held_labels_ = nullptr;  // caller's thread only
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace ampgan::data
