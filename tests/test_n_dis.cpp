// n_dis, D steps per G step (core/train/extra_d_steps.cpp): each D step takes its own real batch,
// is skipped and scaled on its own, and a run with n_dis > 1 consumes n_dis batches per step and
// resumes bit for bit.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/elementwise.h"
#include "core/common/rng.h"
#include "core/io/safetensors.h"
#include "core/run/checkpoint.h"
#include "core/run/session.h"
#include "tests/planted_overflow.h"
#include "tests/test_support.h"

using namespace ampgan;
namespace fs = std::filesystem;

namespace {

Backend& backend() {
  static CpuBackend b;
  return b;
}

TrainerConfig small(int n_dis) {
  TrainerConfig c = ampgan::testing::tiny_dcgan(Precision::FP16);
  c.n_dis = n_dis;
  return c;
}

std::vector<float> batches(int n, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(n) * 8 * 32 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::tanh(philox_normal(3, stream, i));
  return v;
}

uint64_t count_of(Trainer& t, const std::string& name) {
  for (const StateEntry& e : t.state())
    if (e.name == name) {
      float c[2];
      backend().download(*e.tensor, c, sizeof c);
      return ew::count_load(c);
    }
  ADD_FAILURE() << "no state " << name;
  return 0;
}

float scale_of(Tensor& state) {
  float s[2];
  backend().download(state, s, sizeof s);
  return s[0];
}

}  // namespace

TEST(NDis, EachDStepIsSkippedAndBacksOffOnItsOwn) {
  Trainer t(backend(), small(3));
  const std::vector<float> real = batches(3, 1);
  // A loss scale of 2^40 overflows D's FP16 gradients: every one of the three D steps is
  // skipped and backs the scaler off once; G's own scaler is untouched and G steps.
  const float huge[2] = {1099511627776.0f, 0.0f}, normal[2] = {1024.0f, 0.0f};
  backend().upload(t.scaler_d().state(), huge, sizeof huge);
  backend().upload(t.scaler_g().state(), normal, sizeof normal);  // 2^16 may overflow G at first
  t.step(real.data());
  const auto m = t.collect(true);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].skipped_d, 3) << "the row counts every skipped D step";
  EXPECT_EQ(count_of(t, "D.adam_step"), 0u) << "no D step may be taken";
  EXPECT_EQ(scale_of(t.scaler_d().state()), 137438953472.0f) << "2^40 backed off three times is 2^37";
  EXPECT_FALSE(m[0].skipped_g);
  EXPECT_EQ(count_of(t, "G.adam_step"), 1u);
  // At a sane scale every D step counts: Adam_D's t counts D steps, Adam_G's G steps.
  backend().upload(t.scaler_d().state(), normal, sizeof normal);
  t.step(real.data());
  const auto m2 = t.collect(true);
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_EQ(m2[0].skipped_d, 0);
  EXPECT_EQ(count_of(t, "D.adam_step"), 3u);
  EXPECT_EQ(count_of(t, "G.adam_step"), 2u);
}

namespace {
// The CPU backend planting inf in one D weight gradient during the first D step of the next
// iteration only (its real pass; the fake pass then accumulates onto the inf).
class FirstDStepOverflow : public ampgan::testing::PlantingBackend {
 public:
  bool armed = false;
  void conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                              bool accumulate) override {
    if (armed && target.defined() && dw.same_storage(target)) {
      PlantingBackend::conv2d_backward_filter(g, x, dy, dw, accumulate);
      armed = false;
    } else {
      CpuBackend::conv2d_backward_filter(g, x, dy, dw, accumulate);
    }
  }
};
}  // namespace

