// Zip datasets in StyleGAN dataset_tool's layout (core/data/zip_dataset.cpp): archives are
// written here with libzip, as dataset_tool's would be.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zip.h>
#include <opencv2/imgcodecs.hpp>

#include "core/common/error.h"
#include "core/data/image_set.h"
#include "core/data/zip_dataset.h"
#include "core/io/atomic_file.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using ampgan::Error;
using ampgan::testing::TempDir;
using namespace ampgan::data;

using ampgan::testing::expect_error;

namespace {

struct Member {
  std::string name, bytes;
};

std::string png(const cv::Mat& m) {
  std::vector<uint8_t> buf;
  EXPECT_TRUE(cv::imencode(".png", m, buf));
  return std::string(buf.begin(), buf.end());
}

// Stored (not deflated), so that a test can damage an entry's bytes in place.
void write_zip(const fs::path& path, const std::vector<Member>& members) {
  int err = 0;
  zip_t* z = zip_open(path.string().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  for (const Member& m : members) {
    zip_source_t* src = zip_source_buffer(z, m.bytes.data(), m.bytes.size(), 0);
    ASSERT_NE(src, nullptr);
    const zip_int64_t i = zip_file_add(z, m.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(i, 0);
    zip_set_file_compression(z, i, ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(z), 0);
}

cv::Mat solid(int h, int w, int type, cv::Scalar bgr) { return cv::Mat(h, w, type, bgr); }

// Five colour images as dataset_tool names them, classes 2, 0, 1, 0, 2.
std::vector<Member> five(bool with_labels) {
  std::vector<Member> m;
  std::string json = R"({"labels": [)";
  const int classes[] = {2, 0, 1, 0, 2};
  for (int i = 0; i < 5; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "00000/img%08d.png", i);
    m.push_back({name, png(solid(40, 40, CV_8UC3, {10.0 * i, 100, 200}))});
    json += std::string(i ? ", " : "") + "[\"" + name + "\", " + std::to_string(classes[i]) + "]";
  }
  m.push_back({"dataset.json", with_labels ? json + "]}" : R"({"labels": null})"});
  return m;
}

}  // namespace

TEST(ZipDataset, ReadsDatasetToolLayoutWithLabels) {
  TempDir dir("ampgan-zip");
  const fs::path zp = dir / "cifar-like.zip";
  std::vector<Member> m = five(true);
  std::swap(m[0], m[3]);  // archive order does not matter: names are sorted
  m.push_back({"__MACOSX/00000/._img00000000.png", "resource fork"});
  write_zip(zp, m);
  LoadOptions opt;
  const ImageSet s = load_dataset(zp.string(), opt);
  ASSERT_EQ(s.count, 5);
  EXPECT_EQ(s.res, 32);
  EXPECT_EQ(s.channels, 3);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{2, 0, 1, 0, 2}));
  EXPECT_EQ(s.num_classes, 3);
  EXPECT_EQ(s.name, "cifar-like");
  EXPECT_TRUE(s.warnings.empty()) << s.warnings[0];
  for (int i = 0; i < 5; ++i) {  // BGR (10 i, 100, 200) -> RGB (200, 100, 10 i), every pixel
    EXPECT_EQ(s.image(i)[0], 200);
    EXPECT_EQ(s.image(i)[1], 100);
    EXPECT_EQ(s.image(i)[32 * 32 * 3 - 1], 10 * i);
  }
}

TEST(ZipDataset, UnlabelledWithNullLabelsOrWithoutJson) {
  TempDir dir("ampgan-zip");
  write_zip(dir / "a.zip", five(false));
  std::vector<Member> m = five(false);
  m.pop_back();
  write_zip(dir / "b.zip", m);
  for (const char* f : {"a.zip", "b.zip"}) {
    const ImageSet s = load_dataset((dir / f).string(), LoadOptions{});
    EXPECT_EQ(s.count, 5) << f;
    EXPECT_TRUE(s.labels.empty()) << f;
    EXPECT_EQ(s.num_classes, 0) << f;
  }
}

TEST(ZipDataset, ConvertsRgbaGreyAlphaAndSixteenBitWithACount) {
  TempDir dir("ampgan-zip");
  // OpenCV decodes a grey + alpha PNG as BGRA with equal colours; the counter tells it apart
  // from RGBA by those colours.
  write_zip(dir / "mixed.zip", {{"a_rgba.png", png(solid(32, 32, CV_8UC4, {30, 60, 90, 128}))},
                                {"b_la.png", png(solid(32, 32, CV_8UC4, {70, 70, 70, 255}))},
                                {"c16.png", png(solid(32, 32, CV_16UC3, {65535, 0, 32896}))},
                                {"d16.png", png(solid(32, 32, CV_16UC1, {25700}))},
                                {"e.png", png(solid(32, 32, CV_8UC3, {1, 2, 3}))},
                                {"readme.txt", "not an image"}});
  const ImageSet s = load_dataset((dir / "mixed.zip").string(), LoadOptions{});
  ASSERT_EQ(s.count, 5);
  EXPECT_EQ(s.channels, 3);
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[0].find("converted 1 RGBA (alpha dropped), 1 grey+alpha (alpha dropped), 2 16-bit"),
            std::string::npos)
      << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("readme.txt"), std::string::npos) << s.warnings[1];
  EXPECT_EQ(s.image(0)[0], 90);   // RGBA: colour kept, alpha dropped
  EXPECT_EQ(s.image(2)[0], 128);  // 16-bit 32896 / 257
  EXPECT_EQ(s.image(3)[0], 100);  // grey 25700 / 257, to RGB
}

