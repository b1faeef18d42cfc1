// Runs on disk: the folder layout, exact resume, and bad input that must be refused clearly
// without touching anything already there.
#include <sys/stat.h>
#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/elementwise.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/safetensors.h"
#include "core/run/checkpoint.h"
#include "core/run/checkpoint_integrity.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

RunConfig tiny(const fs::path& out) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 256;
  c.res = 32;
  c.width = 8;
  c.batch = 8;
  c.steps = 12;
  c.backend = "cpu";
  c.sample_every = 5;
  c.checkpoint_every = 10;
  c.out_dir = out.string();
  return c;
}

std::map<std::string, std::string> folder_contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = io::read_file(e.path());
  return out;
}

Backend& s_backend() {
  static CpuBackend b;
  return b;
}

}  // namespace

TEST(Session, WritesTheRunFolder) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "run"));
  s->run();
  s->finish("finished");
  const fs::path d = tmp / "run";
  const auto cfg = nlohmann::json::parse(io::read_file(d / "config.json"));
  EXPECT_EQ(cfg["width"], 8);
  const auto rows = RunFolder(d).read_metrics();
  ASSERT_EQ(rows.size(), 12u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].step, int64_t(i + 1));
  std::ifstream csv(d / "metrics.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "step,precision,loss_d,loss_g,d_real,d_fake,grad_norm_d,grad_norm_g,scale_d,scale_g,"
            "skipped_d,skipped_g,underflow_d,underflow_g,step_ms,images_per_s,memory_mb,time_s,swd,fd,"
            "replaced_d,replaced_g");
  for (const char* f : {"samples/step_000005.png", "samples/step_000010.png", "samples/step_000012.png",
                        "checkpoints/step_000010.safetensors", "checkpoints/step_000012.safetensors"})
    EXPECT_TRUE(fs::exists(d / f)) << f;
  const io::Image8 grid = io::read_image(d / "samples/step_000012.png");
  EXPECT_EQ(grid.width, 8 * 34 + 2);  // 8 images of 32 px with 2 px padding around each
  EXPECT_EQ(grid.channels, 3);
  std::map<std::string, int> types;
  for (const RunEvent& e : RunFolder(d).read_events()) ++types[event_type_name(e.type)];
  EXPECT_EQ(types["start"], 1);
  EXPECT_EQ(types["stop"], 1);
  EXPECT_EQ(types["checkpoint"], 2);
  for (const auto& e : fs::recursive_directory_iterator(d))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left a temporary file " << e.path();
}

// 40 steps straight, or 20 steps, stop, resume to 40: the same bits, in FP32 and in FP16 (where
// the loss scalers' state and skipped steps must come back too).
TEST(Session, ResumeIsBitIdentical) {
  for (Precision p : {Precision::FP32, Precision::FP16}) {
    TempDir tmp;
    RunConfig c = tiny(tmp / "straight");
    c.steps = 40;
    c.checkpoint_every = 20;
    c.precision = p;
    c.scaler.growth_interval = 7;  // make the scaler change state inside the run
    auto a = Session::create(c);
    a->run();
    a->finish("finished");

    RunConfig c2 = c;
    c2.out_dir = (tmp / "resumed").string();
    c2.steps = 20;
    auto b = Session::create(c2);
    b->run();
    b->finish("stopped early");
    b.reset();
    auto r = Session::resume(tmp / "resumed", 40);
    EXPECT_EQ(r->step_count(), 20);
    r->run();
    r->finish("finished");

    const io::StFile fa = io::read_safetensors(tmp / "straight/checkpoints/step_000040.safetensors");
    const io::StFile fb = io::read_safetensors(tmp / "resumed/checkpoints/step_000040.safetensors");
    ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
    for (size_t i = 0; i < fa.tensors.size(); ++i) {
      EXPECT_EQ(fa.tensors[i].name, fb.tensors[i].name);
      EXPECT_TRUE(fa.tensors[i].data == fb.tensors[i].data) << precision_name(p) << " " << fa.tensors[i].name;
    }
    const auto ma = RunFolder(tmp / "straight").read_metrics(), mb = RunFolder(tmp / "resumed").read_metrics();
    ASSERT_EQ(ma.size(), 40u);
    ASSERT_EQ(mb.size(), 40u);
    for (size_t i = 0; i < 40; ++i) {
      EXPECT_EQ(ma[i].loss_d, mb[i].loss_d) << "step " << i + 1;
      EXPECT_EQ(ma[i].scale_g, mb[i].scale_g) << "step " << i + 1;
      EXPECT_EQ(ma[i].skipped_d, mb[i].skipped_d) << "step " << i + 1;
    }
  }
}

