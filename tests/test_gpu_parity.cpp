// GPU scenarios: what is not a single op, on the CUDA backend against the CPU backend (the
// reference): whole training steps, forced overflow, graph capture and replay, sampling between
// replays, memory counting, errors, read-backs, and the timed convolution algorithms. Every op,
// in every dtype, is a case of the table in tests/op_cases.h, run by tests/test_backend_ops.cpp
// (in the manner of ggml's test-backend-ops); its header has the tolerances and why. Without a
// usable GPU every test is skipped, visibly, with the reason list_gpus() gives.
//
// Tolerances here: the timed convolutions as the table's (1e-5 / 2e-3 / 1e-2); 10 training
// steps, per-step losses 2e-3 (fp32), 3e-2 (fp16), |d| / max(1, |cpu|): per-op differences
// compound through 10 GAN steps; the bounds leave room for that while catching any real
// divergence (a wrong op moves the losses by far more).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/amp/precision.h"
#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/train/trainer.h"
#include "tests/op_cases.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

constexpr double kTrainTolFp32 = 2e-3, kTrainTolFp16 = 3e-2;

CpuBackend& cpu() { return reference(); }

class GpuParity : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    g_ = backend_named("cuda", &why);
    if (!g_) GTEST_SKIP() << why;
    // A test that failed half-way must not leave the shared backend capturing or in TF32 mode.
    reset_backend(*g_);
  }
  Backend& gpu() { return *g_; }
  Backend* g_ = nullptr;
};

std::vector<float> host(Backend& b, const Tensor& t) { return to_host(b, t); }
std::vector<uint32_t> bits(Backend& b, const Tensor& t) { return tensor_bits(b, t); }

// ---- convolutions with the algorithms cuDNN times -------------------------------------------------

// The default mode (what training and `ampgan bench` use): algorithms timed by cudnnFind*Ex,
// non-deterministic ones allowed. They must compute the same convolutions: the table's cases,
// without its check that a repeated forward gives the same bits.
TEST_F(GpuParity, TimedConvolutionAlgorithmsMatchTheCpu) {
  gpu().set_deterministic(false);
  for (const ConvCase& cc : conv_cases()) {
    const std::string role = cc.role;
    if (role != "D_mid" && role != "G_last_rgb" && role != "D_first_rgb") continue;
    const CaseFn run = conv_case(cc, /*deterministic=*/false);
    for (DType t : all_types()) {
      const std::string what = "timed conv2d_" + cc.name() + " [" + dtype_name(t) + "]";
      Outputs ref(cpu()), got(gpu());
      run(cpu(), t, ref);
      run(gpu(), t, got);
      compare_outputs(what, t, "cuda", gpu(), ref, got);
    }
  }
  gpu().set_deterministic(true);
}

// ---- memory, errors, read-backs, capture ------------------------------------------------------------

TEST_F(GpuParity, MemoryIsCountedPerCategoryLikeTheCpu) {
  auto delta = [](Backend& b, const std::function<std::vector<Tensor>()>& make) {
    const MemoryStats before = b.memory_stats();
    std::vector<Tensor> keep = make();
    const MemoryStats after = b.memory_stats();
    std::vector<int64_t> d;
    for (size_t i = 0; i < before.current.size(); ++i)
      d.push_back(int64_t(after.current[i]) - int64_t(before.current[i]));
    return d;
  };
  auto alloc = [](Backend& b) {
    return [&b]() {
      std::vector<Tensor> v;
      v.push_back(b.empty(Shape{1000}, DType::F32, MemCategory::Master));
      v.push_back(b.empty(Shape{1000}, DType::F16, MemCategory::HalfCopy));
      v.push_back(b.empty(Shape{3}, DType::BF16, MemCategory::Gradient));
      v.push_back(b.empty(Shape{2, 64}, DType::F32, MemCategory::Optimizer));
      v.push_back(b.empty(Shape{64, 32, 32, 3}, DType::F16, MemCategory::Activation));
      v.push_back(b.empty(Shape{17}, DType::F32, MemCategory::Data));
      return v;
    };
  };
  const auto dc = delta(cpu(), alloc(cpu())), dg = delta(gpu(), alloc(gpu()));
  for (size_t i = 0; i < dc.size(); ++i)
    EXPECT_EQ(dg[i], dc[i]) << "bytes counted for " << mem_category_name(static_cast<MemCategory>(i));
  // And released again.
  const MemoryStats before = gpu().memory_stats();
  { Tensor t = gpu().empty(Shape{4096}, DType::F32, MemCategory::Activation); }
  EXPECT_EQ(gpu().memory_stats().current_total, before.current_total) << "a released tensor must be uncounted";
}

