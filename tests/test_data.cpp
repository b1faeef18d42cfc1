// Dataset module: IDX (Fashion-MNIST), image folders, synthetic shapes, the batch loader, and
// the error messages for bad input.
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "core/common/error.h"
#include "core/data/batch_loader.h"
#include "core/data/idx_dataset.h"
#include "core/data/image_folder.h"
#include "core/data/image_set.h"
#include "core/data/synthetic.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using ampgan::Error;
using ampgan::testing::ScopedEnv;
using ampgan::testing::TempDir;
using namespace ampgan::data;

using ampgan::testing::expect_error;

namespace {

const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

void put_be32(std::string& s, uint32_t v) {
  for (int sh = 24; sh >= 0; sh -= 8) s.push_back(static_cast<char>((v >> sh) & 0xFF));
}

std::string idx_bytes(uint32_t magic, std::initializer_list<uint32_t> dims, const std::vector<uint8_t>& data) {
  std::string s;
  put_be32(s, magic);
  for (uint32_t d : dims) put_be32(s, d);
  s.append(data.begin(), data.end());
  return s;
}

void write_file(const fs::path& p, const std::string& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(p.string().c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// n images of h x w, pixel values 1..255 (never 0, so padding is recognisable).
std::vector<uint8_t> test_pixels(int n, int h, int w) {
  std::vector<uint8_t> v(size_t(n) * h * w);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(1 + (i * 37 + i / 7) % 255);
  return v;
}

// Whole gzip file decompressed (for comparing against the original Fashion-MNIST bytes).
std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  for (int r; f && (r = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, r);
  if (f) gzclose(f);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Real Fashion-MNIST (Debian's dataset-fashion-mnist), loaded once for the suite.

class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(fs::path(kFashionDir) / "train-images-idx3-ubyte.gz")) return;
    LoadOptions opt;
    opt.res = 32;
    train_ = new ImageSet(load_dataset("fashion-mnist", opt));
    opt.test_split = true;
    test_ = new ImageSet(load_dataset("fashion-mnist", opt));
  }
  static void TearDownTestSuite() {
    delete train_;
    delete test_;
    train_ = test_ = nullptr;
  }
  void SetUp() override {
    if (!train_) GTEST_SKIP() << "Fashion-MNIST not installed (apt install dataset-fashion-mnist)";
  }
  static std::array<int, 10> histogram(const ImageSet& s) {
    std::array<int, 10> h{};
    for (int32_t l : s.labels) {
      EXPECT_TRUE(l >= 0 && l < 10);
      if (l >= 0 && l < 10) ++h[l];
    }
    return h;
  }
  static ImageSet* train_;
  static ImageSet* test_;
};
ImageSet* FashionMnist::train_ = nullptr;
ImageSet* FashionMnist::test_ = nullptr;

TEST_F(FashionMnist, TrainSplitHas60000BalancedImages) {
  const ImageSet& s = *train_;
  EXPECT_EQ(s.count, 60000);
  EXPECT_EQ(s.res, 32);
  EXPECT_EQ(s.channels, 1);
  EXPECT_EQ(s.num_classes, 10);
  EXPECT_EQ(s.name, "fashion-mnist");
  EXPECT_NE(s.source.find("train-images-idx3-ubyte"), std::string::npos);
  ASSERT_EQ(s.pixels.size(), size_t(60000) * 32 * 32);
  ASSERT_EQ(s.labels.size(), 60000u);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(histogram(s)[c], 6000) << "class " << c;
  EXPECT_TRUE(s.warnings.empty());
}

TEST_F(FashionMnist, TestSplitHas10000Images) {
  EXPECT_EQ(test_->count, 10000);
  EXPECT_EQ(test_->labels.size(), 10000u);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(histogram(*test_)[c], 1000) << "class " << c;
  EXPECT_NE(test_->source.find("t10k"), std::string::npos);
}

TEST_F(FashionMnist, PaddingIsBlackAndCentreIsTheOriginal) {
  const std::string raw = gunzip(std::string(kFashionDir) + "/train-images-idx3-ubyte.gz");
  const std::string lab = gunzip(std::string(kFashionDir) + "/train-labels-idx1-ubyte.gz");
  ASSERT_EQ(raw.size(), 16u + 60000u * 784u);
  for (int i : {0, 1, 12345, 59999}) {
    const uint8_t* img = train_->image(i);
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const bool border = y < 2 || y >= 30 || x < 2 || x >= 30;
        const uint8_t want = border ? 0 : static_cast<uint8_t>(raw[16 + size_t(i) * 784 + (y - 2) * 28 + (x - 2)]);
        ASSERT_EQ(img[y * 32 + x], want) << "image " << i << " at " << x << "," << y;
      }
    EXPECT_EQ(train_->labels[i], static_cast<uint8_t>(lab[8 + i]));
  }
}

TEST_F(FashionMnist, Res64RgbIsUpscaledAndReplicated) {
  LoadOptions opt;
  opt.res = 64;
  opt.channels = 3;
  opt.test_split = true;
  const ImageSet s = load_dataset("fashion-mnist", opt);
  ASSERT_EQ(s.count, 10000);
  EXPECT_EQ(s.res, 64);
  EXPECT_EQ(s.channels, 3);
  ASSERT_EQ(s.pixels.size(), size_t(10000) * 64 * 64 * 3);
  const uint8_t* img = s.image(7);
  long sum = 0;
  for (int p = 0; p < 64 * 64; ++p) {
    ASSERT_EQ(img[3 * p], img[3 * p + 1]);
    ASSERT_EQ(img[3 * p], img[3 * p + 2]);
    sum += img[3 * p];
  }
  EXPECT_GT(sum, 0);
  // The 2-pixel black border of the 32x32 square stays black in the outer 3 rows after a 2x
  // bilinear enlargement (their sample points fall on source rows 0 and 1).
  for (int y : {0, 1, 2, 61, 62, 63})
    for (int x = 0; x < 64; ++x) ASSERT_EQ(img[(y * 64 + x) * 3], 0) << x << "," << y;
}

TEST(FashionMnistMissing, ExplainsHowToInstall) {
  TempDir dir("ampgan-data");
  ScopedEnv env("AMPGAN_FASHION_MNIST_DIR", dir.path().string());
  expect_error([] { load_dataset("fashion-mnist", LoadOptions{}); },
               {dir.path().string(), "dataset-fashion-mnist", "AMPGAN_FASHION_MNIST_DIR"});
}

TEST(FashionMnistMissing, HonoursEnvironmentFolder) {
  TempDir dir("ampgan-data");
  const auto px = test_pixels(5, 28, 28);
  write_file(dir / "t10k-images-idx3-ubyte.gz", idx_bytes(0x803, {5, 28, 28}, px), true);
  write_file(dir / "t10k-labels-idx1-ubyte.gz", idx_bytes(0x801, {5}, {0, 1, 2, 3, 4}), true);
  ScopedEnv env("AMPGAN_FASHION_MNIST_DIR", dir.path().string());
  LoadOptions opt;
  opt.test_split = true;
  const ImageSet s = load_dataset("fashion-mnist", opt);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.num_classes, 5);
  EXPECT_EQ(s.name, "fashion-mnist");
  EXPECT_NE(s.source.find(dir.path().string()), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// IDX files written by the test.

TEST(Idx, RawFileWithLabelsBesideIt) {
  TempDir dir("ampgan-data");
  const auto px = test_pixels(3, 28, 28);
  write_file(dir / "my-images-idx3-ubyte", idx_bytes(0x803, {3, 28, 28}, px), false);
  write_file(dir / "my-labels-idx1-ubyte", idx_bytes(0x801, {3}, {2, 0, 7}), false);
  const ImageSet s = load_dataset((dir / "my-images-idx3-ubyte").string(), LoadOptions{});
  ASSERT_EQ(s.count, 3);
  EXPECT_EQ(s.res, 32);
  EXPECT_EQ(s.channels, 1);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{2, 0, 7}));
  EXPECT_EQ(s.num_classes, 8);
  EXPECT_EQ(s.name, "my-images-idx3-ubyte");
  for (int i = 0; i < 3; ++i)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const bool border = y < 2 || y >= 30 || x < 2 || x >= 30;
        ASSERT_EQ(s.image(i)[y * 32 + x], border ? 0 : px[i * 784 + (y - 2) * 28 + (x - 2)]);
      }
}