TEST(ZipDataset, BadArchivesGiveAClearError) {
  TempDir dir("ampgan-zip");
  const std::string bad = (dir / "bad.zip").string();
  std::ofstream(bad) << "PK\x03\x04 but nothing after that a zip reader can use";
  expect_error([&] { load_dataset(bad, LoadOptions{}); }, {bad, "not a readable zip archive"});
  const std::string junk = (dir / "junk.zip").string();
  std::ofstream(junk) << "no zip at all";
  expect_error([&] { load_dataset(junk, LoadOptions{}); }, {junk, "not a readable zip archive"});

  // Truncated: a good archive cut short (a failed download).
  write_zip(dir / "good.zip", five(true));
  const std::string bytes = ampgan::io::read_file(dir / "good.zip");
  const std::string cut = (dir / "cut.zip").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_error([&] { load_dataset(cut, LoadOptions{}); }, {cut, "not a readable zip archive"});

  // One image's stored bytes damaged: its CRC no longer matches.
  std::string damaged = bytes;
  const size_t at = damaged.find("IDAT");  // inside the first stored PNG
  ASSERT_NE(at, std::string::npos);
  damaged[at + 8] ^= 0x5a;
  const std::string dz = (dir / "damaged.zip").string();
  std::ofstream(dz, std::ios::binary) << damaged;
  expect_error([&] { load_dataset(dz, LoadOptions{}); }, {dz, "is damaged", "fetch it again"});

  write_zip(dir / "empty.zip", {{"notes/readme.txt", "hello"}});
  expect_error([&] { load_dataset((dir / "empty.zip").string(), LoadOptions{}); },
               {"empty.zip", "no image files", "readme.txt"});
}

TEST(ZipDataset, DatasetJsonThatDoesNotMatchIsAnError) {
  TempDir dir("ampgan-zip");
  auto with_json = [&](const std::string& name, const std::string& json) {
    std::vector<Member> m = five(true);
    m.back().bytes = json;
    write_zip(dir / name, m);
    return (dir / name).string();
  };
  const std::string two = R"([["00000/img00000000.png", 1], ["00000/img00000001.png", 1], )"
                          R"(["00000/img00000002.png", 1], ["00000/img00000003.png", 1])";
  expect_error([&] { load_dataset(with_json("few.zip", "{\"labels\": " + two + "]}"), LoadOptions{}); },
               {"few.zip: dataset.json", "no label for 1 image", "img00000004.png"});
  expect_error(
      [&] {
        load_dataset(
            with_json("extra.zip", "{\"labels\": " + two + R"(, ["00000/img00000004.png", 0], ["x.png", 3]]})"),
            LoadOptions{});
      },
      {"extra.zip: dataset.json", "does not hold", "x.png"});
  expect_error([&] { load_dataset(with_json("syntax.zip", "{\"labels\": [["), LoadOptions{}); },
               {"syntax.zip: dataset.json", "not valid JSON"});
  expect_error([&] { load_dataset(with_json("nokey.zip", "{\"classes\": 3}"), LoadOptions{}); },
               {"nokey.zip: dataset.json", "no \"labels\" key"});
  expect_error(
      [&] {
        load_dataset(with_json("neg.zip", "{\"labels\": " + two + R"(, ["00000/img00000004.png", -1]]})"),
                     LoadOptions{});
      },
      {"neg.zip: dataset.json", "whole class from 0"});
}

// A dataset.json far larger than labels for the archive's images can be (the probe's: 200 MB
// in a 456 KB zip took 2.8 GB before it failed) is refused from its size, never unpacked.
TEST(ZipDataset, DatasetJsonLargerThanItsLabelsCanBeIsNotUnpacked) {
  TempDir dir("ampgan-zip");
  std::vector<Member> m = five(false);
  m.back().bytes = R"({"labels": null})" + std::string(size_t{8} << 20, ' ');  // valid JSON, 8 MiB
  write_zip(dir / "padded-json.zip", m);
  expect_error([&] { load_dataset((dir / "padded-json.zip").string(), LoadOptions{}); },
               {"padded-json.zip: dataset.json", "would unpack to 8.0 MiB", "the labels of 5 images can take"});
  EXPECT_LT(dataset_json_max_bytes({"00000/img00000000.png"}), uint64_t{1} << 20);
}

