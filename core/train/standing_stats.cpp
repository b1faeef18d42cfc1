#include "core/train/standing_stats.h"

#include "core/common/error.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/class_embedding.h"
#include "core/nn/conditional_batchnorm2d.h"
#include "core/nn/layer.h"

namespace ampgan {

namespace {

void batch_norms(Sequential& net, std::vector<BatchNorm2d*>& out) {
  for (size_t i = 0; i < net.size(); ++i) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&net.layer(i))) out.push_back(bn);
    if (auto* cbn = dynamic_cast<ConditionalBatchNorm2d*>(&net.layer(i))) out.push_back(&cbn->batch_norm());
    for (Sequential* child : net.layer(i).children()) batch_norms(*child, out);
  }
}

}  // namespace

StandingStats::StandingStats(Backend& b, Sequential& net, DType dt, const std::vector<float>& latents, int nz,
                             int batch, int classes)
    : b_(b), net_(net) {
  const size_t per_batch = static_cast<size_t>(batch) * nz;
  AMPGAN_CHECK(per_batch > 0 && latents.size() >= per_batch && latents.size() % per_batch == 0,
               "standing statistics take whole batches of latents");
  const int batches = static_cast<int>(latents.size() / per_batch);
  for (StateBuffer* s : net.buffers()) {
    saved_.push_back(b.empty(s->value.shape(), DType::F32, MemCategory::Workspace));
    b.copy(s->value, saved_.back());
  }
  std::vector<BatchNorm2d*> bns;
  batch_norms(net, bns);
  for (BatchNorm2d* bn : bns) {
    momentum_.push_back(bn->momentum());
    tracked_.push_back(bn->batches_tracked());
  }
  try {
    Tensor z32 = b.empty(Shape{batch, 1, 1, nz}, DType::F32, MemCategory::Workspace);
    Tensor zc = dt == DType::F32 ? z32 : b.empty(Shape{batch, 1, 1, nz}, dt, MemCategory::Workspace);
    Context ctx{.backend = b, .dtype = dt, .mode = Mode::Train, .param_grads = false, .accumulate = false};
    Tensor one_hot = classes > 0 ? b.empty(Shape{batch, classes}, DType::F32, MemCategory::Workspace) : Tensor();
    if (classes > 0) {
      upload_one_hot(b, one_hot, sample_classes(0, batch, classes, {}).data(), classes);
      ctx.labels = &one_hot;
    }
    for (int k = 1; k <= batches; ++k) {
      // Momentum 1/k: after batch k the averages are the plain mean of batches 1..k.
      for (BatchNorm2d* bn : bns) bn->set_momentum(1.0f / static_cast<float>(k));
      b.upload(z32, latents.data() + static_cast<size_t>(k - 1) * per_batch, per_batch * 4);
      if (!zc.same_storage(z32)) b.cast(z32, zc);
      net.forward(ctx, zc);
    }
  } catch (...) {
    restore();
    throw;
  }
  for (size_t i = 0; i < bns.size(); ++i) bns[i]->set_momentum(momentum_[i]);
}

StandingStats::~StandingStats() { restore(); }

void StandingStats::restore() {
  const std::vector<StateBuffer*> bufs = net_.buffers();
  for (size_t i = 0; i < saved_.size() && i < bufs.size(); ++i) b_.copy(saved_[i], bufs[i]->value);
  std::vector<BatchNorm2d*> bns;
  batch_norms(net_, bns);
  for (size_t i = 0; i < bns.size() && i < momentum_.size(); ++i) {
    bns[i]->set_momentum(momentum_[i]);
    bns[i]->set_batches_tracked(tracked_[i]);
  }
  saved_.clear();
  momentum_.clear();
}

}  // namespace ampgan