// histograms.csv: G's and D's gradient-exponent histograms every hist_every steps, under the
// precision and loss scale of their step; a resume from an earlier checkpoint drops the rows
// after it and writes them again, the same as a run that never stopped.
TEST(Session, HistogramsAreStoredInTheRunFolder) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.steps = 24;
  c.checkpoint_every = 10;
  c.hist_every = 5;
  c.precision = Precision::FP16;
  auto a = Session::create(c);
  a->run();
  a->finish("finished");
  a.reset();
  const fs::path file = tmp / "run" / "histograms.csv";
  const std::vector<HistogramRow> rows = HistogramsLog::read(file);
  const auto metrics = RunFolder(tmp / "run").read_metrics();
  ASSERT_EQ(rows.size(), 8u);  // steps 5, 10, 15, 20; G and D
  for (size_t i = 0; i < rows.size(); ++i) {
    const HistogramRow& r = rows[i];
    EXPECT_EQ(r.step, int64_t(5 * (i / 2 + 1)));
    EXPECT_EQ(r.network, i % 2 ? 'D' : 'G');
    EXPECT_EQ(r.precision, Precision::FP16);
    const StepMetrics& m = metrics[r.step - 1];
    EXPECT_EQ(r.scale, r.network == 'G' ? m.scale_g : m.scale_d);
    ASSERT_EQ(r.counts.size(), size_t(ew::kHistBins));
    double total = 0;
    for (float n : r.counts) total += n;
    // Every gradient value lands in one bin: whole counts, thousands of them.
    EXPECT_GT(total, 1000) << "step " << r.step;
    EXPECT_EQ(total, std::floor(total));
  }
  const std::string straight = io::read_file(file);

  // A resume from step 10's checkpoint: rows 15 and 20 are trained (and written) again.
  auto r = Session::resume(tmp / "run", 24, {}, tmp / "run" / "checkpoints" / "step_000010.safetensors");
  EXPECT_EQ(HistogramsLog::read(file).size(), 4u);
  r->run();
  r->finish("finished");
  r.reset();
  EXPECT_EQ(io::read_file(file), straight);

  // A half-written last row (a killed writer) is skipped; a foreign header is an error.
  io::write_file_atomic(file, straight + "25,G,fp16,1024,0,0");
  EXPECT_EQ(HistogramsLog::read(file).size(), 8u);
  HistogramsLog::trim(file, 12);
  EXPECT_EQ(HistogramsLog::read(file).size(), 4u);
  io::write_file_atomic(file, "step,something\n1,2\n");
  expect_error([&] { HistogramsLog::read(file); }, {"histograms.csv", "header"});
}

TEST(Session, ResumeContinuesAfterAPrecisionSwitch) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.steps = 6;
  auto s = Session::create(c);
  for (int i = 0; i < 3; ++i) s->step();
  s->set_precision(Precision::BF16);
  s->run();
  s->finish("finished");
  s.reset();
  auto r = Session::resume(tmp / "run", 8);
  EXPECT_EQ(r->trainer().precision(), Precision::BF16);
  r->run();
  r->finish("finished");
  const auto rows = RunFolder(tmp / "run").read_metrics();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[2].precision, Precision::FP32);
  EXPECT_EQ(rows[3].precision, Precision::BF16);
  EXPECT_EQ(rows[7].precision, Precision::BF16);
  int switches = 0;
  for (const RunEvent& e : RunFolder(tmp / "run").read_events()) switches += e.type == EventType::PrecisionSwitch;
  EXPECT_EQ(switches, 1);
}

