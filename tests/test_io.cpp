// core/io: atomic files and logs, safetensors, image grids and PNG.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <zlib.h>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/opencv.h"
#include "core/io/run_lock.h"
#include "core/io/safetensors.h"
#include "core/tensor/half.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace ampgan;
using namespace ampgan::io;
using ampgan::testing::TempDir;

namespace {

void write_raw(const fs::path& p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// Runs fn, expects an ampgan::Error, returns its what().
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ampgan::Error, got std::exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected ampgan::Error, nothing was thrown";
  return {};
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

// ---- the run folder's lock --------------------------------------------------------------------

// Deleting or replacing run.lock while a writer holds the folder must not let a second writer
// in: the folder itself is locked, and the holder writes run.lock again at its next step.
TEST(RunLock, DeletingOrReplacingTheLockFileDoesNotLiftTheLock) {
  TempDir dir("ampgan-lock");
  RunLock first(dir.path(), "first writer");
  fs::remove(dir / "run.lock");
  std::string e = error_of([&] { RunLock second(dir.path(), "second writer"); });
  EXPECT_NE(e.find("in use"), std::string::npos) << e;
  EXPECT_NE(e.find("run.lock was deleted"), std::string::npos) << e;
  EXPECT_NE(run_lock_holder(dir.path()), "");
  first.refresh();  // writes run.lock again, naming the holder
  EXPECT_NE(read_file(dir / "run.lock").find("first writer"), std::string::npos);
  // A file written in its place changes nothing either.
  write_file_atomic(dir / "run.lock", "");
  e = error_of([&] { RunLock second(dir.path(), "second writer"); });
  EXPECT_NE(e.find("in use"), std::string::npos) << e;
  first.refresh();
  EXPECT_NE(read_file(dir / "run.lock").find("first writer"), std::string::npos);
}

// A writer whose folder was moved away would write by path into whatever is there now.
TEST(RunLock, AMovedFolderStopsItsWriter) {
  TempDir dir("ampgan-lock");
  fs::create_directory(dir / "run");
  RunLock lock(dir / "run", "writer");
  fs::rename(dir / "run", dir / "moved");
  fs::create_directory(dir / "run");
  const std::string e = error_of([&] { lock.refresh(); });
  EXPECT_NE(e.find("moved, deleted or replaced"), std::string::npos) << e;
}

// ---- atomic files -----------------------------------------------------------------------------

TEST(AtomicFile, WriteReplacesContentAndLeavesNoTemporaryFiles) {
  TempDir d;
  const fs::path p = d / "config.json";
  write_file_atomic(p, "first version, longer");
  EXPECT_EQ(read_file(p), "first version, longer");
  write_file_atomic(p, "second");
  EXPECT_EQ(read_file(p), "second");
  write_file_atomic(p, std::string("\0bin\0", 5));
  EXPECT_EQ(read_file(p), std::string("\0bin\0", 5));
  write_file_atomic(p, "");
  EXPECT_EQ(read_file(p), "");
  EXPECT_EQ(names_in(d.path()), std::vector<std::string>{"config.json"});
}

TEST(AtomicFile, WriteIntoPathWhoseParentIsAFileThrowsNamingIt) {
  TempDir d;
  write_raw(d / "blocker", "I am a file");
  const fs::path p = d / "blocker" / "x.json";
  const std::string msg = error_of([&] { write_file_atomic(p, "data"); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_EQ(read_file(d / "blocker"), "I am a file");
  EXPECT_EQ(names_in(d.path()), std::vector<std::string>{"blocker"});
}

TEST(AtomicFile, WriteFailingMidwayKeepsTheOldFileAndRemovesTheTemporary) {
  // A file-size limit makes write(2) fail with EFBIG part-way, as a full disk would.
  TempDir d;
  const fs::path p = d / "ckpt.bin";
  write_file_atomic(p, "old content");
  rlimit old_lim{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_lim), 0);
  auto old_sig = signal(SIGXFSZ, SIG_IGN);  // otherwise exceeding the limit kills the process
  rlimit lim = old_lim;
  lim.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  const std::string msg = error_of([&] { write_file_atomic(p, std::string(100000, 'x')); });
  setrlimit(RLIMIT_FSIZE, &old_lim);
  signal(SIGXFSZ, old_sig);
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_EQ(read_file(p), "old content");
  EXPECT_EQ(names_in(d.path()), std::vector<std::string>{"ckpt.bin"});
}

TEST(AtomicFile, RenameOntoAFolderFailsAndLeavesItAlone) {
  TempDir d;
  fs::create_directory(d / "taken");
  write_raw(d / "taken" / "inside", "keep");
  const std::string msg = error_of([&] { write_file_atomic(d / "taken", "data"); });
  EXPECT_NE(msg.find((d / "taken").string()), std::string::npos) << msg;
  EXPECT_EQ(read_file(d / "taken" / "inside"), "keep");
  EXPECT_EQ(names_in(d.path()), std::vector<std::string>{"taken"});
}

TEST(AtomicFile, ReadFileErrorsNameThePath) {
  TempDir d;
  std::string msg = error_of([&] { read_file(d / "missing.txt"); });
  EXPECT_NE(msg.find((d / "missing.txt").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
  msg = error_of([&] { read_file(d.path()); });
  EXPECT_NE(msg.find("folder"), std::string::npos) << msg;
}

// ---- AppendLog --------------------------------------------------------------------------------

TEST(AppendLog, AppendsWholeLines) {
  TempDir d;
  const fs::path p = d / "metrics.csv";
  {
    AppendLog log(p);
    EXPECT_EQ(log.size(), 0u);
    EXPECT_EQ(log.path(), p);
    log.append_line("step,loss");
    log.append_line("1,0.5\n");  // a trailing newline is not doubled
    log.sync();
    EXPECT_EQ(log.size(), 16u);
    // Written straight to the kernel: visible before close.
    EXPECT_EQ(read_file(p), "step,loss\n1,0.5\n");
  }
  AppendLog again(p);
  EXPECT_EQ(again.size(), 16u);
  EXPECT_EQ(again.truncated_bytes(), 0u);
  again.append_line("2,0.25");
  EXPECT_EQ(read_file(p), "step,loss\n1,0.5\n2,0.25\n");
}

TEST(AppendLog, ReopenTruncatesAnIncompleteLastLine) {
  TempDir d;
  const fs::path p = d / "events.jsonl";
  write_raw(p, "{\"a\":1}\n{\"b\":2}\n{\"c\":");
  AppendLog log(p);
  EXPECT_EQ(log.truncated_bytes(), 5u);
  EXPECT_EQ(log.size(), 16u);
  EXPECT_EQ(read_file(p), "{\"a\":1}\n{\"b\":2}\n");
  log.append_line("{\"c\":3}");
  EXPECT_EQ(read_file(p), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
}

TEST(AppendLog, PartialLineLongerThanTheScanBlockAndNoCompleteLine) {
  TempDir d;
  // The partial line spans several of the backward scan's 64 KiB blocks.
  const fs::path p = d / "long.csv";
  write_raw(p, "header\n" + std::string(200000, 'x'));
  {
    AppendLog log(p);
    EXPECT_EQ(log.truncated_bytes(), 200000u);
  }
  EXPECT_EQ(read_file(p), "header\n");
  // Only a partial line: the file becomes empty.
  const fs::path q = d / "only_partial.csv";
  write_raw(q, "step,lo");
  AppendLog log(q);
  EXPECT_EQ(log.size(), 0u);
  log.append_line("step,loss");
  EXPECT_EQ(read_file(q), "step,loss\n");
}

// A log never follows a link: a dangling one in its place would create a file elsewhere.
TEST(AppendLog, NeverFollowsASymbolicLink) {
  TempDir d;
  fs::create_symlink(d / "elsewhere.csv", d / "log.csv");
  const std::string e = error_of([&] { AppendLog log(d / "log.csv"); });
  EXPECT_NE(e.find("symbolic link"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(d / "elsewhere.csv"));
  ASSERT_EQ(::mkfifo((d / "fifo.csv").c_str(), 0644), 0);
  const std::string f = error_of([&] { AppendLog log(d / "fifo.csv"); });
  EXPECT_NE(f.find("not a regular file"), std::string::npos) << f;
}

TEST(AppendLog, MoveKeepsWorking) {
  TempDir d;
  AppendLog a(d / "m.csv");
  a.append_line("x");
  AppendLog b(std::move(a));
  b.append_line("y");
  AppendLog c(d / "other.csv");
  c = std::move(b);
  c.append_line("z");
  EXPECT_EQ(c.path(), d / "m.csv");
  EXPECT_EQ(read_file(d / "m.csv"), "x\ny\nz\n");
}

TEST(AppendLog, UnwritableLocationThrowsNamingThePath) {
  TempDir d;
  write_raw(d / "blocker", "");
  std::string msg = error_of([&] { AppendLog log(d / "blocker" / "metrics.csv"); });
  EXPECT_NE(msg.find((d / "blocker" / "metrics.csv").string()), std::string::npos) << msg;
  msg = error_of([&] { AppendLog log(d / "no_such_dir" / "metrics.csv"); });
  EXPECT_NE(msg.find("no_such_dir"), std::string::npos) << msg;
}

// ---- ensure_writable_dir ----------------------------------------------------------------------

TEST(EnsureWritableDir, CreatesMissingFoldersAndAcceptsExistingOnes) {
  TempDir d;
  const fs::path nested = d / "runs" / "2024-01-01-test" / "samples";
  ensure_writable_dir(nested);
  EXPECT_TRUE(fs::is_directory(nested));
  ensure_writable_dir(nested);
  EXPECT_TRUE(fs::is_empty(nested));  // the probe file is gone
}

TEST(EnsureWritableDir, FileInTheWayThrowsWithThePath) {
  TempDir d;
  write_raw(d / "runs", "not a folder");
  std::string msg = error_of([&] { ensure_writable_dir(d / "runs"); });
  EXPECT_NE(msg.find((d / "runs").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("is a file"), std::string::npos) << msg;
  msg = error_of([&] { ensure_writable_dir(d / "runs" / "sub"); });
  EXPECT_NE(msg.find((d / "runs" / "sub").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("is a file"), std::string::npos) << msg;
  EXPECT_EQ(read_file(d / "runs"), "not a folder");
}

// ---- safetensors ------------------------------------------------------------------------------

TEST(Safetensors, DtypeBytes) {
  EXPECT_EQ(dtype_bytes("F32"), 4u);
  EXPECT_EQ(dtype_bytes("F16"), 2u);
  EXPECT_EQ(dtype_bytes("BF16"), 2u);
  EXPECT_EQ(dtype_bytes("I64"), 8u);
  EXPECT_EQ(dtype_bytes("I32"), 4u);
  EXPECT_EQ(dtype_bytes("U8"), 1u);
  EXPECT_EQ(dtype_bytes("F64"), 8u);
  EXPECT_NE(error_of([] { dtype_bytes("f32"); }).find("f32"), std::string::npos);
}

TEST(Safetensors, RoundTripOfAllDtypesScalarsEmptyTensorsAndMetadata) {
  TempDir d;
  StFile f;
  f.metadata = {{"step", "1200"}, {"format", "pt"}, {"note", "ünïcode \"quoted\""}};
  const std::vector<float> w = {1.5f, -2.25f, 3e-8f, 65504.f, -0.f, 1e30f};
  f.tensors.push_back({"g.fc.weight", "F32", {2, 3}, bytes_of(w)});
  std::vector<uint16_t> h, b;
  for (float x : {0.1f, -3.0f, 65504.f, 6e-8f}) h.push_back(float_to_half_bits(x));
  for (float x : {0.1f, -3.0f, 1e38f, 1e-30f}) b.push_back(float_to_bf16_bits(x));
  f.tensors.push_back({"g.half", "F16", {4}, bytes_of(h)});
  f.tensors.push_back({"d.bf16", "BF16", {2, 1, 2}, bytes_of(b)});
  f.tensors.push_back({"step", "I64", {}, bytes_of(std::vector<int64_t>{123456789012345})});
  f.tensors.push_back({"empty", "F32", {0, 4}, {}});
  f.tensors.push_back({"rng", "I64", {3}, bytes_of(std::vector<int64_t>{-1, 0, INT64_MAX})});

  const fs::path p = d / "ckpt.safetensors";
  write_safetensors(p, f);
  EXPECT_EQ(names_in(d.path()), std::vector<std::string>{"ckpt.safetensors"});

  const std::string raw = read_file(p);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);  // little-endian host
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw[8], '{');

  const StFile g = read_safetensors(p);
  EXPECT_EQ(g.metadata, f.metadata);
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    SCOPED_TRACE(f.tensors[i].name);
    EXPECT_EQ(g.tensors[i].name, f.tensors[i].name);  // order kept
    EXPECT_EQ(g.tensors[i].dtype, f.tensors[i].dtype);
    EXPECT_EQ(g.tensors[i].shape, f.tensors[i].shape);
    EXPECT_EQ(g.tensors[i].data, f.tensors[i].data);
  }
  const StTensor& s = g.at("step", p);
  EXPECT_TRUE(s.shape.empty());
  int64_t step = 0;
  std::memcpy(&step, s.data.data(), 8);
  EXPECT_EQ(step, 123456789012345);
  EXPECT_EQ(g.find("nope"), nullptr);
  EXPECT_EQ(g.find("d.bf16"), &g.tensors[2]);

  // The same bytes through the in-memory pair.
  EXPECT_EQ(encode_safetensors(f), raw);
  EXPECT_EQ(decode_safetensors(raw, "mem").tensors.size(), f.tensors.size());
}

TEST(Safetensors, ExactByteLayoutOfATinyFile) {
  StFile f;
  f.metadata = {{"step", "7"}};
  f.tensors.push_back({"a", "F32", {2}, bytes_of(std::vector<float>{1.0f, -2.0f})});
  f.tensors.push_back({"b", "I64", {}, bytes_of(std::vector<int64_t>{5})});
  // Header, counted by hand:
  //   {"__metadata__":{"step":"7"},                             29
  //   "a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},     53 (with the comma)
  //   "b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}      52
  //   }                                                          1   = 135
  // padded with one space to 136 = 0x88; then 8 + 8 data bytes; 8 + 136 + 16 = 160 in all.
  const std::string json =
      "{\"__metadata__\":{\"step\":\"7\"},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}";
  ASSERT_EQ(json.size(), 135u);
  std::string expected("\x88\0\0\0\0\0\0\0", 8);
  expected += json + " ";
  expected += std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);  // 1.0f, -2.0f
  expected += std::string("\x05\0\0\0\0\0\0\0", 8);                // int64 5
  ASSERT_EQ(expected.size(), 160u);
  EXPECT_EQ(encode_safetensors(f), expected);

  // And an empty file: "{}" padded to 8.
  EXPECT_EQ(encode_safetensors(StFile{}), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  EXPECT_TRUE(decode_safetensors(encode_safetensors(StFile{}), "empty").tensors.empty());
}

TEST(Safetensors, MatchesTheReferenceWritersTestVectors) {
  // Byte vectors from huggingface/safetensors' own unit tests (safetensors/src/tensor.rs), for
  // files where its tensor ordering and ours agree (one tensor).
  auto to_str = [](std::initializer_list<int> v) {
    std::string s;
    for (int b : v) s.push_back(char(b));
    return s;
  };
  const std::vector<float> six = {0, 1, 2, 3, 4, 5};
  StFile f;
  f.tensors.push_back({"attn.0", "F32", {1, 2, 3}, bytes_of(six)});
  EXPECT_EQ(encode_safetensors(f),
            to_str({64,  0,   0,   0,   0,   0,  0,  0,  123, 34, 97,  116, 116, 110, 46,  48,  34,  58,  123, 34,
                    100, 116, 121, 112, 101, 34, 58, 34, 70,  51, 50,  34,  44,  34,  115, 104, 97,  112, 101, 34,
                    58,  91,  49,  44,  50,  44, 51, 93, 44,  34, 100, 97,  116, 97,  95,  111, 102, 102, 115, 101,
                    116, 115, 34,  58,  91,  48, 44, 50, 52,  93, 125, 125, 0,   0,   0,   0,   0,   0,   128, 63,
                    0,   0,   0,   64,  0,   0,  64, 64, 0,   0,  128, 64,  0,   0,   160, 64}));
  StFile g;
  g.tensors.push_back({"attn0", "F32", {1, 1, 2, 3}, bytes_of(six)});
  EXPECT_EQ(encode_safetensors(g),
            to_str({72,  0,   0,   0,  0,  0,  0,  0,  123, 34,  97, 116, 116, 110, 48,  34,  58,  123, 34,  100, 116,
                    121, 112, 101, 34, 58, 34, 70, 51, 50,  34,  44, 34,  115, 104, 97,  112, 101, 34,  58,  91,  49,
                    44,  49,  44,  50, 44, 51, 93, 44, 34,  100, 97, 116, 97,  95,  111, 102, 102, 115, 101, 116, 115,
                    34,  58,  91,  48, 44, 50, 52, 93, 125, 125, 32, 32,  32,  32,  32,  32,  32,  0,   0,   0,   0,
                    0,   0,   128, 63, 0,  0,  0,  64, 0,   0,   64, 64,  0,   0,   128, 64,  0,   0,   160, 64}));
  StFile m;
  m.metadata = {{"framework", "pt"}};
  EXPECT_EQ(encode_safetensors(m),
            to_str({40,  0,   0,   0,  0,  0,  0,   0,   123, 34,  95,  95,  109, 101, 116, 97,
                    100, 97,  116, 97, 95, 95, 34,  58,  123, 34,  102, 114, 97,  109, 101, 119,
                    111, 114, 107, 34, 58, 34, 112, 116, 34,  125, 125, 32,  32,  32,  32,  32}));
  EXPECT_EQ(decode_safetensors(encode_safetensors(g), "ref").tensors[0].shape, (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(Safetensors, ReadsHeadersWrittenByOthers) {
  // Key order, spacing and padding as another writer may produce them (the reference writer
  // sorts tensors by alignment, so data order need not be key order).
  const std::string json =
      "{ \"w\" : {\"data_offsets\":[2,6], \"shape\":[1], \"dtype\":\"F32\"},"
      "  \"__metadata__\": {\"format\": \"pt\"},"
      "  \"u\": {\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]} }   ";
  std::string file(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(file.data(), &n, 8);
  file += json + std::string("\x07\x09\x00\x00\x80\x3f", 6);
  const StFile f = decode_safetensors(file, "other.safetensors");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "u");  // data order
  EXPECT_EQ(f.tensors[0].data, (std::vector<uint8_t>{7, 9}));
  EXPECT_EQ(f.tensors[1].name, "w");
  float v = 0;
  std::memcpy(&v, f.tensors[1].data.data(), 4);
  EXPECT_EQ(v, 1.0f);
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

namespace {

// A file from a literal header (padded like the real writer) and `data_bytes` bytes of data.
std::string st_file(const std::string& header, size_t data_bytes) {
  std::string json = header;
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  return out + json + std::string(data_bytes, '\x01');
}

}  // namespace

TEST(Safetensors, CorruptFilesThrowNamingTheFile) {
  TempDir d;
  StFile good;
  good.tensors.push_back({"a", "F32", {2}, bytes_of(std::vector<float>{1, 2})});
  good.tensors.push_back({"b", "F32", {1}, bytes_of(std::vector<float>{3})});
  const std::string ok = encode_safetensors(good);

  struct Case {
    const char* name;
    std::string bytes;
    const char* expect;  // a piece of the message
  };
  std::string huge_header = ok;
  huge_header[0] = '\xff';
  huge_header[1] = '\xff';
  const std::vector<Case> cases = {
      {"tiny", "abcd", "Truncated or not a safetensors file"},
      {"empty", "", "Truncated or not a safetensors file"},
      {"huge_header", huge_header, "Truncated or not a safetensors file"},
      {"absurd_header", std::string("\0\0\0\0\0\0\0\x40{}", 10), "far more than any real header"},
      {"not_json", st_file("{\"a\": nonsense", 0), "not valid JSON"},
      {"not_object", st_file("[1, 2, 3]", 0), "not a JSON object"},
      {"unknown_dtype", st_file(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype F33"},
      {"size_mismatch", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4), "needs 8 bytes"},
      {"scalar_mismatch", st_file(R"({"a":{"dtype":"I64","shape":[],"data_offsets":[0,4]}})", 4), "needs 8 bytes"},
      {"truncated_data", ok.substr(0, ok.size() - 4), "Truncated file"},
      {"overlap",
       st_file(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           12),
       "overlapping"},
      {"reversed", st_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8), "out-of-order"},
      {"gap",
       st_file(
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
           12),
       "belong to no tensor"},
      {"trailing", ok + "xyz", "after the last tensor"},
      {"negative_dim", st_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative"},
      {"no_offsets", st_file(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "data_offsets"},
      {"no_dtype", st_file(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4), "no dtype"},
      {"bad_metadata", st_file(R"({"__metadata__":{"step":7}})", 0), "not a string"},
      {"huge_shape", st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
       "impossibly large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path p = d / (std::string("bad_") + c.name + ".safetensors");
    write_raw(p, c.bytes);
    const std::string msg = error_of([&] { read_safetensors(p); });
    EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
  }
  // Missing file.
  const std::string msg = error_of([&] { read_safetensors(d / "absent.safetensors"); });
  EXPECT_NE(msg.find("absent.safetensors"), std::string::npos) << msg;
}

// The 8-byte size and the header are checked before the data is read: a 3 GiB file of zeros
// (sparse: it costs no disk) is refused without reading it whole.
TEST(Safetensors, TheHeaderIsCheckedBeforeTheDataIsRead) {
  TempDir d;
  const fs::path zeros = d / "zeros.safetensors";
  write_raw(zeros, "");
  fs::resize_file(zeros, uint64_t{3} << 30);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { read_safetensors(zeros); });
  EXPECT_NE(e.find("not a JSON object"), std::string::npos) << e;
  // A valid header that describes 2 GiB of data: the caller's check sees it before any is read.
  const fs::path big = d / "big.safetensors";
  write_raw(big, st_file(R"({"a":{"dtype":"U8","shape":[2147483648],"data_offsets":[0,2147483648]}})", 0));
  fs::resize_file(big, fs::file_size(big) + (uint64_t{1} << 31));
  bool seen = false;
  const std::string c = error_of([&] {
    read_safetensors(big, [&](const StFile& header) {
      ASSERT_EQ(header.tensors.size(), 1u);
      EXPECT_EQ(header.tensors[0].shape, (std::vector<int64_t>{int64_t{1} << 31}));
      EXPECT_TRUE(header.tensors[0].data.empty());
      seen = true;
      throw Error("refused from its header", big.string());
    });
  });
  EXPECT_TRUE(seen);
  EXPECT_NE(c.find("refused from its header"), std::string::npos) << c;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  // A header announcing more data than the file holds is refused from the file's size.
  const fs::path cut = d / "cut.safetensors";
  write_raw(cut, st_file(R"({"a":{"dtype":"U8","shape":[2147483648],"data_offsets":[0,2147483648]}})", 16));
  const std::string t = error_of([&] { read_safetensors(cut); });
  EXPECT_NE(t.find("Truncated file"), std::string::npos) << t;
}

TEST(Safetensors, AtThrowsForAMissingTensorNamingTheFile) {
  StFile f;
  f.tensors.push_back({"a", "U8", {1}, {42}});
  EXPECT_EQ(f.at("a", "x.safetensors").data[0], 42);
  const std::string msg = error_of([&] { f.at("g.conv1.weight", "/runs/r/ckpt.safetensors"); });
  EXPECT_NE(msg.find("has no tensor g.conv1.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/runs/r/ckpt.safetensors"), std::string::npos) << msg;
}

TEST(Safetensors, WriterRejectsInvalidTensors) {
  TempDir d;
  const fs::path p = d / "out.safetensors";
  auto one = [](StTensor t) {
    StFile f;
    f.tensors.push_back(std::move(t));
    return f;
  };
  EXPECT_NE(error_of([&] {
              write_safetensors(p, one({"a", "F32", {3}, std::vector<uint8_t>(8)}));
            }).find(p.string()),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              write_safetensors(p, one({"a", "F31", {2}, std::vector<uint8_t>(8)}));
            }).find("F31"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              write_safetensors(p, one({"__metadata__", "U8", {1}, {0}}));
            }).find("__metadata__"),
            std::string::npos);
  StFile dup;
  dup.tensors.push_back({"a", "U8", {1}, {0}});
  dup.tensors.push_back({"a", "U8", {1}, {1}});
  EXPECT_NE(error_of([&] { write_safetensors(p, dup); }).find("Two tensors are named a"), std::string::npos);
  EXPECT_FALSE(fs::exists(p));
  EXPECT_TRUE(fs::is_empty(d.path()));
  // Unwritable destination.
  write_raw(d / "blocker", "");
  const fs::path q = d / "blocker" / "g.safetensors";
  EXPECT_NE(error_of([&] { write_safetensors(q, one({"a", "U8", {1}, {0}})); }).find(q.string()), std::string::npos);
}

// ---- images -----------------------------------------------------------------------------------

TEST(ImageIo, ValueMapping) {
  const std::vector<float> v = {-1.f, 1.f, 0.f, -2.f, 2.f, NAN, -0.5f, 0.5f, INFINITY};
  // Each value as its own 1x1 grey image.
  const std::vector<int> want = {0, 255, 128, 0, 255, 0, 64, 191, 255};
  for (size_t i = 0; i < v.size(); ++i) {
    const Image8 img = to_image8(v.data(), int(i), 1, 1);
    ASSERT_EQ(img.pixels.size(), 1u);
    EXPECT_EQ(int(img.pixels[0]), want[i]) << "x = " << v[i];
  }
  // 0 maps to 127.5 exactly, the one exactly representable half-way case: it rounds up to 128.
}

TEST(ImageIo, ToImage8PicksTheRightImage) {
  const int res = 2, ch = 3, per = res * res * ch;
  std::vector<float> batch(3 * per);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = (i / per == 2) ? 1.0f : -1.0f;
  const Image8 img = to_image8(batch.data(), 2, res, ch);
  EXPECT_EQ(img.width, 2);
  EXPECT_EQ(img.height, 2);
  EXPECT_EQ(img.channels, 3);
  EXPECT_EQ(img.pixels, std::vector<uint8_t>(per, 255));
}

TEST(ImageIo, MakeGridLayout) {
  const int n = 5, res = 4, ch = 3, cols = 3, pad = 2;
  const std::vector<float> batch = ampgan::testing::random_normal(size_t(n) * res * res * ch, 7, 0.6f);
  const Image8 g = make_grid(batch.data(), n, res, ch, cols, pad, 7);
  EXPECT_EQ(g.width, 3 * 4 + 4 * 2);   // 20
  EXPECT_EQ(g.height, 2 * 4 + 3 * 2);  // 14
  EXPECT_EQ(g.channels, 3);
  ASSERT_EQ(g.pixels.size(), size_t(20 * 14 * 3));
  auto at = [&](const Image8& im, int y, int x, int c) {
    return im.pixels[(size_t(y) * im.width + x) * im.channels + c];
  };
  for (int k = 0; k < n; ++k) {
    const Image8 src = to_image8(batch.data(), k, res, ch);
    const int x0 = pad + (k % cols) * (res + pad), y0 = pad + (k / cols) * (res + pad);
    for (int y = 0; y < res; ++y)
      for (int x = 0; x < res; ++x)
        for (int c = 0; c < ch; ++c) ASSERT_EQ(at(g, y0 + y, x0 + x, c), at(src, y, x, c)) << k << " " << y << " " << x;
  }
  // Image 4 (row 1, col 1), pixel (y 3, x 2), green: grid (2+6+3, 2+6+2) = (11, 10).
  EXPECT_EQ(at(g, 11, 10, 1), at(to_image8(batch.data(), 4, res, ch), 3, 2, 1));
  // Border, gutter between images, and the unused sixth cell are padding.
  EXPECT_EQ(at(g, 0, 0, 0), 7);
  EXPECT_EQ(at(g, 5, 6, 2), 7);   // x 6..7 is the gutter between columns 0 and 1
  EXPECT_EQ(at(g, 9, 15, 0), 7);  // cell (1, 2) is empty
  EXPECT_EQ(at(g, 13, 19, 1), 7);

  // A batch smaller than a row is not padded out to `cols`.
  const Image8 small = make_grid(batch.data(), 2, res, ch, 8, 1);
  EXPECT_EQ(small.width, 2 * 4 + 3 * 1);
  EXPECT_EQ(small.height, 4 + 2 * 1);
  // Grey, no padding: a 2x2 grid of 4x4 images is an 8x8 image.
  const Image8 grey = make_grid(batch.data(), 4, res, 1, 2, 0);
  EXPECT_EQ(grey.width, 8);
  EXPECT_EQ(grey.height, 8);
  EXPECT_EQ(at(grey, 4, 4, 0), at(to_image8(batch.data(), 3, res, 1), 0, 0, 0));
}

TEST(ImageIo, PngRoundTripGreyAndRgb) {
  TempDir d;
  for (int ch : {1, 3}) {
    SCOPED_TRACE(ch);
    Image8 img;
    img.width = 13;
    img.height = 7;
    img.channels = ch;
    img.pixels.resize(size_t(13) * 7 * ch);
    for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t((i * 37 + 11) % 256);
    const fs::path p = d / ("img" + std::to_string(ch) + ".png");
    write_png(p, img);
    EXPECT_EQ(read_file(p).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    const Image8 back = read_image(p);
    EXPECT_EQ(back.width, 13);
    EXPECT_EQ(back.height, 7);
    EXPECT_EQ(back.channels, ch);
    EXPECT_EQ(back.pixels, img.pixels);
  }
  EXPECT_EQ(names_in(d.path()), (std::vector<std::string>{"img1.png", "img3.png"}));
}

TEST(ImageIo, ChannelOrderIsRgbOnDisk) {
  // A round trip alone would not notice a missing swap on both sides; ask OpenCV directly.
  TempDir d;
  Image8 red{1, 1, 3, {255, 0, 0}};
  write_png(d / "red.png", red);
  const cv::Mat m = cv::imread((d / "red.png").string(), cv::IMREAD_COLOR);  // BGR
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 255));
  // And a BGR file written by OpenCV reads back as RGB.
  cv::Mat blue(1, 2, CV_8UC3, cv::Scalar(255, 0, 0));  // B = 255
  ASSERT_TRUE(cv::imwrite((d / "blue.png").string(), blue));
  const Image8 b = read_image(d / "blue.png");
  EXPECT_EQ(b.pixels, (std::vector<uint8_t>{0, 0, 255, 0, 0, 255}));
}

namespace {

// A minimal 8-bit grey + alpha PNG (colour type 4), built by hand.
std::string grey_alpha_png(const std::vector<uint8_t>& ga, int w, int h) {
  auto be32 = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  auto chunk = [&](const std::string& type, const std::string& data) {
    std::string td = type + data;
    const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(td.data()), uInt(td.size())));
    return be32(uint32_t(data.size())) + td + be32(crc);
  };
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    raw.append(reinterpret_cast<const char*>(ga.data()) + size_t(y) * w * 2, size_t(w) * 2);
  }
  uLongf zlen = compressBound(uLong(raw.size()));
  std::string z(zlen, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(z.data()), &zlen, reinterpret_cast<const Bytef*>(raw.data()),
                     uLong(raw.size())),
            Z_OK);
  z.resize(zlen);
  const std::string ihdr = be32(uint32_t(w)) + be32(uint32_t(h)) + std::string("\x08\x04\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

}  // namespace

TEST(ImageIo, ReadsAlphaAnd16BitImages) {
  TempDir d;
  cv::Mat bgra(1, 1, CV_8UC4, cv::Scalar(10, 20, 30, 40));
  ASSERT_TRUE(cv::imwrite((d / "bgra.png").string(), bgra));
  Image8 a = read_image(d / "bgra.png");
  EXPECT_EQ(a.channels, 3);
  EXPECT_EQ(a.pixels, (std::vector<uint8_t>{30, 20, 10}));
  cv::Mat g16(1, 2, CV_16UC1);
  g16.at<uint16_t>(0, 0) = 65535;
  g16.at<uint16_t>(0, 1) = 257 * 100;
  ASSERT_TRUE(cv::imwrite((d / "g16.png").string(), g16));
  Image8 g = read_image(d / "g16.png");
  EXPECT_EQ(g.channels, 1);
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{255, 100}));
  // OpenCV cannot write grey + alpha; other programs do. Its PNG decoder expands such files to
  // BGRA, so they come back as RGB with equal channels (alpha dropped).
  write_raw(d / "ga.png", grey_alpha_png({77, 200, 5, 0}, 2, 1));
  Image8 ga = read_image(d / "ga.png");
  EXPECT_EQ(ga.width, 2);
  EXPECT_EQ(ga.height, 1);
  EXPECT_EQ(ga.channels, 3);
  EXPECT_EQ(ga.pixels, (std::vector<uint8_t>{77, 77, 77, 5, 5, 5}));
}

TEST(ImageIo, ErrorsNameTheFile) {
  TempDir d;
  write_raw(d / "blocker", "");
  Image8 img{2, 2, 1, {1, 2, 3, 4}};
  const fs::path p = d / "blocker" / "step_000001.png";
  EXPECT_NE(error_of([&] { write_png(p, img); }).find(p.string()), std::string::npos);
  write_raw(d / "fake.png", "this is not a PNG at all");
  std::string msg = error_of([&] { read_image(d / "fake.png"); });
  EXPECT_NE(msg.find((d / "fake.png").string()), std::string::npos) << msg;
  write_raw(d / "empty.png", "");
  msg = error_of([&] { read_image(d / "empty.png"); });
  EXPECT_NE(msg.find((d / "empty.png").string()), std::string::npos) << msg;
  msg = error_of([&] { read_image(d / "none.png"); });
  EXPECT_NE(msg.find((d / "none.png").string()), std::string::npos) << msg;
  Image8 bad{3, 3, 1, {1, 2}};  // too few pixels
  EXPECT_NE(error_of([&] { write_png(d / "bad.png", bad); }).find("bad.png"), std::string::npos);
  EXPECT_FALSE(fs::exists(d / "bad.png"));
}

TEST(ImageIo, UpscaleNearest) {
  const Image8 img{2, 1, 3, {1, 2, 3, 4, 5, 6}};
  const Image8 up = upscale_nearest(img, 3);
  EXPECT_EQ(up.width, 6);
  EXPECT_EQ(up.height, 3);
  EXPECT_EQ(up.channels, 3);
  ASSERT_EQ(up.pixels.size(), size_t(6 * 3 * 3));
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 6; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(up.pixels[(size_t(y) * 6 + x) * 3 + c], img.pixels[size_t(x / 3) * 3 + c]) << y << " " << x;
  Image8 grey{2, 2, 1, {10, 20, 30, 40}};
  const Image8 g2 = upscale_nearest(grey, 2);
  EXPECT_EQ(g2.pixels, (std::vector<uint8_t>{10, 10, 20, 20, 10, 10, 20, 20, 30, 30, 40, 40, 30, 30, 40, 40}));
  EXPECT_EQ(upscale_nearest(grey, 1).pixels, grey.pixels);
  EXPECT_FALSE(error_of([&] { upscale_nearest(grey, 0); }).empty());
}
