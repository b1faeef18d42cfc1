// Data-parallel training on the CPU backend, run by ctest as `mpirun -np 2 test_dist`: every rank
// runs every test, in the same order (the tests are collective). A rank's failure fails mpirun.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/backend/cuda_plugin.h"
#include "core/common/rng.h"
#include "core/dist/data_parallel.h"
#include "core/train/step_metrics.h"
#include "tests/test_support.h"

namespace ampgan::dist {
namespace {

Communicator& comm() {
  static std::unique_ptr<Communicator> c = world(60.0);
  if (!c) {
    std::fprintf(stderr, "test_dist must run under mpirun -np 2\n");
    std::abort();
  }
  return *c;
}

TrainerConfig small_config(Precision p) {
  TrainerConfig c;
  c.model.res = 32;
  c.model.width = 8;
  c.model.channels = 1;
  c.batch = 8;  // global: 4 per rank
  c.precision = p;
  c.scaler.init_scale = 16777216.0f;  // 2^24: FP16 overflows early, then the scale moves
  c.scaler.growth_interval = 3;
  c.seed = 7;
  return c;
}

// The same global batch on every rank (each takes its slice).
std::vector<float> global_batch(const TrainerConfig& c, int step) {
  std::vector<float> b(static_cast<size_t>(c.batch) * c.model.res * c.model.res * c.model.channels);
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::tanh(philox_normal(99, static_cast<uint64_t>(step), i));
  return b;
}

// Every state tensor's bytes, concatenated, but the batch-norm running statistics: those are
// per rank (each normalises its own slice).
std::vector<uint8_t> state_bytes(Trainer& t) {
  std::vector<uint8_t> out;
  for (const StateEntry& e : t.state()) {
    if (e.name.find("running_") != std::string::npos) continue;
    const size_t at = out.size();
    out.resize(at + e.tensor->nbytes());
    t.backend().download(*e.tensor, out.data() + at, e.tensor->nbytes());
  }
  return out;
}

// Whether v equals rank 0's v on this rank; collective, and every rank gets every rank's answer.
bool same_as_rank0(std::vector<uint8_t> v, int* ranks_differing = nullptr) {
  std::vector<uint8_t> r0 = v;
  uint64_t n = r0.size();
  comm().broadcast_host(&n, sizeof n, 0);
  r0.resize(n);
  comm().broadcast_host(r0.data(), n, 0);
  float differ = (r0 == v) ? 0.0f : 1.0f;
  comm().all_reduce_host(&differ, 1, ReduceOp::Sum);
  if (ranks_differing) *ranks_differing = static_cast<int>(differ);
  return differ == 0.0f;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct Ranks {
  std::unique_ptr<Backend> backend = create_backend("cpu");
  std::unique_ptr<DataParallel> dp;
  std::unique_ptr<Trainer> trainer;
  TrainerConfig global;
  explicit Ranks(const TrainerConfig& c) : global(c) {
    dp = std::make_unique<DataParallel>(comm(), *backend, c);
    trainer = std::make_unique<Trainer>(*backend, dp->rank_config());
    dp->attach(*trainer);
    const nlohmann::json h = nlohmann::json::object();  // every rank the same (no) facts
    dp->join(h, h);
  }
  StepMetrics step(int i) {
    const std::vector<float> b = global_batch(global, i);
    trainer->step(dp->slice(b.data()));
    return trainer->collect(true).back();
  }
};

TEST(DataParallel, RunsUnderTwoRanks) { ASSERT_EQ(comm().size(), 2) << "run as mpirun -np 2"; }

TEST(DataParallel, ThirtyStepsLeaveBitIdenticalWeightsAndScaleHistories) {
  Ranks r(small_config(Precision::FP16));
  // Rank 1 built its networks from another seed: the weights it trains are rank 0's.
  std::vector<float> scales;
  int skips = 0;
  for (int i = 0; i < 30; ++i) {
    const StepMetrics m = r.step(i);
    scales.push_back(static_cast<float>(m.scale_d));
    scales.push_back(static_cast<float>(m.scale_g));
    scales.push_back(m.skipped_d ? 1.0f : 0.0f);
    scales.push_back(m.skipped_g ? 1.0f : 0.0f);
    skips += m.skipped_d + m.skipped_g;
  }
  int differing = -1;
  EXPECT_TRUE(same_as_rank0(state_bytes(*r.trainer), &differing)) << differing << " rank(s) hold other weights";
  EXPECT_TRUE(same_as_rank0(bytes_of(scales), &differing)) << differing << " rank(s) have another loss-scale history";
  // The history is not trivial: the scale backed off from 2^24 and grew again.
  EXPECT_GT(skips, 0);
  std::vector<float> distinct;
  for (size_t i = 0; i < scales.size(); i += 4)
    if (std::find(distinct.begin(), distinct.end(), scales[i]) == distinct.end()) distinct.push_back(scales[i]);
  EXPECT_GE(distinct.size(), 3u);
}

// Plants an overflow on rank 1 only: an inf in D's gradients (before the all-reduce) at one step,
// a found-inf flag in G's check (after it) at another.
class Planter final : public StepSync {
 public:
  explicit Planter(StepSync& inner) : inner_(inner) {}
  void before_check(const std::vector<Tensor>& grads) override {
    if (plant_grad && comm().rank() == 1) {
      const Tensor& g = grads[0];
      ASSERT_EQ(g.dtype(), DType::F16);
      g.as<uint16_t>()[0] = 0x7C00;  // +inf in FP16
    }
    plant_grad = false;
    inner_.before_check(grads);
  }
  void after_check(Tensor& scalars, int found_inf_slot, int first, int end) override {
    if (plant_flag && found_inf_slot == kSlotFoundInfG && comm().rank() == 1)
      scalars.as<float>()[found_inf_slot] = 1.0f;
    if (found_inf_slot == kSlotFoundInfG) plant_flag = false;
    inner_.after_check(scalars, found_inf_slot, first, end);
  }
  bool plant_grad = false, plant_flag = false;

 private:
  StepSync& inner_;
};

TEST(DataParallel, AnOverflowOnRankOneMakesBothRanksSkipAndBackOff) {
  TrainerConfig c = small_config(Precision::FP16);
  c.scaler.init_scale = 256.0f;  // far from overflow: only the planted ones count
  c.scaler.growth_interval = 1000;
  Ranks r(c);
  Planter planter(*r.dp);
  r.trainer->set_step_sync(&planter);
  const StepMetrics clean = r.step(0);
  ASSERT_FALSE(clean.skipped_d || clean.skipped_g);
  planter.plant_grad = true;
  const StepMetrics d = r.step(1);
  EXPECT_TRUE(d.skipped_d) << "rank " << comm().rank() << " did not skip D's step";
  EXPECT_FALSE(d.skipped_g);
  planter.plant_flag = true;
  const StepMetrics g = r.step(2);
  EXPECT_FALSE(g.skipped_d);
  EXPECT_TRUE(g.skipped_g) << "rank " << comm().rank() << " did not skip G's step";
  const StepMetrics after = r.step(3);
  EXPECT_EQ(after.scale_d, 128.0);  // backed off once, on both ranks
  EXPECT_EQ(after.scale_g, 128.0);
  EXPECT_TRUE(same_as_rank0(state_bytes(*r.trainer)));
  r.trainer->set_step_sync(r.dp.get());
}

// Records each network's gradients as this rank computed them and as the all-reduce left them.
class Recorder final : public StepSync {
 public:
  explicit Recorder(StepSync& inner, Backend& b) : inner_(inner), b_(b) {}
  void before_check(const std::vector<Tensor>& grads) override {
    local.push_back(flat(grads));
    inner_.before_check(grads);
    reduced.push_back(flat(grads));
  }
  void after_check(Tensor& scalars, int found_inf_slot, int first, int end) override {
    inner_.after_check(scalars, found_inf_slot, first, end);
  }
  std::vector<std::vector<float>> local, reduced;  // D's, then G's

 private:
  std::vector<float> flat(const std::vector<Tensor>& grads) {
    std::vector<float> out;
    for (const Tensor& g : grads) {
      const std::vector<float> v = testing::to_host(b_, g);
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  }
  StepSync& inner_;
  Backend& b_;
};

TEST(DataParallel, TheAllReducedGradientIsTheMeanOfTheTwoRanksGradients) {
  Ranks r(small_config(Precision::FP32));
  Recorder rec(*r.dp, *r.backend);
  r.trainer->set_step_sync(&rec);
  r.step(0);
  r.step(1);  // the second step: after an update, from the broadcast weights
  r.trainer->set_step_sync(r.dp.get());
  ASSERT_EQ(rec.local.size(), 4u);
  for (size_t k = 2; k < 4; ++k) {
    // Each rank's own gradient, of its own slice, and the other rank's, by broadcast.
    std::vector<float> g0 = rec.local[k], g1 = rec.local[k];
    comm().broadcast_host(g0.data(), g0.size() * 4, 0);
    comm().broadcast_host(g1.data(), g1.size() * 4, 1);
    ASSERT_NE(g0, g1) << "the two slices gave the same gradient: nothing is tested";
    size_t bad = 0;
    for (size_t i = 0; i < g0.size(); ++i) {
      const float mean = (g0[i] + g1[i]) * 0.5f;
      if (std::memcmp(&mean, &rec.reduced[k][i], 4) != 0) ++bad;
    }
    EXPECT_EQ(bad, 0u) << (k == 2 ? "D" : "G") << ": values differing from the mean of the two ranks' gradients";
  }
}

// NCCL on the GPUs: needs one GPU per rank on this machine (both ranks see the same count, so
// both skip or both run).
TEST(DataParallel, NcclOnTwoGpusReducesAndKeepsRanksIdentical) {
  std::string why;
  int usable = 0;
  for (const GpuInfo& g : list_gpus(&why)) usable += g.usable;
  if (usable < comm().size())
    GTEST_SKIP() << "NCCL test needs " << comm().size() << " usable GPUs, found " << usable
                 << (why.empty() ? "" : " (" + why + ")");
  std::unique_ptr<Backend> cuda = create_backend("cuda", nullptr, comm().local_rank());
  std::unique_ptr<Communicator> nccl(cuda_plugin()->make_nccl(*cuda, comm(), &why));
  ASSERT_TRUE(nccl) << why;
  // Sum, max, mean and broadcast of rank-dependent values.
  const float r = static_cast<float>(comm().rank());
  Tensor t = testing::make_tensor(*cuda, Shape{4}, DType::F32, {1 + r, -r, 10 * r, 3});
  nccl->all_reduce(t, 0, 2, ReduceOp::Sum);
  nccl->all_reduce(t, 2, 1, ReduceOp::Max);
  nccl->all_reduce(t, 3, 1, ReduceOp::Sum, 0.5f);
  cuda->synchronize();
  EXPECT_EQ(testing::to_host(*cuda, t), (std::vector<float>{3, -1, 10, 3}));
  Tensor b = testing::make_tensor(*cuda, Shape{2}, DType::F32, {r, r + 5});
  nccl->broadcast(b, 1);
  cuda->synchronize();
  EXPECT_EQ(testing::to_host(*cuda, b), (std::vector<float>{1, 6}));
  nccl.reset();
  // A few FP16 steps on the GPUs (DataParallel picks NCCL itself): the ranks stay identical.
  TrainerConfig c = small_config(Precision::FP16);
  DataParallel dp(comm(), *cuda, c);
  Trainer trainer(*cuda, dp.rank_config());
  dp.attach(trainer);
  dp.join(nlohmann::json::object(), nlohmann::json::object());
  EXPECT_NE(dp.describe().find("NCCL"), std::string::npos) << dp.describe();
  for (int i = 0; i < 5; ++i) {
    const std::vector<float> batch = global_batch(c, i);
    trainer.step(dp.slice(batch.data()));
  }
  trainer.collect(true);
  EXPECT_TRUE(same_as_rank0(state_bytes(trainer)));
}

}  // namespace
}  // namespace ampgan::dist