TEST(SessionErrors, OutputFolderThatIsAFile) {
  TempDir tmp;
  io::write_file_atomic(tmp / "file", "precious");
  expect_error([&] { Session::create(tiny(tmp / "file")); }, {"file", (tmp / "file").string()});
  EXPECT_EQ(io::read_file(tmp / "file"), "precious");
}

TEST(SessionErrors, ExistingRunIsLeftIntact) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "run"));
  s->step();
  s->finish("finished");
  s.reset();
  const auto before = folder_contents(tmp / "run");
  expect_error([&] { Session::create(tiny(tmp / "run")); }, {"already holds", "ampgan resume"});
  EXPECT_EQ(folder_contents(tmp / "run"), before);
}

TEST(SessionErrors, BadSettingsCreateNothing) {
  TempDir tmp;
  const fs::path out = tmp / "run";
  auto with = [&](auto edit) {
    RunConfig c = tiny(out);
    edit(c);
    return c;
  };
  expect_error([&] { Session::create(with([](RunConfig& c) { c.batch = 4096; })); },
               {"--batch", "larger than the dataset"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.batch = 0; })); }, {"--batch"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.res = 48; })); }, {"--res", "32, 64 or 128"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.lr_g = -1e-4f; })); }, {"--lr-g"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.lr_d = 0.0f; })); }, {"--lr-d"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.lr_d = NAN; })); }, {"--lr-d"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.lr_g = INFINITY; })); }, {"--lr-g"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.backend = "tpu"; })); },
               {"--backend", "auto, cpu or cuda"});
  expect_error([&] { Session::create(with([&](RunConfig& c) { c.dataset = (tmp / "nope").string(); })); }, {"nope"});
  expect_error([] { parse_precision("fp8"); }, {"--precision", "fp16"});
  EXPECT_FALSE(fs::exists(out)) << "a refused run must not leave a folder behind";
}

TEST(SessionErrors, ResumeWithoutCheckpoint) {
  TempDir tmp;
  expect_error([&] { Session::resume(tmp / "missing", 10); }, {"no such run folder"});
  fs::create_directories(tmp / "empty");
  expect_error([&] { Session::resume(tmp / "empty", 10); }, {"config.json"});
  io::write_file_atomic(tmp / "empty/config.json", tiny(tmp / "empty").to_json().dump());
  expect_error([&] { Session::resume(tmp / "empty", 10); }, {"no checkpoint"});
}

TEST(SessionErrors, TruncatedCheckpoint) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "run"));
  s->step();
  s->finish("finished");
  s.reset();
  const fs::path ck = tmp / "run/checkpoints/step_000001.safetensors";
  const std::string bytes = io::read_file(ck);
  io::write_file_atomic(ck, bytes.substr(0, bytes.size() / 2));
  const auto before = folder_contents(tmp / "run");
  expect_error([&] { Session::resume(tmp / "run", 5); }, {ck.string()});
  EXPECT_EQ(folder_contents(tmp / "run"), before);
}

TEST(SessionErrors, CheckpointFromAnotherModelShape) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "narrow"));
  s->step();
  s->finish("finished");
  s.reset();
  RunConfig wide = tiny(tmp / "wide");
  wide.width = 16;
  auto w = Session::create(wide);
  w->step();
  w->finish("finished");
  w.reset();
  // Put the narrow model's checkpoint where the wide run looks for its newest one.
  fs::copy_file(tmp / "narrow/checkpoints/step_000001.safetensors", tmp / "wide/checkpoints/step_000009.safetensors");
  expect_error([&] { Session::resume(tmp / "wide", 20); }, {"another model shape", "step_000009"});
}