TEST_F(GpuParity, ErrorsAreExceptionsAndTheBackendStaysUsable) {
  Tensor t = gpu().empty(Shape{16}, DType::F32, MemCategory::Data);
  std::vector<float> host_buf(8);
  EXPECT_THROW(gpu().download(t, host_buf.data(), 8 * sizeof(float)), Error);
  try {
    (void)gpu().empty(Shape{int64_t{1} << 48}, DType::F32, MemCategory::Activation);  // 1 PiB
    ADD_FAILURE() << "allocating 1 PiB must throw OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("smaller batch"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free of"), std::string::npos) << msg;
  }
  gpu().fill(t, 2.5f);
  std::vector<float> out(16);
  gpu().download(t, out.data(), t.nbytes());
  EXPECT_EQ(out[15], 2.5f) << "the backend must work after an out-of-memory error";
}

TEST_F(GpuParity, ReadAsyncDeliversEveryValueEvenWithManyOutstanding) {
  Tensor t = gpu().empty(Shape{300}, DType::F32, MemCategory::Data);
  std::vector<std::unique_ptr<HostReadback>> pending;
  for (int i = 0; i < 20; ++i) {
    gpu().fill(t, float(i));
    pending.push_back(gpu().read_async(t));
  }
  for (int i = 0; i < 20; ++i) {
    const float* v = pending[i]->wait();
    EXPECT_TRUE(pending[i]->ready());
    EXPECT_EQ(v[0], float(i)) << "read-back " << i;
    EXPECT_EQ(v[299], float(i)) << "read-back " << i;
  }
}

TEST_F(GpuParity, CapturedWorkReplaysLikeEagerWork) {
  // The pattern of a training step: random numbers from a device counter, element-wise work, a
  // reduction, a scalar update of the counter -- captured once, replayed three times.
  Tensor counter = gpu().empty(Shape{2}, DType::F32, MemCategory::Data);  // [lo, hi] count
  Tensor z = gpu().empty(Shape{4096}, DType::F16, MemCategory::Data);
  Tensor z32 = gpu().empty(Shape{4096}, DType::F32, MemCategory::Data);
  Tensor s = gpu().empty(Shape{8}, DType::F32, MemCategory::Data);
  Tensor state = make_tensor(gpu(), Shape{2}, DType::F32, {256.0f, 0.0f});
  gpu().fill(counter, 0.0f);
  auto body = [&] {
    gpu().fill_normal(z, 9, 1000, counter, 1.0f);
    gpu().activation_forward(ew::Act::Tanh, 0.0f, z, z);
    gpu().cast(z, z32);
    gpu().grad_stats({z32}, state, s, GradStatSlots{0, 1, 2, 4, 6});
    gpu().count_increment(counter);
  };
  body();  // eager once: workspaces exist before capture
  gpu().begin_capture();
  body();
  gpu().end_capture();
  // Grow the reduction workspace while the graph (whose grad_stats uses the old block) is alive:
  // the old block's free must be deferred until the graph is dropped. Sentinels allocated right
  // after would likely get a wrongly freed block back from the pool; the replays must not touch
  // them.
  {
    Tensor dy = make_tensor(gpu(), Shape{2, 32768}, DType::F32, std::vector<float>(65536, 1.0f));
    Tensor db = gpu().empty(Shape{32768}, DType::F32, MemCategory::Data);
    gpu().bias_backward(dy, db, false);  // a 512 KiB reduction workspace: larger than any before
    const auto sums = host(gpu(), db);
    EXPECT_EQ(sums[0], 2.0f) << "bias_backward over 2 rows of ones";
    EXPECT_EQ(sums[32767], 2.0f) << "bias_backward over 2 rows of ones";
  }
  std::vector<Tensor> sentinels;
  for (int64_t n = 16; n <= 65536; n *= 2) {
    sentinels.push_back(gpu().empty(Shape{n}, DType::F32, MemCategory::Data));
    gpu().fill(sentinels.back(), 7.0f);
  }
  for (int i = 0; i < 3; ++i) gpu().replay();
  for (const Tensor& t : sentinels) {
    const auto v = host(gpu(), t);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 7.0f; }))
        << "a replay wrote into memory allocated after the capture (" << t.numel()
        << " floats): a block the graph uses was freed while the graph was alive";
  }
  const auto replayed = bits(gpu(), z32);
  const auto replayed_stats = bits(gpu(), s);
  const auto count = host(gpu(), counter);
  EXPECT_EQ(count, (std::vector<float>{4.0f, 0.0f})) << "one eager run and three replays must each advance the counter";
  // Eager run with the counter at 3 must give the same bits as the third replay.
  const float three[2] = {3.0f, 0.0f};
  gpu().upload(counter, three, sizeof three);
  body();
  EXPECT_TRUE(bits(gpu(), z32) == replayed) << "replayed fill_normal/tanh/cast differ from the eager run";
  EXPECT_TRUE(bits(gpu(), s) == replayed_stats) << "replayed grad_stats differ from the eager run";
  gpu().drop_capture();

  // Uncapturable work during capture is an Error, and the backend recovers.
  gpu().begin_capture();
  EXPECT_THROW((void)gpu().empty(Shape{8}, DType::F32, MemCategory::Data), Error);
  gpu().begin_capture();
  std::vector<float> h(4096);
  EXPECT_THROW(gpu().download(z32, h.data(), z32.nbytes()), Error);
  gpu().fill(z32, 1.0f);
  gpu().download(z32, h.data(), z32.nbytes());
  EXPECT_EQ(h[0], 1.0f) << "the backend must work after an abandoned capture";
}

