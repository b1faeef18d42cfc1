// The precision doctor (core/run/precision_doctor.h): on a planted overflow in a known layer, a
// planted underflow (a loss scale far too small), a clean model and a stop mid-search, the answer
// is the remedy the fault calls for and nothing more; `ampgan doctor` writes its report and a
// --config file that `ampgan train` accepts. Every assertion is on a property (which remedy, clean
// or not, a figure against a limit), never on a figure recorded on one host.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/io/atomic_file.h"
#include "core/run/doctor_report.h"
#include "core/run/precision_doctor.h"
#include "core/run/precision_replay.h"
#include "tests/planted_overflow.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

// Probes of 30 steps, 10 of them warm-up: a tiny DCGAN's scaler settles from 2^16 within 10 steps.
// The skip target has a margin on both sides: the answers' probes (D.2 in FP32; the scale raised
// to 2^16) skipped 5% of their updates after the warm-up (2 of 40: the scale still finding its
// level, 2^14 -> 2^13) with each CPU kernel family, the planted overflow's probes 50%.
DoctorOptions short_probes() {
  DoctorOptions o;
  o.probe_steps = 30;
  o.limits.warmup_steps = 10;
  o.limits.target_skips = 0.15;
  return o;
}

// Every probe trains on a backend that plants 1e6 in D.2's weight gradient at every D step: inf
// once stored in FP16, finite in FP32 (tests/planted_overflow.h).
void plant_in_d2(DoctorOptions& o) {
  o.make_backend = [] {
    auto b = std::make_unique<PlantingBackend>();
    b->value = 1e6f;
    return std::unique_ptr<Backend>(std::move(b));
  };
  o.on_session = [](Session& s) {
    auto* b = dynamic_cast<PlantingBackend*>(&s.backend());
    ASSERT_NE(b, nullptr);
    b->target = param(s.trainer().discriminator(), "2.weight")->grad;
  };
}

std::string flags_of(const DoctorResult& r) { return doctor_answer_flags(r); }

std::string table(const DoctorResult& r) { return "\n" + doctor_table_text(r, false) + r.summary; }

}  // namespace

// The verdict's definitions (doctor_verdict.h) on hand-made rows: only steps after the warm-up
// count; a scale at its floor is stuck only while its network still overflows; blame goes to the
// forward layer when there is one, and to overflows after the warm-up.
TEST(DoctorVerdict, DefinitionsOnHandMadeRows) {
  RunConfig c;
  c.precision = Precision::FP16;
  c.steps = 20;
  DoctorLimits l;
  l.warmup_steps = 5;
  std::vector<StepMetrics> rows(20);
  for (int i = 0; i < 20; ++i) {
    StepMetrics& m = rows[i];
    m.step = i + 1;
    m.skipped_d = m.step <= 5 || m.step == 10;  // warm-up skips do not count
    m.underflow_d = 0.02;
    m.underflow_g = 0.001;
    m.loss_d = 1.0;
    m.loss_g = m.step <= 5 ? NAN : 2.6;
    m.scale_d = m.scale_g = 1024;
  }
  RunEvent early{3, 0, EventType::Overflow, "D", ""}, late{10, 0, EventType::Overflow, "D", ""};
  early.data["layer"] = "D.0";
  late.data["layer"] = "D.5";
  late.data["forward_layer"] = "D.2";
  ProbeFigures ref;
  ref.loss_d = 1.0;
  ref.loss_g = 2.0;
  const ProbeFigures f = measure_probe(rows, {early, late}, c, l, &ref);
  EXPECT_TRUE(f.complete);
  EXPECT_EQ(f.skipped, 1);
  EXPECT_DOUBLE_EQ(f.skip_rate, 1.0 / 30);  // 15 steps x (1 D + 1 G update)
  EXPECT_DOUBLE_EQ(f.underflow, 0.02);      // the larger network's share
  EXPECT_NEAR(f.departure, 0.3, 1e-12);     // |2.6 - 2| / 2 for G; D departs by 0
  EXPECT_FALSE(f.at_floor);
  ASSERT_EQ(f.blamed.size(), 1u);
  EXPECT_EQ(f.blamed[0].first, "D.2");
  const auto problems = judge_probe(f, l);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("underflow"), std::string::npos) << problems[0];
  // At the floor and overflowing on every step after the warm-up: stuck.
  for (StepMetrics& m : rows) m.scale_d = 1, m.skipped_d = 1;
  EXPECT_TRUE(measure_probe(rows, {}, c, l, &ref).at_floor);
  // At the floor without overflowing (a scale set that low by hand): not stuck.
  for (StepMetrics& m : rows) m.skipped_d = 0;
  EXPECT_FALSE(measure_probe(rows, {}, c, l, &ref).at_floor);
  // BF16 without scaling sits at S = 1 = the floor by design.
  c.precision = Precision::BF16;
  for (StepMetrics& m : rows) m.skipped_d = 1;
  EXPECT_FALSE(measure_probe(rows, {}, c, l, &ref).at_floor);
}