// Checkpoints written when Adam's step counts were one FP32 value (shape (1)) still load, as
// [lo, hi] counts; one float at 2^24 becomes [0, 1].
TEST(Session, CheckpointWithOneFloatAdamStepsStillLoads) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.steps = 10;
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
  s.reset();
  io::StFile f = io::read_safetensors(RunFolder(tmp / "run").checkpoint(10));
  int rewritten = 0;
  for (io::StTensor& t : f.tensors) {
    if (t.name != "G.adam_step" && t.name != "D.adam_step") continue;
    ASSERT_EQ(t.shape, (std::vector<int64_t>{2})) << t.name;
    float v[2];
    std::memcpy(v, t.data.data(), sizeof v);
    EXPECT_EQ(v[0], 10.0f) << t.name << ": 10 FP32 steps, none skipped";
    EXPECT_EQ(v[1], 0.0f) << t.name;
    const float old = t.name == "D.adam_step" ? 16777216.0f : 10.0f;
    t.shape = {1};
    t.data.resize(sizeof old);
    std::memcpy(t.data.data(), &old, sizeof old);
    ++rewritten;
  }
  ASSERT_EQ(rewritten, 2);
  const fs::path old_file = tmp / "old.safetensors";
  f.metadata.erase(kTensorCrcKey);  // files of that time had no CRC either
  io::write_safetensors(old_file, f);
  auto backend = create_backend("cpu");
  auto t = trainer_from_checkpoint(*backend, old_file);
  std::map<std::string, std::vector<float>> counts;
  for (const StateEntry& e : t->state())
    if (e.count) counts[e.name] = to_host(*backend, *e.tensor);
  EXPECT_EQ(counts["G.adam_step"], (std::vector<float>{10.0f, 0.0f}));
  EXPECT_EQ(counts["D.adam_step"], (std::vector<float>{0.0f, 1.0f}));
}

TEST(SessionErrors, DivergenceStopsWithIntactWeights) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.precision = Precision::FP16;
  c.scaler.init_scale = 1e30f;  // far beyond FP16: every step overflows...
  c.scaler.max_scale = 1e30f;
  c.scaler.min_scale = 1e30f;  // ...and the floor forbids backing off
  c.steps = 1000;
  auto s = Session::create(c);
  expect_error([&] { s->run(); }, {"diverged", "inf/NaN"});
  const fs::path ck = RunFolder(tmp / "run").checkpoint(s->step_count());
  ASSERT_TRUE(fs::exists(ck));
  // Every step was skipped, so the saved weights are the initial ones, bit for bit.
  const io::StFile saved = io::read_safetensors(ck);
  Trainer fresh(s->backend(), c.trainer_config(3));
  for (const StateEntry& e : fresh.state()) {
    if (e.name.find("running_") != std::string::npos || e.name.rfind("scaler", 0) == 0) continue;
    const io::StTensor* st = saved.find(e.name);
    ASSERT_NE(st, nullptr) << e.name;
    const auto v = to_host(fresh.backend(), *e.tensor);
    EXPECT_EQ(std::memcmp(st->data.data(), v.data(), st->data.size()), 0) << e.name;
  }
  bool saw_error = false;
  for (const RunEvent& e : RunFolder(tmp / "run").read_events()) saw_error |= e.type == EventType::Error;
  EXPECT_TRUE(saw_error);
}

// A loss scale whose reciprocal is inf in FP32 let Adam write NaN into every weight (the scaled
// gradients stayed finite, so no step was skipped): such scales are refused up front.
TEST(SessionErrors, LossScalesOutsideFp32AreRefused) {
  TempDir tmp;
  const fs::path out = tmp / "run";
  auto with = [&](auto edit) {
    RunConfig c = tiny(out);
    c.precision = Precision::FP16;
    edit(c);
    return c;
  };
  expect_error([&] { Session::create(with([](RunConfig& c) { c.scaler.init_scale = c.scaler.min_scale = 1e-45f; })); },
               {"--init-scale", "1.18e-38", "3.4e38"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.scaler.min_scale = 1e-40f; })); },
               {"--min-scale", "1.18e-38"});
  expect_error([&] { Session::create(with([](RunConfig& c) { c.scaler.max_scale = INFINITY; })); }, {"--max-scale"});
  EXPECT_FALSE(fs::exists(out));
}

