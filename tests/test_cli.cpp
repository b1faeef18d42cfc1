// The ampgan command line as a user meets it: every bad input gets a clear message and a
// non-zero exit (never a crash), and the commands produce what they promise.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <zlib.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/opencv.h"
#include "core/run/checkpoint.h"
#include "core/run/compare.h"
#include "tests/test_support.h"

extern char** environ;  // for posix_spawn

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

const std::string kTiny = " --synthetic-count 64 --res 32 --width 8 --batch 8 --backend cpu --quiet ";

struct Result {
  int status;
  std::string out;
};

Result cli(const std::string& args) {
  Result r;
  r.status = run_command(kCli + " " + args, &r.out);
  return r;
}

// A refused command: status 1 (not a signal or abort), and a message naming what is wrong.
void expect_refused(const std::string& args, std::initializer_list<std::string> needles, int status = 1) {
  const Result r = cli(args);
  EXPECT_EQ(r.status, status) << args << "\n" << r.out;
  for (const std::string& n : needles) EXPECT_NE(r.out.find(n), std::string::npos) << args << "\n" << r.out;
}

std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

// An IDX image file with `count` images of 28x28 (only `stored` of them actually written).
std::string idx_images(uint32_t magic, uint32_t count, uint32_t stored) {
  std::string s = be32(magic) + be32(count) + be32(28) + be32(28);
  s += std::string(size_t(stored) * 28 * 28, char(100));
  return s;
}

std::string idx_labels(uint32_t count) { return be32(0x801) + be32(count) + std::string(count, char(3)); }

void write_gz(const fs::path& p, const std::string& data) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
}

// The CLI as a separate process we can signal: argv split at spaces (no quoting), stdout and
// stderr to `log`.
pid_t spawn_cli(const std::string& args, const fs::path& log) {
  std::vector<std::string> words{kCli};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, kCli.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Exit status, or 128 + the signal that ended it.
int wait_exit(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool wait_until(const std::function<bool()>& cond, double seconds = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

size_t count_lines(const fs::path& p, const std::string& prefix) {
  if (!fs::exists(p)) return 0;
  std::istringstream in(io::read_file(p));
  size_t n = 0;
  for (std::string l; std::getline(in, l);) n += l.rfind(prefix, 0) == 0;
  return n;
}

// Rows in metrics.csv (lines that start with a digit).
size_t metric_rows(const fs::path& run) {
  size_t n = 0;
  for (char c = '0'; c <= '9'; ++c) n += count_lines(run / "metrics.csv", std::string(1, c));
  return n;
}

int64_t newest_step(const fs::path& run) {
  int64_t best = -1;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    best = std::max<int64_t>(best, std::stoll(e.path().stem().string().substr(5)));
  return best;
}

std::string last_event(const fs::path& run) {
  std::istringstream in(io::read_file(run / "events.jsonl"));
  std::string l, last;
  while (std::getline(in, l))
    if (!l.empty()) last = l;
  return last;
}

}  // namespace

TEST(Cli, HelpListsEveryCommand) {
  const Result r = cli("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* c : {"train", "resume", "compare", "sample", "export-generator", "eval", "bench", "devices"})
    EXPECT_NE(r.out.find(c), std::string::npos) << c;
  const Result t = cli("train --help");
  EXPECT_EQ(t.status, 0);
  for (const char* o :
       {"--dataset", "--res", "--width", "--batch", "--steps", "--precision", "--backend", "--lr", "--seed",
        "--init-scale", "--scaler", "--sample-every", "--checkpoint-every", "--out", "--config"})
    EXPECT_NE(t.out.find(o), std::string::npos) << o;
  EXPECT_EQ(cli("--version").status, 0);
  EXPECT_EQ(cli("frobnicate").status, 2);
}

TEST(Cli, TrainWritesARun) {
  TempDir tmp;
  const Result r = cli("train --dataset synthetic --steps 6 --sample-every 3 --out " + quote(tmp / "run") + kTiny);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::exists(tmp / "run/samples/step_000006.png"));
  EXPECT_TRUE(fs::exists(tmp / "run/checkpoints/step_000006.safetensors"));
  const Result again = cli("resume " + quote(tmp / "run") + " --steps 9 --quiet");
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_TRUE(fs::exists(tmp / "run/checkpoints/step_000009.safetensors"));
}

// The option syntax (parsed by CLI11): "--name value" and "--name=value", the last occurrence
// wins, a value may start with '-', flags take no value.
TEST(Cli, OptionSyntax) {
  TempDir tmp;
  const Result r = cli("train --dataset=synthetic --steps 5 --steps=2 --seed 7 --out " + quote(tmp / "run") + kTiny);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto cfg = nlohmann::json::parse(io::read_file(tmp / "run/config.json"));
  EXPECT_EQ(cfg["steps"], 2);
  EXPECT_EQ(cfg["seed"], 7);
  expect_refused("train --quiet=yes", {"--quiet takes no value"}, 2);
  expect_refused("train --lr -0.5 --dataset synthetic" + kTiny, {"lr -0.5 is out of range", "(--lr)"});  // --lr's value
  expect_refused("train --dataset synthetic stray" + kTiny, {"unexpected argument 'stray'"}, 2);
  expect_refused("train --bogus=1", {"unknown option --bogus"}, 2);
}

TEST(Cli, CompareTrainsBothPrecisionsIntoOrdinaryRunFolders) {
  TempDir tmp;
  const Result r =
      cli("compare --amp bf16 --dataset synthetic --steps 4 --sample-every 0 --out " + quote(tmp / "cmp") + kTiny);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* p : {"fp32", "bf16"}) {
    const auto cfg = nlohmann::json::parse(io::read_file(tmp / "cmp" / p / "config.json"));
    EXPECT_EQ(cfg["precision"], p);
    EXPECT_EQ(cfg["seed"], 0);
    EXPECT_TRUE(fs::exists(tmp / "cmp" / p / "checkpoints/step_000004.safetensors")) << p;
  }
  // The table, in the terminal and as compare.tsv: FP32 the baseline, then the AMP run.
  EXPECT_NE(r.out.find("1.00× (baseline)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BF16 AMP is "), std::string::npos) << r.out;
  const std::string tsv = io::read_file(tmp / "cmp/compare.tsv");
  EXPECT_EQ(tsv.rfind("Run\tImages/s (median)\tSpeed-up", 0), 0u) << tsv;
  EXPECT_NE(tsv.find("\nFP32\t"), std::string::npos) << tsv;
  EXPECT_NE(tsv.find("\nBF16 AMP\t"), std::string::npos) << tsv;
  // A comparison folder that already holds runs is not overwritten.
  expect_refused("compare --dataset synthetic --steps 2 --out " + quote(tmp / "cmp") + kTiny, {"cmp"});
  expect_refused("compare --amp fp32 --dataset synthetic --steps 2" + kTiny, {"--amp", "fp16, bf16 or tf32"});
  expect_refused("compare --precision fp16 --steps 2" + kTiny, {"--precision", "--amp"}, 2);
}

// compare --max-batch adds the Largest batch row, the same cells as the core search on
// the same settings (the studio's Compare shows them too), and a verdict naming the budget.
TEST(Cli, CompareMaxBatchAddsTheLargestBatchRow) {
  TempDir tmp;
  const std::string args =
      " --dataset synthetic --synthetic-count 64 --nc 1 --res 32 --width 4 --batch 4 --backend cpu"
      " --steps 2 --sample-every 0 --quiet";
  const Result r = cli("compare --amp fp16 --max-batch --memory-budget 16 --out " + quote(tmp / "cmp") + args);
  ASSERT_EQ(r.status, 0) << r.out;
  RunConfig base;
  base.dataset = "synthetic";
  base.synthetic_count = 64;
  base.channels = 1;
  base.width = 4;
  base.batch = 4;
  base.backend = "cpu";
  base.memory_budget_mib = 16;
  const MaxBatchResult mb = compare_max_batch(base, Precision::FP16, 1, nullptr, nullptr);
  ASSERT_GE(mb.fits(Precision::FP32), 2);
  char amp_cell[64];
  std::snprintf(amp_cell, sizeof amp_cell, "%lld (%.2f×)", static_cast<long long>(mb.fits(Precision::FP16)),
                mb.ratio(Precision::FP16));
  const std::string fp32_cell = std::to_string(mb.fits(Precision::FP32)) + " (1.00×)";
  // The terminal's transposed table: one line, FP32's value then the AMP run's.
  const size_t at = r.out.find("\nLargest batch ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find(fp32_cell + "  "), std::string::npos) << line;
  EXPECT_EQ(line.substr(line.size() - std::strlen(amp_cell)), amp_cell) << line;
  EXPECT_NE(r.out.find(max_batch_ratio_line(mb, Precision::FP16) + " within 16 MiB (memory budget)"), std::string::npos)
      << r.out;
  const std::string tsv = io::read_file(tmp / "cmp/compare.tsv");
  EXPECT_NE(tsv.find("\tData\tLargest batch\t"), std::string::npos) << tsv;
  EXPECT_NE(tsv.find("\t" + std::string(amp_cell) + "\t"), std::string::npos) << tsv;
  // Bad budgets are refused, naming the option, before anything trains.
  expect_refused("compare --max-batch --memory-budget 8" + args, {"--memory-budget", "out of range", "16"});
  expect_refused("compare --memory-budget 100" + args, {"--memory-budget", "--max-batch"}, 2);
  EXPECT_FALSE(fs::exists(tmp / "cmp2"));
}

TEST(Cli, ResnetModelTrainsWithSngansRecipe) {
  TempDir tmp;
  const Result r =
      cli("train --model resnet --dataset synthetic --synthetic-count 64 --width 2 --batch 4 --steps 2 "
          "--precision bf16 --lr-d 0.0003 --backend cpu --quiet --out " +
          quote(tmp / "run"));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto cfg = nlohmann::json::parse(io::read_file(tmp / "run/config.json"));
  EXPECT_EQ(cfg["model"], "resnet");
  EXPECT_EQ(cfg["loss"], "hinge");                   // the model's default
  EXPECT_FLOAT_EQ(cfg["lr_g"].get<float>(), 1e-4f);  // TTUR
  EXPECT_FLOAT_EQ(cfg["lr_d"].get<float>(), 3e-4f);  // given, so not the default 4e-4
  EXPECT_FLOAT_EQ(cfg["beta1"].get<float>(), 0.0f);
  EXPECT_FLOAT_EQ(cfg["ema_decay"].get<float>(), 0.999f);  // an EMA generator, as SNGAN/BigGAN evaluate
  EXPECT_EQ(cfg["n_dis"], 5);                              // SNGAN's D steps per G step
  const Result s =
      cli("sample " + quote(tmp / "run/checkpoints/step_000002.safetensors") + " --grid " + quote(tmp / "grid.png"));
  EXPECT_EQ(s.status, 0) << s.out;
  expect_refused("train --model stylegan --dataset synthetic", {"unknown model", "--model", "dcgan or resnet"});
  const Result b =
      cli("bench --model resnet --backend cpu --nc 3 --width 2 --batch 4 --steps 1 --warmup 0 --precision fp16 --json");
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("\"model\":\"resnet\""), std::string::npos) << b.out;
}

TEST(Cli, BenchFindsTheLargestBatchWithinABudget) {
  const Result j = cli("bench --backend cpu --max-batch --memory-budget 24 --model dcgan --width 4 --batch 4 --json");
  ASSERT_EQ(j.status, 0) << j.out;
  std::istringstream lines(j.out);
  std::string line;
  std::map<std::string, nlohmann::json> rows;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] == '{') {
      const auto row = nlohmann::json::parse(line);
      rows[row["precision"]] = row;
    }
  ASSERT_EQ(rows.size(), 3u) << j.out;
  for (const auto& [p, row] : rows) {
    EXPECT_GE(row["verified_batch"].get<int>(), 8) << p;
    EXPECT_LE(row["verified_batch"].get<int>(), row["predicted_batch"].get<int>()) << p;
    EXPECT_LE(row["verified_peak_bytes"].get<double>(), 24.0 * 1048576) << p << ": the check ran within the budget";
    EXPECT_GT(row["verified_peak_bytes"].get<double>(), 0.8 * 24.0 * 1048576) << p << ": and came close to it";
    EXPECT_FALSE(row.contains("problem")) << row.dump();
  }
  // Half activations and gradients: more images fit.
  EXPECT_GT(rows["fp16"]["verified_batch"].get<int>(), rows["fp32"]["verified_batch"].get<int>());
  const Result t =
      cli("bench --backend cpu --max-batch --memory-budget 24 --model dcgan --width 4 --batch 4 --precision fp16");
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("Largest batch within 24 MiB"), std::string::npos) << t.out;
  expect_refused("bench --backend cpu --max-batch", {"--memory-budget", "CPU"});
  expect_refused("bench --backend cpu --memory-budget 100", {"--max-batch"});
}