// ---- whole training steps -------------------------------------------------------------------------------

TrainerConfig small_config(Precision p, int channels = 1) {
  TrainerConfig cfg;
  cfg.model.res = 32;
  cfg.model.channels = channels;
  cfg.model.width = 16;
  cfg.batch = 16;
  cfg.precision = p;
  cfg.seed = 7;
  cfg.scaler.init_scale = 1024.0f;  // away from overflow, so both backends take the same steps
  return cfg;
}

std::vector<float> real_batch(const TrainerConfig& cfg) {
  std::vector<float> v(size_t(cfg.batch) * cfg.model.res * cfg.model.res * cfg.model.channels);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::tanh(philox_normal(3, 3, i));
  return v;
}

struct TrainRun {
  std::vector<StepMetrics> metrics;
  std::vector<std::pair<std::string, std::vector<float>>> state;
  std::vector<std::string> warnings;  // e.g. a step that could not be captured and ran op by op
};

// A run meant to replay CUDA graphs must not have fallen back to op-by-op launches: the Trainer
// only warns when a capture fails, so without this check graph-vs-eager comparisons would compare
// eager with eager and pass.
void expect_no_capture_fallback(const TrainRun& r, const std::string& what) {
  for (const std::string& w : r.warnings) ADD_FAILURE() << what << ": " << w;
}

std::vector<std::pair<std::string, std::vector<float>>> snapshot(Backend& b, Trainer& t) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const StateEntry& e : t.state()) out.push_back({e.name, to_host(b, *e.tensor)});
  return out;
}

// steps with an optional precision schedule (precision for step i) and optional work between
// steps (after step i), as the Session does between steps: sampling, histograms.
TrainRun train(Backend& b, TrainerConfig cfg, int steps, const std::function<Precision(int)>& schedule = nullptr,
               const std::function<void(Trainer&, int)>& between = nullptr) {
  TrainRun r;
  Trainer t(b, cfg);
  const auto batch = real_batch(cfg);
  std::vector<int32_t> labels(static_cast<size_t>(cfg.batch));  // a conditional model's real classes
  for (int i = 0; i < cfg.batch && cfg.model.classes > 0; ++i) labels[i] = (7 * i) % cfg.model.classes;
  for (int i = 0; i < steps; ++i) {
    if (schedule && schedule(i) != t.precision()) t.set_precision(schedule(i));
    t.step_batches([&] { return RealBatch{batch.data(), cfg.model.classes > 0 ? labels.data() : nullptr}; });
    if (between) between(t, i);
    for (StepMetrics& m : t.collect(true)) r.metrics.push_back(m);
  }
  r.state = snapshot(b, t);
  r.warnings = t.take_warnings();
  return r;
}

void expect_losses_close(const TrainRun& c, const TrainRun& g, double tol, const std::string& what) {
  ASSERT_EQ(c.metrics.size(), g.metrics.size()) << what;
  for (size_t i = 0; i < c.metrics.size(); ++i) {
    const StepMetrics &a = c.metrics[i], &b = g.metrics[i];
    auto chk = [&](const char* name, double x, double y) {
      EXPECT_LE(std::fabs(y - x) / std::max(1.0, std::fabs(x)), tol)
          << what << " step " << a.step << " " << name << ": cpu " << x << ", gpu " << y;
    };
    chk("loss_d", a.loss_d, b.loss_d);
    chk("loss_g", a.loss_g, b.loss_g);
    chk("d_real", a.d_real, b.d_real);
    chk("d_fake", a.d_fake, b.d_fake);
    EXPECT_EQ(a.skipped_d, b.skipped_d) << what << " step " << a.step << " skipped_d";
    EXPECT_EQ(a.skipped_g, b.skipped_g) << what << " step " << a.step << " skipped_g";
    EXPECT_EQ(a.scale_d, b.scale_d) << what << " step " << a.step << " scale_d";
    EXPECT_EQ(a.scale_g, b.scale_g) << what << " step " << a.step << " scale_g";
  }
}

