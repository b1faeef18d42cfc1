// Where mixed precision breaks: overflows planted in a chosen discriminator layer,
// forward and backward, in fp16 and in bf16 with loss scaling, are named by the locator; the
// run folder's layers.csv and overflow events carry them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/run/alerts.h"
#include "core/run/layers_log.h"
#include "core/run/overflow_locator.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "core/tensor/half.h"
#include "core/train/forward_probe.h"
#include "tests/planted_overflow.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

TrainerConfig small(Precision p) {
  TrainerConfig c = tiny_dcgan(p);
  c.bf16_loss_scaling = p == Precision::BF16;
  return c;
}

// D.2 is the second convolution of the DCGAN discriminator (between D.0 and D.5 in backward order).
const char* kLayer = "D.2";
const char* kWeight = "2.weight";

}  // namespace

TEST(OverflowLocator, BackwardOverflowInAChosenLayerIsNamed) {
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    PlantingBackend b;
    TrainerConfig c = small(p);
    Trainer t(b, c);
    moderate_scales(b, t);
    const auto real = real_batch(c);
    t.step(real.data());
    auto clean = t.collect(true);
    ASSERT_EQ(clean.size(), 1u);
    EXPECT_FALSE(clean[0].skipped_d) << precision_label(p);
    EXPECT_EQ(first_nonfinite_in_backward_order(t.tensor_names(), clean[0].tensors, "D"), -1);
    b.target = param(t.discriminator(), kWeight)->grad;
    t.step(real.data());
    auto rows = t.collect(true);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0].skipped_d) << precision_label(p);
    const int k = first_nonfinite_in_backward_order(t.tensor_names(), rows[0].tensors, "D");
    ASSERT_GE(k, 0);
    EXPECT_EQ(t.tensor_names()[k].layer, kLayer) << precision_label(p);
    EXPECT_EQ(t.tensor_names()[k].tensor, "weight");
    // D.0 lies after it in backward order and got inf/NaN through it; D.5 and D.8 before it did not.
    for (size_t i = 0; i < t.tensor_names().size(); ++i)
      if (t.tensor_names()[i].layer == "D.5" || t.tensor_names()[i].layer == "D.8")
        EXPECT_EQ(rows[0].tensors[i].nonfinite, 0u) << t.tensor_names()[i].layer;
    RunEvent e{rows[0].step, 0, EventType::Overflow, "D", "D gradients had inf/NaN"};
    locate_overflow(t.tensor_names(), rows[0], "D", e);
    EXPECT_EQ(e.data.value("layer", ""), kLayer);
    EXPECT_EQ(e.data.value("origin", ""), "backward");
    EXPECT_NE(e.message.find("D.2.weight"), std::string::npos) << e.message;
    // The forward passes held nothing non-finite: the probe says so and changes nothing.
    const ForwardProbe fp = probe_forward(t);
    EXPECT_FALSE(fp.found) << fp.layer;
  }
}

TEST(OverflowLocator, ForwardOverflowInAChosenLayerIsNamed) {
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    CpuBackend b;
    TrainerConfig c = small(p);
    Trainer t(b, c);
    moderate_scales(b, t);
    const auto real = real_batch(c);
    // Weights that fit the format but whose products do not: the layer's output overflows.
    Parameter* w = param(t.discriminator(), kWeight);
    std::vector<float> v = to_host(b, w->master);
    const float big = p == Precision::FP16 ? 60000.0f : 3e38f;
    for (size_t i = 0; i < v.size(); ++i) v[i] = big * (1.0f + 1e-3f * static_cast<float>(i % 7));
    b.upload(w->master, v.data(), v.size() * 4);
    w->refresh_working(b);
    t.step(real.data());
    auto rows = t.collect(true);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0].skipped_d) << precision_label(p);
    std::vector<std::vector<float>> running;
    for (StateBuffer* s : t.discriminator().buffers()) running.push_back(to_host(b, s->value));
    const ForwardProbe fp = probe_forward(t);
    ASSERT_TRUE(fp.found) << precision_label(p);
    EXPECT_EQ(fp.layer, kLayer) << precision_label(p);
    EXPECT_EQ(fp.type, "Conv2d");
    EXPECT_EQ(fp.input, "real images");
    size_t i = 0;
    for (StateBuffer* s : t.discriminator().buffers())
      EXPECT_EQ(to_host(b, s->value), running[i++]) << "the probe applies nothing";
    RunEvent e{rows[0].step, 0, EventType::Overflow, "D", "D gradients had inf/NaN"};
    locate_overflow(t.tensor_names(), rows[0], "D", e);
    add_forward_location(fp, e);
    EXPECT_EQ(e.data.value("origin", ""), "forward");
    EXPECT_EQ(e.data.value("forward_layer", ""), kLayer);
  }
}