// The divergence stop must not call the weights intact when they hold NaN (here: poisoned before
// the run, as a forward pass that overflowed into the batch-norm statistics would).
TEST(SessionErrors, DivergenceWithNonFiniteWeightsSaysSo) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.precision = Precision::FP16;
  c.scaler.init_scale = c.scaler.max_scale = c.scaler.min_scale = 1e30f;  // every step overflows
  c.steps = 1000;
  auto s = Session::create(c);
  const StateEntry victim = s->trainer().state().front();
  std::vector<float> nan(static_cast<size_t>(victim.tensor->numel()), NAN);
  s->backend().upload(*victim.tensor, nan.data(), victim.tensor->nbytes());
  try {
    s->run();
    ADD_FAILURE() << "no divergence";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("NOT intact"), std::string::npos) << m;
    EXPECT_NE(m.find(victim.name), std::string::npos) << m;
    EXPECT_EQ(m.find("weights are intact"), std::string::npos) << m;
  }
  // Nor is such a state saved: no checkpoint of the run holds NaN.
  for (const auto& e : fs::directory_iterator(tmp / "run" / "checkpoints")) ADD_FAILURE() << "written: " << e.path();
}

// One writer per run folder, within one process too (the GUI opening a run the CLI trains is the
// two-process case, tested in test_cli): a second Session on a held folder is refused and
// changes nothing; once the first is gone, the folder can be resumed.
TEST(SessionErrors, SecondWriterIsRefused) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  auto a = Session::create(c);
  a->step();
  a->save_checkpoint();
  const auto before = folder_contents(tmp / "run");
  expect_error([&] { Session::resume(tmp / "run", 20); }, {"in use", "pid " + std::to_string(getpid())});
  expect_error([&] { Session::create(c); }, {"in use", "pid " + std::to_string(getpid())});
  EXPECT_EQ(folder_contents(tmp / "run"), before);
  a.reset();
  auto r = Session::resume(tmp / "run", 3);
  EXPECT_EQ(r->step_count(), 1);
}

// Checkpoint metadata is checked before anything is written: each damaged variant is refused
// with a message naming the key, and the run folder (logs, config.json, checkpoints) is left
// exactly as it was (a step of -5 must not erase the run's history, batches_consumed -1 must fail
// before config.json is rewritten, a missing precision must not end in "map::at").
TEST(SessionErrors, CheckpointMetadataIsValidated) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  auto s = Session::create(c);
  s->step();
  s->finish("finished");
  s.reset();
  const fs::path ck = tmp / "run/checkpoints/step_000001.safetensors";
  const io::StFile good = io::read_safetensors(ck);
  auto with = [&](const std::string& key, const std::string* value) {
    io::StFile f = good;
    if (value)
      f.metadata[key] = *value;
    else
      f.metadata.erase(key);
    io::write_safetensors(ck, f);
  };
  const std::string wide_config = [&] {
    RunConfig w = c;
    w.width = 1024;
    return w.to_json().dump();
  }();
  struct Case {
    std::string key;
    std::optional<std::string> value;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"step", "-5", {"'step'", "-5", "0 to"}},
      {"step", "-9223372036854775808", {"'step'"}},
      {"step", "99999999999999999999", {"'step'"}},
      {"step", "12abc", {"'step'"}},
      {"step", "7", {"step 7", "file name says step 1"}},
      {"batches_consumed", "-1", {"'batches_consumed'"}},
      {"channels", "2", {"'channels'"}},
      {"precision", std::nullopt, {"lacks 'precision'"}},
      {"precision", "fp8", {"'precision'"}},
      {"step", std::nullopt, {"lacks 'step'"}},
      {"config", std::nullopt, {"lacks 'config'"}},
      {"config", wide_config, {"do not fit its own configuration", "width 1024"}},
  };
  const auto before = [&] {
    io::write_safetensors(ck, good);
    return folder_contents(tmp / "run");
  }();
  for (const Case& k : cases) {
    with(k.key, k.value ? &*k.value : nullptr);
    const std::string ck_bytes = io::read_file(ck);
    try {
      Session::resume(tmp / "run", 20);
      ADD_FAILURE() << k.key << " = " << k.value.value_or("(missing)") << " was accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      for (const std::string& n : k.needles) EXPECT_NE(m.find(n), std::string::npos) << m;
      EXPECT_NE(m.find(ck.string()), std::string::npos) << m;
      EXPECT_EQ(m.find("map::at"), std::string::npos) << m;
    }
    auto after = folder_contents(tmp / "run");
    EXPECT_EQ(after.erase("checkpoints/step_000001.safetensors"), 1u);
    auto expected = before;
    expected.erase("checkpoints/step_000001.safetensors");
    EXPECT_EQ(after, expected) << k.key << ": the run folder was changed";
    EXPECT_EQ(io::read_file(ck), ck_bytes);
    // The same checks guard sampling and export (which build a model from the file alone).
    expect_error([&] { trainer_from_checkpoint(s_backend(), ck); }, {ck.string()});
  }
}

