// Class labels and names of the labelled dataset kinds: image folders in torchvision's
// ImageFolder layout (root/<class>/.../img.png), Fashion-MNIST and MNIST.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "core/data/image_folder.h"
#include "core/data/image_set.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using ampgan::testing::ScopedEnv;
using ampgan::testing::TempDir;
using namespace ampgan::data;

namespace {

// A 16x16 image of one RGB colour at dir/rel (folders created).
void write_solid(const fs::path& dir, const std::string& rel, cv::Vec3b rgb) {
  const fs::path p = dir / rel;
  fs::create_directories(p.parent_path());
  ASSERT_TRUE(cv::imwrite(p.string(), cv::Mat(16, 16, CV_8UC3, cv::Scalar(rgb[2], rgb[1], rgb[0]))));
}

// The RGB colour of image i's centre pixel.
cv::Vec3b colour_of(const ImageSet& s, int i) {
  const uint8_t* px = s.image(i) + 3 * (s.res * s.res / 2 + s.res / 2);
  return {px[0], px[1], px[2]};
}

std::string all_warnings(const ImageSet& s) {
  std::string w;
  for (const auto& x : s.warnings) w += x + "\n";
  return w;
}

// Each image's class, by its colour: every image of a colour has the one label of its folder.
void expect_labels_follow_colours(const ImageSet& s, const std::map<std::string, cv::Vec3b>& colour_of_class) {
  ASSERT_EQ(s.labels.size(), static_cast<size_t>(s.count));
  for (int i = 0; i < s.count; ++i) {
    const std::string name = class_name(s, s.labels[i]);
    ASSERT_TRUE(colour_of_class.count(name)) << "image " << i << " has label " << s.labels[i] << " (" << name << ")";
    EXPECT_EQ(colour_of(s, i), colour_of_class.at(name)) << "image " << i << " labelled " << name;
  }
}

void put_be32(std::string& s, uint32_t v) {
  for (int sh = 24; sh >= 0; sh -= 8) s.push_back(static_cast<char>((v >> sh) & 0xFF));
}

// Raw (not gzipped) t10k IDX files of n 28x28 images with the given labels, as MNIST names them.
void write_t10k(const fs::path& dir, const std::vector<uint8_t>& labels) {
  const uint32_t n = static_cast<uint32_t>(labels.size());
  std::string images, lab;
  put_be32(images, 0x803);
  for (uint32_t d : {n, 28u, 28u}) put_be32(images, d);
  images.append(size_t(n) * 28 * 28, '\x40');
  put_be32(lab, 0x801);
  put_be32(lab, n);
  lab.append(labels.begin(), labels.end());
  std::ofstream(dir / "t10k-images-idx3-ubyte", std::ios::binary) << images;
  std::ofstream(dir / "t10k-labels-idx1-ubyte", std::ios::binary) << lab;
}

}  // namespace

// Classes are numbered in the sorted order of the subfolders' names, not the order they were
// made in; images in deeper folders belong to their first-level folder.
TEST(FolderLabels, SubfoldersAreClassesInSortedOrder) {
  TempDir dir("ampgan-labels");
  const std::map<std::string, cv::Vec3b> colours = {
      {"zebra", {200, 0, 0}}, {"mango", {0, 200, 0}}, {"Apple", {0, 0, 200}}};
  write_solid(dir.path(), "zebra/z1.png", colours.at("zebra"));
  write_solid(dir.path(), "mango/m1.png", colours.at("mango"));
  write_solid(dir.path(), "mango/deep/er/m2.png", colours.at("mango"));
  for (const char* f : {"Apple/a1.png", "Apple/a2.png", "Apple/a3.png"})
    write_solid(dir.path(), f, colours.at("Apple"));
  std::ofstream(dir / "README.txt") << "not an image: does not make the root hold images";

  const ImageSet s = load_dataset(dir.path().string(), LoadOptions{});
  ASSERT_EQ(s.count, 6);
  ASSERT_EQ(s.num_classes, 3);
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"Apple", "mango", "zebra"}));  // byte-wise: upper case first
  std::vector<int> per_class(3);
  for (int32_t l : s.labels) ++per_class.at(l);
  EXPECT_EQ(per_class, (std::vector<int>{3, 2, 1}));
  expect_labels_follow_colours(s, colours);
  EXPECT_NE(fingerprint(s).find("labelled"), std::string::npos) << fingerprint(s);
}

// An image that does not decode takes its label with it; the rest stay with their images.
TEST(FolderLabels, UndecodableImageDropsItsLabel) {
  TempDir dir("ampgan-labels");
  const std::map<std::string, cv::Vec3b> colours = {{"a", {250, 10, 10}}, {"b", {10, 250, 10}}, {"c", {10, 10, 250}}};
  write_solid(dir.path(), "a/1.png", colours.at("a"));
  fs::create_directories(dir / "a");
  std::ofstream(dir / "a" / "2_broken.png") << "this is not a PNG";
  write_solid(dir.path(), "a/3.png", colours.at("a"));
  write_solid(dir.path(), "b/1.png", colours.at("b"));
  write_solid(dir.path(), "c/1.png", colours.at("c"));
  write_solid(dir.path(), "c/2.png", colours.at("c"));

  const ImageSet s = load_dataset(dir.path().string(), LoadOptions{});
  ASSERT_EQ(s.count, 5);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(s.num_classes, 3);
  expect_labels_follow_colours(s, colours);
  EXPECT_NE(all_warnings(s).find("2_broken.png"), std::string::npos) << all_warnings(s);
}