TEST(NDis, AnEarlierDStepsOverflowIsCountedInTheRow) {
  // Before, the row was the last D step's alone: an earlier step's overflow backed the scale off
  // but showed as "skipped_d 0", in metrics.csv, the plots and Compare's skip count.
  for (AmpStrategy strategy : {AmpStrategy::Scale, AmpStrategy::NanToNum}) {
    FirstDStepOverflow b;
    TrainerConfig c = small(3);
    c.amp_strategy = strategy;
    Trainer t(b, c);
    ampgan::testing::moderate_scales(b, t);
    const std::vector<float> real = batches(3, 1);
    t.step(real.data());
    ASSERT_EQ(t.collect(true).at(0).skipped_d, 0) << "clean at scale 1024";
    b.target = ampgan::testing::param(t.discriminator(), "2.weight")->grad;
    b.armed = true;
    t.step(real.data());
    const StepMetrics m = t.collect(true).at(0);
    EXPECT_FALSE(b.armed) << "the plant fired";
    if (strategy == AmpStrategy::Scale) {
      EXPECT_EQ(m.skipped_d, 1) << "the first of three D steps was skipped";
      EXPECT_EQ(m.replaced_d, 0u);
      EXPECT_EQ(count_of(t, "D.adam_step"), 5u) << "3 D steps, then 2 of 3";
      EXPECT_TRUE(std::isfinite(m.grad_norm_d)) << "the last D step's norm: it was clean";
      const std::vector<std::string> header = StepMetrics::columns();
      std::vector<std::string> cells;
      std::string row = m.csv_row(), cell;
      for (char ch : row + ",") {
        if (ch == ',')
          cells.push_back(cell), cell.clear();
        else
          cell += ch;
      }
      EXPECT_EQ(StepMetrics::from_csv_row(header, cells).skipped_d, 1) << "read back from metrics.csv";
    } else {
      EXPECT_EQ(m.skipped_d, 0) << "nan_to_num never skips";
      EXPECT_EQ(m.replaced_d, 1u) << "the one planted value, in the first D step";
      EXPECT_EQ(count_of(t, "D.adam_step"), 6u);
    }
  }
}

TEST(NDis, SharedScalerBacksOffAfterEveryDStep) {
  TrainerConfig c = small(3);
  c.shared_scaler = true;
  Trainer t(backend(), c);
  const std::vector<float> real = batches(3, 1);
  const float huge[2] = {1099511627776.0f, 0.0f};
  backend().upload(t.scaler_d().state(), huge, sizeof huge);
  t.step(real.data());
  t.collect(true);
  EXPECT_EQ(count_of(t, "D.adam_step"), 0u);
  // Two extra D steps back off once each, then the iteration's one update for D and G.
  EXPECT_EQ(scale_of(t.scaler_d().state()), 137438953472.0f);
}

TEST(NDis, EveryDStepReadsItsOwnRealBatch) {
  const std::vector<float> a = batches(1, 1), b = batches(1, 2);
  auto run = [&](const std::vector<float>& first, const std::vector<float>& second) {
    TrainerConfig c = small(2);
    c.precision = Precision::FP32;  // no step skipped
    Trainer t(backend(), c);
    std::vector<float> both = first;
    both.insert(both.end(), second.begin(), second.end());
    t.step(both.data());
    return t.collect(true).at(0).loss_d;
  };
  const float ab = run(a, b);
  EXPECT_NE(ab, run(b, b)) << "the first D step trained on the first batch";
  EXPECT_NE(ab, run(a, a)) << "the last D step trained on the second batch";
  EXPECT_EQ(ab, run(a, b)) << "deterministic";
}

TEST(NDis, RunConsumesNDisBatchesPerStepAndResumesBitIdentically) {
  ampgan::testing::TempDir tmp;
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 64;
  c.model = ModelFamily::ResNet;
  c.loss = LossKind::Hinge;
  c.width = 2;
  c.batch = 4;
  c.n_dis = 3;
  c.steps = 6;
  c.checkpoint_every = 3;
  c.sample_every = 0;
  c.backend = "cpu";
  c.precision = Precision::FP16;
  c.ema_decay = 0.9f;
  c.out_dir = (tmp / "straight").string();
  auto a = Session::create(c);
  a->run();
  a->finish("finished");
  RunConfig c2 = c;
  c2.out_dir = (tmp / "resumed").string();
  c2.steps = 3;
  auto b = Session::create(c2);
  b->run();
  b->finish("stopped early");
  b.reset();
  auto r = Session::resume(tmp / "resumed", 6);
  r->run();
  r->finish("finished");
  CheckpointInfo ia, ib;
  const io::StFile fa = read_checkpoint(tmp / "straight/checkpoints/step_000006.safetensors", &ia);
  const io::StFile fb = read_checkpoint(tmp / "resumed/checkpoints/step_000006.safetensors", &ib);
  EXPECT_EQ(ia.batches_consumed, 18) << "three real batches per step";
  EXPECT_EQ(ib.batches_consumed, 18);
  EXPECT_EQ(ia.config.n_dis, 3);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    EXPECT_EQ(fa.tensors[i].name, fb.tensors[i].name);
    EXPECT_TRUE(fa.tensors[i].data == fb.tensors[i].data) << fa.tensors[i].name;
  }
}