TEST(Idx, GzipAndRawGiveTheSameImages) {
  TempDir dir("ampgan-data");
  const std::string bytes = idx_bytes(0x803, {4, 28, 28}, test_pixels(4, 28, 28));
  write_file(dir / "a-images-idx3-ubyte", bytes, false);
  write_file(dir / "b-images-idx3-ubyte.gz", bytes, true);
  LoadOptions opt;
  opt.res = 64;
  const ImageSet raw = load_idx((dir / "a-images-idx3-ubyte").string(), "", opt);
  const ImageSet gz = load_idx((dir / "b-images-idx3-ubyte.gz").string(), "", opt);
  EXPECT_EQ(raw.res, 64);
  EXPECT_TRUE(raw.labels.empty());
  EXPECT_EQ(raw.num_classes, 0);
  EXPECT_EQ(raw.pixels, gz.pixels);
}

TEST(Idx, TrailingBytesAreReportedNotFatal) {
  TempDir dir("ampgan-data");
  const fs::path p = dir / "tail-images-idx3-ubyte.gz";
  write_file(p, idx_bytes(0x803, {2, 28, 28}, test_pixels(2, 28, 28)) + "extra", true);
  const ImageSet s = load_idx(p.string(), "", LoadOptions{});
  EXPECT_EQ(s.count, 2);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("ignored 5 bytes"), std::string::npos) << s.warnings[0];
}