TEST(Cli, ConfigFileAndOverrides) {
  TempDir tmp;
  io::write_file_atomic(
      tmp / "cfg.json",
      R"({"dataset": "synthetic", "synthetic_count": 64, "width": 8, "batch": 8, "steps": 3, "precision": "bf16", "backend": "cpu"})");
  const Result r = cli("train --config " + quote(tmp / "cfg.json") + " --steps 2 --quiet --out " + quote(tmp / "run"));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto cfg = nlohmann::json::parse(io::read_file(tmp / "run/config.json"));
  EXPECT_EQ(cfg["steps"], 2);
  EXPECT_EQ(cfg["precision"], "bf16");
  io::write_file_atomic(tmp / "typo.json", R"({"widht": 8})");
  expect_refused("train --config " + quote(tmp / "typo.json"), {"unknown setting 'widht'"});
  io::write_file_atomic(tmp / "broken.json", "{\"width\": ");
  expect_refused("train --config " + quote(tmp / "broken.json"), {"not valid JSON", "broken.json"});
}

TEST(CliBadInput, Datasets) {
  TempDir tmp;
  const std::string out = " --out " + quote(tmp / "run") + " --steps 2" + kTiny;
  expect_refused("train --dataset " + quote(tmp / "missing") + out, {"missing"});

  io::write_file_atomic(tmp / "magic-images-idx3-ubyte", idx_images(0x1234, 10, 10));
  expect_refused("train --dataset " + quote(tmp / "magic-images-idx3-ubyte") + out,
                 {"magic", "magic-images-idx3-ubyte"});

  io::write_file_atomic(tmp / "short-images-idx3-ubyte", idx_images(0x803, 10, 4));
  expect_refused("train --dataset " + quote(tmp / "short-images-idx3-ubyte") + out, {"short-images-idx3-ubyte"});

  io::write_file_atomic(tmp / "pair-images-idx3-ubyte", idx_images(0x803, 10, 10));
  io::write_file_atomic(tmp / "pair-labels-idx1-ubyte", idx_labels(9));
  expect_refused("train --dataset " + quote(tmp / "pair-images-idx3-ubyte") + out, {"10", "9"});

  write_gz(tmp / "gz-images-idx3-ubyte.gz", idx_images(0x803, 40, 40));
  std::string gz = io::read_file(tmp / "gz-images-idx3-ubyte.gz");
  for (size_t i = gz.size() / 3; i < gz.size() / 3 + 16; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  io::write_file_atomic(tmp / "gz-images-idx3-ubyte.gz", gz);
  expect_refused("train --dataset " + quote(tmp / "gz-images-idx3-ubyte.gz") + out, {"gz-images-idx3-ubyte.gz"});

  fs::create_directories(tmp / "empty");
  expect_refused("train --dataset " + quote(tmp / "empty") + out, {"empty"});

  fs::create_directories(tmp / "notimages");
  io::write_file_atomic(tmp / "notimages/a.png", "this is not a PNG");
  io::write_file_atomic(tmp / "notimages/b.txt", "hello");
  expect_refused("train --dataset " + quote(tmp / "notimages") + out, {"notimages"});
  EXPECT_FALSE(fs::exists(tmp / "run")) << "refused runs must not create their folder";
}

TEST(CliBadInput, Settings) {
  TempDir tmp;
  const std::string base = "train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny;
  expect_refused(base + " --res 48", {"--res", "32, 64 or 128"});
  expect_refused(base + " --batch 0", {"--batch"});
  expect_refused(base + " --batch 1000", {"--batch", "larger than the dataset"});
  expect_refused(base + " --lr -0.001", {"(--lr)", "above 0"});
  expect_refused(base + " --lr 0", {"(--lr)"});
  expect_refused(base + " --lr nan", {"lr nan", "(--lr)"});
  expect_refused(base + " --lr-d inf", {"--lr-d"});
  expect_refused(base + " --lr fast", {"--lr", "number"}, 2);  // usage errors exit 2
  expect_refused(base + " --precision fp8", {"--precision", "fp32, tf32, fp16 or bf16"});
  expect_refused(base + " --backend tpu", {"--backend", "auto, cpu or cuda"});
  expect_refused(base + " --bogus 1", {"unknown option --bogus"}, 2);
  expect_refused(base + " --steps", {"--steps needs a value"}, 2);
  expect_refused(base + " --precision fp16 --init-scale 1e-45 --min-scale 1e-45", {"--init-scale", "1.18e-38"});
  expect_refused(base + " --precision fp16 --min-scale 1e-45", {"--min-scale", "1.18e-38", "3.4e38"});
  expect_refused(base + " --precision fp16 --max-scale 1e39", {"--max-scale"});
  EXPECT_FALSE(fs::exists(tmp / "run"));
  io::write_file_atomic(tmp / "afile", "keep me");
  expect_refused("train --dataset synthetic --steps 2 --out " + quote(tmp / "afile") + kTiny, {"afile", "file"});
  EXPECT_EQ(io::read_file(tmp / "afile"), "keep me");
  expect_refused("train --dataset synthetic --steps 2 --out " + quote(tmp / "afile/sub") + kTiny, {"afile"});
  EXPECT_EQ(io::read_file(tmp / "afile"), "keep me");
}

TEST(CliBadInput, Resume) {
  TempDir tmp;
  expect_refused("resume " + quote(tmp / "nothing") + " --steps 5", {"nothing"});
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --checkpoint-every 0 --out " + quote(tmp / "run") + kTiny).status,
            0);
  const fs::path ck = tmp / "run/checkpoints/step_000002.safetensors";
  const std::string bytes = io::read_file(ck);
  io::write_file_atomic(ck, bytes.substr(0, bytes.size() - 1000));
  expect_refused("resume " + quote(tmp / "run") + " --steps 5", {"step_000002.safetensors"});
  io::write_file_atomic(ck, bytes);
  expect_refused("resume " + quote(tmp / "run") + " --steps 2", {"already at step 2"});
  fs::remove(ck);
  expect_refused("resume " + quote(tmp / "run") + " --steps 5", {"no checkpoint"});
}

