// A small file must not make a reader allocate gigabytes. IDX headers are
// checked against what the file can hold and against the memory budget, images' pixel counts are
// read from their headers before decoding, and PNG outputs are sized before they are made.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <zlib.h>
#include <cstring>

#include <filesystem>
#include <fstream>

#include <opencv2/imgcodecs.hpp>

#include "core/common/error.h"
#include "core/data/image_set.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/read_limits.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using ampgan::Error;
using ampgan::testing::TempDir;
using namespace ampgan;

using ampgan::testing::error_of;

namespace {

void put_be32(std::string& s, uint32_t v) {
  for (int sh = 24; sh >= 0; sh -= 8) s.push_back(static_cast<char>((v >> sh) & 0xFF));
}

std::string idx_header(uint32_t count, uint32_t rows, uint32_t cols) {
  std::string s;
  put_be32(s, 0x803);
  put_be32(s, count);
  put_be32(s, rows);
  put_be32(s, cols);
  return s;
}

void write_bytes(const fs::path& p, const std::string& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

// A gzip file of the header followed by `zeros` zero bytes, streamed (never held whole).
void write_gzip_bomb(const fs::path& p, const std::string& header, uint64_t zeros) {
  gzFile f = gzopen(p.string().c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  gzwrite(f, header.data(), unsigned(header.size()));
  const std::string block(1 << 20, '\0');
  for (uint64_t left = zeros; left > 0;) {
    const unsigned n = unsigned(std::min<uint64_t>(left, block.size()));
    ASSERT_EQ(gzwrite(f, block.data(), n), int(n));
    left -= n;
  }
  gzclose(f);
}

std::vector<uint8_t> encode(const char* ext, int w, int h) {
  cv::Mat m(h, w, CV_8UC3, cv::Scalar(10, 200, 30));
  std::vector<uint8_t> buf;
  EXPECT_TRUE(cv::imencode(ext, m, buf)) << ext;
  return buf;
}

void set_be(std::vector<uint8_t>& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = uint8_t(v >> (8 * (bytes - 1 - i)));
}

// A real PNG whose IHDR announces w x h (its CRC no longer matches: only a header reader sees it).
std::vector<uint8_t> png_claiming(uint32_t w, uint32_t h) {
  std::vector<uint8_t> b = encode(".png", 4, 4);
  set_be(b, 16, w, 4);
  set_be(b, 20, h, 4);
  return b;
}

// A real JPEG whose frame header announces w x h.
std::vector<uint8_t> jpeg_claiming(uint16_t w, uint16_t h) {
  std::vector<uint8_t> b = encode(".jpg", 8, 8);
  for (size_t i = 2; i + 9 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == 0xC0) {
      set_be(b, i + 5, h, 2);
      set_be(b, i + 7, w, 2);
      return b;
    }
  ADD_FAILURE() << "no SOF0 marker";
  return b;
}

}  // namespace

TEST(ReadLimits, HeaderSizesOfEveryFolderFormatMatchTheDecoder) {
  for (const char* ext : {".png", ".jpg", ".bmp", ".webp", ".tif"}) {
    const std::vector<uint8_t> b = encode(ext, 37, 23);
    const auto s = io::sniff_image_size(b.data(), b.size());
    ASSERT_TRUE(s.has_value()) << ext;
    EXPECT_EQ(s->width, 37u) << ext;
    EXPECT_EQ(s->height, 23u) << ext;
    // Every prefix is handled without reading past it (ASan checks this in the sanitizer build).
    for (size_t n = 0; n < std::min<size_t>(b.size(), 64); ++n) (void)io::sniff_image_size(b.data(), n);
  }
  const char text[] = "not an image at all";
  EXPECT_FALSE(io::sniff_image_size(text, sizeof text).has_value());
}

TEST(ReadLimits, ExtendedWebpHeaderIsReadWithinItsThirtyTwoBytes) {
  // OpenCV writes simple VP8 files; VP8X (alpha, animation) keeps the canvas size in two 24-bit
  // fields that end at byte 30 (a read of byte 30 was a fuzzer's finding). OpenCV takes a file for
  // WebP when libwebp reads its features from the first 32 bytes, and so do we.
  std::vector<uint8_t> b(32, 0);
  std::memcpy(b.data(), "RIFF", 4);
  b[4] = 0xE8, b[5] = 0x03;  // the RIFF size: 1000 bytes
  std::memcpy(b.data() + 8, "WEBPVP8X", 8);
  b[16] = 10;
  const uint32_t w = 70000 - 1, h = 23 - 1;  // width above 16 bits: all three bytes count
  for (int i = 0; i < 3; ++i) b[24 + i] = uint8_t(w >> (8 * i)), b[27 + i] = uint8_t(h >> (8 * i));
  b[30] = 'A', b[31] = 'L';  // the next chunk (ALPH) begins
  const auto s = io::sniff_image_size(b.data(), b.size());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->width, 70000u);
  EXPECT_EQ(s->height, 23u);
  for (size_t n = 0; n < b.size(); ++n) EXPECT_FALSE(io::sniff_image_size(b.data(), n).has_value()) << n;
}

TEST(ReadLimits, IdxHeaderAnnouncingMoreThanTheFileHoldsIsRefusedBeforeAllocating) {
  // The probe's case: 1M images of 1x1 in a 1 KB file took 1.27 GB before failing.
  TempDir dir("ampgan-limits");
  const fs::path raw = dir / "raw-images-idx3-ubyte";
  write_bytes(raw, idx_header(1000000, 1, 1) + std::string(1000, '\x07'));
  const std::string e = error_of([&] { data::load_dataset(raw.string(), data::LoadOptions{}); });
  EXPECT_NE(e.find("more than this file"), std::string::npos) << e;
  EXPECT_NE(e.find(raw.string()), std::string::npos) << e;

  // Compressed: 2^31-1 images of 16384 x 16384 cannot come out of 1 KB of deflate.
  const fs::path gz = dir / "gz-images-idx3-ubyte.gz";
  write_gzip_bomb(gz, idx_header(0x7FFFFFFF, 16384, 16384), 1000);
  const std::string g = error_of([&] { data::load_dataset(gz.string(), data::LoadOptions{}); });
  EXPECT_NE(g.find("more than this file"), std::string::npos) << g;
}

TEST(ReadLimits, GzipBombIsRefusedByTheMemoryBudget) {
  // 64 MiB of zeros compress to ~64 KB; decoded at res 32 they would need 85.6 MiB. With a budget
  // of 32 MiB the loader must refuse from the header, before reading or allocating the data.
  TempDir dir("ampgan-limits");
  const fs::path gz = dir / "bomb-images-idx3-ubyte.gz";
  const uint32_t count = (64u << 20) / 784;
  write_gzip_bomb(gz, idx_header(count, 28, 28), uint64_t{count} * 784);
  ASSERT_LT(fs::file_size(gz), 1u << 20);
  data::LoadOptions opt;
  opt.max_bytes = 32u << 20;
  const std::string e = error_of([&] { data::load_dataset(gz.string(), opt); });
  EXPECT_NE(e.find("would need"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(count) + " images at 32x32x1"), std::string::npos) << e;
  EXPECT_NE(e.find("32.0 MiB allowed"), std::string::npos) << e;
  // Within the budget the same file loads.
  opt.max_bytes = 128u << 20;
  EXPECT_EQ(data::load_dataset(gz.string(), opt).count, int(count));
  // The default budget is half of physical memory: never zero.
  EXPECT_GT(io::dataset_memory_budget(), uint64_t{64} << 20);
}

TEST(ReadLimits, HugeImagesAreRefusedFromTheirHeaders) {
  TempDir dir("ampgan-limits");
  const auto png = png_claiming(20000, 20000);
  const auto jpg = jpeg_claiming(30000, 30000);
  write_bytes(dir / "big.png", std::string(png.begin(), png.end()));
  write_bytes(dir / "big.jpg", std::string(jpg.begin(), jpg.end()));
  const std::string e = error_of([&] { io::read_image(dir / "big.png"); });
  EXPECT_NE(e.find("20000 x 20000 pixels"), std::string::npos) << e;
  const std::string j = error_of([&] { io::read_image(dir / "big.jpg"); });
  EXPECT_NE(j.find("30000 x 30000 pixels"), std::string::npos) << j;

  // In a dataset folder they are skipped by name, apart from the unreadable files.
  const auto ok = encode(".png", 16, 16);
  write_bytes(dir / "fine.png", std::string(ok.begin(), ok.end()));
  write_bytes(dir / "broken.png", "text");
  const data::ImageSet set = data::load_dataset(dir.path().string(), data::LoadOptions{});
  EXPECT_EQ(set.count, 1);
  std::string warnings;
  for (const auto& w : set.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("2 image(s) larger than 8192 x 8192 pixels"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("big.jpg, big.png"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("1 unreadable file(s): broken.png"), std::string::npos) << warnings;

  // Only huge images: an error that says why.
  TempDir only("ampgan-limits");
  write_bytes(only / "big.png", std::string(png.begin(), png.end()));
  const std::string o = error_of([&] { data::load_dataset(only.path().string(), data::LoadOptions{}); });
  EXPECT_NE(o.find("larger than 8192 x 8192"), std::string::npos) << o;
}

TEST(ReadLimits, FolderLargerThanTheBudgetIsRefusedBeforeDecoding) {
  TempDir dir("ampgan-limits");
  const auto ok = encode(".png", 8, 8);
  for (int i = 0; i < 4; ++i) write_bytes(dir / ("i" + std::to_string(i) + ".png"), std::string(ok.begin(), ok.end()));
  data::LoadOptions opt;
  opt.res = 128;
  opt.max_bytes = 100000;  // 4 x 128 x 128 x 3 = 196608 bytes
  const std::string e = error_of([&] { data::load_dataset(dir.path().string(), opt); });
  EXPECT_NE(e.find("4 images at 128x128x3"), std::string::npos) << e;
}

TEST(ReadLimits, PngOutputsAreSizedBeforeTheyAreMade) {
  // libpng refuses more than 1,000,000 px per side: our own message comes first, with a hint.
  const std::string e = error_of([] { io::check_png_size(1000002, 34, "--grid", "use fewer images"); });
  EXPECT_NE(e.find("at most 1000000 pixels per side"), std::string::npos) << e;
  EXPECT_NE(e.find("use fewer images"), std::string::npos) << e;
  const std::string p = error_of([] { io::check_png_size(9000, 9000, "--grid", "smaller"); });
  EXPECT_NE(p.find("9000 x 9000"), std::string::npos) << p;
  EXPECT_EQ(error_of([] { io::check_png_size(8192, 8192, "x", "y"); }), "(no error)");
  const io::GridSize g = io::grid_size(100000, 32, 100000, 2);
  EXPECT_EQ(g.width, 100000 * 32 + 100001 * 2);
  EXPECT_EQ(g.height, 36);
}

TEST(ReadLimits, DecodersStayOffStderrAndTheWarningNamesTheFiles) {
  TempDir dir("ampgan-limits");
  const auto ok = encode(".png", 16, 16);
  write_bytes(dir / "fine.png", std::string(ok.begin(), ok.end()));
  const auto big = encode(".png", 64, 64);
  write_bytes(dir / "cut.png", std::string(big.begin(), big.begin() + big.size() / 2));  // libpng complains
  const auto jpg = encode(".jpg", 32, 32);
  write_bytes(dir / "cut.jpg", std::string(jpg.begin(), jpg.begin() + jpg.size() / 2));
  ::testing::internal::CaptureStderr();
  const data::ImageSet set = data::load_dataset(dir.path().string(), data::LoadOptions{});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "");
  ASSERT_FALSE(set.warnings.empty());
  EXPECT_NE(set.warnings.back().find("cut.png"), std::string::npos) << set.warnings.back();
}

namespace {

// A real JPEG whose frame header announces w x h, with one stray byte after its APP0 segment:
// libjpeg skips such bytes (with a warning) and decodes; a sniffer must find the frame header too.
std::vector<uint8_t> padded_jpeg_claiming(uint16_t w, uint16_t h) {
  std::vector<uint8_t> b = w ? jpeg_claiming(w, h) : encode(".jpg", 8, 8);
  EXPECT_EQ(b[2], 0xFF);
  EXPECT_EQ(b[3], 0xE0);  // APP0 (JFIF)
  const size_t end = 4 + (size_t(b[4]) << 8 | b[5]);
  b.insert(b.begin() + long(end), 0x00);
  return b;
}

std::string warnings_of(const data::ImageSet& s) {
  std::string out;
  for (const auto& w : s.warnings) out += w + "\n";
  return out;
}

}  // namespace

// The probe's JPEG: one padding byte after APP0 hid the frame header from the sniffer, and
// OpenCV decoded 20000 x 20000 anyway (2.4 GB). The sniffer reads markers as libjpeg does.
TEST(ReadLimits, AStrayByteDoesNotHideAJpegFrameHeader) {
  const auto big = padded_jpeg_claiming(20000, 20000);
  const auto s = io::sniff_image_size(big.data(), big.size());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->width, 20000u);
  EXPECT_EQ(s->height, 20000u);
  // The sniffer and the decoder agree on a real padded JPEG.
  const auto small = padded_jpeg_claiming(0, 0);
  const auto t = io::sniff_image_size(small.data(), small.size());
  ASSERT_TRUE(t.has_value());
  const cv::Mat m =
      cv::imdecode(cv::Mat(1, int(small.size()), CV_8UC1, const_cast<uint8_t*>(small.data())), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(uint64_t(m.cols), t->width);
  EXPECT_EQ(uint64_t(m.rows), t->height);
  // In a folder it is skipped by name before any decoder sees it.
  TempDir dir("ampgan-limits");
  write_bytes(dir / "big.jpg", std::string(big.begin(), big.end()));
  const auto ok = encode(".png", 16, 16);
  write_bytes(dir / "fine.png", std::string(ok.begin(), ok.end()));
  const data::ImageSet set = data::load_dataset(dir.path().string(), data::LoadOptions{});
  EXPECT_EQ(set.count, 1);
  EXPECT_NE(warnings_of(set).find("1 image(s) larger than 8192 x 8192 pixels"), std::string::npos) << warnings_of(set);
}

// An image whose size no header tells (a PPM named .png, which OpenCV would decode at whatever
// size it claims) is never given to a decoder, and one padded far beyond what its size needs is
// not read whole.
TEST(ReadLimits, ImagesWithoutAReadableSizeOrPaddedAreNotDecoded) {
  TempDir dir("ampgan-limits");
  const auto ok = encode(".png", 16, 16);
  write_bytes(dir / "fine.png", std::string(ok.begin(), ok.end()));
  write_bytes(dir / "portable.png", "P6\n16 16\n255\n" + std::string(16 * 16 * 3, '\x40'));
  std::string padded(ok.begin(), ok.end());
  padded += std::string(size_t{40} << 20, '\0');  // after IEND: libpng never reads it
  write_bytes(dir / "padded.png", padded);
  const data::ImageSet set = data::load_dataset(dir.path().string(), data::LoadOptions{});
  EXPECT_EQ(set.count, 1);
  const std::string w = warnings_of(set);
  EXPECT_NE(w.find("1 unreadable file(s): portable.png"), std::string::npos) << w;
  EXPECT_NE(w.find("padded.png: it holds 40.0 MiB, far more than an image of 16 x 16 needs"), std::string::npos) << w;
  const std::string e = error_of([&] { io::read_image(dir / "portable.png"); });
  EXPECT_NE(e.find("cannot be read from its header"), std::string::npos) << e;
}

// What decoding an image costs is read from its header too: a 16-bit RGBA PNG of 8192 x 8192
// (512 MiB decoded) is within the pixel cap but not within what one image may take.
TEST(ReadLimits, DecodingCostIsBoundedFromTheHeader) {
  const auto png = png_claiming(8192, 8192);
  std::vector<uint8_t> deep = png;
  deep[24] = 16;  // bit depth
  const auto s8 = io::sniff_image_size(png.data(), png.size()), s16 = io::sniff_image_size(deep.data(), deep.size());
  ASSERT_TRUE(s8 && s16);
  EXPECT_GT(s16->decode_bytes, s8->decode_bytes);
  EXPECT_EQ(io::judge_image(s16, deep.size()), io::ImageVerdict::TooCostly);
  EXPECT_EQ(io::judge_image(io::sniff_image_size(png.data(), png.size()), png.size()), io::ImageVerdict::Ok);
  EXPECT_EQ(io::judge_image(std::nullopt, 100), io::ImageVerdict::Unknown);
  // A progressive JPEG keeps every coefficient: it costs more than a baseline one of its size.
  cv::Mat m(64, 64, CV_8UC3, cv::Scalar(1, 2, 3));
  std::vector<uint8_t> base, prog;
  ASSERT_TRUE(cv::imencode(".jpg", m, base));
  ASSERT_TRUE(cv::imencode(".jpg", m, prog, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  EXPECT_GT(io::sniff_image_size(prog.data(), prog.size())->decode_bytes,
            io::sniff_image_size(base.data(), base.size())->decode_bytes);
}

// FIFOs, links to nothing and loops of links in a dataset folder are never read, and never
// dropped without a word.
TEST(ReadLimits, NonFilesInAFolderAreNamed) {
  TempDir dir("ampgan-limits");
  const auto ok = encode(".png", 16, 16);
  write_bytes(dir / "fine.png", std::string(ok.begin(), ok.end()));
  ASSERT_EQ(::mkfifo((dir / "pipe.png").c_str(), 0644), 0);
  fs::create_symlink(dir / "missing.png", dir / "gone.png");
  fs::create_symlink(dir / "loop.png", dir / "loop.png");
  const data::ImageSet set = data::load_dataset(dir.path().string(), data::LoadOptions{});
  EXPECT_EQ(set.count, 1);
  const std::string w = warnings_of(set);
  EXPECT_NE(w.find("skipped 3 entries that are not regular files: gone.png (a link to nothing), loop.png (a loop of "
                   "links), pipe.png (a FIFO)"),
            std::string::npos)
      << w;
}

// A 1 KB gzip IDX file may claim a million images (deflate allows it): the set grows with the
// data that arrives, so the claim costs nothing before the file is found short.
TEST(ReadLimits, AnIdxClaimOnlyCostsWhatTheFileHolds) {
  TempDir dir("ampgan-limits");
  const fs::path gz = dir / "tiny-images-idx3-ubyte.gz";
  std::string data = idx_header(1000000, 1, 1);
  uint32_t x = 2463534242u;
  for (int i = 0; i < 1400; ++i) {  // xorshift: does not compress
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    data.push_back(char(x >> 24));
  }
  gzFile f = gzopen(gz.string().c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  gzwrite(f, data.data(), unsigned(data.size()));
  gzclose(f);
  ASSERT_LT(fs::file_size(gz), 1600u);
  ASSERT_GE(io::max_inflated_size(fs::file_size(gz)), 1000016u) << "deflate could hold the claim";
  const std::string e = error_of([&] { data::load_dataset(gz.string(), data::LoadOptions{}); });
  EXPECT_NE(e.find("IDX file is truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("found 1400"), std::string::npos) << e;
}

// Bytes are sized only when OpenCV's imdecode would give them to the decoder the size is for:
// else they go down OpenCV's list of decoders to the next that claims them, and GDCM's DICOM
// reader (any bytes with "DICM" at 128) aborts the process on a malformed file, as on this one of
// fuzz_image_header's (FF D8 and a JPEG frame, but not OpenCV's FF D8 FF) and on a GIF header
// (OpenCV 4.6 has no GIF decoder). Both are refused here, unread by any decoder, and a dataset
// folder holding them loads its other images and names them as unreadable.
TEST(ReadLimits, BytesOpenCvWouldGiveToAnotherDecoderAreNotDecoded) {
  const fs::path corpus = fs::path(AMPGAN_SOURCE_DIR) / "fuzz/corpus/image_header";
  TempDir dir("ampgan-limits");
  for (const char* name : {"jpeg-soi-without-marker-dicom-preamble", "gif-header-dicom-preamble"}) {
    const std::string b = io::read_file(corpus / name);
    ASSERT_EQ(b.substr(128, 4), "DICM") << name;
    EXPECT_FALSE(io::sniff_image_size(b.data(), b.size()).has_value()) << name;
    write_bytes(dir / (std::string(name) + ".png"), b);
    const std::string e = error_of([&] { io::read_image(dir / (std::string(name) + ".png")); });
    EXPECT_NE(e.find("cannot be read from its header"), std::string::npos) << e;
  }
  const auto ok = encode(".png", 16, 16);
  write_bytes(dir / "fine.png", std::string(ok.begin(), ok.end()));
  const data::ImageSet set = data::load_dataset(dir.path().string(), data::LoadOptions{});
  EXPECT_EQ(set.count, 1);
  const std::string w = warnings_of(set);
  EXPECT_NE(w.find("2 unreadable file(s)"), std::string::npos) << w;
  // A real JPEG still is one.
  const auto jpg = encode(".jpg", 16, 8);
  const auto s = io::sniff_image_size(jpg.data(), jpg.size());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->width, 16u);
  EXPECT_EQ(s->height, 8u);
}