TEST(Idx, NonSquareImagesArePaddedToAPowerOfTwoCentred) {
  TempDir dir("ampgan-data");
  const auto px = test_pixels(1, 20, 12);  // padded to 32x32: 6 rows above, 10 columns left
  write_file(dir / "x-images-idx3-ubyte", idx_bytes(0x803, {1, 20, 12}, px), false);
  const ImageSet s = load_idx((dir / "x-images-idx3-ubyte").string(), "", LoadOptions{});
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) {
      const bool inside = y >= 6 && y < 26 && x >= 10 && x < 22;
      ASSERT_EQ(s.image(0)[y * 32 + x], inside ? px[(y - 6) * 12 + (x - 10)] : 0) << x << "," << y;
    }
}

TEST(Idx, Res128DownscaleOfLargeImages) {
  TempDir dir("ampgan-data");
  std::vector<uint8_t> px(2 * 200 * 200, 200);  // padded to 256, shrunk to 128 (INTER_AREA)
  write_file(dir / "big-images-idx3-ubyte", idx_bytes(0x803, {2, 200, 200}, px), false);
  LoadOptions opt;
  opt.res = 128;
  const ImageSet s = load_idx((dir / "big-images-idx3-ubyte").string(), "", opt);
  ASSERT_EQ(s.pixels.size(), 2u * 128 * 128);
  EXPECT_EQ(s.image(1)[0], 0);                // 28-pixel black border -> 14 pixels
  EXPECT_EQ(s.image(1)[64 * 128 + 64], 200);  // a uniform area stays exactly uniform
}

TEST(Idx, WrongMagicNumber) {
  TempDir dir("ampgan-data");
  const fs::path p = dir / "bad-images-idx3-ubyte";
  write_file(p, idx_bytes(0x12345678, {1, 28, 28}, test_pixels(1, 28, 28)), false);
  expect_error([&] { load_dataset(p.string(), LoadOptions{}); }, {p.string(), "magic", "0x12345678"});
  // A labels file given where images are expected says so.
  const fs::path l = dir / "labels-only";
  write_file(l, idx_bytes(0x801, {3}, {1, 2, 3}), false);
  expect_error([&] { load_dataset(l.string(), LoadOptions{}); }, {l.string(), "labels file"});
}

TEST(Idx, TruncatedData) {
  TempDir dir("ampgan-data");
  std::string bytes = idx_bytes(0x803, {10, 28, 28}, test_pixels(10, 28, 28));
  bytes.resize(bytes.size() - 100);
  const fs::path raw = dir / "t-images-idx3-ubyte", gz = dir / "t-images-idx3-ubyte.gz";
  write_file(raw, bytes, false);
  write_file(gz, bytes, true);
  expect_error([&] { load_dataset(raw.string(), LoadOptions{}); }, {raw.string(), "truncated"});
  expect_error([&] { load_dataset(gz.string(), LoadOptions{}); }, {gz.string(), "truncated"});
  // Header cut short.
  const fs::path h = dir / "h-images-idx3-ubyte";
  write_file(h, bytes.substr(0, 6), false);
  expect_error([&] { load_dataset(h.string(), LoadOptions{}); }, {h.string(), "truncated"});
}

