// A class-conditional model's labels (TrainerConfig::model.classes > 0). The real batches'
// classes come with the images (RealBatch); the generated batches' are drawn on the host, before
// the step is enqueued (or replayed as a graph), one per sample:
//   class = philox_below(seed, rng_stream::kFakeClasses, (t * n_dis + j) * batch + i, classes)
// for step t, D step j of the iteration (n_dis - 1 for the last, whose batch the G step reuses)
// and sample i -- so a resumed run draws what the uninterrupted one would have. Both go to the
// device as one-hot FP32 (Context::labels).
#include "core/common/rng.h"
#include "core/nn/class_embedding.h"
#include "core/train/trainer.h"

namespace ampgan {

void Trainer::upload_labels(Tensor& one_hot, const int32_t* labels) {
  upload_one_hot(backend_, one_hot, labels, cfg_.model.classes);
}

std::vector<int32_t> Trainer::fake_classes(int64_t steps_done, int j) const {
  std::vector<int32_t> c;
  const int b = cfg_.batch, k = cfg_.model.classes;
  for (int i = 0; i < b && k > 0; ++i) {
    const uint64_t index = (static_cast<uint64_t>(steps_done) * cfg_.n_dis + j) * b + i;
    c.push_back(
        static_cast<int32_t>(philox_below(cfg_.seed, rng_stream::kFakeClasses, index, static_cast<uint64_t>(k))));
  }
  return c;
}

void Trainer::draw_fake_labels() {
  if (!fake_labels_.defined()) return;
  for (size_t j = 0; j < extra_fake_labels_.size(); ++j)
    upload_labels(extra_fake_labels_[j], fake_classes(iteration_, static_cast<int>(j)).data());
  upload_labels(fake_labels_, fake_classes(iteration_, cfg_.n_dis - 1).data());
}

}  // namespace ampgan