TEST(Cli, SampleIsDeterministicForASeed) {
  TempDir tmp;
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny).status, 0);
  const std::string ck = quote(tmp / "run/checkpoints/step_000002.safetensors");
  ASSERT_EQ(cli("sample " + ck + " --grid " + quote(tmp / "a.png") + " --n 12 --cols 4 --seed 7").status, 0);
  ASSERT_EQ(cli("sample " + ck + " --grid " + quote(tmp / "b.png") + " --n 12 --cols 4 --seed 7").status, 0);
  ASSERT_EQ(cli("sample " + ck + " --grid " + quote(tmp / "c.png") + " --n 12 --cols 4 --seed 8").status, 0);
  const io::Image8 a = io::read_image(tmp / "a.png");
  EXPECT_EQ(a.width, 4 * 34 + 2);
  EXPECT_EQ(a.height, 3 * 34 + 2);
  EXPECT_EQ(a.pixels, io::read_image(tmp / "b.png").pixels);
  EXPECT_NE(a.pixels, io::read_image(tmp / "c.png").pixels);
  ASSERT_EQ(cli("sample " + ck + " --each " + quote(tmp / "each") + " --n 5 --upscale 2").status, 0);
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp / "each")) {
    ++files;
    const io::Image8 img = io::read_image(e.path());
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(img.height, 64);
  }
  EXPECT_EQ(files, 5);
  expect_refused("sample " + ck, {"--grid", "--each"}, 2);
  expect_refused("sample " + quote(tmp / "none.safetensors") + " --grid x.png", {"none.safetensors"});
}