TEST(Idx, GzipFileCutShort) {
  TempDir dir("ampgan-data");
  const fs::path full = dir / "f.gz", cut = dir / "c-images-idx3-ubyte.gz";
  write_file(full, idx_bytes(0x803, {50, 28, 28}, test_pixels(50, 28, 28)), true);
  const std::string z = read_file(full);
  write_file(cut, z.substr(0, z.size() / 2), false);
  expect_error([&] { load_dataset(cut.string(), LoadOptions{}); }, {cut.string()});
}

TEST(Idx, CorruptGzipStream) {
  TempDir dir("ampgan-data");
  const fs::path good = dir / "g.gz", bad = dir / "z-images-idx3-ubyte.gz";
  write_file(good, idx_bytes(0x803, {50, 28, 28}, test_pixels(50, 28, 28)), true);
  std::string z = read_file(good);
  ASSERT_GT(z.size(), 200u);
  for (size_t i = z.size() / 2; i < z.size() / 2 + 16; ++i) z[i] = static_cast<char>(z[i] ^ 0x5A);
  write_file(bad, z, false);
  expect_error([&] { load_dataset(bad.string(), LoadOptions{}); }, {bad.string(), "corrupt"});
}

TEST(Idx, CorruptStoredBlockIsCaughtByTheChecksum) {
  // Incompressible data is stored verbatim, so flipped bytes inflate "fine"; only the CRC at
  // the end of the stream reveals them.
  TempDir dir("ampgan-data");
  std::vector<uint8_t> noise(4 * 28 * 28);
  uint32_t st = 12345;
  for (auto& v : noise) v = static_cast<uint8_t>((st = st * 1664525u + 1013904223u) >> 24);
  const fs::path good = dir / "g.gz", bad = dir / "n-images-idx3-ubyte.gz";
  write_file(good, idx_bytes(0x803, {4, 28, 28}, noise), true);
  std::string z = read_file(good);
  z[z.size() / 2] = static_cast<char>(z[z.size() / 2] ^ 0x01);
  write_file(bad, z, false);
  expect_error([&] { load_dataset(bad.string(), LoadOptions{}); }, {bad.string(), "corrupt"});
}

TEST(Idx, ImageAndLabelCountsDisagree) {
  TempDir dir("ampgan-data");
  const fs::path img = dir / "m-images-idx3-ubyte", lab = dir / "m-labels-idx1-ubyte";
  write_file(img, idx_bytes(0x803, {3, 28, 28}, test_pixels(3, 28, 28)), false);
  write_file(lab, idx_bytes(0x801, {2}, {0, 1}), false);
  expect_error([&] { load_dataset(img.string(), LoadOptions{}); }, {lab.string(), "3 images", "2 labels"});
}

TEST(Idx, ForcedThreeChannelsReplicateGrey) {
  TempDir dir("ampgan-data");
  const auto px = test_pixels(2, 28, 28);
  write_file(dir / "r-images-idx3-ubyte", idx_bytes(0x803, {2, 28, 28}, px), false);
  LoadOptions opt;
  opt.channels = 3;
  const ImageSet s = load_idx((dir / "r-images-idx3-ubyte").string(), "", opt);
  ASSERT_EQ(s.channels, 3);
  const uint8_t* p = s.image(1) + (5 * 32 + 9) * 3;
  const uint8_t want = px[784 + 3 * 28 + 7];
  EXPECT_EQ(p[0], want);
  EXPECT_EQ(p[1], want);
  EXPECT_EQ(p[2], want);
}

// ---------------------------------------------------------------------------------------------
// Paths, options, cancellation.

TEST(LoadDataset, MissingPath) {
  const std::string p = "/nonexistent/ampgan/no-such-dataset";
  expect_error([&] { load_dataset(p, LoadOptions{}); }, {p, "no such file or folder"});
}

