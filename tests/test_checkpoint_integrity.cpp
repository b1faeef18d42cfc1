// Checkpoints carry a CRC of their tensor data, checked on load; a state
// holding inf/NaN is never saved and never loaded; old checkpoints are pruned by the retention
// setting; temporary files of killed writers are swept when a run starts or resumes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/run/checkpoint.h"
#include "core/run/checkpoint_integrity.h"
#include "core/run/checkpoint_retention.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace ampgan;
using ampgan::testing::TempDir;

using ampgan::testing::error_of;

namespace {

RunConfig tiny(const fs::path& out) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 64;
  c.width = 4;
  c.batch = 4;
  c.steps = 4;
  c.backend = "cpu";
  c.sample_every = 0;
  c.checkpoint_every = 2;
  c.out_dir = out.string();
  return c;
}

// A finished 4-step run; returns its newest checkpoint.
fs::path trained_run(const fs::path& out) {
  auto s = Session::create(tiny(out));
  s->run();
  s->finish("finished");
  return RunFolder(out).checkpoint(4);
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

}  // namespace

TEST(CheckpointIntegrity, BitRotInTensorDataIsDetected) {
  TempDir tmp;
  const fs::path ckpt = trained_run(tmp / "run");
  const io::StFile f = io::read_safetensors(ckpt);
  ASSERT_EQ(f.metadata.at(kTensorCrcKey), tensor_crc32(f));
  ASSERT_EQ(f.metadata.at(kTensorCrcKey).size(), 8u);
  EXPECT_NO_THROW(read_checkpoint(ckpt, nullptr));

  // One flipped bit in the middle of the data (the header, at the start, is JSON and checked
  // on its own): the file still parses, and only the CRC tells.
  std::string bytes = io::read_file(ckpt);
  bytes[bytes.size() - 1001] = static_cast<char>(bytes[bytes.size() - 1001] ^ 0x04);
  const fs::path bad = tmp / "rotten.safetensors";
  io::write_file_atomic(bad, bytes);
  EXPECT_NO_THROW(io::read_safetensors(bad));
  const std::string e = error_of([&] { read_checkpoint(bad, nullptr); });
  EXPECT_NE(e.find("tensor data is damaged"), std::string::npos) << e;
  EXPECT_NE(e.find(bad.string()), std::string::npos) << e;
  auto backend = create_backend("cpu");
  EXPECT_NE(error_of([&] { trainer_from_checkpoint(*backend, bad); }).find("CRC-32"), std::string::npos);

  // A checkpoint from before CRCs (no key) still loads.
  io::StFile old = f;
  old.metadata.erase(kTensorCrcKey);
  io::write_safetensors(tmp / "old.safetensors", old);
  EXPECT_NO_THROW(read_checkpoint(tmp / "old.safetensors", nullptr));
}

