// No input under 10 MB on disk makes a command use more than 512 MiB above its normal working
// set. Each kind of small input that once took gigabytes is given to the CLI under `ulimit -v`
// (one huge label is tested where it did harm, ZipDataset.OneHugeLabelDoesNotMakeAMillionClasses):
// what the same command needs on a normal input (found by trying), plus 512 MiB. Over the limit
// a command would fail to allocate (or the test's timeout would end it), so these tests fail on
// any reader that allocates what a file claims instead of what it holds.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "core/io/atomic_file.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace ampgan;
using ampgan::testing::kCli;
using ampgan::testing::quote;
using ampgan::testing::TempDir;

namespace {

// Two threads and two malloc arenas: the address space a run reserves then depends on the
// input, not on how many cores the machine has.
const std::string kEnv = "AMPGAN_THREADS=2 OPENBLAS_NUM_THREADS=1 MALLOC_ARENA_MAX=2 ";
const std::string kTrain = " --res 32 --width 8 --batch 8 --backend cpu --steps 1 --sample-every 0 --quiet ";

struct Result {
  int status;
  std::string out;
  double seconds;
};

// args under `ulimit -v limit_mib` (0: none), killed after timeout_s (OpenBLAS spins, not fails,
// when its buffers cannot be mapped).
Result run_limited(const std::string& args, uint64_t limit_mib, int timeout_s = 20) {
  const std::string ulimit = limit_mib ? "ulimit -v " + std::to_string(limit_mib << 10) + "; " : "";
  const std::string cmd =
      "timeout -s KILL " + std::to_string(timeout_s) + " bash -c \"" + ulimit + kEnv + kCli + " " + args + "\" 2>&1";
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  r.status = ampgan::testing::run_command(cmd, &r.out);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string png(int side, int shade) {
  cv::Mat m(side, side, CV_8UC3, cv::Scalar(shade, 255 - shade, 7 * shade % 256));
  std::vector<uint8_t> b;
  EXPECT_TRUE(cv::imencode(".png", m, b));
  return {b.begin(), b.end()};
}

// A zip written by hand, so that a member can be hundreds of megabytes of one byte without the
// test holding them: such members are deflated once, streamed, and their bytes reused.
struct Member {
  std::string name;
  std::string data;        // small members
  uint64_t fill_size = 0;  // or fill_size copies of `fill`, deflated
  char fill = 0;
};

void put16(std::string& s, uint32_t v) { s += char(v), s += char(v >> 8); }
void put32(std::string& s, uint32_t v) { put16(s, v & 0xFFFF), put16(s, v >> 16); }

void write_zip(const fs::path& path, const std::vector<Member>& members) {
  struct Packed {
    std::string bytes;
    uint32_t crc;
    uint64_t size;
    uint16_t method;
  };
  std::map<std::pair<char, uint64_t>, Packed> fills;
  auto pack = [&](const Member& m) -> Packed {
    if (!m.fill_size)
      return {m.data, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), uInt(m.data.size()))),
              m.data.size(), 0};
    auto it = fills.find({m.fill, m.fill_size});
    if (it != fills.end()) return it->second;
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    const std::string block(1 << 20, m.fill);
    std::string out;
    char buf[1 << 16];
    uint32_t crc = 0;
    for (uint64_t left = m.fill_size; left > 0 || z.avail_in > 0;) {
      const uInt n = uInt(std::min<uint64_t>(left, block.size()));
      crc = uint32_t(crc32(crc, reinterpret_cast<const Bytef*>(block.data()), n));
      left -= n;
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
      z.avail_in = n;
      do {
        z.next_out = reinterpret_cast<Bytef*>(buf);
        z.avail_out = sizeof buf;
        deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
        out.append(buf, sizeof buf - z.avail_out);
      } while (z.avail_out == 0);
      if (!left) break;
    }
    deflateEnd(&z);
    return fills[{m.fill, m.fill_size}] = Packed{out, crc, m.fill_size, 8};
  };
  std::string file, central;
  for (const Member& m : members) {
    const Packed p = pack(m);
    std::string head;
    put32(head, 0x04034b50), put16(head, 20), put16(head, 0), put16(head, p.method), put16(head, 0), put16(head, 0x21);
    put32(head, p.crc), put32(head, uint32_t(p.bytes.size())), put32(head, uint32_t(p.size));
    put16(head, uint16_t(m.name.size())), put16(head, 0);
    std::string c;
    put32(c, 0x02014b50), put16(c, 20), put16(c, 20), put16(c, 0), put16(c, p.method), put16(c, 0), put16(c, 0x21);
    put32(c, p.crc), put32(c, uint32_t(p.bytes.size())), put32(c, uint32_t(p.size));
    put16(c, uint16_t(m.name.size())), put16(c, 0), put16(c, 0), put16(c, 0), put16(c, 0), put32(c, 0);
    put32(c, uint32_t(file.size()));
    central += c + m.name;
    file += head + m.name + p.bytes;
  }
  std::string end;
  put32(end, 0x06054b50), put16(end, 0), put16(end, 0), put16(end, uint16_t(members.size()));
  put16(end, uint16_t(members.size())), put32(end, uint32_t(central.size())), put32(end, uint32_t(file.size()));
  put16(end, 0);
  io::write_file_atomic(path, file + central + end);
}