TEST_F(GpuParity, TenTrainingStepsFp32MatchTheCpu) {
  const TrainerConfig cfg = small_config(Precision::FP32);
  CpuBackend cb;
  const TrainRun c = train(cb, cfg, 10), g = train(gpu(), cfg, 10);
  expect_no_capture_fallback(g, "fp32 training (graphs on)");
  expect_losses_close(c, g, kTrainTolFp32, "fp32 training (graphs on)");
}

TEST_F(GpuParity, TenTrainingStepsFp16MatchTheCpu) {
  const TrainerConfig cfg = small_config(Precision::FP16, 3);
  CpuBackend cb;
  const TrainRun c = train(cb, cfg, 10), g = train(gpu(), cfg, 10);
  expect_no_capture_fallback(g, "fp16 training, RGB (graphs on)");
  expect_losses_close(c, g, kTrainTolFp16, "fp16 training, RGB (graphs on)");
}

// Class-conditional models (the class embedding, conditional batch norm, the projection D), the
// generated classes drawn on the host alike on both backends.
TEST_F(GpuParity, TenConditionalDcganStepsFp16MatchTheCpu) {
  TrainerConfig cfg = small_config(Precision::FP16);
  cfg.model.classes = 4;
  CpuBackend cb;
  const TrainRun c = train(cb, cfg, 10), g = train(gpu(), cfg, 10);
  expect_no_capture_fallback(g, "conditional fp16 DCGAN (graphs on)");
  expect_losses_close(c, g, kTrainTolFp16, "conditional fp16 DCGAN (graphs on)");
}

TEST_F(GpuParity, TenConditionalResnetStepsFp32MatchTheCpu) {
  TrainerConfig cfg = small_config(Precision::FP32, 3);
  cfg.family = ModelFamily::ResNet;
  cfg.model.latent = 128;
  cfg.model.width = 4;
  cfg.model.classes = 4;
  cfg.n_dis = 2;
  cfg.loss = LossKind::Hinge;
  CpuBackend cb;
  const TrainRun c = train(cb, cfg, 10), g = train(gpu(), cfg, 10);
  expect_no_capture_fallback(g, "conditional fp32 ResNet (graphs on)");
  expect_losses_close(c, g, kTrainTolFp32, "conditional fp32 ResNet (graphs on)");
}

TEST_F(GpuParity, ForcedOverflowIsSkippedExactlyAsOnTheCpu) {
  TrainerConfig cfg = small_config(Precision::FP16);
  cfg.scaler.init_scale = 0x1p40f;  // every half gradient overflows
  cfg.scaler.max_scale = 0x1p50f;
  for (Backend* b : {static_cast<Backend*>(&cpu()), &gpu()}) {
    const std::string who = b == &gpu() ? "gpu" : "cpu";
    Trainer t(*b, cfg);
    const auto batch = real_batch(cfg);
    auto before = snapshot(*b, t);
    float expect_scale = 0x1p40f;
    for (int i = 0; i < 5; ++i) {
      t.step(batch.data());
      const auto ms = t.collect(true);
      ASSERT_EQ(ms.size(), 1u);
      const StepMetrics& m = ms[0];
      EXPECT_TRUE(m.skipped_d) << who << " step " << m.step << ": D must be skipped at scale " << m.scale_d;
      EXPECT_TRUE(m.skipped_g) << who << " step " << m.step << ": G must be skipped at scale " << m.scale_g;
      EXPECT_EQ(m.scale_d, expect_scale) << who << " step " << m.step << ": D's scale sequence";
      EXPECT_EQ(m.scale_g, expect_scale) << who << " step " << m.step << ": G's scale sequence";
      expect_scale *= 0.5f;
      const auto after = snapshot(*b, t);
      for (size_t k = 0; k < after.size(); ++k) {
        const std::string& name = after[k].first;
        // Batch-norm running statistics move in every forward pass; scaler state is the point.
        if (name.find("running") != std::string::npos || name.rfind("scaler", 0) == 0) continue;
        EXPECT_TRUE(std::memcmp(after[k].second.data(), before[k].second.data(), after[k].second.size() * 4) == 0)
            << who << " step " << m.step << ": " << name << " changed although the step was skipped";
      }
      before = after;
    }
    for (const std::string& w : t.take_warnings()) ADD_FAILURE() << who << ": " << w;
  }
}

