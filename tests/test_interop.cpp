// Runs open in other tools: the TensorBoard event files (core/io/tfevents.h,
// core/run/tensorboard_log.h). The framing and CRC are checked against published vectors; the
// files a run writes are decoded by an independent reader (tests/python/read_tfevents.py:
// protobuf's Python runtime on the .proto, CRC-32C from python3-crc32c) and matched to the run's
// metrics.csv, samples, histograms.csv and events.jsonl.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/io/atomic_file.h"
#include "core/io/tensorboard_event.pb.h"
#include "core/io/tfevents.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "core/run/tensorboard_log.h"
#include "test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = AMPGAN_SOURCE_DIR;
const std::string kTiny = " --synthetic-count 64 --res 32 --width 8 --batch 8 --backend cpu --quiet ";

// Why the independent reader cannot run here, or empty when it can (scripts/setup.sh --dev
// installs what it needs: Debian's python3-protobuf, python3-crc32c, protobuf-compiler).
std::string reader_missing() {
  if (run_command("/usr/bin/python3 -c 'import google.protobuf, crc32c' 2>&1") != 0)
    return "/usr/bin/python3 lacks google.protobuf or crc32c (apt-get install python3-protobuf python3-crc32c, "
           "or scripts/setup.sh --dev)";
  if (run_command("protoc --version >/dev/null 2>&1") != 0) return "protoc missing (apt-get install protobuf-compiler)";
  return "";
}

// The reader's verdict on a run folder: its JSON summary, or a test failure with its output.
nlohmann::json decode_run(const fs::path& run) {
  std::string out;
  const int rc = run_command("/usr/bin/python3 " + kSrc + "/tests/python/read_tfevents.py " + kSrc +
                                 "/core/io/tensorboard_event.proto " + quote(run) + " 2>&1",
                             &out);
  EXPECT_EQ(rc, 0) << out;
  const size_t at = out.find("OK ");
  if (rc != 0 || at == std::string::npos) {
    ADD_FAILURE() << "the reader did not accept " << run << ":\n" << out;
    return {};
  }
  return nlohmann::json::parse(out.substr(at + 3));
}

// The reader's complaint about a run folder it must refuse (empty if it accepted it).
std::string reader_refusal(const fs::path& run) {
  std::string out;
  const int rc = run_command("/usr/bin/python3 " + kSrc + "/tests/python/read_tfevents.py " + kSrc +
                                 "/core/io/tensorboard_event.proto " + quote(run) + " 2>&1",
                             &out);
  return rc == 0 ? std::string() : out;
}

int64_t count_files(const fs::path& dir, const std::string& ext) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) n += e.path().extension() == ext;
  return n;
}

int64_t metrics_rows(const fs::path& run) {
  std::ifstream f(run / "metrics.csv");
  std::string line;
  int64_t n = -1;  // the header
  while (std::getline(f, line)) ++n;
  return n;
}

int64_t newest_checkpoint(const fs::path& run) {
  int64_t best = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run / "checkpoints", ec)) {
    long long s = 0;
    if (std::sscanf(e.path().filename().c_str(), "step_%lld.safetensors", &s) == 1 &&
        e.path().extension() == ".safetensors")
      best = std::max<int64_t>(best, s);
  }
  return best;
}

}  // namespace