// The Session writes layers.csv (every K steps and every overflow step) and overflow events
// that name the layer.
TEST(OverflowLocator, SessionWritesLayersCsvAndNamesTheLayer) {
  const fs::path dir = fs::temp_directory_path() / ("ampgan-locator-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunConfig c = ampgan::testing::tiny_fp16_run(4, dir);
  c.layers_every = 2;
  c.scaler.init_scale = 1024.0f;  // clean steps before the planted one
  auto s = Session::create(c);
  s->step();  // 1: not written
  s->step();  // 2: written (every 2)
  Parameter* w = param(s->trainer().discriminator(), kWeight);
  std::vector<float> v = to_host(s->backend(), w->master);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 60000.0f;
  s->backend().upload(w->master, v.data(), v.size() * 4);
  w->refresh_working(s->backend());
  s->step();  // 3: overflow, written
  s->finish("test");
  const auto rows = LayersLog::read(dir / "layers.csv");
  const size_t n = s->trainer().tensor_names().size();
  ASSERT_EQ(rows.size(), 2 * n);
  EXPECT_EQ(rows.front().step, 2);
  EXPECT_EQ(rows.back().step, 3);
  EXPECT_EQ(rows.front().name.layer, "D.0");
  bool any_nonfinite = false;
  for (size_t i = n; i < 2 * n; ++i) any_nonfinite |= rows[i].stat.nonfinite > 0;
  EXPECT_TRUE(any_nonfinite);
  bool named = false;
  for (const RunEvent& e : RunFolder(dir).read_events())
    if (e.type == EventType::Overflow && e.network == "D") {
      named = true;
      EXPECT_EQ(e.data.value("forward_layer", ""), kLayer) << e.message;
      EXPECT_NE(e.message.find("first activation with inf/NaN is D.2"), std::string::npos) << e.message;
    }
  EXPECT_TRUE(named);
  s.reset();
  fs::remove_all(dir);
}

// A live view reads layers.csv a piece at a time: each complete row once, a half-written last
// row on the next read, and the whole file again after a resume trimmed it.
TEST(LayersLogReadMore, ReadsEachCompleteRowOnceAndRestartsAfterATrim) {
  TempDir tmp("ampgan-layers-more");
  const fs::path path = fs::path(tmp.path()) / "layers.csv";
  const std::vector<TensorName> names = {{"D", "D.0", "weight", 12}, {"G", "G.1", "bias", 3}};
  auto step = [](int64_t s, float max_abs) {
    StepMetrics m;
    m.step = s;
    m.tensors = {{max_abs, 0, 0.0}, {2 * max_abs, 1, 0.25}};
    return m;
  };
  std::vector<LayerRow> rows;
  EXPECT_EQ(LayersLog::read_more(path, 0, rows), 0u);  // no file yet
  EXPECT_TRUE(rows.empty());
  {
    LayersLog log(path, names);
    log.write(step(1, 1.0f));
    log.write(step(2, 4.0f));
    log.sync();
  }
  uint64_t offset = LayersLog::read_more(path, 0, rows);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(offset, fs::file_size(path));
  EXPECT_EQ(rows[3].step, 2);
  EXPECT_EQ(rows[3].name.layer, "G.1");
  EXPECT_FLOAT_EQ(rows[3].stat.max_abs, 8.0f);
  EXPECT_EQ(rows[3].stat.nonfinite, 1u);
  EXPECT_EQ(LayersLog::read_more(path, offset, rows), offset);  // nothing new
  EXPECT_EQ(rows.size(), 4u);
  {
    LayersLog log(path, names);  // continues the file
    log.write(step(3, 16.0f));
    log.sync();
  }
  io::AppendLog(path).append_line("4,D,D.0,wei");  // a row still being written: no newline yet
  std::string text = io::read_file(path);
  text.pop_back();
  io::write_file_atomic(path, text);
  offset = LayersLog::read_more(path, offset, rows);
  ASSERT_EQ(rows.size(), 6u);  // step 3's two rows, not the partial one
  EXPECT_EQ(rows[4].step, 3);
  EXPECT_EQ(offset, fs::file_size(path) - std::string("4,D,D.0,wei").size());
  LayersLog::trim(path, 1);  // a resume from step 1
  offset = LayersLog::read_more(path, offset, rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].step, 1);
  EXPECT_EQ(rows.size(), LayersLog::read(path).size());
  EXPECT_EQ(offset, fs::file_size(path));
}

