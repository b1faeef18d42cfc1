// The run folder's layout (core/run/run_folder.h) and typed events (core/run/run_event.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/io/atomic_file.h"
#include "core/run/run_event.h"
#include "core/run/run_folder.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace ampgan;
using ampgan::testing::error_of;
using ampgan::testing::TempDir;

TEST(RunFolder, NamesEveryFileAsTheReadmeDescribes) {
  const RunFolder f("runs/x");
  EXPECT_EQ(f.config(), fs::path("runs/x/config.json"));
  EXPECT_EQ(f.metrics(), fs::path("runs/x/metrics.csv"));
  EXPECT_EQ(f.events(), fs::path("runs/x/events.jsonl"));
  EXPECT_EQ(f.layers(), fs::path("runs/x/layers.csv"));
  EXPECT_EQ(f.sample_grid(200), fs::path("runs/x/samples/step_000200.png"));
  EXPECT_EQ(f.checkpoint(1234567), fs::path("runs/x/checkpoints/step_1234567.safetensors"));
}

TEST(RunFolder, AnEmptyFolderIsNotARunAndALockAloneHoldsNothing) {
  TempDir dir("ampgan-folder");
  const RunFolder f(dir.path());
  EXPECT_FALSE(f.exists());
  EXPECT_FALSE(f.holds_files());
  io::write_file_atomic(dir / "run.lock", "");
  EXPECT_FALSE(f.holds_files());
  io::write_file_atomic(f.metrics(), "step\n");
  EXPECT_TRUE(f.holds_files());
  EXPECT_FALSE(f.has_checkpoint());
  const std::string e = error_of([&] { f.read_config(); });
  EXPECT_NE(e.find("no config.json"), std::string::npos) << e;
}

TEST(RunFolder, TrimKeepsTheHistoryUpToTheStepAndReturnsItsClock) {
  TempDir dir("ampgan-folder");
  const RunFolder f(dir.path());
  io::write_file_atomic(f.metrics(), "step,time_s\n1,0.5\n2,1.25\n3,2.0\n4,2.");  // last row torn
  io::write_file_atomic(f.events(), "{\"step\":1,\"type\":\"start\"}\n{\"step\":3,\"type\":\"stop\"}\nnot json\n");
  EXPECT_DOUBLE_EQ(f.trim_logs(2), 1.25);
  EXPECT_EQ(io::read_file(f.metrics()), "step,time_s\n1,0.5\n2,1.25\n");
  const std::vector<RunEvent> ev = f.read_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::Start);
}

// Two resumes from earlier checkpoints within one second set aside two histories: each keeps
// its own folder, and the second never overwrites the first's copies.
TEST(RunFolder, EverySetAsideHistoryGetsItsOwnFolder) {
  TempDir dir("ampgan-folder");
  const RunFolder f(dir.path());
  io::ensure_writable_dir(f.checkpoints_dir());
  std::string rows = "step,time_s\n";
  for (int i = 1; i <= 30; ++i) rows += std::to_string(i) + "," + std::to_string(i) + ".0\n";
  io::write_file_atomic(f.metrics(), rows);
  io::write_file_atomic(f.checkpoint(20), "a");
  const fs::path first = f.set_aside({f.checkpoint(20)}, 10);
  f.trim_logs(10);
  io::write_file_atomic(f.checkpoint(12), "b");
  const fs::path second = f.set_aside({f.checkpoint(12)}, 10);
  EXPECT_NE(first, second);
  EXPECT_EQ(io::read_file(first / "metrics.csv"), rows) << "the first history's copy was overwritten";
  EXPECT_EQ(io::read_file(first / "step_000020.safetensors"), "a");
  EXPECT_EQ(io::read_file(second / "step_000012.safetensors"), "b");
  EXPECT_EQ(io::read_file(second / "metrics.csv"), io::read_file(f.metrics()));
}

TEST(RunEvent, EveryTypeRoundTripsThroughItsJsonSpelling) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(EventType::Unknown); ++i) {
    RunEvent e;
    e.type = static_cast<EventType>(i);
    e.step = i;
    const nlohmann::json j = e.to_json();
    names.insert(j.at("type").get<std::string>());
    EXPECT_EQ(RunEvent::from_json(j).type, e.type) << j.dump();
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(EventType::Unknown)) << "two types share a spelling";
  EXPECT_EQ(names.count("unknown"), 0u) << "a type has no spelling";
  // What an older reader must see in events.jsonl is unchanged.
  EXPECT_EQ(event_type_name(EventType::PrecisionSwitch), std::string("precision_switch"));
  EXPECT_EQ(event_type_name(EventType::ScaleChange), std::string("scale_change"));
}

TEST(RunEvent, ATypeFromANewerWriterKeepsItsSpelling) {
  const RunEvent e = RunEvent::from_json(nlohmann::json{{"step", 5}, {"type", "reshard"}, {"message", "m"}});
  EXPECT_EQ(e.type, EventType::Unknown);
  EXPECT_EQ(e.to_json().at("type"), "reshard");
}
