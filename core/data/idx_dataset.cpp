#include "core/data/idx_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <opencv2/core.hpp>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/data/preprocess.h"
#include "core/io/read_limits.h"

namespace ampgan::data {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr uint32_t kMaxSide = 16384;           // beyond this a header is garbage, not an image

const char* kRefetch = "the file is damaged or incomplete; download it again";

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

// gzopen/gzread read gzip and raw files alike, so one reader serves .gz and uncompressed IDX.
class GzReader {
 public:
  GzReader(const std::string& path, const LoadOptions& opt) : path_(path), opt_(opt) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw Error("no such file", path, "check the path of the IDX file");
    file_size_ = std::filesystem::file_size(path, ec);
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) throw Error("cannot open file", path, "check that it is readable");
    gzbuffer(f_, 1 << 20);
  }

  // The most bytes this file can hold after its header: its size if raw, deflate's limit if not.
  uint64_t max_payload(uint64_t header_bytes) {
    if (gzdirect(f_)) return file_size_ > header_bytes ? file_size_ - header_bytes : 0;
    return io::max_inflated_size(file_size_);
  }
  ~GzReader() {
    if (f_) gzclose(f_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; fewer only at the end of the data. A corrupt gzip stream throws;
  // a gzip stream cut short just ends (the caller reports the missing bytes).
  size_t read(uint8_t* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      const unsigned want = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 24));
      const int r = gzread(f_, dst + got, want);
      if (r < 0) corrupt();
      if (r == 0) {
        int err = Z_OK;
        gzerror(f_, &err);
        if (err != Z_OK && err != Z_BUF_ERROR) corrupt();  // Z_BUF_ERROR: stream ends early
        break;
      }
      got += static_cast<size_t>(r);
      check_cancel_();
    }
    return got;
  }

  uint32_t read_be32(const char* field) {
    uint8_t b[4];
    if (read(b, 4) != 4)
      throw Error(std::string("IDX file is truncated: it ends inside the header (") + field + ")", path_, kRefetch);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }

  // Reads exactly n bytes or throws "truncated" (the message counts `before` bytes already read
  // out of `total`). Grows the buffer as data arrives, so a bogus header that announces more than
  // the file holds fails on the missing data, not on the allocation.
  std::vector<uint8_t> read_exact(uint64_t n, const char* what, uint64_t before, uint64_t total) {
    std::vector<uint8_t> data;
    data.reserve(static_cast<size_t>(std::min<uint64_t>(n, 16u << 20)));
    uint64_t got = 0;
    while (got < n) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(n - got, 16u << 20));
      data.resize(static_cast<size_t>(got) + want);
      const size_t r = read(data.data() + got, want);
      got += r;
      if (r < want) break;
    }
    if (got < n)
      throw Error("IDX file is truncated: expected " + std::to_string(total) + " bytes of " + what + ", found " +
                      std::to_string(before + got),
                  path_, kRefetch);
    return data;
  }

  // Reads to the end: gzip checks its CRC only there, so a corrupt stream whose damage still
  // inflates cleanly is caught. Returns the number of bytes after the expected data.
  uint64_t drain() {
    uint8_t buf[1 << 14];
    uint64_t extra = 0;
    for (size_t r; (r = read(buf, sizeof buf)) > 0;) extra += r;
    return extra;
  }

 private:
  [[noreturn]] void corrupt() {
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    throw Error(std::string("corrupt gzip data") + (msg && *msg ? std::string(": ") + msg : ""), path_, kRefetch);
  }
  void check_cancel_() { detail::check_cancel(opt_, path_); }

  std::string path_;
  const LoadOptions& opt_;
  gzFile f_ = nullptr;
  uint64_t file_size_ = 0;
};

std::string not_idx_hint(uint32_t magic, uint32_t expected) {
  if (expected == kImagesMagic && magic == kLabelsMagic)
    return "this is an IDX labels file; give the images file (...-images-idx3-ubyte.gz) instead";
  if (expected == kLabelsMagic && magic == kImagesMagic)
    return "this is an IDX images file, not labels; rename or remove it";
  return "expected an IDX file of unsigned bytes (MNIST format); for ordinary images give the "
         "folder that holds them";
}