// The answer's flags: `ampgan train` options, values that read back as the same FP32 settings.
TEST(DoctorVerdict, FlagsSpellTheDifferenceAsTrainOptions) {
  RunConfig from, to;
  to.scaler.init_scale = std::ldexp(1.0f, -14);
  to.fp32_layers = {"D.2", "G.3"};
  to.shared_scaler = true;
  to.bf16_loss_scaling = true;
  to.out_dir = "elsewhere";  // the folder is not a remedy
  const std::vector<std::string> f = config_flags(from, to);
  ASSERT_EQ(f.size(), 4u) << ::testing::PrintToString(f);
  EXPECT_EQ(f[0].rfind("--init-scale ", 0), 0u);
  EXPECT_EQ(std::strtof(f[0].c_str() + 13, nullptr), std::ldexp(1.0f, -14)) << f[0];
  EXPECT_NE(std::find(f.begin(), f.end(), "--scaler shared"), f.end());
  EXPECT_NE(std::find(f.begin(), f.end(), "--bf16-loss-scaling"), f.end());
  EXPECT_NE(std::find(f.begin(), f.end(), "--fp32-layers D.2,G.3"), f.end());
  to = from;
  to.scaler.init_scale = 0.0001f;
  EXPECT_EQ(config_flags(from, to), std::vector<std::string>{"--init-scale 0.0001"});
}

TEST(Doctor, PlantedOverflowInOneLayerPutsExactlyThatLayerInFp32) {
  TempDir tmp("ampgan-doctor-overflow");
  DoctorOptions o = short_probes();
  plant_in_d2(o);
  const DoctorResult r = run_precision_doctor(tiny_fp16_run(1000, tmp / "doc"), o);
  ASSERT_NE(r.answer_candidate(), nullptr) << table(r);
  const DoctorCandidate& plain = r.candidates[1];
  EXPECT_FALSE(plain.clean()) << table(r);
  ASSERT_FALSE(plain.figures.blamed.empty());
  EXPECT_EQ(plain.figures.blamed[0].first, "D.2") << table(r);
  const DoctorCandidate& a = *r.answer_candidate();
  EXPECT_TRUE(r.clean) << table(r);
  EXPECT_TRUE(a.clean()) << table(r);
  EXPECT_EQ(a.config.fp32_layers, std::vector<std::string>{"D.2"}) << table(r);
  EXPECT_EQ(a.config.half_blocks, -1);
  EXPECT_EQ(a.config.conv_clamp, 0.0f);
  EXPECT_EQ(a.config.amp_strategy, AmpStrategy::Auto);
  EXPECT_LE(a.figures.skip_rate, o.limits.target_skips);
  EXPECT_EQ(flags_of(r), "--fp32-layers D.2") << table(r);
  // The preset holds the remedy and the run's own settings, not the probes' bookkeeping.
  const nlohmann::json preset = doctor_config_json(r);
  EXPECT_EQ(preset.value("fp32_layers", ""), "D.2");
  EXPECT_EQ(preset.value("precision", ""), "fp16");
  EXPECT_EQ(preset.value("steps", 0), 1000);
  EXPECT_FALSE(preset.contains("out"));
  RunConfig back;
  back.apply_json(preset, "doctor-config.json");
  EXPECT_EQ(back.fp32_layers, std::vector<std::string>{"D.2"});
  EXPECT_EQ(back.width, 8);
}