// Names in checkpoints/: a step too large to be real is an error naming the file; a folder or a
// FIFO named like a checkpoint is ignored (neither hides the newest checkpoint or blocks).
TEST(SessionErrors, CheckpointFileNames) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "run"));
  s->step();
  s->finish("finished");
  s.reset();
  fs::create_directories(tmp / "run/checkpoints/step_000900.safetensors");
  ASSERT_EQ(mkfifo((tmp / "run/checkpoints/step_000901.safetensors").c_str(), 0644), 0);
  EXPECT_EQ(newest_checkpoint(tmp / "run").filename(), "step_000001.safetensors");
  {
    auto r = Session::resume(tmp / "run", 2);
    r->run();
    r->finish("finished");
  }
  fs::copy_file(tmp / "run/checkpoints/step_000002.safetensors",
                tmp / "run/checkpoints/step_99999999999999999999.safetensors");
  expect_error([&] { Session::resume(tmp / "run", 5); }, {"step_99999999999999999999", "out of range"});
}

// resume --checkpoint: an earlier checkpoint of the run; the later ones and the logs as they
// were are moved aside (not overwritten); a checkpoint of another run is refused.
TEST(Session, ResumeFromAChosenCheckpoint) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.checkpoint_every = 4;
  auto s = Session::create(c);
  s->run();  // checkpoints 4, 8, 12
  s->finish("finished");
  s.reset();
  const fs::path ck8 = tmp / "run/checkpoints/step_000008.safetensors";
  const std::string old12 = io::read_file(tmp / "run/checkpoints/step_000012.safetensors");
  {
    auto r = Session::resume(tmp / "run", 14, {}, tmp / "run/checkpoints/step_000004.safetensors");
    EXPECT_EQ(r->step_count(), 4);
    r->run();
    r->finish("finished");
  }
  fs::path aside;
  for (const auto& e : fs::directory_iterator(tmp / "run/checkpoints"))
    if (e.is_directory()) aside = e.path();
  ASSERT_FALSE(aside.empty()) << "later checkpoints were not moved aside";
  EXPECT_EQ(io::read_file(aside / "step_000012.safetensors"), old12);
  EXPECT_TRUE(fs::exists(aside / "step_000008.safetensors"));
  EXPECT_EQ(RunFolder(aside.parent_path().parent_path()).read_metrics().size(), 14u);
  EXPECT_EQ(newest_checkpoint(tmp / "run").filename(), "step_000014.safetensors");
  (void)ck8;

  RunConfig other = tiny(tmp / "other");
  other.seed = 5;
  auto o = Session::create(other);
  o->step();
  o->finish("finished");
  o.reset();
  expect_error([&] { Session::resume(tmp / "run", 30, {}, tmp / "other/checkpoints/step_000001.safetensors"); },
               {"belongs to another run", "'seed'"});
}