TEST(LoadDataset, CancelAndProgress) {
  std::atomic<bool> cancel{true};
  LoadOptions opt;
  opt.cancel = &cancel;
  expect_error([&] { load_dataset("synthetic", opt); }, {"loading cancelled"});

  TempDir dir("ampgan-data");
  const fs::path p = dir / "p-images-idx3-ubyte";
  write_file(p, idx_bytes(0x803, {1200, 28, 28}, test_pixels(1200, 28, 28)), false);
  expect_error([&] { load_dataset(p.string(), opt); }, {"loading cancelled", p.string()});

  cancel = false;
  int last_done = -1, last_total = -1, calls = 0;
  bool increasing = true;
  opt.progress = [&](int done, int total) {
    increasing = increasing && done > last_done;
    last_done = done, last_total = total, ++calls;
  };
  const ImageSet s = load_dataset(p.string(), opt);
  EXPECT_EQ(s.count, 1200);
  EXPECT_GE(calls, 2);  // reported per block, not only at the end
  EXPECT_TRUE(increasing);
  EXPECT_EQ(last_done, 1200);
  EXPECT_EQ(last_total, 1200);
}

TEST(ImageSetTest, ToFloatMapsBytesToMinusOneOne) {
  ImageSet s;
  s.count = 2, s.res = 1, s.channels = 3;
  s.pixels = {0, 255, 128, 10, 20, 30};
  const int idx[] = {1, 0};
  float out[6];
  s.to_float(idx, 2, out);
  EXPECT_FLOAT_EQ(out[0], 10 / 127.5f - 1);
  EXPECT_FLOAT_EQ(out[2], 30 / 127.5f - 1);
  EXPECT_EQ(out[3], -1.0f);
  EXPECT_EQ(out[4], 1.0f);
  EXPECT_FLOAT_EQ(out[5], 128 / 127.5f - 1);
}

// ---------------------------------------------------------------------------------------------
// Synthetic shapes.

TEST(Synthetic, DeterministicForASeedAndDifferentAcrossSeeds) {
  const ImageSet a = make_synthetic(300, 32, 0, 7), b = make_synthetic(300, 32, 0, 7);
  const ImageSet c = make_synthetic(300, 32, 0, 8);
  EXPECT_EQ(a.channels, 3);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.pixels, c.pixels);
  // A prefix of a larger set is the smaller set: image i depends only on (seed, i).
  const ImageSet d = make_synthetic(100, 32, 0, 7);
  EXPECT_TRUE(std::equal(d.pixels.begin(), d.pixels.end(), a.pixels.begin()));
}

TEST(Synthetic, ImagesHaveShapesAndAllThreeLabels) {
  const ImageSet s = make_synthetic(300, 32, 3, 1);
  ASSERT_EQ(s.pixels.size(), 300u * 32 * 32 * 3);
  EXPECT_EQ(s.num_classes, 3);
  EXPECT_EQ(s.name, "synthetic");
  EXPECT_EQ(s.source, "built-in");
  std::array<int, 3> hist{};
  for (int32_t l : s.labels) {
    ASSERT_TRUE(l >= 0 && l < 3);
    ++hist[l];
  }
  for (int k = 0; k < 3; ++k) EXPECT_GT(hist[k], 50) << "label " << k;
  // Every image has a dark background corner-ish and a bright shape somewhere.
  for (int i = 0; i < s.count; ++i) {
    int bright = 0;
    for (int p = 0; p < 32 * 32; ++p) {
      const uint8_t* px = s.image(i) + 3 * p;
      bright += px[0] >= 64 && px[1] >= 64 && px[2] >= 64;  // shape colours are all >= 64
    }
    EXPECT_GT(bright, 10) << "image " << i;
    EXPECT_LT(bright, 32 * 32) << "image " << i;
  }
}

TEST(Synthetic, GreyAndViaLoadDataset) {
  LoadOptions opt;
  opt.res = 64;
  opt.channels = 1;
  opt.synthetic_count = 50;
  opt.seed = 3;
  const ImageSet s = load_dataset("synthetic", opt);
  EXPECT_EQ(s.count, 50);
  EXPECT_EQ(s.res, 64);
  EXPECT_EQ(s.channels, 1);
  const ImageSet rgb = make_synthetic(50, 64, 3, 3);
  EXPECT_EQ(rgb.labels, s.labels);  // channel count does not change what is drawn
  const uint8_t* c = rgb.image(4) + 3 * 100;
  EXPECT_EQ(s.image(4)[100], (299 * c[0] + 587 * c[1] + 114 * c[2] + 500) / 1000);
  expect_error([] { make_synthetic(0, 32, 3, 0); }, {"at least 1"});
}

// ---------------------------------------------------------------------------------------------
// Image folders.

namespace {
cv::Mat solid(int h, int w, int type, cv::Scalar bgr) { return cv::Mat(h, w, type, bgr); }
}  // namespace

