#include "core/data/batch_loader.h"

#include <numeric>

#include "core/common/error.h"
#include "core/common/rng.h"

namespace ampgan::data {

BatchLoader::BatchLoader(const ImageSet& set, int batch, uint64_t seed, int64_t start_batch)
    : set_(set), batch_(batch), seed_(seed) {
  if (batch < 1)
    throw Error("batch size must be at least 1, got " + std::to_string(batch), "--batch",
                "use a positive batch size such as 64");
  if (batch > set.count)
    throw Error("batch size " + std::to_string(batch) + " is larger than the dataset '" + set.name + "' (" +
                    std::to_string(set.count) + " images)",
                "--batch", "use --batch " + std::to_string(set.count) + " or less, or a larger dataset");
  if (start_batch < 0)
    throw Error("cannot resume at a negative batch position " + std::to_string(start_batch), "checkpoint",
                "the checkpoint is damaged; resume from another one");
  per_epoch_ = set.count / batch;
  next_ = produced_ = start_batch;
  for (Slot& s : slots_) {
    s.data.resize(size_t(batch) * set.image_size());
    if (!set.labels.empty()) s.labels.resize(batch);
  }
  thread_ = std::thread([this] { run(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // at most one batch conversion in flight: milliseconds
}

void BatchLoader::run() {
  for (;;) {
    int64_t g;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Batch g may be filled once the caller has let go of g - kSlots (it holds next_ - 1).
      cv_.wait(lock, [&] { return stop_ || produced_ < next_ + kPrefetch; });
      if (stop_) return;
      g = produced_;
    }
    try {
      fill(slots_[g % kSlots], g);  // outside the lock: the caller never touches this slot now
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      produced_ = g + 1;
    }
    cv_.notify_all();
  }
}

void BatchLoader::fill(Slot& slot, int64_t g) {
  const int64_t epoch = g / per_epoch_, k = g % per_epoch_;
  if (epoch != perm_epoch_) {
    // Fisher-Yates from the identity, swap partners drawn per (epoch, position): see header.
    perm_.resize(set_.count);
    std::iota(perm_.begin(), perm_.end(), 0);
    for (int64_t i = set_.count - 1; i > 0; --i) {
      const uint64_t j =
          philox_below(seed_, rng_stream::kShuffle, (static_cast<uint64_t>(epoch) << 32) | static_cast<uint64_t>(i),
                       static_cast<uint64_t>(i) + 1);
      std::swap(perm_[i], perm_[j]);
    }
    perm_epoch_ = epoch;
  }
  const int* idx = perm_.data() + k * batch_;
  set_.to_float(idx, batch_, slot.data.data());
  if (!slot.labels.empty())
    for (int b = 0; b < batch_; ++b) slot.labels[b] = set_.labels[idx[b]];
}

const float* BatchLoader::next() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t g = next_;
  cv_.wait(lock, [&] { return produced_ > g || error_; });
  if (produced_ <= g) std::rethrow_exception(error_);
  next_ = g + 1;  // releases batch g - 1's slot to the loader thread
  lock.unlock();
  cv_.notify_all();
  const Slot& s = slots_[g % kSlots];
  held_labels_ = &s.labels;
  return s.data.data();
}

const std::vector<int32_t>& BatchLoader::labels() const {
  static const std::vector<int32_t> kNone;
  return held_labels_ ? *held_labels_ : kNone;
}

int64_t BatchLoader::batches_consumed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

int64_t BatchLoader::epoch() const { return batches_consumed() / per_epoch_; }

}  // namespace ampgan::data