// Published CRC-32C vectors: "123456789" (the check value of every CRC catalogue) and RFC 3720's
// 32 zero bytes and 32 0xFF bytes (iSCSI uses CRC-32C).
TEST(TfEvents, Crc32cKnownVectors) {
  EXPECT_EQ(io::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(io::crc32c("", 0), 0u);
  const std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(io::crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(io::crc32c(ones.data(), 32), 0x62A8AB43u);
  // Incremental: the CRC of a whole equals that of its parts chained.
  EXPECT_EQ(io::crc32c("56789", 5, io::crc32c("1234", 4)), 0xE3069283u);
  // TFRecord's mask: rotate right by 15, add 0xa282ead8 (mod 2^32).
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(io::masked_crc32c("123456789", 9), static_cast<uint32_t>(((c >> 15) | (c << 17)) + 0xa282ead8u));
}

TEST(TfEvents, RecordFramingAndTruncation) {
  const std::string rec = io::tfrecord("abc");
  ASSERT_EQ(rec.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(rec.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));  // little-endian length
  uint32_t lcrc = 0, dcrc = 0;
  std::memcpy(&lcrc, rec.data() + 8, 4);
  std::memcpy(&dcrc, rec.data() + 15, 4);
  EXPECT_EQ(lcrc, io::masked_crc32c(rec.data(), 8));
  EXPECT_EQ(rec.substr(12, 3), "abc");
  EXPECT_EQ(dcrc, io::masked_crc32c("abc", 3));

  TempDir tmp;
  const fs::path f = tmp / "events.out.tfevents.test";
  {
    io::TfRecordWriter w(f);
    w.write("first");
    w.write(std::string(1000, 'x'));
    EXPECT_THROW(io::TfRecordWriter again(f), Error);  // never two writers on one file
  }
  const io::TfRecords whole = io::read_tfrecords(f);
  ASSERT_EQ(whole.records.size(), 2u);
  EXPECT_EQ(whole.records[0], "first");
  EXPECT_FALSE(whole.damaged);
  // A killed writer's cut-off tail: the whole records before it are read, the tail is not.
  const std::string bytes = io::read_file(f);
  io::write_file_atomic(f, bytes.substr(0, bytes.size() - 7));
  const io::TfRecords cut = io::read_tfrecords(f);
  EXPECT_EQ(cut.records.size(), 1u);
  EXPECT_EQ(cut.valid_bytes, io::tfrecord("first").size());
  EXPECT_FALSE(cut.damaged);
  // A flipped data byte fails its CRC: reading stops there and says so.
  std::string bad = bytes;
  bad[bytes.size() - 20] ^= 1;
  io::write_file_atomic(f, bad);
  const io::TfRecords damaged = io::read_tfrecords(f);
  EXPECT_EQ(damaged.records.size(), 1u);
  EXPECT_TRUE(damaged.damaged);
}

// A run trained through the Session (what the CLI and the studio both drive), with a precision
// switch: its event file decodes and matches every metrics.csv row, sample grid and histogram.
TEST(TfEvents, FreshRunMatchesItsLogs) {
  if (const std::string why = reader_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  RunConfig c = tiny_fp16_run(10, tmp / "run");
  c.sample_every = 4;
  c.hist_every = 3;
  c.eval_every = 5;
  c.eval_samples = 64;
  {
    auto s = Session::create(c);
    for (int i = 0; i < 6; ++i) s->step();
    s->set_precision(Precision::BF16);
    s->run();
    s->finish("finished");
  }
  const RunFolder folder(tmp / "run");
  ASSERT_EQ(folder.tensorboard_files().size(), 1u);
  const nlohmann::json r = decode_run(tmp / "run");
  if (r.is_null()) return;
  EXPECT_EQ(r["scalar_steps"], 10);
  EXPECT_EQ(r["first_step"], 1);
  EXPECT_EQ(r["images"], count_files(folder.samples_dir(), ".png"));
  EXPECT_GE(r["images"].get<int>(), 2);  // steps 4, 8 and the last
  EXPECT_EQ(r["histograms"], 2 * 3);     // G and D at steps 3, 6, 9
  EXPECT_EQ(r["notes"], 1);              // the one switch
}

TEST(TfEvents, NoTensorboardThenTheCommandWritesOne) {
  if (const std::string why = reader_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path run = tmp / "run";
  std::string out;
  ASSERT_EQ(run_command(kCli +
                            " train --dataset synthetic --steps 6 --sample-every 3 --hist-every 2 --no-tensorboard "
                            "--out " +
                            quote(run) + kTiny + " 2>&1",
                        &out),
            0)
      << out;
  EXPECT_TRUE(RunFolder(run).tensorboard_files().empty());
  EXPECT_FALSE(RunFolder(run).read_config().tensorboard);  // recorded in config.json

  ASSERT_EQ(run_command(kCli + " tensorboard " + quote(run) + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("6 steps of scalars"), std::string::npos) << out;
  const nlohmann::json r = decode_run(run);
  if (!r.is_null()) EXPECT_EQ(r["scalar_steps"], 6);
  // Once there is one, a second is refused unless --replace, which leaves one file.
  EXPECT_EQ(run_command(kCli + " tensorboard " + quote(run) + " 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("--replace"), std::string::npos) << out;
  const fs::path before = RunFolder(run).tensorboard_files().at(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a new name (its time part)
  ASSERT_EQ(run_command(kCli + " tensorboard --replace " + quote(run) + " 2>&1", &out), 0) << out;
  ASSERT_EQ(RunFolder(run).tensorboard_files().size(), 1u);
  EXPECT_NE(RunFolder(run).tensorboard_files().at(0), before);
  EXPECT_FALSE(decode_run(run).is_null());
  // Not a run: the folder is named, with what to give instead.
  EXPECT_EQ(run_command(kCli + " tensorboard " + quote(tmp / "nothing") + " 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("nothing"), std::string::npos) << out;
  EXPECT_NE(out.find("not a run folder"), std::string::npos) << out;
}

// kill -9 in the middle of a run, then resume: every file still decodes (whole records only),
// and the union has each step once although the killed run had trained past its checkpoint.
TEST(TfEvents, KilledAndResumedRunHasNoDuplicateSteps) {
  if (const std::string why = reader_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path run = tmp / "run";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    const std::string out = run.string();
    ::execl(kCli.c_str(), kCli.c_str(), "train", "--dataset", "synthetic", "--synthetic-count", "64", "--res", "32",
            "--width", "8", "--batch", "8", "--backend", "cpu", "--quiet", "--steps", "100000", "--checkpoint-every",
            "5", "--hist-every", "2", "--sample-every", "4", "--out", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Until a checkpoint exists and the run has trained a few steps past it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int64_t ck = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    ck = newest_checkpoint(run);
    if (ck >= 5 && metrics_rows(run) >= ck + 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended by itself before it was killed";
  ck = newest_checkpoint(run);
  ASSERT_GE(ck, 5) << "no checkpoint within two minutes";
  const int64_t trained = metrics_rows(run);
  // The killed run's file holds steps past the checkpoint (those that a resume trains again).
  int64_t past = 0;
  for (const std::string& rec : io::read_tfrecords(RunFolder(run).tensorboard_files().at(0)).records) {
    tb::Event e;
    ASSERT_TRUE(e.ParseFromString(rec));
    past += e.step() > ck;
  }
  if (trained >= ck + 2) EXPECT_GT(past, 0);
  const int64_t target = std::max(trained, ck) + 6;
  const std::string killed_file = io::read_file(RunFolder(run).tensorboard_files().at(0));
  std::string out;
  ASSERT_EQ(run_command(kCli + " resume " + quote(run) + " --steps " + std::to_string(target) + " --quiet 2>&1", &out),
            0)
      << out;
  ASSERT_EQ(RunFolder(run).tensorboard_files().size(), 2u);
  const nlohmann::json r = decode_run(run);
  if (r.is_null()) return;
  EXPECT_EQ(r["scalar_steps"], target);
  EXPECT_EQ(r["first_step"], 1);
  EXPECT_EQ(r["last_step"], target);
  EXPECT_EQ(r["files"], 2);
  RecordProperty("steps_past_checkpoint_when_killed", std::to_string(past));
  // The reader's checks can fail: the killed run's file as it was, beside the resumed ones,
  // repeats the steps after the checkpoint; a flipped byte fails a CRC.
  if (past > 0) {
    io::write_file_atomic(run / "events.out.tfevents.untrimmed", killed_file);
    EXPECT_NE(reader_refusal(run).find("written twice"), std::string::npos);
    fs::remove(run / "events.out.tfevents.untrimmed");
  }
  std::string flipped = killed_file;
  flipped[flipped.size() / 2] ^= 0x20;
  io::write_file_atomic(run / "events.out.tfevents.flipped", flipped);
  EXPECT_NE(reader_refusal(run).find("CRC wrong"), std::string::npos);
  fs::remove(run / "events.out.tfevents.flipped");
  std::printf("killed at %lld rows, checkpoint %lld, %lld event records past it trimmed, resumed to %lld\n",
              static_cast<long long>(trained), static_cast<long long>(ck), static_cast<long long>(past),
              static_cast<long long>(target));
}

// A resume from an older checkpoint: the history after it is set aside with its event file
// whole, and the run's own files hold each step once, up to the new target.
TEST(TfEvents, ResumeFromAnOlderCheckpointSetsTheEventsAside) {
  if (const std::string why = reader_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path run = tmp / "run";
  std::string out;
  ASSERT_EQ(run_command(kCli +
                            " train --dataset synthetic --steps 20 --checkpoint-every 5 --keep-checkpoints 0 "
                            "--hist-every 3 --sample-every 4 --out " +
                            quote(run) + kTiny + " 2>&1",
                        &out),
            0)
      << out;
  const std::string before = io::read_file(RunFolder(run).tensorboard_files().at(0));
  ASSERT_EQ(run_command(kCli + " resume " + quote(run) + " --checkpoint " +
                            quote(run / "checkpoints" / "step_000010.safetensors") + " --steps 16 --quiet 2>&1",
                        &out),
            0)
      << out;
  const nlohmann::json r = decode_run(run);
  if (!r.is_null()) {
    EXPECT_EQ(r["scalar_steps"], 16);
    EXPECT_EQ(r["last_step"], 16);
    EXPECT_EQ(r["files"], 2);
  }
  // The set-aside copy is the file as it was, steps 11..20 included.
  int copies = 0;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    if (e.is_directory())
      for (const fs::path& f : RunFolder(e.path()).tensorboard_files()) {
        EXPECT_EQ(io::read_file(f), before);
        ++copies;
      }
  EXPECT_EQ(copies, 1);
}