// Each alert comes once per episode, with a remedy, and again only after the condition cleared.
TEST(Alerts, RaisedOncePerEpisodeWithARemedy) {
  AlertMonitor mon(AlertSettings{3, 5, 0.02});
  std::vector<TensorName> names = {{"D", "D.0", "weight", 4}, {"D", "D.2", "weight", 4}, {"G", "G.0", "weight", 4}};
  auto row = [&](int64_t step, bool skip_d, double scale_d) {
    StepMetrics m;
    m.step = step;
    m.precision = Precision::FP16;
    m.skipped_d = skip_d;
    m.scale_d = scale_d;
    m.scale_g = 1024;
    m.loss_d = 1.0;
    m.loss_g = 1.0;
    m.d_real = 0.8;
    m.d_fake = 0.2;
    m.tensors.resize(3);
    if (skip_d) m.tensors[0].nonfinite = m.tensors[1].nonfinite = 4;  // started in D.2
    return m;
  };
  auto kinds = [](const std::vector<RunEvent>& ev) {
    std::vector<std::string> k;
    for (const RunEvent& e : ev) {
      EXPECT_EQ(e.type, EventType::Warning);
      EXPECT_FALSE(e.data.value("remedy", "").empty());
      EXPECT_NE(e.message.find("Remedy: "), std::string::npos);
      k.push_back(e.data.value("alert", ""));
    }
    return k;
  };
  EXPECT_TRUE(mon.observe(row(1, true, 4), true, 1, names).empty());
  EXPECT_TRUE(mon.observe(row(2, true, 2), true, 1, names).empty());
  const auto third = mon.observe(row(3, true, 1), true, 1, names);
  EXPECT_EQ(kinds(third), (std::vector<std::string>{"skip_streak", "scale_floor"}));
  EXPECT_NE(third[0].message.find("D.2"), std::string::npos) << third[0].message;
  EXPECT_TRUE(mon.observe(row(4, true, 1), true, 1, names).empty()) << "once per episode";
  EXPECT_TRUE(mon.observe(row(5, false, 1), true, 1, names).empty());
  for (int s = 6; s <= 7; ++s) EXPECT_TRUE(mon.observe(row(s, true, 2), true, 1, names).empty());
  EXPECT_EQ(kinds(mon.observe(row(8, true, 2), true, 1, names)), std::vector<std::string>{"skip_streak"})
      << "a new streak, above the floor";
  // Without loss scaling the floor means nothing (fp32's scale is 1 = the default floor).
  AlertMonitor fp32(AlertSettings{100, 5, 0.02});
  EXPECT_TRUE(fp32.observe(row(1, true, 1), false, 1, names).empty());
  StepMetrics bad = row(9, false, 1024);
  bad.loss_g = NAN;
  EXPECT_EQ(kinds(mon.observe(bad, true, 1, names)), std::vector<std::string>{"nonfinite_loss"});
  EXPECT_TRUE(mon.observe(bad, true, 1, names).empty());
  // D collapsed: D(x) ~ D(G(z)) for 5 steps.
  AlertMonitor col(AlertSettings{3, 5, 0.02});
  for (int s = 1; s <= 5; ++s) {
    StepMetrics m = row(s, false, 1024);
    m.d_real = m.d_fake = 0.5;
    const auto ev = col.observe(m, true, 1, names);
    if (s < 5)
      EXPECT_TRUE(ev.empty()) << s;
    else
      EXPECT_EQ(kinds(ev), std::vector<std::string>{"collapsed_d"});
  }
}

// A run whose every step overflows at the floor warns, with a remedy, before it stops.
TEST(Alerts, SessionWarnsWhenTheScaleIsStuckAtItsFloor) {
  const fs::path dir = fs::temp_directory_path() / ("ampgan-alerts-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunConfig c = ampgan::testing::tiny_fp16_run(12, dir);
  c.scaler.init_scale = c.scaler.min_scale = c.scaler.max_scale = 1e30f;  // every step overflows
  {
    auto s = Session::create(c);
    for (int i = 0; i < 12; ++i) s->step();
    s->finish("test");
  }
  std::vector<std::string> alerts;
  for (const RunEvent& e : RunFolder(dir).read_events())
    if (e.type == EventType::Warning && e.data.contains("alert"))
      alerts.push_back(e.data["alert"].get<std::string>() + " " + e.network);
  EXPECT_NE(std::find(alerts.begin(), alerts.end(), "scale_floor D"), alerts.end());
  EXPECT_NE(std::find(alerts.begin(), alerts.end(), "skip_streak D"), alerts.end());
  EXPECT_EQ(std::count(alerts.begin(), alerts.end(), "skip_streak D"), 1);
  fs::remove_all(dir);
}