// The explorer's options on a run folder: a seed's image is the same file in any --seeds list, an
// interpolation's end frames are its seeds' images, the video holds every frame, and a refused
// request writes nothing.
TEST(Cli, SampleExploresSeedsAndInterpolations) {
  TempDir tmp;
  ASSERT_EQ(cli("train --dataset synthetic --steps 3 --out " + quote(tmp / "run") + kTiny).status, 0);
  const std::string run = quote(tmp / "run");
  Result r = cli("sample " + run + " --seeds 0-7 --each " + quote(tmp / "a"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("8 seeds (0, 1, 2, ..., 7), step 3"), std::string::npos) << r.out;
  ASSERT_EQ(cli("sample " + run + " --seeds 4,2 --each " + quote(tmp / "b")).status, 0);
  EXPECT_EQ(io::read_file(tmp / "a/seed_4.png"), io::read_file(tmp / "b/seed_4.png"));
  EXPECT_EQ(io::read_file(tmp / "a/seed_2.png"), io::read_file(tmp / "b/seed_2.png"));
  EXPECT_NE(io::read_file(tmp / "a/seed_2.png"), io::read_file(tmp / "a/seed_4.png"));
  EXPECT_FALSE(fs::exists(tmp / "b/seed_0.png"));

  r = cli("sample " + run + " --interpolate 2,4 --frames 5 --path lerp --each " + quote(tmp / "walk"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("5 frames from seed 2 to seed 4 (lerp)"), std::string::npos) << r.out;
  EXPECT_EQ(io::read_file(tmp / "walk/frame_00000.png"), io::read_file(tmp / "a/seed_2.png"));
  EXPECT_EQ(io::read_file(tmp / "walk/frame_00004.png"), io::read_file(tmp / "a/seed_4.png"));
  EXPECT_NE(io::read_file(tmp / "walk/frame_00002.png"), io::read_file(tmp / "a/seed_4.png"));
  ASSERT_EQ(cli("sample " + run + " --interpolate 2,4 --frames 5 --grid " + quote(tmp / "walk.png")).status, 0);
  const io::Image8 row = io::read_image(tmp / "walk.png");
  EXPECT_EQ(row.width, 5 * 34 + 2) << "an interpolation's grid is one row";
  EXPECT_EQ(row.height, 34 + 2);

  r = cli("sample " + run + " --interpolate 2,4 --frames 7 --truncation 0.7 --video " + quote(tmp / "walk.mp4"));
  ASSERT_EQ(r.status, 0) << r.out;
  cv::VideoCapture v((tmp / "walk.mp4").string());
  ASSERT_TRUE(v.isOpened());
  int frames = 0;
  cv::Mat f;
  while (v.read(f)) {
    EXPECT_EQ(f.cols, 256) << "32 px frames enlarged 8 times";
    EXPECT_EQ(f.rows, 256);
    ++frames;
  }
  EXPECT_EQ(frames, 7);

  // Refusals before the generator runs: exit 1 (2 for a usage error), the option named, no file.
  const std::string out = " --grid " + quote(tmp / "refused.png");
  expect_refused("sample " + run + out + " --truncation 0.5", {"--truncation", "--seeds"}, 2);
  expect_refused("sample " + run + out + " --seeds 0-3 --truncation 9", {"--truncation", "at most 4"});
  expect_refused("sample " + run + out + " --seeds 5-1", {"--seeds", "runs backwards"});
  expect_refused("sample " + run + out + " --seeds 0-3 --n 4", {"--n"}, 2);
  expect_refused("sample " + run + out + " --interpolate 3", {"--interpolate", "two seeds"}, 2);
  expect_refused("sample " + run + out + " --frames 9", {"--frames", "--interpolate"}, 2);
  expect_refused("sample " + run + out + " --seeds 0-3 --bn-stats batch", {"--bn-stats", "standing"}, 2);
  expect_refused("sample " + run + out + " --seeds 0-3 --truncation 0", {"--truncation", "above 0"}, 2);
  expect_refused("sample " + run + out + " --step 2", {"step 2", "steps 3"});
  expect_refused("sample " + run + " --seeds 1 --video " + quote(tmp / "walk.gif"), {"walk.gif", ".mp4"});
  EXPECT_FALSE(fs::exists(tmp / "refused.png"));
  EXPECT_FALSE(fs::exists(tmp / "walk.gif"));
}

// An output that names an input (directly or through a link) is refused even with --force; any
// other existing file is replaced only with --force. A refusal leaves every file as it was.
TEST(CliBadInput, OutputsNeverReplaceInputs) {
  TempDir tmp;
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny).status, 0);
  const fs::path ck = tmp / "run/checkpoints/step_000002.safetensors";
  const std::string ck_bytes = io::read_file(ck), cfg_bytes = io::read_file(tmp / "run/config.json");
  expect_refused("export-generator " + quote(ck) + " " + quote(ck), {"replace the input", "step_000002"});
  expect_refused("export-generator " + quote(ck) + " " + quote(ck) + " --force", {"replace the input"});
  fs::create_symlink(ck, tmp / "alias.safetensors");
  expect_refused("export-generator " + quote(ck) + " " + quote(tmp / "alias.safetensors") + " --force",
                 {"replace the input"});
  fs::create_hard_link(ck, tmp / "hard.safetensors");
  expect_refused("export-generator " + quote(ck) + " " + quote(tmp / "hard.safetensors") + " --force",
                 {"replace the input"});
  expect_refused("sample " + quote(ck) + " --grid " + quote(ck) + " --force", {"replace the input"});
  expect_refused("sample " + quote(ck) + " --grid " + quote(tmp / "run/config.json"), {"config.json", "--force"});
  EXPECT_EQ(io::read_file(ck), ck_bytes);
  EXPECT_EQ(io::read_file(tmp / "run/config.json"), cfg_bytes);

  io::write_file_atomic(tmp / "old.safetensors", "mine");
  expect_refused("export-generator " + quote(ck) + " " + quote(tmp / "old.safetensors"), {"already exists", "--force"});
  EXPECT_EQ(io::read_file(tmp / "old.safetensors"), "mine");
  ASSERT_EQ(cli("export-generator " + quote(ck) + " " + quote(tmp / "old.safetensors") + " --force").status, 0);
  EXPECT_NE(io::read_file(tmp / "old.safetensors"), "mine");

  fs::create_directories(tmp / "each");
  io::write_file_atomic(tmp / "each/sample_00002.png", "mine");
  expect_refused("sample " + quote(ck) + " --each " + quote(tmp / "each") + " --n 4", {"sample_00002.png", "--force"});
  EXPECT_FALSE(fs::exists(tmp / "each/sample_00000.png")) << "a refused command wrote an image";
  EXPECT_EQ(io::read_file(tmp / "each/sample_00002.png"), "mine");
  expect_refused("sample " + quote(ck) + " --grid " + quote(tmp / "each"), {"folder"});
}

TEST(Cli, BenchJson) {
  const Result r = cli("bench --backend cpu --res 32 --nc 1 --width 8 --batch 4 --steps 2 --warmup 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream in(r.out);
  std::string line;
  std::vector<std::string> precisions;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    const auto j = nlohmann::json::parse(line);
    precisions.push_back(j["precision"]);
    EXPECT_GT(j["images_per_s"].get<double>(), 0);
    EXPECT_GT(j["peak_mem_bytes"]["activations"].get<double>(), 0);
    EXPECT_GT(j["peak_mem_bytes"]["master_fp32"].get<double>(), 0);
  }
  EXPECT_EQ(precisions, (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  const Result t = cli("bench --backend cpu --width 8 --batch 4 --steps 2 --warmup 0 --precision fp16");
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("activ."), std::string::npos);
}

TEST(Cli, Devices) {
  const Result r = cli("devices");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("cpu"), std::string::npos);
}