// One huge label (1,000,000 among five images) made the FD classifier a million classes: labels
// are checked against the images; the classes that occur are numbered densely.
TEST(ZipDataset, OneHugeLabelDoesNotMakeAMillionClasses) {
  TempDir dir("ampgan-zip");
  std::vector<Member> m = five(true);
  const std::string json = m.back().bytes;
  m.back().bytes = json.substr(0, json.rfind(", 2]")) + ", 1000000]]}";
  write_zip(dir / "huge-label.zip", m);
  const ImageSet s = load_dataset((dir / "huge-label.zip").string(), LoadOptions{});
  EXPECT_EQ(s.num_classes, 4);  // 0, 1, 2 and 1000000 occur
  EXPECT_EQ(s.labels, (std::vector<int32_t>{2, 0, 1, 0, 3}));
  std::string w;
  for (const auto& x : s.warnings) w += x + "\n";
  EXPECT_NE(w.find("name class 1000000 for 5 images"), std::string::npos) << w;
}

// Entries whose names climb out of the archive's root are skipped with a word, not silently.
TEST(ZipDataset, EntriesLeadingOutOfTheArchiveAreNamed) {
  TempDir dir("ampgan-zip");
  std::vector<Member> m = five(false);
  m.push_back({"../evil.png", m[0].bytes});
  m.push_back({"00000/../../up.png", m[0].bytes});
  write_zip(dir / "climb.zip", m);
  const ImageSet s = load_dataset((dir / "climb.zip").string(), LoadOptions{});
  EXPECT_EQ(s.count, 5);
  std::string w;
  for (const auto& x : s.warnings) w += x + "\n";
  EXPECT_NE(w.find("skipped 2 entries whose names lead out of the archive's root"), std::string::npos) << w;
  EXPECT_NE(w.find("../evil.png"), std::string::npos) << w;
}

// libzip's own words said "File already exists" for two entries of one name and "No error" for
// an entry that ends early; the messages say what is wrong with the archive.
TEST(ZipDataset, DamagedArchivesAreDescribedInTheirOwnTerms) {
  TempDir dir("ampgan-zip");
  std::vector<Member> m = five(false);
  m[1].name = "00000/img0000000X.png";  // as long as m[0]'s name, so the bytes can be patched
  write_zip(dir / "good.zip", m);
  std::string bytes = ampgan::io::read_file(dir / "good.zip");
  for (size_t at; (at = bytes.find("img0000000X")) != std::string::npos;) bytes.replace(at, 11, "img00000000");
  const std::string twice = (dir / "twice.zip").string();
  std::ofstream(twice, std::ios::binary) << bytes;
  const std::string e = ampgan::testing::error_of([&] { load_dataset(twice, LoadOptions{}); });
  EXPECT_NE(e.find("two of its entries have the same name"), std::string::npos) << e;
  EXPECT_EQ(e.find("File already exists"), std::string::npos) << e;
  EXPECT_EQ(e.find("No error"), std::string::npos) << e;
}

// dataset.json may name the classes ("class_names", not dataset_tool's); a list that does not
// cover every class, or is not all strings, is ignored.
TEST(ZipDataset, ClassNamesFromDatasetJsonWhenTheyCoverTheClasses) {
  TempDir dir("ampgan-zip");
  auto load_with = [&](const std::string& file, const std::string& names) {
    std::vector<Member> m = five(true);
    std::string& json = m.back().bytes;
    json.insert(json.rfind('}'), ", \"class_names\": " + names);
    write_zip(dir / file, m);
    return load_dataset((dir / file).string(), LoadOptions{});
  };
  const ImageSet s = load_with("named.zip", R"(["cat", "dog", "bird"])");
  ASSERT_EQ(s.num_classes, 3);
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"cat", "dog", "bird"}));
  EXPECT_EQ(class_name(s, s.labels[0]), "bird");  // img00000000.png is class 2
  EXPECT_EQ(load_with("more.zip", R"(["cat", "dog", "bird", "fish"])").class_names,
            (std::vector<std::string>{"cat", "dog", "bird"}));
  for (const char* bad : {R"(["cat", "dog"])", R"(["cat", 1, "bird"])", R"("cat")", "null"}) {
    const ImageSet b = load_with("bad.zip", bad);
    EXPECT_EQ(b.num_classes, 3) << bad;
    EXPECT_TRUE(b.class_names.empty()) << bad;
    EXPECT_EQ(class_name(b, 2), "class 2") << bad;
  }
  write_zip(dir / "plain.zip", five(true));
  EXPECT_TRUE(load_dataset((dir / "plain.zip").string(), LoadOptions{}).class_names.empty());
  // The names are not part of what the set is: the fingerprint does not see them.
  ImageSet unnamed = s;
  unnamed.class_names.clear();
  EXPECT_EQ(fingerprint(unnamed), fingerprint(s));
}