// The same checks for every source: set_number (JSON, CLI, checkpoints) and validate() (fields
// set directly, as the GUI does) share one table of ranges.
TEST(RunConfigNumbers, OneTableForEverySource) {
  RunConfig c;
  c.set_number("seed", nlohmann::json(18446744073709551615ull), "test");
  EXPECT_EQ(c.seed, 18446744073709551615ull);
  c.set_number("steps", nlohmann::json(1e6), "test");  // a whole number written as a float
  EXPECT_EQ(c.steps, 1000000);
  c.set_number("lr", nlohmann::json(0.001), "test");
  EXPECT_FLOAT_EQ(c.lr_g, 0.001f);
  EXPECT_FLOAT_EQ(c.lr_d, 0.001f);
  expect_error([&] { c.set_number("width", nlohmann::json(int64_t{4294967304}), "--width"); },
               {"--width", "out of range"});
  expect_error([&] { c.set_number("gpu", nlohmann::json(-1), "--gpu"); }, {"--gpu", "out of range"});
  expect_error([&] { c.set_number("batch", nlohmann::json::parse("1"), "x"); },
               {"batch 1", "out of range"});  // unsigned
  expect_error([&] { c.set_number("steps", nlohmann::json(1e19), "x"); }, {"steps", "out of range"});
  EXPECT_EQ(c.width, 64) << "a refused value must not be stored";
  expect_error([&] { RunConfig::from_json(nlohmann::json::parse(R"({"eval_samples": 2.5})"), "f.json"); },
               {"eval_samples", "whole number", "f.json"});
  RunConfig gui;
  gui.synthetic_count = 5'000'000;
  expect_error([&] { gui.validate(); }, {"synthetic_count", "--synthetic-count", "out of range"});
  gui = RunConfig();
  gui.gpu = 5000;
  expect_error([&] { gui.validate(); }, {"--gpu", "out of range"});
}

// A skipped step changes no batch-norm running statistic (updated by the forward pass whatever
// the gradients did, a diverged run would save non-finite running_var). Every step
// here overflows; a clean FP32 step does change them.
TEST(Session, SkippedStepsLeaveBatchNormStatisticsAlone) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.precision = Precision::FP16;
  c.scaler.init_scale = c.scaler.max_scale = c.scaler.min_scale = 1e30f;
  auto s = Session::create(c);
  auto running = [&] {
    std::map<std::string, std::vector<float>> out;
    for (const StateEntry& e : s->trainer().state())
      if (e.name.find("running_") != std::string::npos) out[e.name] = to_host(s->backend(), *e.tensor);
    return out;
  };
  const auto before = running();
  ASSERT_FALSE(before.empty());
  for (int i = 0; i < 4; ++i) s->step();
  const auto rows = s->trainer().collect(true);
  for (const StepMetrics& m : rows) ASSERT_TRUE(m.skipped_d && m.skipped_g) << "step " << m.step;
  EXPECT_EQ(running(), before) << "skipped steps changed the running statistics";
  s->set_precision(Precision::FP32);
  s->step();
  const auto after = running();
  for (const auto& [name, v] : after) EXPECT_NE(v, before.at(name)) << name << " unchanged by a clean step";
}

// A new target set while training (the GUI's steps field) is checked like any other.
TEST(SessionErrors, TotalStepsOutOfRange) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "run"));
  const std::string before = io::read_file(tmp / "run/config.json");
  expect_error([&] { s->set_total_steps(0); }, {"--steps"});
  expect_error([&] { s->set_total_steps(kMaxSteps + 1); }, {"--steps", "out of range"});
  EXPECT_EQ(io::read_file(tmp / "run/config.json"), before);
  s->set_total_steps(20);
  EXPECT_EQ(s->config().steps, 20);
}