// The exported generator loads into the PyTorch peer (strict load_state_dict) and produces the
// same images as ours from the same latents. A conditional run (train_args + --conditional) is
// compared with `ampgan sample --n 8 --seed 11 --raw` (batch statistics too): first its default
// classes, a batch mixing them (image i of class i % classes), then every class alone.
void expect_export_matches_peer(const std::string& train_args, int latent, bool conditional = false) {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (run_command(python + " -c 'import torch'") != 0)
    GTEST_SKIP() << "PyTorch is not installed for " << python << " (scripts/setup.sh --dev installs python3-torch)";
  TempDir tmp;
  const Result t = cli("train --dataset synthetic --steps 3 --out " + quote(tmp / "run") + train_args +
                       (conditional ? " --conditional" : ""));
  ASSERT_EQ(t.status, 0) << t.out;
  const fs::path ck = tmp / "run/checkpoints/step_000003.safetensors";
  const Result e = cli("export-generator " + quote(ck) + " " + quote(tmp / "g.safetensors"));
  ASSERT_EQ(e.status, 0) << e.out;
  CpuBackend b;
  auto trainer = trainer_from_checkpoint(b, ck);
  const int n = 8;  // one batch-statistics group, as in PyTorch's single forward pass
  std::vector<float> z(static_cast<size_t>(n) * latent);
  const uint64_t stream = conditional ? rng_stream::kSampleLatents : 0;  // sample --seed 11's latents
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(11, stream, i);
  io::write_file_atomic(tmp / "z.f32", std::string(reinterpret_cast<const char*>(z.data()), z.size() * 4));
  // The peer's images of the latents, of the classes `classes` ("0,1,2,...": one per image).
  auto expect_peer_draws = [&](const std::vector<float>& ours, const std::string& classes) {
    std::string out;
    const int st = run_command(python + " " + std::string(AMPGAN_SOURCE_DIR) + "/tests/python/check_export.py " +
                                   quote(tmp / "g.safetensors") + " " + quote(tmp / "z.f32") + " 8 " +
                                   quote(tmp / "y.f32") + " " + classes,
                               &out);
    ASSERT_EQ(st, 0) << out;
    const std::string y = io::read_file(tmp / "y.f32");
    ASSERT_EQ(y.size(), ours.size() * 4);
    std::vector<float> theirs(ours.size());
    std::memcpy(theirs.data(), y.data(), y.size());
    double max_diff = 0;
    for (size_t i = 0; i < ours.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(ours[i] - theirs[i])));
    EXPECT_LT(max_diff, 1e-4) << "PyTorch's images differ from ours (classes " << classes << ")";
    EXPECT_LT(normalized_error(ours, theirs), 1e-5) << classes;
  };
  if (!conditional) return expect_peer_draws(trainer->generate(z, n), "");
  const int k = trainer->classes();
  ASSERT_GE(k, 2);
  std::vector<std::vector<float>> of_class;
  for (int c = -1; c < k; ++c) {  // -1: sample's default classes
    const fs::path raw = tmp / ("ours" + std::to_string(c + 1) + ".npy");
    const Result r = cli("sample " + quote(ck) + " --n 8 --seed 11 --raw " + quote(raw) +
                         (c < 0 ? "" : " --class " + std::to_string(c)));
    ASSERT_EQ(r.status, 0) << r.out;
    const std::string npy = io::read_file(raw);
    ASSERT_GT(npy.size(), 10u);
    const size_t data = 10 + static_cast<uint8_t>(npy[8]) + 256 * static_cast<uint8_t>(npy[9]);  // NPY 1.0 header
    const DcganSpec& m = trainer->config().model;
    ASSERT_EQ(npy.size(), data + size_t{4} * n * m.res * m.res * m.channels);
    std::vector<float> ours((npy.size() - data) / 4);
    std::memcpy(ours.data(), npy.data() + data, npy.size() - data);
    std::string classes;
    for (int i = 0; i < n; ++i) classes += std::string(i ? "," : "") + std::to_string(c < 0 ? i % k : c);
    expect_peer_draws(ours, classes);
    if (c >= 0) of_class.push_back(ours);
  }
  // The classes must change the images, or the class parameters would go untested.
  double class_diff = 0;
  for (size_t i = 0; i < of_class[0].size(); ++i)
    class_diff = std::max(class_diff, double(std::fabs(of_class[0][i] - of_class[1][i])));
  EXPECT_GT(class_diff, 1e-2) << "class 0's images are class 1's";
}

TEST(Cli, ExportedGeneratorMatchesPyTorchPeer) { expect_export_matches_peer(kTiny, 100); }

// The ResNet's (bench/peers/pytorch_resnet.py), with its EMA generator (on in SNGAN's recipe),
// 3 channels and n_dis 2.
TEST(Cli, ExportedResnetGeneratorMatchesPyTorchPeer) {
  expect_export_matches_peer(
      " --model resnet --nc 3 --width 2 --batch 8 --n-dis 2 --synthetic-count 64 --backend cpu "
      "--sample-every 0 --quiet",
      128);
}

// Two writers on one run folder: the second train and a resume are refused, naming the holder,
// while the first keeps its folder to itself (one CSV header, its own steps).
TEST(CliRunLock, OneWriterPerRunFolder) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  const std::string train =
      "train --dataset synthetic --steps 100000 --checkpoint-every 0 --sample-every 0 --out " + run.string() + kTiny;
  const pid_t first = spawn_cli(train, tmp / "first.log");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_until([&] { return metric_rows(run) >= 2; })) << io::read_file(tmp / "first.log");
  const std::string pid = "pid " + std::to_string(first);
  expect_refused(train, {"in use", pid, "ampgan train", "host"});
  expect_refused("resume " + quote(run) + " --steps 200000 --quiet", {"in use", pid});
  EXPECT_EQ(count_lines(run / "metrics.csv", "step,"), 1u);
  kill(first, SIGINT);
  EXPECT_EQ(wait_exit(first), 130) << io::read_file(tmp / "first.log");
  EXPECT_EQ(io::read_file(run / "run.lock"), "") << "a writer that ends releases and empties its lock";
  const Result again = cli("resume " + quote(run) + " --steps " + std::to_string(newest_step(run) + 2) + " --quiet");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(count_lines(run / "metrics.csv", "step,"), 1u);
}

// Deleting run.lock while a run trains must not let a second writer in: the folder itself is
// locked, and the writer writes run.lock again at its next step.
TEST(CliRunLock, DeletingRunLockDoesNotLetASecondWriterIn) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  const pid_t first = spawn_cli(
      "train --dataset synthetic --steps 100000 --checkpoint-every 2 --sample-every 0 --out " + run.string() + kTiny,
      tmp / "first.log");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "checkpoints/step_000002.safetensors"); }))
      << io::read_file(tmp / "first.log");
  fs::remove(run / "run.lock");
  expect_refused("resume " + quote(run) + " --steps " + std::to_string(newest_step(run) + 2) + " --quiet", {"in use"});
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "run.lock") && io::read_file(run / "run.lock") != ""; }));
  EXPECT_NE(io::read_file(run / "run.lock").find("\"pid\":" + std::to_string(first)), std::string::npos)
      << io::read_file(run / "run.lock");
  expect_refused("resume " + quote(run) + " --steps " + std::to_string(newest_step(run) + 2) + " --quiet",
                 {"in use", "pid " + std::to_string(first)});
  kill(first, SIGINT);
  EXPECT_EQ(wait_exit(first), 130) << io::read_file(tmp / "first.log");
  EXPECT_EQ(count_lines(run / "metrics.csv", "step,"), 1u);
  EXPECT_EQ(io::read_file(run / "events.jsonl").find("\"type\":\"resume\""), std::string::npos)
      << "a second writer resumed the run";
}

// A writer killed with SIGKILL leaves its description in run.lock but no lock: the next writer
// takes over and says so in the event log.
TEST(CliRunLock, StaleLockOfAKilledWriterIsTakenOver) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  const pid_t first = spawn_cli(
      "train --dataset synthetic --steps 100000 --checkpoint-every 2 --sample-every 0 --out " + run.string() + kTiny,
      tmp / "first.log");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "checkpoints/step_000004.safetensors"); }))
      << io::read_file(tmp / "first.log");
  kill(first, SIGKILL);
  EXPECT_EQ(wait_exit(first), 128 + SIGKILL);
  EXPECT_NE(io::read_file(run / "run.lock").find(std::to_string(first)), std::string::npos);
  const Result r = cli("resume " + quote(run) + " --steps " + std::to_string(newest_step(run) + 2) + " --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string events = io::read_file(run / "events.jsonl");
  EXPECT_NE(events.find("took over the run folder's lock"), std::string::npos) << events;
  EXPECT_NE(events.find("pid " + std::to_string(first)), std::string::npos) << events;
}

// A closed terminal (SIGHUP) stops training like Ctrl-C: checkpoint, stop event, status 130.
TEST(CliSignals, HangupStopsCleanly) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  const pid_t p = spawn_cli(
      "train --dataset synthetic --steps 100000 --checkpoint-every 0 --sample-every 0 --out " + run.string() + kTiny,
      tmp / "log");
  ASSERT_GT(p, 0);
  ASSERT_TRUE(wait_until([&] { return metric_rows(run) >= 2; })) << io::read_file(tmp / "log");
  kill(p, SIGHUP);
  EXPECT_EQ(wait_exit(p), 130) << io::read_file(tmp / "log");
  EXPECT_GE(newest_step(run), 2);
  EXPECT_NE(last_event(run).find("interrupted"), std::string::npos) << last_event(run);
}