// A scale of 2^-14 that never grows: most FP16 gradients are zero or subnormal. The remedy is a
// larger scale, not FP32 layers.
TEST(Doctor, PlantedUnderflowRaisesTheScaleRatherThanFp32Layers) {
  TempDir tmp("ampgan-doctor-underflow");
  RunConfig c = tiny_fp16_run(1000, tmp / "doc");
  c.scaler.init_scale = c.scaler.min_scale = std::ldexp(1.0f, -14);  // the floor would lift it to 1
  c.scaler.growth_interval = 100000;
  const DoctorResult r = run_precision_doctor(c, short_probes());
  const DoctorCandidate& plain = r.candidates.at(1);
  EXPECT_GT(plain.figures.underflow, r.limits.max_underflow) << table(r);
  ASSERT_NE(r.answer_candidate(), nullptr) << table(r);
  const DoctorCandidate& a = *r.answer_candidate();
  EXPECT_TRUE(a.clean()) << table(r);
  EXPECT_EQ(a.stage, "scaler") << table(r);
  EXPECT_GT(a.config.scaler.init_scale, c.scaler.init_scale);
  EXPECT_TRUE(a.config.fp32_layers.empty()) << table(r);
  EXPECT_EQ(a.config.half_blocks, -1);
  EXPECT_LE(a.figures.underflow, r.limits.max_underflow);
}

// A model clean in FP16 at a moderate scale, and in BF16 without scaling (its default): the
// answer is plain AMP, after the reference and one probe.
TEST(Doctor, CleanModelNeedsNoRemedy) {
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    TempDir tmp("ampgan-doctor-clean");
    RunConfig c = tiny_fp16_run(1000, tmp / "doc");
    c.precision = p;
    c.scaler.init_scale = 1024.0f;  // the moderate scale of the overflow tests: no overflow here
    const DoctorResult r = run_precision_doctor(c, short_probes());
    EXPECT_EQ(r.answer, 1) << precision_name(p) << table(r);
    EXPECT_TRUE(r.clean) << table(r);
    EXPECT_EQ(r.candidates.size(), 2u) << table(r);
    EXPECT_EQ(flags_of(r), "");
    EXPECT_NE(r.summary.find("no remedy needed"), std::string::npos) << r.summary;
    // Each loss within the stated bound of FP32's, and nothing skipped after the warm-up.
    EXPECT_LE(r.candidates[1].figures.departure, r.limits.max_loss_departure);
    EXPECT_EQ(r.candidates[1].figures.skipped, 0);
  }
}

TEST(Doctor, StopMidSearchReturnsTheBestSoFar) {
  TempDir tmp("ampgan-doctor-stop");
  DoctorOptions o = short_probes();
  plant_in_d2(o);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  int reports = 0;
  o.on_probe = [&](const DoctorResult& so_far) {
    ++reports;
    EXPECT_EQ(so_far.candidates.size(), static_cast<size_t>(reports));
    if (so_far.candidates.size() == 3) stop = true;  // after the first remedy, before FP32 D.2
  };
  const DoctorResult r = run_precision_doctor(tiny_fp16_run(1000, tmp / "doc"), o);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.candidates.size(), 3u) << table(r);
  ASSERT_NE(r.answer_candidate(), nullptr) << table(r);
  EXPECT_GE(r.answer, 1) << "the best so far is a probed candidate, not the FP32 reference";
  EXPECT_FALSE(r.clean) << "the planted overflow needs D.2 in FP32, not yet tried";
  EXPECT_EQ(r.summary.rfind("stopped after 3 probe(s)", 0), 0u) << r.summary;
  // Written as the CLI writes it after a stop.
  write_doctor_report(r, tmp / "doc");
  const nlohmann::json j = nlohmann::json::parse(io::read_file(tmp / "doc" / kDoctorJson));
  EXPECT_TRUE(j["stopped"].get<bool>());
  EXPECT_EQ(j["candidates"].size(), 3u);
  EXPECT_EQ(j["answer"].get<int>(), r.answer);
}