// The ResNet model through the whole run layer: config.json names it, a checkpoint carries the
// spectral norms' u and v, and a resumed run continues bit for bit (so u and v are restored).
TEST(Session, ResnetRunResumesBitIdentically) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "straight");
  c.model = ModelFamily::ResNet;
  c.loss = LossKind::Hinge;
  c.width = 2;
  c.batch = 4;
  c.steps = 6;
  c.checkpoint_every = 3;
  c.precision = Precision::FP16;
  c.ema_decay = 0.9f;  // the EMA generator is saved and resumed too
  c.ema_rampup = 10.0f;
  auto a = Session::create(c);
  a->run();
  a->finish("finished");
  const nlohmann::json cfg = nlohmann::json::parse(io::read_file(tmp / "straight/config.json"));
  EXPECT_EQ(cfg.at("model"), "resnet");

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
  const io::StFile fa = io::read_safetensors(tmp / "straight/checkpoints/step_000006.safetensors");
  const io::StFile fb = io::read_safetensors(tmp / "resumed/checkpoints/step_000006.safetensors");
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  bool has_u = false, has_ema = false;
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    EXPECT_EQ(fa.tensors[i].name, fb.tensors[i].name);
    EXPECT_TRUE(fa.tensors[i].data == fb.tensors[i].data) << fa.tensors[i].name;
    has_u |= fa.tensors[i].name == "D.blocks.0.conv1.weight_u";
    has_ema |= fa.tensors[i].name == "G_ema.linear.weight";
  }
  EXPECT_TRUE(has_u) << "the spectral norm's u is saved";
  EXPECT_TRUE(has_ema) << "the EMA generator is saved";
}

// The generator's EMA: training is unchanged by it (bit for bit, sampling included), samples
// come from the averaged weights, and a step whose G update was skipped leaves the average alone.
TEST(Training, GeneratorEmaIsSampledAndSkipsWithG) {
  TrainerConfig c;
  c.model.res = 32;
  c.model.channels = 1;
  c.model.width = 8;
  c.batch = 8;
  c.precision = Precision::FP16;
  TrainerConfig ce = c;
  ce.ema_decay = 0.5f;
  Trainer plain(s_backend(), c), ema(s_backend(), ce);
  std::vector<float> real(static_cast<size_t>(c.batch) * 32 * 32);
  for (size_t i = 0; i < real.size(); ++i) real[i] = std::tanh(philox_normal(3, 4, i));
  std::vector<float> z(static_cast<size_t>(c.batch) * c.model.latent);
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(5, 6, i);
  for (int s = 0; s < 4; ++s) {
    plain.step(real.data());
    ema.step(real.data());
  }
  const auto raw = plain.generate(z, c.batch), averaged = ema.generate(z, c.batch);
  EXPECT_NE(raw, averaged) << "samples come from the EMA weights";
  auto shadow = [&](Trainer& t) {
    std::vector<std::vector<float>> v;
    for (const StateEntry& e : t.state())
      if (e.name.rfind("G_ema.", 0) == 0) v.push_back(to_host(s_backend(), *e.tensor));
    return v;
  };
  const auto before = shadow(ema);
  ASSERT_FALSE(before.empty());
  // Force an overflow in G's backward: a loss scale of 2^40 (both networks' scalers).
  const float huge[2] = {1099511627776.0f, 0.0f};
  for (Trainer* t : {&plain, &ema}) {
    s_backend().upload(t->scaler_g().state(), huge, sizeof huge);
    t->step(real.data());
  }
  const auto pm = plain.collect(true), em = ema.collect(true);
  ASSERT_FALSE(em.empty());
  EXPECT_EQ(em.back().skipped_g, 1);
  EXPECT_EQ(shadow(ema), before) << "a skipped G step must not move the average";
  ASSERT_EQ(pm.size(), em.size());
  for (size_t i = 0; i < pm.size(); ++i) {
    EXPECT_EQ(pm[i].loss_d, em[i].loss_d) << "step " << i;
    EXPECT_EQ(pm[i].loss_g, em[i].loss_g) << "step " << i;
  }
  const float normal[2] = {1024.0f, 0.0f};  // 2^39 after the back-off would still overflow
  s_backend().upload(ema.scaler_g().state(), normal, sizeof normal);
  ema.step(real.data());
  const auto last = ema.collect(true);
  ASSERT_FALSE(last.empty());
  ASSERT_EQ(last.back().skipped_g, 0);
  EXPECT_NE(shadow(ema), before) << "a clean step moves it again";
}