TEST(ImageFolder, MixedFilesSizesAndChannels) {
  TempDir dir("ampgan-data");
  fs::create_directories(dir / "sub");
  // a.png: 40x20 (wide): left and right 10 columns red, centre square green-ish, so a centre
  // crop sees only the centre colour. Written as BGR (10, 100, 200) -> RGB (200, 100, 10).
  cv::Mat a = solid(20, 40, CV_8UC3, {255, 0, 0});
  a(cv::Rect(10, 0, 20, 20)).setTo(cv::Scalar(10, 100, 200));
  ASSERT_TRUE(cv::imwrite((dir / "a.png").string(), a));
  ASSERT_TRUE(cv::imwrite((dir / "c_grey.PNG").string(), solid(32, 32, CV_8UC1, {77})));
  ASSERT_TRUE(cv::imwrite((dir / "d_rgba.png").string(), solid(48, 16, CV_8UC4, {30, 60, 90, 0})));
  ASSERT_TRUE(cv::imwrite((dir / "e16.png").string(), solid(8, 8, CV_16UC3, {65535, 0, 32896})));
  std::ofstream(dir / "fake.png") << "this is not a PNG";
  std::ofstream(dir / "notes.txt") << "hello";
  std::ofstream(dir / ".hidden.png") << "ignored";
  ASSERT_TRUE(cv::imwrite((dir / "sub" / "b.jpg").string(), solid(64, 64, CV_8UC3, {40, 140, 240})));

  LoadOptions opt;
  const ImageSet s = load_dataset(dir.path().string(), opt);
  ASSERT_EQ(s.count, 5);
  EXPECT_EQ(s.res, 32);
  EXPECT_EQ(s.channels, 3);  // mixed grey and colour -> RGB
  EXPECT_TRUE(s.labels.empty());
  EXPECT_EQ(s.num_classes, 0);
  EXPECT_EQ(s.name, dir.path().filename().string());
  ASSERT_EQ(s.pixels.size(), 5u * 32 * 32 * 3);
  ASSERT_EQ(s.warnings.size(), 3u);
  EXPECT_NE(s.warnings[0].find("fake.png"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("skipped 1"), std::string::npos) << s.warnings[0];
  // What was converted, counted: d_rgba.png lost its alpha, e16.png its low 8 bits.
  EXPECT_NE(s.warnings[1].find("1 RGBA (alpha dropped)"), std::string::npos) << s.warnings[1];
  EXPECT_NE(s.warnings[1].find("1 16-bit or float"), std::string::npos) << s.warnings[1];
  EXPECT_NE(s.warnings[2].find("notes.txt"), std::string::npos) << s.warnings[2];

  // Sorted order: a.png, c_grey.PNG, d_rgba.png, e16.png, sub/b.jpg.
  auto expect_all = [&](int i, int r, int g, int b, int tol) {
    for (int p = 0; p < 32 * 32; ++p) {
      const uint8_t* px = s.image(i) + 3 * p;
      ASSERT_NEAR(px[0], r, tol) << "image " << i << " pixel " << p;
      ASSERT_NEAR(px[1], g, tol) << "image " << i << " pixel " << p;
      ASSERT_NEAR(px[2], b, tol) << "image " << i << " pixel " << p;
    }
  };
  expect_all(0, 200, 100, 10, 0);  // centre crop, BGR -> RGB, enlarged 20 -> 32
  expect_all(1, 77, 77, 77, 0);    // grey replicated
  expect_all(2, 90, 60, 30, 0);    // alpha dropped (even though fully transparent)
  expect_all(3, 128, 0, 255, 0);   // 16-bit scaled to 8-bit (32896 = 128 * 257)
  expect_all(4, 240, 140, 40, 3);  // JPEG in a subfolder, shrunk 64 -> 32

  // Same folder again: identical bytes.
  EXPECT_EQ(load_dataset(dir.path().string(), opt).pixels, s.pixels);

  // Forced grey.
  opt.channels = 1;
  const ImageSet g = load_image_folder(dir.path().string(), opt);
  ASSERT_EQ(g.channels, 1);
  EXPECT_NEAR(g.image(0)[0], 0.299 * 200 + 0.587 * 100 + 0.114 * 10, 1.0);
  EXPECT_EQ(g.image(1)[500], 77);
}

TEST(ImageFolder, AllGreyGivesOneChannelAndRes64) {
  TempDir dir("ampgan-data");
  cv::Mat tall(50, 30, CV_8UC1, cv::Scalar(0));
  tall(cv::Rect(0, 10, 30, 30)).setTo(cv::Scalar(123));  // the centre square of a tall image
  ASSERT_TRUE(cv::imwrite((dir / "tall.png").string(), tall));
  // Grey content stored as 3 equal channels also counts as grey.
  ASSERT_TRUE(cv::imwrite((dir / "rgbgrey.bmp").string(), solid(100, 100, CV_8UC3, {50, 50, 50})));
  LoadOptions opt;
  opt.res = 64;
  const ImageSet s = load_dataset(dir.path().string(), opt);
  ASSERT_EQ(s.count, 2);
  EXPECT_EQ(s.channels, 1);
  ASSERT_EQ(s.pixels.size(), 2u * 64 * 64);
  for (int p = 0; p < 64 * 64; ++p) {
    ASSERT_EQ(s.image(0)[p], 50);   // rgbgrey.bmp sorts first
    ASSERT_EQ(s.image(1)[p], 123);  // only the centre square survived the crop
  }
  EXPECT_TRUE(s.warnings.empty());
}

TEST(ImageFolder, ResizeAveragesWhenShrinkingAndInterpolatesWhenEnlarging) {
  TempDir dir("ampgan-data");
  cv::Mat checker(64, 64, CV_8UC1);  // 1-pixel checkerboard: averages to 127.5 in 2x2 blocks
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) checker.at<uint8_t>(y, x) = ((x + y) & 1) ? 255 : 0;
  cv::Mat halves(16, 16, CV_8UC1, cv::Scalar(0));  // left half 0, right half 200
  halves(cv::Rect(8, 0, 8, 16)).setTo(cv::Scalar(200));
  ASSERT_TRUE(cv::imwrite((dir / "a_checker.png").string(), checker));
  ASSERT_TRUE(cv::imwrite((dir / "b_halves.png").string(), halves));
  const ImageSet s = load_image_folder(dir.path().string(), LoadOptions{});
  ASSERT_EQ(s.count, 2);
  ASSERT_EQ(s.channels, 1);
  for (int p = 0; p < 32 * 32; ++p) ASSERT_NEAR(s.image(0)[p], 127.5, 0.5) << p;  // no aliasing
  std::set<int> row;
  for (int x = 0; x < 32; ++x) row.insert(s.image(1)[10 * 32 + x]);
  EXPECT_EQ(*row.begin(), 0);
  EXPECT_EQ(*row.rbegin(), 200);
  EXPECT_GE(row.size(), 3u);  // a smooth edge, not nearest-neighbour blocks
}