TEST(Doctor, SearchStopsWithinTheStepBudget) {
  TempDir tmp("ampgan-doctor-budget");
  DoctorOptions o = short_probes();
  plant_in_d2(o);
  o.budget_steps = 3 * o.probe_steps;  // the reference, plain FP16 and one remedy
  const DoctorResult r = run_precision_doctor(tiny_fp16_run(1000, tmp / "doc"), o);
  EXPECT_TRUE(r.budget_spent);
  EXPECT_LE(r.steps_used, o.budget_steps);
  EXPECT_EQ(r.candidates.size(), 3u) << table(r);
}

// End to end: the table, the report files and a preset that `ampgan train --config` trains; the
// refusals.
TEST(DoctorCli, WritesTheReportAndAPresetThatTrainAccepts) {
  TempDir tmp("ampgan-doctor-cli");
  const std::string tiny =
      " --dataset synthetic --synthetic-count 64 --res 32 --width 8 --batch 8 --backend cpu --precision fp16";
  std::string out;
  const fs::path dir = tmp / "doc";
  ASSERT_EQ(
      run_command(kCli + " doctor" + tiny + " --init-scale 16777216 --probe-steps 30 --out " + dir.string(), &out), 0)
      << out;
  EXPECT_NE(out.find("[probe 0] FP32 reference"), std::string::npos) << out;
  EXPECT_NE(out.find("candidate"), std::string::npos) << out;
  EXPECT_NE(out.find("preset: ampgan train --config"), std::string::npos) << out;
  for (const char* f : {kDoctorJson, kDoctorMarkdown, kDoctorConfig}) EXPECT_TRUE(fs::exists(dir / f)) << f;
  const nlohmann::json j = nlohmann::json::parse(io::read_file(dir / kDoctorJson));
  EXPECT_GE(j["candidates"].size(), 2u);
  EXPECT_EQ(j["precision"], "fp16");
  ASSERT_EQ(run_command(kCli + " train --config " + (dir / kDoctorConfig).string() +
                            " --steps 2 --sample-every 0 --quiet --out " + (tmp / "run").string(),
                        &out),
            0)
      << out;
  // Refusals: no half precision, no folder, an earlier doctor's folder.
  EXPECT_EQ(run_command(kCli + " doctor --precision fp32 --out " + (tmp / "x").string(), &out), 1) << out;
  EXPECT_NE(out.find("fp16 or bf16"), std::string::npos) << out;
  EXPECT_EQ(run_command(kCli + " doctor" + tiny + "", &out), 2) << out;
  EXPECT_EQ(run_command(kCli + " doctor" + tiny + " --out " + dir.string(), &out), 1) << out;
  EXPECT_NE(out.find("earlier doctor"), std::string::npos) << out;
  EXPECT_EQ(run_command(kCli + " doctor --dataset " + (tmp / "none").string() + " --precision fp16 --out " +
                            (tmp / "y").string(),
                        &out),
            1)
      << out;
  EXPECT_NE(out.find("none"), std::string::npos) << out;
}

// Ctrl-C while a probe trains: the probe stops at the end of its step, the table and report of
// what was tried are written, and the status is 130.
TEST(DoctorCli, InterruptWritesTheBestAnswerSoFar) {
  TempDir tmp("ampgan-doctor-int");
  const fs::path dir = tmp / "doc";
  const std::string cmd = kCli +
                          " doctor --dataset synthetic --synthetic-count 64 --res 32 --width 8 --batch 8 "
                          "--backend cpu --precision fp16 --probe-steps 100000 --out " +
                          dir.string();
  // The shell starts it, waits for the plain probe's folder (the reference has finished... or is
  // stopped: either way a probe is running), then sends SIGINT.
  const std::string script = "( " + cmd + " > " + (tmp / "log").string() + " 2>&1 & p=$!; for i in $(seq 600); do " +
                             "[ -s " + (dir / "probes" / "00-fp32-reference" / "metrics.csv").string() +
                             " ] && break; sleep 0.05; done; sleep 0.5; kill -INT $p; wait $p; echo rc=$? )";
  std::string out;
  run_command("bash -c '" + script + "'", &out);
  EXPECT_NE(out.find("rc=130"), std::string::npos) << out << io::read_file(tmp / "log");
  const std::string log = io::read_file(tmp / "log");
  EXPECT_NE(log.find("stopped after 1 probe(s)"), std::string::npos) << log;
  const nlohmann::json j = nlohmann::json::parse(io::read_file(dir / kDoctorJson));
  EXPECT_TRUE(j["stopped"].get<bool>());
  EXPECT_EQ(j["candidates"].size(), 1u);
  EXPECT_FALSE(j["candidates"][0]["figures"]["complete"].get<bool>());
}