TEST(CheckpointIntegrity, NonFiniteWeightsAreRefusedAtLoad) {
  // The probe sampled and evaluated a NaN checkpoint silently.
  TempDir tmp;
  const fs::path ckpt = trained_run(tmp / "run");
  io::StFile f = io::read_safetensors(ckpt);
  io::StTensor* w = nullptr;
  for (io::StTensor& t : f.tensors)
    if (t.name == "G.0.weight") w = &t;
  ASSERT_NE(w, nullptr);
  const float inf = INFINITY;
  std::memcpy(w->data.data() + 40, &inf, sizeof inf);
  f.metadata[kTensorCrcKey] = tensor_crc32(f);  // a consistent file: the CRC is not what refuses it
  const fs::path p = tmp / "inf.safetensors";
  io::write_safetensors(p, f);
  const std::string e = error_of([&] { read_checkpoint(p, nullptr); });
  EXPECT_NE(e.find("inf/NaN in 1 state tensor(s) (G.0.weight)"), std::string::npos) << e;
  EXPECT_NE(e.find("earlier checkpoint"), std::string::npos) << e;
  // The CLI's readers (sample, eval, export) go through the same door.
  std::string out;
  EXPECT_NE(ampgan::testing::run_command(std::string(AMPGAN_CLI_PATH) + " sample " + p.string() + " --grid " +
                                             (tmp / "g.png").string() + " 2>&1",
                                         &out),
            0);
  EXPECT_NE(out.find("inf/NaN"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(tmp / "g.png"));
}

TEST(CheckpointIntegrity, NonFiniteStateIsNeverSaved) {
  TempDir tmp;
  auto s = Session::create(tiny(tmp / "run"));
  s->step();
  const StateEntry victim = s->trainer().state()[1];  // an Adam moment
  std::vector<float> v = ampgan::testing::to_host(s->backend(), *victim.tensor);
  v[0] = NAN;
  s->backend().upload(*victim.tensor, v.data(), victim.tensor->nbytes());
  const fs::path p = tmp / "direct.safetensors";
  const std::string e = error_of([&] { save_checkpoint(p, s->trainer(), tiny(tmp / "run"), 1); });
  EXPECT_NE(e.find("not saving a checkpoint at step 1"), std::string::npos) << e;
  EXPECT_NE(e.find(victim.name), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(p));
  // Through the session: the run stops with the reason, and writes no checkpoint.
  const std::string se = error_of([&] { s->save_checkpoint(); });
  EXPECT_NE(se.find("NOT intact"), std::string::npos) << se;
  EXPECT_TRUE(fs::is_empty(tmp / "run" / "checkpoints"));
}

TEST(CheckpointRetention, KeepsTheNewestAndEveryTenthInterval) {
  TempDir tmp;
  RunConfig c = tiny(tmp / "run");
  c.checkpoint_every = 1;
  c.keep_checkpoints = 3;
  c.steps = 23;
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
  // Newest 3 (21, 22, 23) plus the multiples of 10 x 1 (10, 20).
  EXPECT_EQ(names_in(tmp / "run" / "checkpoints"),
            (std::set<std::string>{"step_000010.safetensors", "step_000020.safetensors", "step_000021.safetensors",
                                   "step_000022.safetensors", "step_000023.safetensors"}));
  int pruned = 0;
  for (const RunEvent& e : RunFolder(tmp / "run").read_events())
    if (e.type == EventType::Checkpoint && e.data.contains("pruned")) pruned += e.data["pruned"].get<int>();
  EXPECT_EQ(pruned, 18);

  // 0 keeps all; a folder or an odd name is never deleted.
  TempDir all;
  c = tiny(all / "run");
  c.checkpoint_every = 1;
  c.keep_checkpoints = 0;
  c.steps = 6;
  auto s2 = Session::create(c);
  s2->run();
  s2->finish("finished");
  EXPECT_EQ(names_in(all / "run" / "checkpoints").size(), 6u);
  fs::create_directory(all / "run" / "checkpoints" / "step_000001.safetensors.d");
  std::ofstream(all / "run" / "checkpoints" / "notes.txt") << "mine";
  EXPECT_EQ(prune_checkpoints(all / "run", 2, 0, 6).size(), 4u);
  EXPECT_EQ(names_in(all / "run" / "checkpoints"),
            (std::set<std::string>{"step_000005.safetensors", "step_000006.safetensors", "notes.txt",
                                   "step_000001.safetensors.d"}));
}

TEST(CheckpointRetention, ARunFromBeforeRetentionKeepsEverything) {
  // config.json without the key: resuming must not start deleting an old run's checkpoints.
  nlohmann::json j = tiny("x").to_json();
  j.erase("keep_checkpoints");
  EXPECT_EQ(RunConfig::from_json(j, "config.json").keep_checkpoints, 0);
  EXPECT_EQ(RunConfig().keep_checkpoints, 5);
  RunConfig c;
  EXPECT_NE(error_of([&] { c.set_number("keep_checkpoints", -1, "--keep-checkpoints"); }).find("--keep-checkpoints"),
            std::string::npos);
}

TEST(StaleTemporaries, AreSweptOnResumeButALiveWritersAreKept) {
  TempDir tmp;
  trained_run(tmp / "run");
  // The names write_file_atomic uses; pid 2^22+1 is above Linux's pid_max ceiling, so it is dead.
  const std::string dead = ".tmp-4194305-3", live = ".tmp-" + std::to_string(getpid()) + "-9";
  for (const char* f : {"config.json", "checkpoints/step_000006.safetensors", "samples/step_000006.png"})
    std::ofstream(tmp / "run" / (std::string(f) + dead)) << "half a file";
  std::ofstream(tmp / "run" / ("metrics.csv" + live)) << "being written";
  auto s = Session::resume(tmp / "run", 6);
  EXPECT_FALSE(fs::exists(tmp / "run" / ("config.json" + dead)));
  EXPECT_FALSE(fs::exists(tmp / "run" / "checkpoints" / ("step_000006.safetensors" + dead)));
  EXPECT_FALSE(fs::exists(tmp / "run" / "samples" / ("step_000006.png" + dead)));
  EXPECT_TRUE(fs::exists(tmp / "run" / ("metrics.csv" + live)));
  bool reported = false;
  for (const RunEvent& e : RunFolder(tmp / "run").read_events())
    reported |= e.type == EventType::Warning && e.message.find("removed 3 temporary file(s)") != std::string::npos;
  EXPECT_TRUE(reported);
}

namespace {

// ckpt with tensor `name` replaced by `t` (the CRC made to match, so only the check under test refuses it).
fs::path edited(const fs::path& ckpt, const fs::path& out, const std::string& name, const io::StTensor& t) {
  io::StFile f = io::read_safetensors(ckpt);
  for (io::StTensor& x : f.tensors)
    if (x.name == name) x = t;
  f.metadata[kTensorCrcKey] = tensor_crc32(f);
  io::write_safetensors(out, f);
  return out;
}

io::StTensor scaler_state(float scale, float tracker) {
  io::StTensor t{"scaler_d", "F32", {2}, std::vector<uint8_t>(8)};
  std::memcpy(t.data.data(), &scale, 4);
  std::memcpy(t.data.data() + 4, &tracker, 4);
  return t;
}

}  // namespace

// A loss scale of 0, 1e-45 or -1 in a checkpoint would resume into NaN weights: it is
// range-checked like the settings, and the hint does not point back at the same file.
TEST(CheckpointIntegrity, LossScalerStateIsRangeChecked) {
  TempDir tmp;
  const fs::path ckpt = trained_run(tmp / "run");
  const struct {
    float scale, tracker;
    const char* expect;
  } cases[] = {{0.0f, 0, "loss scale 0 is outside"},
               {1e-45f, 0, "loss scale 1.4013e-45 is outside"},
               {-1.0f, 0, "loss scale -1 is outside"},
               {1e30f, 0, "[1, 1.67772e+07]"},
               {65536.0f, -1, "clean-step count -1"},
               {65536.0f, 2.5f, "clean-step count 2.5"},
               {65536.0f, 2000, "clean-step count 2000 is not a whole number from 0 to 1999"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expect);
    const fs::path p = edited(ckpt, tmp / "step_000004.safetensors", "scaler_d", scaler_state(c.scale, c.tracker));
    const std::string e = error_of([&] { read_checkpoint(p, nullptr); });
    EXPECT_NE(e.find("loss-scaler state 'scaler_d' is out of range"), std::string::npos) << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
  EXPECT_NO_THROW(read_checkpoint(edited(ckpt, tmp / "ok.safetensors", "scaler_d", scaler_state(1024.0f, 7)), nullptr));
}

// A tensor of the right shape but another dtype: the message says both dtypes.
TEST(CheckpointIntegrity, AnotherDtypeIsNamedOnBothSides) {
  TempDir tmp;
  const fs::path ckpt = trained_run(tmp / "run");
  const io::StFile f = io::read_safetensors(ckpt);
  io::StTensor w = *f.find("G.0.weight");
  w.dtype = "F16";
  w.data.resize(w.data.size() / 2);
  const fs::path p = edited(ckpt, tmp / "f16.safetensors", "G.0.weight", w);
  auto backend = create_backend("cpu");
  const std::string e = error_of([&] { trainer_from_checkpoint(*backend, p); });
  EXPECT_NE(e.find("is F16 ("), std::string::npos) << e;
  EXPECT_NE(e.find("in the file but F32 ("), std::string::npos) << e;
}