std::vector<Member> good_images(int n) {
  std::vector<Member> m;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "00000/img%08d.png", i);
    m.push_back({name, png(8, 20 * i + 5)});
  }
  return m;
}

// The normal need of `train` on a small zip, in MiB of address space (tried upward), plus 512:
// the limit every test runs under.
uint64_t limit_mib() {
  static const uint64_t limit = [] {
    TempDir tmp("ampgan-mem");
    write_zip(tmp / "good.zip", good_images(16));
    for (uint64_t mib = 768;; mib += 256) {
      const Result r = run_limited(
          "train --dataset " + quote(tmp / "good.zip") + kTrain + "--out " + quote(tmp / ("run" + std::to_string(mib))),
          mib, 5);
      if (r.status == 0) return mib + 512;
      if (mib >= 8192) {
        ADD_FAILURE() << "a normal run fails even with 8 GiB: " << r.out;
        return uint64_t{0};
      }
    }
  }();
  return limit;
}

std::string jpeg_claiming_with_a_stray_byte(uint16_t w, uint16_t h) {
  cv::Mat m(8, 8, CV_8UC3, cv::Scalar(1, 2, 3));
  std::vector<uint8_t> b;
  EXPECT_TRUE(cv::imencode(".jpg", m, b));
  for (size_t i = 2; i + 9 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == 0xC0) {
      b[i + 5] = uint8_t(h >> 8), b[i + 6] = uint8_t(h), b[i + 7] = uint8_t(w >> 8), b[i + 8] = uint8_t(w);
      break;
    }
  b.insert(b.begin() + 4 + (b[4] << 8 | b[5]), 0x00);  // after APP0
  return {b.begin(), b.end()};
}

}  // namespace

TEST(MemoryBounds, PaddedJpegClaiming20000Squared) {
  TempDir tmp("ampgan-mem");
  const fs::path dir = tmp / "photos";
  fs::create_directories(dir);
  for (const Member& m : good_images(8)) io::write_file_atomic(dir / fs::path(m.name).filename(), m.data);
  io::write_file_atomic(dir / "huge.jpg", jpeg_claiming_with_a_stray_byte(20000, 20000));
  const Result r = run_limited("train --dataset " + quote(dir) + kTrain + "--out " + quote(tmp / "run"), limit_mib());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(io::read_file(tmp / "run/events.jsonl").find("1 image(s) larger than 8192 x 8192 pixels"),
            std::string::npos);
}

TEST(MemoryBounds, ZipOfTenEntriesOf200MBZeros) {
  TempDir tmp("ampgan-mem");
  std::vector<Member> m = good_images(8);
  for (int i = 0; i < 10; ++i) m.push_back({"zeros/" + std::to_string(i) + ".png", "", uint64_t{200} << 20, 0});
  write_zip(tmp / "zeros.zip", m);
  ASSERT_LT(fs::file_size(tmp / "zeros.zip"), 10u << 20);
  const Result r =
      run_limited("train --dataset " + quote(tmp / "zeros.zip") + kTrain + "--out " + quote(tmp / "run"), limit_mib());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(io::read_file(tmp / "run/events.jsonl").find("10 unreadable file(s)"), std::string::npos);
}

TEST(MemoryBounds, ZipWithA200MBDatasetJson) {
  TempDir tmp("ampgan-mem");
  std::vector<Member> m = good_images(8);
  m.push_back({"dataset.json", "", uint64_t{200} << 20, ' '});  // spaces: the JSON is never complete
  write_zip(tmp / "json.zip", m);
  ASSERT_LT(fs::file_size(tmp / "json.zip"), 10u << 20);
  const Result r =
      run_limited("train --dataset " + quote(tmp / "json.zip") + kTrain + "--out " + quote(tmp / "run"), limit_mib());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("dataset.json would unpack to 200.0 MiB"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

TEST(MemoryBounds, SparseThreeGiBCheckpoint) {
  TempDir tmp("ampgan-mem");
  const fs::path ck = tmp / "step_000002.safetensors";
  io::write_file_atomic(ck, "");
  fs::resize_file(ck, uint64_t{3} << 30);  // a hole: no disk space
  const Result r = run_limited("sample " + quote(ck) + " --grid " + quote(tmp / "g.png"), limit_mib());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("header is not a JSON object"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 10.0);
}

TEST(MemoryBounds, OneKilobyteIdxClaimingAMillionImages) {
  TempDir tmp("ampgan-mem");
  const fs::path gz = tmp / "tiny-images-idx3-ubyte.gz";
  std::string data;
  for (uint32_t v : {0x803u, 1000000u, 1u, 1u})
    for (int sh = 24; sh >= 0; sh -= 8) data.push_back(char(v >> sh));
  uint32_t x = 2463534242u;
  for (int i = 0; i < 1400; ++i) {  // xorshift: does not compress, so deflate could hold the claim
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    data.push_back(char(x >> 24));
  }
  gzFile f = gzopen(gz.string().c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  gzwrite(f, data.data(), unsigned(data.size()));
  gzclose(f);
  // At --res 64 the claim would be 4 GiB of decoded pixels (the probe's 4.4 GB).
  const Result r =
      run_limited("train --dataset " + quote(gz) + kTrain + "--res 64 --out " + quote(tmp / "run"), limit_mib());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("IDX file is truncated"), std::string::npos) << r.out;
}