// The first-divergence replay (core/run/precision_replay.h) on a tiny fp16 run with a checkpoint
// at step 2.
namespace {

fs::path replay_run(const TempDir& tmp, const std::string& backend = "cpu") {
  RunConfig c = tiny_fp16_run(4, tmp / "run");
  c.backend = backend;
  c.checkpoint_every = 2;
  c.scaler.init_scale = 1024.0f;  // no overflow in these steps
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
  return tmp / "run";
}

// D.2's weights at 60000: they fit FP16, their products do not (a forward overflow in D.2).
void plant_large_d2_weights(Trainer& t) {
  Parameter* w = param(t.discriminator(), "2.weight");
  std::vector<float> v(static_cast<size_t>(w->master.numel()), 60000.0f);
  t.backend().upload(w->master, v.data(), v.size() * 4);
  w->refresh_working(t.backend());
}

}  // namespace

// Tolerances (precision_replay.cpp): 64 unit roundoffs for activations (FP16 3.1%), 256 for the
// gradients' largest magnitudes (12.5%). Measured on an AVX2 host with each CPU kernel family
// (auto, onednn, openblas), steps 3 and 4: the largest activation error 3.8e-3 (8x below), the
// largest gradient departure 4.0e-2 (3x below).
TEST(DoctorReplay, CleanStepDepartsNowhere) {
  TempDir tmp("ampgan-replay-clean");
  const fs::path run = replay_run(tmp);
  for (int64_t step : {3, 4}) {  // right after the checkpoint, and with one step retrained before it
    const ReplayResult r = replay_step(run, step);
    EXPECT_EQ(r.checkpoint_step, 2);
    EXPECT_EQ(r.precision, Precision::FP16);
    EXPECT_EQ(r.first_forward, -1) << replay_text(r);
    EXPECT_EQ(r.first_gradient, -1) << replay_text(r);
    EXPECT_FALSE(r.skipped_d);
    EXPECT_GT(r.forward.size(), 10u);
    EXPECT_FALSE(r.gradients.empty());
    EXPECT_NE(r.verdict.find("no layer departs"), std::string::npos) << r.verdict;
    // Half precision is not FP32: every activation differs a little, none by much.
    double largest = 0;
    for (const ReplayActivation& a : r.forward) largest = std::max(largest, a.rel_error);
    EXPECT_GT(largest, 0.0);
  }
}

TEST(DoctorReplay, PlantedForwardOverflowIsNamed) {
  TempDir tmp("ampgan-replay-forward");
  const fs::path run = replay_run(tmp);
  ReplayOptions o;
  o.before_step = plant_large_d2_weights;
  const ReplayResult r = replay_step(run, 3, o);
  ASSERT_GE(r.first_forward, 0) << replay_text(r);
  const ReplayActivation& a = r.forward[r.first_forward];
  EXPECT_EQ(a.layer, "D.2") << replay_text(r);
  EXPECT_EQ(a.input, "real images");
  EXPECT_GT(a.nonfinite, 0u);
  EXPECT_NE(r.verdict.find("D.2 (Conv2d)"), std::string::npos) << r.verdict;
}

