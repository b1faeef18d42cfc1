#include "core/train/standing_stats.h"

#include "core/common/rng.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/layer.h"

namespace ampgan {

namespace {

void batch_norms(Sequential& net, std::vector<BatchNorm2d*>& out) {
  for (size_t i = 0; i < net.size(); ++i) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&net.layer(i))) out.push_back(bn);
    for (Sequential* child : net.layer(i).children()) batch_norms(*child, out);
  }
}

}  // namespace

StandingStats::StandingStats(Backend& b, Sequential& net, DType dt, int nz, int batch, int batches) : b_(b), net_(net) {
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
    std::vector<float> z(static_cast<size_t>(batch) * nz);
    for (int k = 1; k <= batches; ++k) {
      // Momentum 1/k: after batch k the averages are the plain mean of batches 1..k.
      for (BatchNorm2d* bn : bns) bn->set_momentum(1.0f / static_cast<float>(k));
      for (size_t i = 0; i < z.size(); ++i)
        z[i] = philox_normal(0, rng_stream::kStandingStats, static_cast<uint64_t>(k - 1) * z.size() + i);
      b.upload(z32, z.data(), z.size() * 4);
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