// Ctrl-C while the feature classifier trains (minutes, for the first evaluation) does not wait
// for it to finish: the evaluation ends without scores, the run stops at the end of
// its step with a checkpoint, and nothing half-trained is cached.
TEST(CliSignals, InterruptDuringClassifierTrainingStopsPromptly) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  setenv("AMPGAN_CACHE_DIR", (tmp / "cache").c_str(), 1);
  const pid_t p = spawn_cli(
      "train --dataset synthetic --synthetic-count 2000 --width 8 --batch 8 --backend cpu --quiet "
      "--steps 100 --eval-every 1 --eval-samples 64 --sample-every 0 --checkpoint-every 0 --out " +
          run.string(),
      tmp / "log");
  unsetenv("AMPGAN_CACHE_DIR");
  ASSERT_GT(p, 0);
  const auto events = [&] { return fs::exists(run / "events.jsonl") ? io::read_file(run / "events.jsonl") : ""; };
  ASSERT_TRUE(wait_until([&] { return events().find("training the feature classifier") != std::string::npos; }, 120))
      << io::read_file(tmp / "log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  kill(p, SIGINT);
  EXPECT_EQ(wait_exit(p), 130) << io::read_file(tmp / "log");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 30.0) << "training the classifier alone takes minutes here";
  EXPECT_NE(events().find("evaluation cancelled"), std::string::npos) << events();
  EXPECT_NE(last_event(run).find("interrupted"), std::string::npos) << last_event(run);
  EXPECT_EQ(newest_step(run), 1);
  // (The cache also holds the CPU kernel choices, cpu-kernels-*.txt.)
  const fs::path classifiers = tmp / "cache" / "classifiers";
  EXPECT_TRUE(!fs::exists(classifiers) || fs::is_empty(classifiers)) << "a cancelled classifier was cached";
}

// Ctrl-C is taken by a thread that only waits for it, never by one that computes: oneDNN 2.6's
// generated GEMM kernels point the stack pointer into the heap, and a signal frame pushed there
// corrupted the heap (abort or segfault in 4 of 16 interrupts during the classifier's kernel
// timing, before this). Every thread's mask is read from /proc while a run trains.
TEST(CliSignals, OnlyTheSignalThreadTakesStopSignals) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  const pid_t p = spawn_cli(
      "train --dataset synthetic --synthetic-count 512 --width 8 --batch 8 --backend cpu --quiet "
      "--steps 1000000 --sample-every 0 --checkpoint-every 0 --out " +
          run.string(),
      tmp / "log");
  ASSERT_GT(p, 0);
  ASSERT_TRUE(wait_until([&] { return metric_rows(run) >= 2; })) << io::read_file(tmp / "log");
  auto field = [](const std::string& status, const std::string& name) {
    const size_t at = status.find("\n" + name + ":");
    if (at == std::string::npos) return std::string();
    const size_t from = status.find_first_not_of(" \t", at + name.size() + 2);
    return status.substr(from, status.find('\n', from) - from);
  };
  const uint64_t sigint = uint64_t{1} << (SIGINT - 1);
  int pool = 0, receivers = 0;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(p) + "/task")) {
    const std::string status = "\n" + io::read_file(task.path() / "status");
    const std::string name = field(status, "Name");
    const bool blocked = std::stoull(field(status, "SigBlk"), nullptr, 16) & sigint;
    if (task.path().filename() == std::to_string(p)) EXPECT_TRUE(blocked) << "the main thread computes";
    if (name == "ampgan-pool") {
      ++pool;
      EXPECT_TRUE(blocked) << "a pool worker takes SIGINT";
    }
    if (name == "ampgan-signals") {
      ++receivers;
      EXPECT_FALSE(blocked) << "the signal thread blocks SIGINT";
    }
  }
  EXPECT_EQ(receivers, 1);
  if (std::thread::hardware_concurrency() > 1) EXPECT_GE(pool, 1);
  kill(p, SIGINT);
  EXPECT_EQ(wait_exit(p), 130) << io::read_file(tmp / "log");
  EXPECT_NE(last_event(run).find("interrupted"), std::string::npos) << last_event(run);
}

// A second Ctrl-C means "now": the process exits at once, in the middle of a long step, and the
// files on disk are whole (the newest checkpoint loads).
TEST(CliSignals, SecondInterruptExitsAtOnce) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  // Steps of a second or more: the first Ctrl-C alone would wait for the end of one.
  const pid_t p = spawn_cli(
      "train --dataset synthetic --synthetic-count 512 --width 64 --batch 256 --backend cpu "
      "--quiet --steps 1000 --sample-every 0 --checkpoint-every 1 --out " +
          run.string(),
      tmp / "log");
  ASSERT_GT(p, 0);
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "checkpoints/step_000001.safetensors"); }, 120))
      << io::read_file(tmp / "log");
  kill(p, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(p, SIGINT);
  EXPECT_EQ(wait_exit(p), 130);
  const std::string log = io::read_file(tmp / "log");
  EXPECT_NE(log.find("second interrupt: exiting now"), std::string::npos) << log;
  CheckpointInfo info;
  EXPECT_NO_THROW(read_checkpoint(newest_checkpoint(run), &info));
  EXPECT_GE(info.step, 1);
}

// A reader of stdout that goes away (`| head -n 1`) must not stop the run: it trains to the end,
// writes its checkpoint and exits 0 (SIGPIPE would end it with 141 and no checkpoint).
TEST(CliSignals, VanishedStdoutDoesNotStopTraining) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  std::string tiny = kTiny;
  tiny.replace(tiny.find("--quiet"), 7, "");
  const std::string cmd = "(" + kCli + " train --dataset synthetic --steps 60 --checkpoint-every 0 --out " +
                          quote(run) + tiny + " 2>" + quote(tmp / "err") + "; echo $? > " + quote(tmp / "rc") +
                          ") | head -n 1";
  std::string out;
  run_command(cmd, &out);
  ASSERT_TRUE(wait_until([&] { return fs::exists(tmp / "rc") && fs::file_size(tmp / "rc") > 0; })) << out;
  EXPECT_EQ(io::read_file(tmp / "rc"), "0\n") << io::read_file(tmp / "err");
  EXPECT_TRUE(fs::exists(run / "checkpoints/step_000060.safetensors"));
  EXPECT_NE(last_event(run).find("finished"), std::string::npos) << last_event(run);
}