// The replay on the CUDA backend, where the run trained there (the checkpoint's configuration
// names it): a clean step departs nowhere, and a planted forward overflow is named as on the CPU.
// Skips visibly without a usable GPU.
TEST(DoctorReplay, OnTheCudaBackendCleanStepsPassAndAPlantedOverflowIsNamed) {
  try {
    create_backend("cuda");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  TempDir tmp("ampgan-replay-cuda");
  const fs::path run = replay_run(tmp, "cuda");
  const ReplayResult clean = replay_step(run, 3);
  EXPECT_EQ(clean.first_forward, -1) << replay_text(clean);
  EXPECT_EQ(clean.first_gradient, -1) << replay_text(clean);
  EXPECT_GT(clean.forward.size(), 10u);
  ReplayOptions o;
  o.before_step = plant_large_d2_weights;
  const ReplayResult r = replay_step(run, 3, o);
  ASSERT_GE(r.first_forward, 0) << replay_text(r);
  EXPECT_EQ(r.forward[r.first_forward].layer, "D.2") << replay_text(r);
}

TEST(DoctorReplay, PlantedGradientOverflowIsNamed) {
  TempDir tmp("ampgan-replay-backward");
  const fs::path run = replay_run(tmp);
  ReplayOptions o;
  o.make_backend = [] { return std::unique_ptr<Backend>(std::make_unique<PlantingBackend>()); };
  o.before_step = [](Trainer& t) {  // only the half-precision trainer's D.2 gradient
    dynamic_cast<PlantingBackend&>(t.backend()).target = param(t.discriminator(), "2.weight")->grad;
  };
  const ReplayResult r = replay_step(run, 3, o);
  EXPECT_EQ(r.first_forward, -1) << replay_text(r);
  ASSERT_GE(r.first_gradient, 0) << replay_text(r);
  EXPECT_EQ(r.gradients[r.first_gradient].name, "D.2.weight") << replay_text(r);
  EXPECT_TRUE(r.skipped_d);
  // The CLI prints the same tables; --replay needs --step; a step before any checkpoint is replayed
  // from the run's initialisation.
  std::string out;
  EXPECT_EQ(run_command(kCli + " doctor --replay " + run.string() + " --step 3", &out), 0) << out;
  EXPECT_NE(out.find("no layer departs"), std::string::npos) << out;
  EXPECT_EQ(run_command(kCli + " doctor --replay " + run.string(), &out), 2) << out;
  EXPECT_EQ(run_command(kCli + " doctor --replay " + run.string() + " --step 2", &out), 0) << out;
  EXPECT_NE(out.find("replayed from the run's initialisation"), std::string::npos) << out;
}

// Without a checkpoint before the step, the replay starts from the weights the run's seed gives
// (its step 0) and retrains the steps before N: step 2 of the clean run departs nowhere, a plant
// at step 1 is found at D.2 as from a checkpoint, and an FP32 run is refused as before.
TEST(DoctorReplay, WithoutACheckpointBeforeTheStepItStartsFromTheInitialisation) {
  TempDir tmp("ampgan-replay-start");
  const fs::path run = replay_run(tmp);  // checkpoints at steps 2 and 4 only
  const ReplayResult clean = replay_step(run, 2);
  EXPECT_TRUE(clean.from_start);
  EXPECT_EQ(clean.checkpoint_step, 0);
  EXPECT_NE(clean.checkpoint.find("config.json"), std::string::npos) << clean.checkpoint;
  EXPECT_EQ(clean.first_forward, -1) << replay_text(clean);
  EXPECT_EQ(clean.first_gradient, -1) << replay_text(clean);
  EXPECT_GT(clean.forward.size(), 10u);
  ReplayOptions o;
  o.before_step = plant_large_d2_weights;
  const ReplayResult planted = replay_step(run, 1, o);  // step 1: nothing retrained before it
  ASSERT_GE(planted.first_forward, 0) << replay_text(planted);
  EXPECT_EQ(planted.forward[planted.first_forward].layer, "D.2") << replay_text(planted);
  // An FP32 run has nothing to compare, from a checkpoint or from the start.
  RunConfig c = tiny_fp16_run(2, tmp / "fp32");
  c.precision = Precision::FP32;
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
  EXPECT_NE(error_of([&] { replay_step(tmp / "fp32", 1); }).find("no half precision"), std::string::npos);
}