uint64_t fs_size(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

uint32_t next_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

ImageSet load_idx(const std::string& images_path, const std::string& labels_path, const LoadOptions& opt) {
  if (opt.res < 1) throw Error("invalid resolution " + std::to_string(opt.res), "--res", "use 32, 64 or 128");
  if (opt.channels != 0 && opt.channels != 1 && opt.channels != 3)
    throw Error("invalid channel count " + std::to_string(opt.channels), "--channels", "use 1 or 3");

  ImageSet set;
  set.name = std::filesystem::path(images_path).filename().string();
  set.source = images_path;

  // ---- images: header (magic, count, rows, cols), then count*rows*cols bytes ----
  GzReader in(images_path, opt);
  const uint32_t magic = in.read_be32("magic number");
  if (magic != kImagesMagic)
    throw Error("not an IDX images file: magic number " + hex32(magic) + ", expected " + hex32(kImagesMagic),
                images_path, not_idx_hint(magic, kImagesMagic));
  const uint32_t count = in.read_be32("image count");
  const uint32_t rows = in.read_be32("rows");
  const uint32_t cols = in.read_be32("columns");
  if (count == 0) throw Error("IDX file holds no images", images_path, "use a file with images");
  if (count > 0x7FFFFFFFu || rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide)
    throw Error("IDX header is implausible: " + std::to_string(count) + " images of " + std::to_string(rows) + "x" +
                    std::to_string(cols),
                images_path, kRefetch);
  // Before anything is allocated: the header's claim must fit in the file (deflate expands at
  // most 1032:1), and the decoded set in memory.
  const uint64_t in_size = uint64_t{rows} * cols, data_bytes = in_size * count;
  if (data_bytes > in.max_payload(16))
    throw Error("IDX file is truncated or its header damaged: the header announces " + std::to_string(count) +
                    " images of " + std::to_string(rows) + "x" + std::to_string(cols) + " (" +
                    io::human_bytes(data_bytes) + "), more than this file of " + io::human_bytes(fs_size(images_path)) +
                    " can hold",
                images_path, kRefetch);
  const int c = opt.channels == 3 ? 3 : 1;
  const size_t res2 = size_t(opt.res) * opt.res;
  // Images are read and decoded a chunk at a time: the raw data is never held whole.
  const int64_t chunk = std::clamp<int64_t>(int64_t{8 << 20} / int64_t(in_size), 1, 512);
  io::check_dataset_bytes(uint64_t{count} * res2 * c + uint64_t(chunk) * in_size,
                          std::to_string(count) + " images at " + std::to_string(opt.res) + "x" +
                              std::to_string(opt.res) + "x" + std::to_string(c),
                          images_path, opt.max_bytes);

  // ---- labels (optional), before the images are decoded: a mismatch fails fast ----
  if (!labels_path.empty()) {
    GzReader lab_in(labels_path, opt);
    const uint32_t lmagic = lab_in.read_be32("magic number");
    if (lmagic != kLabelsMagic)
      throw Error("not an IDX labels file: magic number " + hex32(lmagic) + ", expected " + hex32(kLabelsMagic),
                  labels_path, not_idx_hint(lmagic, kLabelsMagic));
    const uint32_t n = lab_in.read_be32("label count");
    if (n != count)
      throw Error("image and label counts differ: " + std::to_string(count) + " images in " + images_path + ", " +
                      std::to_string(n) + " labels",
                  labels_path,
                  "use the labels file that belongs to the images file, or remove it to load "
                  "the images without labels");
    const std::vector<uint8_t> lab = lab_in.read_exact(n, "labels", 0, n);
    lab_in.drain();
    detail::set_labels(set, std::vector<int32_t>(lab.begin(), lab.end()), labels_path);
  }

  // ---- pad to a power-of-two square, centred, then resize to res ----
  const int side = static_cast<int>(next_pow2(std::max(rows, cols)));
  const int top = (side - static_cast<int>(rows)) / 2, left = (side - static_cast<int>(cols)) / 2;
  set.count = static_cast<int>(count);
  set.res = opt.res;
  set.channels = c;
  for (int64_t b = 0; b < int64_t{count}; b += chunk) {
    detail::check_cancel(opt, images_path);
    const int64_t e = std::min<int64_t>(count, b + chunk);
    const std::vector<uint8_t> raw =
        in.read_exact(uint64_t(e - b) * in_size, "image data", uint64_t(b) * in_size, data_bytes);
    // The decoded set grows with the data that arrived, never ahead of it: a header claiming a
    // million images in a file that holds a few costs what the few cost.
    const size_t need = static_cast<size_t>(e) * set.image_size();
    if (set.pixels.capacity() < need)
      set.pixels.reserve(
          std::min(static_cast<size_t>(count) * set.image_size(), std::max(need, 2 * set.pixels.capacity())));
    set.pixels.resize(need);
    parallel_for(e - b, 8, [&](int64_t lo, int64_t hi) {
      cv::Mat square(side, side, CV_8UC1);
      std::vector<uint8_t> grey(c == 3 ? res2 : 0);
      for (int64_t j = lo; j < hi; ++j) {
        square.setTo(0);
        const uint8_t* src = raw.data() + j * in_size;
        for (uint32_t y = 0; y < rows; ++y) std::memcpy(square.ptr<uint8_t>(top + y) + left, src + y * cols, cols);
        uint8_t* dst = set.pixels.data() + (b + j) * set.image_size();
        if (c == 1) {
          detail::resize_square(square, opt.res, dst);
        } else {  // forced RGB: replicate the grey value
          detail::resize_square(square, opt.res, grey.data());
          for (size_t p = 0; p < res2; ++p) dst[3 * p] = dst[3 * p + 1] = dst[3 * p + 2] = grey[p];
        }
      }
    });
    if (opt.progress) opt.progress(static_cast<int>(e), static_cast<int>(count));
  }
  if (const uint64_t extra = in.drain())
    set.warnings.push_back("ignored " + std::to_string(extra) + " bytes after the image data in " + images_path);
  return set;
}

}  // namespace ampgan::data