// A run stopped before its first checkpoint: resume and train must not send the user to each
// other ("start a new run" vs "continue it with resume").
TEST(CliBadInput, HintsDoNotGoInACircle) {
  TempDir tmp;
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --checkpoint-every 0 --out " + quote(tmp / "run") + kTiny).status,
            0);
  fs::remove_all(tmp / "run/checkpoints");
  fs::create_directories(tmp / "run/checkpoints");
  const Result r = cli("resume " + quote(tmp / "run") + " --steps 5");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("another folder"), std::string::npos) << r.out;
  const Result t = cli("train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny);
  EXPECT_EQ(t.status, 1);
  EXPECT_NE(t.out.find("no checkpoint"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("ampgan resume"), std::string::npos) << t.out;
}

// resume --checkpoint FILE continues from the given checkpoint of the run.
TEST(Cli, ResumeFromAChosenCheckpoint) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  ASSERT_EQ(cli("train --dataset synthetic --steps 4 --checkpoint-every 2 --out " + quote(run) + kTiny).status, 0);
  EXPECT_NE(cli("resume --help").out.find("--checkpoint"), std::string::npos);
  const Result r = cli("resume " + quote(run) + " --steps 5 --quiet --checkpoint " +
                       quote(run / "checkpoints/step_000002.safetensors"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(metric_rows(run), 5u);
  EXPECT_TRUE(fs::exists(run / "checkpoints/step_000005.safetensors"));
  int aside = 0;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    aside += e.is_directory() && fs::exists(e.path() / "step_000004.safetensors");
  EXPECT_EQ(aside, 1) << "the later checkpoint was not moved aside";
  expect_refused("resume " + quote(run) + " --steps 9 --checkpoint " + quote(tmp / "nope.safetensors"),
                 {"nope.safetensors"});
}

// Numbers are range-checked before they are narrowed, from the command line and from JSON:
// narrowed first, width 4294967304 would train width 8, "width": 8.7 width 8, "seed": -1 seed
// 2^64-1, "batch": true batch 1, and "steps": 1e19 is undefined behaviour.
TEST(CliBadInput, NumbersAreRangeCheckedBeforeNarrowing) {
  TempDir tmp;
  const std::string base = "train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny;
  expect_refused(base + " --width 4294967304", {"--width", "4294967304", "out of range", "1 to 1024"});
  expect_refused(base + " --sample-every 4294967296", {"--sample-every", "4294967296"});
  expect_refused(base + " --batch 2147483648", {"--batch", "2147483648", "2 to 65536"});
  expect_refused(base + " --checkpoint-every -1", {"--checkpoint-every"});
  expect_refused(base + " --seed -1", {"--seed", "-1"});
  expect_refused(base + " --steps 99999999999999999999", {"--steps", "out of range"});
  expect_refused(base + " --steps 12abc", {"--steps", "expects a number"}, 2);
  expect_refused(base + " --lr 1e39", {"--lr", "FP32"});
  const Result batch = cli(base + " --batch 2147483648");
  EXPECT_EQ(batch.out.find("-2147483648"), std::string::npos) << batch.out;
  const std::pair<std::string, std::vector<std::string>> json_cases[] = {
      {R"({"steps": 1e19})", {"steps", "out of range", "cfg.json"}},
      {R"({"width": 1e10})", {"width", "out of range"}},
      {R"({"width": 8.7})", {"width", "whole number", "8.7"}},
      {R"({"seed": -1})", {"seed", "out of range"}},
      {R"({"seed": 1.8446744073709552e19})", {"seed", "out of range"}},
      {R"({"batch": true})", {"batch", "whole number", "true"}},
      {R"({"batch": "64"})", {"batch", "whole number"}},
      {R"({"width": 4294967304})", {"width", "out of range"}},
      {R"({"sample_every": -5})", {"sample_every", "out of range"}},
      {R"({"lr": 1e39})", {"lr", "FP32"}},
      {R"({"lr": false})", {"lr", "number"}},
      {R"({"growth_interval": 0})", {"growth_interval", "out of range"}},
  };
  for (const auto& [text, needles] : json_cases) {
    io::write_file_atomic(tmp / "cfg.json", text);
    const Result r = cli("train --config " + quote(tmp / "cfg.json") + " --out " + quote(tmp / "run") + " --quiet");
    EXPECT_EQ(r.status, 1) << text << "\n" << r.out;
    for (const std::string& n : needles) EXPECT_NE(r.out.find(n), std::string::npos) << text << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

// Readers open only regular files and cap what they read: a FIFO as --config or as a checkpoint
// must not block forever, nor --config /dev/zero grow until killed. `timeout` turns a hang into 124.
TEST(CliBadInput, FifosAndDevicesAreNotRead) {
  TempDir tmp;
  ASSERT_EQ(mkfifo((tmp / "fifo").c_str(), 0644), 0);
  const std::string t = "timeout 60 " + kCli + " ";
  auto refused = [&](const std::string& args, std::initializer_list<std::string> needles) {
    std::string out;
    const int st = run_command(t + args, &out);
    EXPECT_EQ(st, 1) << args << "\n" << out;
    for (const std::string& n : needles) EXPECT_NE(out.find(n), std::string::npos) << args << "\n" << out;
  };
  const std::string out = " --out " + quote(tmp / "run");
  refused("train --config " + quote(tmp / "fifo") + out, {"not a regular file", "FIFO", "fifo"});
  refused("train --config /dev/zero" + out, {"not a regular file", "character device", "/dev/zero"});
  io::write_file_atomic(tmp / "big.json", "{}");
  fs::resize_file(tmp / "big.json", (uint64_t{16} << 20) + 1);  // sparse: costs no disk
  refused("train --config " + quote(tmp / "big.json") + out, {"bytes, more than", "big.json"});
  EXPECT_FALSE(fs::exists(tmp / "run"));
  refused("sample " + quote(tmp / "fifo") + " --grid " + quote(tmp / "g.png"), {"FIFO"});
  refused("eval " + quote(tmp / "fifo"), {"FIFO"});
  refused("export-generator " + quote(tmp / "fifo") + " " + quote(tmp / "g.safetensors"), {"FIFO"});
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny).status, 0);
  fs::remove(tmp / "run/config.json");
  ASSERT_EQ(mkfifo((tmp / "run/config.json").c_str(), 0644), 0);
  refused("resume " + quote(tmp / "run") + " --steps 4", {"FIFO", "config.json"});
}

// A symbolic link planted in place of a run file (even a dangling one) must not make resume
// create or append to a file outside the run folder; the refusal changes nothing.
TEST(CliBadInput, LinksInPlaceOfRunFilesAreRefused) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  ASSERT_EQ(
      cli("train --dataset synthetic --steps 2 --hist-every 1 --layers-every 1 --out " + quote(run) + kTiny).status, 0);
  fs::create_directories(tmp / "outside");
  const std::string config = io::read_file(run / "config.json");
  for (const char* name : {"events.jsonl", "layers.csv", "histograms.csv", "metrics.csv"}) {
    SCOPED_TRACE(name);
    const std::string kept = io::read_file(run / name);
    fs::remove(run / name);
    fs::create_symlink(tmp / "outside" / name, run / name);
    expect_refused("resume " + quote(run) + " --steps 4", {name, "symbolic link", "nothing was changed"});
    EXPECT_FALSE(fs::exists(tmp / "outside" / name)) << "resume wrote outside the run folder";
    EXPECT_EQ(io::read_file(run / "config.json"), config);
    EXPECT_EQ(newest_step(run), 2);
    fs::remove(run / name);
    io::write_file_atomic(run / name, kept);
  }
  EXPECT_EQ(cli("resume " + quote(run) + " --steps 4").status, 0);
}

// A deleted metrics.csv: resume starts a new one with its header (and says so), and later
// resumes read it (not failing after training, on a file without a header).
TEST(Cli, ResumeAfterMetricsCsvWasDeleted) {
  TempDir tmp;
  const fs::path run = tmp / "run";
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --out " + quote(run) + kTiny).status, 0);
  fs::remove(run / "metrics.csv");
  const Result r = cli("resume " + quote(run) + " --steps 4");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_lines(run / "metrics.csv", "step,"), 1u);
  EXPECT_EQ(metric_rows(run), 2u);
  EXPECT_NE(io::read_file(run / "events.jsonl").find("metrics.csv was missing"), std::string::npos);
  const Result again = cli("resume " + quote(run) + " --steps 6");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(metric_rows(run), 4u);
}

namespace {

// n small RGB PNGs, each its own colour, in dir.
void write_image_folder(const fs::path& dir, int n) {
  fs::create_directories(dir);
  for (int i = 0; i < n; ++i) {
    io::Image8 img;
    img.width = img.height = 8;
    img.channels = 3;
    img.pixels.assign(8 * 8 * 3, static_cast<uint8_t>(10 * i));
    char name[32];
    std::snprintf(name, sizeof name, "img%02d.png", i);
    io::write_png(dir / name, img);
  }
}

}  // namespace

