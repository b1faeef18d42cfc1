// File and folder names that are not UTF-8 (Linux names are bytes): unchecked, they end in
// "unexpected error" from the JSON writer, leave a half-made run folder, and with such an --out
// kill every run at its first checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/common/error.h"
#include "core/common/utf8.h"
#include "core/io/atomic_file.h"
#include "core/run/session.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace ampgan;
using ampgan::testing::TempDir;

using ampgan::testing::error_of;

namespace {

const std::string kLatin1 = "caf\xE9";  // "café" in Latin-1: not UTF-8

RunConfig tiny(const fs::path& out) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 32;
  c.width = 4;
  c.batch = 4;
  c.steps = 2;
  c.backend = "cpu";
  c.sample_every = 0;
  c.checkpoint_every = 1;
  c.out_dir = out.string();
  return c;
}

// Every line of events.jsonl parses, and config.json too.
void expect_json_files_whole(const fs::path& run) {
  EXPECT_NO_THROW(nlohmann::json::parse(io::read_file(run / "config.json")));
  std::ifstream in(run / "events.jsonl");
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
  EXPECT_GT(lines, 1);
}

}  // namespace

TEST(Utf8, ValidatorAndEscaper) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8(kLatin1));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // a UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // cut short
  EXPECT_EQ(escape_invalid_utf8(kLatin1 + "/\xC3\xA9"), "caf\\xE9/\xC3\xA9");
}

TEST(Utf8, NonUtf8OutputNamesAreRefusedBeforeAnythingIsCreated) {
  TempDir tmp;
  const fs::path out = tmp / ("run-" + kLatin1);
  const std::string e = error_of([&] { Session::create(tiny(out)); });
  EXPECT_NE(e.find("is not valid UTF-8"), std::string::npos) << e;
  EXPECT_NE(e.find("caf\\xE9"), std::string::npos) << e;
  EXPECT_NE(e.find("--out"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out));
  RunConfig c = tiny(tmp / "named");
  c.name = kLatin1;
  EXPECT_NE(error_of([&] { Session::create(c); }).find("--name"), std::string::npos);
  c = tiny(tmp / "data");
  c.dataset = (tmp / kLatin1).string();
  EXPECT_NE(error_of([&] { Session::create(c); }).find("ln -s"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

TEST(Utf8, NonUtf8FileInADatasetFolderIsNamedInTheEvents) {
  TempDir tmp;
  const fs::path data = tmp / "data";
  fs::create_directory(data);
  for (const std::string& n : std::vector<std::string>{"a.png", "b.png", "c.png", "d.png", kLatin1 + ".png"})
    cv::imwrite((data / n).string(), cv::Mat(8, 8, CV_8UC3, cv::Scalar(n.size() * 20, 40, 90)));
  std::ofstream(data / (kLatin1 + ".txt")) << "notes";  // ignored, and named in a warning
  RunConfig c = tiny(tmp / "run");
  c.dataset = data.string();
  auto s = Session::create(c);
  EXPECT_EQ(s->dataset().count, 5);
  s->run();
  s->finish("finished");
  s.reset();
  expect_json_files_whole(tmp / "run");
  EXPECT_NE(io::read_file(tmp / "run" / "events.jsonl").find("caf\xEF\xBF\xBD.txt"), std::string::npos)
      << "the file is named, its bad byte shown as U+FFFD";
}

TEST(Utf8, RunFolderRenamedToANonUtf8NameResumes) {
  // A run folder renamed (or copied from a Latin-1 system): every checkpoint event names it.
  TempDir tmp;
  {
    auto s = Session::create(tiny(tmp / "run"));
    s->run();
    s->finish("finished");
  }
  const fs::path renamed = tmp / ("run-" + kLatin1);
  fs::rename(tmp / "run", renamed);
  auto r = Session::resume(renamed, 4);
  r->run();
  r->finish("finished");
  EXPECT_EQ(r->step_count(), 4);
  r.reset();
  EXPECT_TRUE(fs::exists(renamed / "checkpoints" / "step_000004.safetensors"));
  expect_json_files_whole(renamed);
}