TEST(ImageFolder, EmptyFolder) {
  TempDir dir("ampgan-data");
  expect_error([&] { load_dataset(dir.path().string(), LoadOptions{}); }, {dir.path().string(), "no images"});
}

TEST(ImageFolder, FilesThatAreNotImages) {
  TempDir dir("ampgan-data");
  std::ofstream(dir / "one.png") << "plain text, not a PNG";
  std::ofstream(dir / "two.jpg") << "also text";
  std::ofstream(dir / "readme.txt") << "text";
  expect_error([&] { load_dataset(dir.path().string(), LoadOptions{}); },
               {dir.path().string(), "could be decoded", "one.png", "two.jpg"});
  TempDir only_text("ampgan-data");
  std::ofstream(only_text / "a.txt") << "text";
  std::ofstream(only_text / "b.csv") << "1,2";
  expect_error([&] { load_dataset(only_text.path().string(), LoadOptions{}); },
               {only_text.path().string(), "no image files", "a.txt"});
}

// ---------------------------------------------------------------------------------------------
// BatchLoader.

namespace {
// N images of 1x1 grey whose pixel encodes the index (value 5 i), labels = i.
ImageSet index_set(int n) {
  ImageSet s;
  s.count = n, s.res = 1, s.channels = 1, s.num_classes = n;
  for (int i = 0; i < n; ++i) {
    s.pixels.push_back(static_cast<uint8_t>(5 * i));
    s.labels.push_back(i);
  }
  return s;
}
int decode_index(float v) { return static_cast<int>(std::lround((v + 1.0f) * 127.5f)) / 5; }

std::vector<std::vector<int>> draw(BatchLoader& l, int batches) {
  std::vector<std::vector<int>> out;
  for (int k = 0; k < batches; ++k) {
    const float* p = l.next();
    std::vector<int> b;
    for (int j = 0; j < l.batch(); ++j) b.push_back(decode_index(p[j]));
    out.push_back(b);
  }
  return out;
}
}  // namespace