// Resume promises the run that never stopped; on a dataset that changed since (16 -> 9 images)
// it cannot keep that promise, so it does not continue without a word: the user chooses.
TEST(Cli, ResumeOnAChangedDatasetAsksForAChoice) {
  TempDir tmp;
  const fs::path run = tmp / "run", data = tmp / "photos";
  write_image_folder(data, 16);
  ASSERT_EQ(cli("train --dataset " + quote(data) + " --steps 2 --out " + quote(run) + kTiny).status, 0);
  const std::string config = io::read_file(run / "config.json"), metrics = io::read_file(run / "metrics.csv");
  for (int i = 9; i < 16; ++i) fs::remove(data / ((i < 10 ? "img0" : "img") + std::to_string(i) + ".png"));
  expect_refused("resume " + quote(run) + " --steps 4",
                 {"the dataset changed", "16 images", "9 images", "--allow-changed-dataset", "nothing was changed"});
  EXPECT_EQ(io::read_file(run / "config.json"), config);
  EXPECT_EQ(io::read_file(run / "metrics.csv"), metrics);
  const Result r = cli("resume " + quote(run) + " --steps 4 --allow-changed-dataset");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(io::read_file(run / "events.jsonl").find("the dataset changed since the checkpoint"), std::string::npos);
  // The new checkpoint records the data it was trained on: a plain resume goes on.
  EXPECT_EQ(cli("resume " + quote(run) + " --steps 6").status, 0);
}

// A message names the option the value came from (--lr -1 was blamed on --lr-g), and every
// command's numbers are range-checked before they are narrowed (eval --samples 4294967298
// evaluated 2 samples).
TEST(CliBadInput, MessagesNameTheOptionGiven) {
  TempDir tmp;
  const std::string base = "train --dataset synthetic --steps 2 --out " + quote(tmp / "run") + kTiny;
  const Result lr = cli(base + " --lr -1");
  EXPECT_EQ(lr.status, 1) << lr.out;
  EXPECT_NE(lr.out.find("(--lr)"), std::string::npos) << lr.out;
  EXPECT_EQ(lr.out.find("--lr-g"), std::string::npos) << lr.out;
  expect_refused(base + " --beta2 1", {"beta2 1 is out of range", "(--beta2)", "below 1"});
  expect_refused(base + " --init-scale 1e-45", {"(--init-scale)", "out of range"});
  expect_refused("train --dataset '' --out " + quote(tmp / "run"), {"(--dataset)"});
  EXPECT_FALSE(fs::exists(tmp / "run"));
  ASSERT_EQ(cli(base).status, 0);
  const std::string ck = quote(tmp / "run/checkpoints/step_000002.safetensors");
  expect_refused("eval " + ck + " --samples 4294967298", {"(--samples)", "4294967298", "out of range"});
  expect_refused("eval " + ck + " --seed -1", {"(--seed)", "out of range"});
  expect_refused("sample " + ck + " --grid " + quote(tmp / "g.png") + " --n 4294967298", {"(--n)", "out of range"});
  expect_refused("bench --res 4294967328 --steps 1", {"(--res)", "out of range"});
  expect_refused("resume " + quote(tmp / "run") + " --steps 4294967297000000000000", {"(--steps)", "out of range"});
  EXPECT_FALSE(fs::exists(tmp / "g.png"));
}

// Ctrl-C while a large dataset loads stops the loading with status 130 (not 1, as for bad
// input), and nothing is written.
TEST(CliSignals, InterruptWhileLoadingExits130) {
  TempDir tmp;
  const fs::path idx = tmp / "many-images-idx3-ubyte";
  {
    std::ofstream f(idx, std::ios::binary);
    f << idx_images(0x803, 400000, 0);
    const std::string block(size_t(4000) * 28 * 28, char(90));
    for (int i = 0; i < 100; ++i) f.write(block.data(), std::streamsize(block.size()));
  }
  const pid_t p =
      spawn_cli("train --dataset " + idx.string() + " --steps 1 --out " + (tmp / "run").string() + kTiny, tmp / "log");
  ASSERT_GT(p, 0);
  // The signal goes while the file is open, so while it is being read and decoded (the reader
  // interleaves the two, a chunk at a time: 400000 resizes take far longer than this loop's 20 ms
  // on any host), not at a fixed time that a fast host would pass with the loading done.
  const auto reading = [&] {
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(p) + "/fd", ec))
      if (fs::read_symlink(fd.path(), ec) == idx) return true;
    return false;
  };
  ASSERT_TRUE(wait_until(reading, 60)) << io::read_file(tmp / "log");
  kill(p, SIGINT);
  EXPECT_EQ(wait_exit(p), 130) << io::read_file(tmp / "log");
  EXPECT_NE(io::read_file(tmp / "log").find("interrupted: loading cancelled"), std::string::npos)
      << io::read_file(tmp / "log");
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

// A conditional run's images by class: --class all repeats the seeds for every class (a seed's
// image of a class is the same whichever way it is asked for), a number or a name picks one,
// and a class the run lacks, or --class on an unconditional run, is refused.
TEST(Cli, SampleDrawsTheClassesOfAConditionalRun) {
  TempDir tmp;
  Result r = cli("train --dataset synthetic --conditional --steps 3 --out " + quote(tmp / "run") + kTiny);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto cfg = nlohmann::json::parse(io::read_file(tmp / "run/config.json"));
  const int classes = cfg.at("classes").get<int>();
  ASSERT_GE(classes, 2);
  const std::string run = quote(tmp / "run");
  r = cli("sample " + run + " --class all --seeds 0,1 --each " + quote(tmp / "all"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("each of the " + std::to_string(classes) + " classes"), std::string::npos) << r.out;
  for (int c = 0; c < classes; ++c)
    EXPECT_TRUE(fs::exists(tmp / "all" / ("class" + std::to_string(c) + "_seed_1.png"))) << c;
  EXPECT_NE(io::read_file(tmp / "all/class0_seed_0.png"), io::read_file(tmp / "all/class1_seed_0.png"));
  ASSERT_EQ(cli("sample " + run + " --class 1 --seeds 0 --each " + quote(tmp / "one")).status, 0);
  EXPECT_EQ(io::read_file(tmp / "one/seed_0.png"), io::read_file(tmp / "all/class1_seed_0.png"));
  r = cli("sample " + run + " --class " + std::to_string(classes) + " --seeds 0 --each " + quote(tmp / "bad"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("has no class"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp / "bad"));
  ASSERT_EQ(cli("train --dataset synthetic --steps 2 --out " + quote(tmp / "plain") + kTiny).status, 0);
  r = cli("sample " + quote(tmp / "plain") + " --class 0 --grid " + quote(tmp / "p.png"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("not class-conditional"), std::string::npos) << r.out;
}

// A conditional run's export (bench/peers' generator(..., classes=K)) draws each class as ours:
// the DCGAN's class embedding, and the ResNet's conditional batch norms (a G learning rate that
// moves their class terms, zero at the start, in 3 steps; no EMA to hold them back).
TEST(Cli, ExportedConditionalGeneratorsMatchPyTorchPeers) {
  expect_export_matches_peer(kTiny, 100, true);
  expect_export_matches_peer(
      " --model resnet --nc 3 --width 2 --batch 8 --n-dis 2 --lr-g 0.01 --ema-decay 0 --synthetic-count 64 "
      "--backend cpu --sample-every 0 --quiet",
      128, true);
}