// A class whose only image fails keeps its number and name: the others' numbers do not shift.
TEST(FolderLabels, ClassWithoutDecodedImagesKeepsTheNumbering) {
  TempDir dir("ampgan-labels");
  write_solid(dir.path(), "a/1.png", {100, 0, 0});
  write_solid(dir.path(), "b/1.png", {0, 100, 0});
  fs::create_directories(dir / "c");
  std::ofstream(dir / "c" / "only.png") << "not a PNG either";

  const ImageSet s = load_dataset(dir.path().string(), LoadOptions{});
  ASSERT_EQ(s.count, 2);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(s.num_classes, 3);
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"a", "b", "c"}));
}

// Images at the root beside class folders fit no class: the folder loads unlabelled, and says why.
TEST(FolderLabels, ImagesAtTheRootBesideSubfoldersLeaveItUnlabelled) {
  TempDir dir("ampgan-labels");
  write_solid(dir.path(), "cats/1.png", {1, 2, 3});
  write_solid(dir.path(), "dogs/1.png", {4, 5, 6});
  write_solid(dir.path(), "stray1.png", {7, 8, 9});
  write_solid(dir.path(), "stray2.png", {7, 8, 9});

  const ImageSet s = load_image_folder(dir.path().string(), LoadOptions{});
  EXPECT_EQ(s.count, 4);
  EXPECT_TRUE(s.labels.empty());
  EXPECT_EQ(s.num_classes, 0);
  EXPECT_TRUE(s.class_names.empty());
  const std::string w = all_warnings(s);
  EXPECT_NE(w.find("2 image(s) lie directly in " + dir.path().string()), std::string::npos) << w;
  EXPECT_NE(w.find("loaded without labels"), std::string::npos) << w;
}

// One subfolder (photos/all/...) is not a split into classes, and not worth a warning.
TEST(FolderLabels, SingleSubfolderIsUnlabelledWithoutWarning) {
  TempDir dir("ampgan-labels");
  write_solid(dir.path(), "all/1.png", {1, 2, 3});
  write_solid(dir.path(), "all/2.png", {4, 5, 6});
  const ImageSet s = load_image_folder(dir.path().string(), LoadOptions{});
  EXPECT_EQ(s.count, 2);
  EXPECT_TRUE(s.labels.empty());
  EXPECT_TRUE(s.class_names.empty());
  EXPECT_TRUE(s.warnings.empty()) << all_warnings(s);
}

TEST(ClassName, KnownNameElseClassNumber) {
  ImageSet s;
  s.num_classes = 3;
  EXPECT_EQ(class_name(s, 2), "class 2");
  s.class_names = {"x", "y", "z"};
  EXPECT_EQ(class_name(s, 1), "y");
  EXPECT_EQ(class_name(s, 3), "class 3");
  EXPECT_EQ(class_name(s, -1), "class -1");
}

TEST(IdxClassNames, FashionMnistFilesGetTheOfficialNames) {
  TempDir dir("ampgan-labels");
  write_t10k(dir.path(), {9, 0, 3, 7});
  ScopedEnv env("AMPGAN_FASHION_MNIST_DIR", dir.path().string());
  LoadOptions opt;
  opt.test_split = true;
  const ImageSet s = load_dataset("fashion-mnist", opt);
  ASSERT_EQ(s.num_classes, 10);
  ASSERT_EQ(s.class_names.size(), 10u);
  EXPECT_EQ(class_name(s, s.labels[0]), "Ankle boot");
  EXPECT_EQ(class_name(s, s.labels[1]), "T-shirt/top");
  EXPECT_EQ(class_name(s, s.labels[2]), "Dress");
  EXPECT_EQ(class_name(s, s.labels[3]), "Sneaker");
}

// Fewer classes in the files than Fashion-MNIST has: names for those that are there.
TEST(IdxClassNames, FewerClassesGetAsManyNames) {
  TempDir dir("ampgan-labels");
  write_t10k(dir.path(), {0, 2, 1});
  ScopedEnv env("AMPGAN_FASHION_MNIST_DIR", dir.path().string());
  LoadOptions opt;
  opt.test_split = true;
  const ImageSet s = load_dataset("fashion-mnist", opt);
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"T-shirt/top", "Trouser", "Pullover"}));
}

TEST(IdxClassNames, MnistClassesAreTheDigits) {
  TempDir dir("ampgan-labels");
  write_t10k(dir.path(), {5, 9, 0, 1, 2, 3, 4, 6, 7, 8});
  ScopedEnv env("AMPGAN_MNIST_DIR", dir.path().string());
  LoadOptions opt;
  opt.test_split = true;
  const ImageSet s = load_dataset("mnist", opt);
  ASSERT_EQ(s.class_names.size(), 10u);
  for (int i = 0; i < s.count; ++i) EXPECT_EQ(class_name(s, s.labels[i]), std::to_string(s.labels[i]));
}

TEST(IdxClassNames, InstalledFashionMnistHasTenNamedClasses) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST not installed (apt install dataset-fashion-mnist)";
  ScopedEnv env("AMPGAN_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist");
  LoadOptions opt;
  opt.test_split = true;
  const ImageSet s = load_dataset("fashion-mnist", opt);
  ASSERT_EQ(s.num_classes, 10);
  ASSERT_EQ(s.class_names.size(), 10u);
  EXPECT_EQ(class_name(s, 0), "T-shirt/top");
  EXPECT_EQ(class_name(s, 9), "Ankle boot");
}