TEST(BatchLoaderTest, EpochsArePermutationsAndLabelsFollow) {
  const ImageSet s = index_set(50);
  BatchLoader l(s, 7, 42);
  EXPECT_EQ(l.batches_per_epoch(), 7);  // floor(50 / 7): the tail of 1 is dropped
  std::vector<int> prev_epoch;
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(l.epoch(), e);
    std::set<int> seen;
    std::vector<int> order;
    for (int k = 0; k < 7; ++k) {
      const float* p = l.next();
      for (int j = 0; j < 7; ++j) {
        const int i = decode_index(p[j]);
        ASSERT_TRUE(i >= 0 && i < 50);
        EXPECT_TRUE(seen.insert(i).second) << "index " << i << " twice in epoch " << e;
        EXPECT_EQ(l.labels()[j], i);
        order.push_back(i);
      }
    }
    EXPECT_EQ(seen.size(), 49u);
    EXPECT_NE(order, prev_epoch);  // reshuffled each epoch
    prev_epoch = order;
  }
  EXPECT_EQ(l.batches_consumed(), 21);
  EXPECT_EQ(l.epoch(), 3);
}

TEST(BatchLoaderTest, DeterministicForASeed) {
  const ImageSet s = index_set(40);
  BatchLoader a(s, 8, 1), b(s, 8, 1), c(s, 8, 2);
  const auto da = draw(a, 12), db = draw(b, 12), dc = draw(c, 12);
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
  // Shuffled, not the identity order.
  std::vector<int> first(da[0]);
  EXPECT_NE(first, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(BatchLoaderTest, ResumeContinuesExactly) {
  const ImageSet s = index_set(30);
  BatchLoader full(s, 4, 9);  // 7 batches per epoch
  const auto all = draw(full, 25);
  for (int k : {0, 3, 7, 10, 20}) {
    BatchLoader resumed(s, 4, 9, k);
    EXPECT_EQ(resumed.batches_consumed(), k);
    EXPECT_EQ(resumed.epoch(), k / 7);
    const auto rest = draw(resumed, 25 - k);
    for (int j = k; j < 25; ++j) EXPECT_EQ(rest[j - k], all[j]) << "resume at " << k << ", batch " << j;
    EXPECT_EQ(resumed.batches_consumed(), 25);
  }
}

TEST(BatchLoaderTest, ValuesInRangeAndNoLabelsWhenUnlabeled) {
  ImageSet s = make_synthetic(64, 32, 3, 5);
  s.labels.clear();
  s.num_classes = 0;
  BatchLoader l(s, 16, 0);
  EXPECT_TRUE(l.labels().empty());
  for (int k = 0; k < 6; ++k) {
    const float* p = l.next();
    float lo = 2, hi = -2;
    for (int j = 0; j < 16 * 32 * 32 * 3; ++j) lo = std::min(lo, p[j]), hi = std::max(hi, p[j]);
    EXPECT_GE(lo, -1.0f);
    EXPECT_LE(hi, 1.0f);
    EXPECT_LT(lo, -0.5f);  // dark background present
    EXPECT_GT(hi, 0.5f);   // bright shapes present
    EXPECT_TRUE(l.labels().empty());
  }
}

TEST(BatchLoaderTest, StopsWithoutBeingRead) {
  const ImageSet s = index_set(20);
  for (int i = 0; i < 20; ++i) {
    BatchLoader l(s, 5, i);  // destroyed while its thread is prefetching
    if (i % 2) l.next();
  }
}

TEST(BatchLoaderTest, RejectsBadBatchSizes) {
  const ImageSet s = index_set(10);
  expect_error([&] { BatchLoader l(s, 11, 0); }, {"--batch", "10 images", "--batch 10"});
  expect_error([&] { BatchLoader l(s, 0, 0); }, {"--batch", "at least 1"});
  expect_error([&] { BatchLoader l(s, -3, 0); }, {"--batch"});
  BatchLoader ok(s, 10, 0);  // exactly the dataset size is fine: one batch per epoch
  EXPECT_EQ(ok.batches_per_epoch(), 1);
}