TEST_F(GpuParity, GraphReplayEqualsEagerOnTheGpu) {
  // Precision switches on the way: each drops the graph, runs one eager step and recaptures.
  const auto schedule = [](int i) {
    return i < 4 ? Precision::FP16 : i < 6 ? Precision::BF16 : i < 8 ? Precision::FP32 : Precision::FP16;
  };
  TrainerConfig graphs = small_config(Precision::FP16, 3), eager = graphs;
  graphs.use_graphs = true;
  eager.use_graphs = false;
  const TrainRun a = train(gpu(), graphs, 10, schedule);
  const TrainRun b = train(gpu(), eager, 10, schedule);
  expect_no_capture_fallback(a, "graph run");
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (size_t i = 0; i < a.metrics.size(); ++i) {
    const StepMetrics &x = a.metrics[i], &y = b.metrics[i];
    const std::string at = "step " + std::to_string(x.step) + " (" + precision_name(x.precision) + ")";
    EXPECT_EQ(x.loss_d, y.loss_d) << at << " loss_d: graph " << x.loss_d << ", eager " << y.loss_d;
    EXPECT_EQ(x.loss_g, y.loss_g) << at << " loss_g";
    EXPECT_EQ(x.scale_d, y.scale_d) << at << " scale_d";
    EXPECT_EQ(x.skipped_d, y.skipped_d) << at << " skipped_d";
    EXPECT_EQ(x.skipped_g, y.skipped_g) << at << " skipped_g";
    if (!std::isnan(x.grad_norm_d)) EXPECT_EQ(x.grad_norm_d, y.grad_norm_d) << at << " grad_norm_d";
    if (!std::isnan(x.grad_norm_g)) EXPECT_EQ(x.grad_norm_g, y.grad_norm_g) << at << " grad_norm_g";
  }
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t k = 0; k < a.state.size(); ++k) {
    EXPECT_EQ(a.state[k].first, b.state[k].first);
    const double err = normalized_error(a.state[k].second, b.state[k].second);
    EXPECT_TRUE(std::memcmp(a.state[k].second.data(), b.state[k].second.data(), a.state[k].second.size() * 4) == 0)
        << a.state[k].first << " differs between graph replay and eager execution (normalised difference " << err
        << "); every GPU reduction is meant to be deterministic";
  }
}

TEST_F(GpuParity, SamplingBetweenReplayedStepsChangesNothing) {
  // What a Session does between steps while the step is a live CUDA graph: sample images (here
  // 3 more than a batch, so the last group is a new geometry: new cuDNN plans, possibly grown
  // workspaces whose old blocks the graph still uses and whose frees must be deferred) and read
  // the gradient histograms. Before the capture (after step 0) and between replays (after step 3).
  // Training must be bit-identical to a run without any of it.
  const TrainerConfig cfg = small_config(Precision::FP16, 3);
  std::vector<std::vector<float>> images;
  const auto sample = [&](Trainer& t, int i) {
    if (i != 0 && i != 3) return;
    const int n = cfg.batch + 3;
    std::vector<float> z(size_t(n) * cfg.model.latent);
    for (size_t j = 0; j < z.size(); ++j) z[j] = philox_normal(11, 11, j);
    images.push_back(t.generate(z, n));
    std::vector<float> gh, dh;
    t.gradient_histograms(gh, dh);
  };
  const TrainRun a = train(gpu(), cfg, 6, nullptr, sample);
  const TrainRun b = train(gpu(), cfg, 6);
  expect_no_capture_fallback(a, "run with sampling");
  expect_no_capture_fallback(b, "run without sampling");
  ASSERT_EQ(images.size(), 2u);
  for (const auto& im : images)
    for (float v : im) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= 1.0f) << "generated pixel " << v;
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (size_t i = 0; i < a.metrics.size(); ++i) {
    EXPECT_EQ(a.metrics[i].loss_d, b.metrics[i].loss_d) << "step " << a.metrics[i].step << " loss_d";
    EXPECT_EQ(a.metrics[i].loss_g, b.metrics[i].loss_g) << "step " << a.metrics[i].step << " loss_g";
  }
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t k = 0; k < a.state.size(); ++k)
    EXPECT_TRUE(std::memcmp(a.state[k].second.data(), b.state[k].second.data(), a.state[k].second.size() * 4) == 0)
        << a.state[k].first << " differs: sampling between steps changed training";
}

}  // namespace
