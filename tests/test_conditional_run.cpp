// Class-conditional runs on disk: the classes of an image folder's subfolders recorded in the
// run (config.json and checkpoints, for sampling without the dataset), a resume that is bit for
// bit the run that never stopped (the generated classes are drawn from the step number), and the
// refusal of --conditional on a dataset without labels (the built-in synthetic one is labelled
// by shape; a flat image folder is not).
#include <filesystem>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/safetensors.h"
#include "core/run/checkpoint.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

// Two classes of 12 grey 32 px images each: dark blobs ("circles") and bright bars ("stripes").
fs::path labelled_folder(const fs::path& root) {
  for (int c = 0; c < 2; ++c) {
    const fs::path dir = root / (c == 0 ? "stripes" : "circles");  // sorted: circles = 0, stripes = 1
    fs::create_directories(dir);
    for (int i = 0; i < 12; ++i) {
      io::Image8 img;
      img.width = img.height = 32;
      img.channels = 1;
      img.pixels.resize(32 * 32);
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) {
          const int dx = x - 16, dy = y - 16 + i % 5;
          img.pixels[y * 32 + x] =
              static_cast<uint8_t>(c == 0 ? ((x + i) % 8 < 4 ? 230 : 20) : (dx * dx + dy * dy < 60 + 4 * i ? 20 : 200));
        }
      io::write_png(dir / ("img" + std::to_string(i) + ".png"), img);
    }
  }
  return root;
}

RunConfig conditional_run(const fs::path& data, const fs::path& out, int64_t steps) {
  RunConfig c;
  c.dataset = data.string();
  c.conditional = true;
  c.res = 32;
  c.width = 4;
  c.batch = 8;
  c.steps = steps;
  c.backend = "cpu";
  c.sample_every = 6;
  c.checkpoint_every = 6;
  c.out_dir = out.string();
  return c;
}

}  // namespace

TEST(ConditionalRun, RecordsItsClassesAndResumesBitIdentically) {
  TempDir tmp;
  const fs::path data = labelled_folder(tmp / "shapes");
  auto a = Session::create(conditional_run(data, tmp / "straight", 12));
  a->run();
  a->finish("finished");
  auto b = Session::create(conditional_run(data, tmp / "resumed", 6));
  b->run();
  b->finish("stopped early");
  b.reset();
  auto r = Session::resume(tmp / "resumed", 12);
  r->run();
  r->finish("finished");

  const auto cfg = nlohmann::json::parse(io::read_file(tmp / "straight" / "config.json"));
  EXPECT_EQ(cfg["conditional"], true);
  EXPECT_EQ(cfg["classes"], 2);
  EXPECT_EQ(cfg["class_names"], nlohmann::json::array({"circles", "stripes"}));
  const io::StFile fa = io::read_safetensors(tmp / "straight/checkpoints/step_000012.safetensors");
  const io::StFile fb = io::read_safetensors(tmp / "resumed/checkpoints/step_000012.safetensors");
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  bool has_embedding = false;
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    EXPECT_EQ(fa.tensors[i].name, fb.tensors[i].name);
    EXPECT_TRUE(fa.tensors[i].data == fb.tensors[i].data) << fa.tensors[i].name;
    has_embedding |= fa.tensors[i].name == "D.embed.weight";
  }
  EXPECT_TRUE(has_embedding);
  // A checkpoint alone makes the conditional generator again, with its classes.
  CpuBackend cpu;
  CheckpointInfo info;
  auto t = trainer_from_checkpoint(cpu, tmp / "straight/checkpoints/step_000012.safetensors", &info);
  EXPECT_EQ(t->classes(), 2);
  EXPECT_EQ(info.config.class_names.size(), 2u);
}

TEST(ConditionalRun, RefusesADatasetWithoutLabels) {
  TempDir tmp;
  const fs::path flat = tmp / "flat";  // images without class subfolders: no labels
  labelled_folder(tmp / "shapes");
  fs::create_directories(flat);
  for (const auto& e : fs::recursive_directory_iterator(tmp / "shapes"))
    if (e.is_regular_file())
      fs::copy_file(e.path(), flat / (e.path().parent_path().filename().string() + e.path().filename().string()));
  RunConfig c = conditional_run(flat, tmp / "run", 4);
  try {
    auto s = Session::create(c);
    FAIL() << "a conditional run started on unlabelled data";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no labels"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(RunFolder(tmp / "run").holds_files());
}

// A class folder whose name is not UTF-8 (Latin-1 "café") still gives a run: config.json, which
// holds UTF-8 only, records the name with the odd byte escaped.
TEST(ConditionalRun, ClassFolderNamesThatAreNotUtf8AreRecordedEscaped) {
  TempDir tmp;
  const fs::path data = labelled_folder(tmp / "shapes");
  fs::rename(data / "stripes", data / "caf\xe9");
  auto s = Session::create(conditional_run(data, tmp / "run", 2));
  s->run();
  s->finish("finished");
  const auto cfg = nlohmann::json::parse(io::read_file(tmp / "run" / "config.json"));
  EXPECT_EQ(cfg["class_names"], nlohmann::json::array({"caf\\xE9", "circles"}));
}
