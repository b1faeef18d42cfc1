#include "core/io/tfevents.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "core/common/error.h"
#include "core/io/atomic_file.h"

namespace ampgan::io {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kCastagnoli = 0x82F63B78u;  // CRC-32C's polynomial, bit-reflected
constexpr uint32_t kMaskDelta = 0xa282ead8u;   // TFRecord's mask constant

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCastagnoli : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

uint32_t mask(uint32_t c) { return ((c >> 15) | (c << 17)) + kMaskDelta; }

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

[[noreturn]] void fail(const std::string& what, const fs::path& path, int err) {
  throw Error(what + ": " + std::strerror(err), path.string(),
              err == ENOSPC ? "free some disk space" : "check the folder's permissions and free space");
}

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, size_t n) { return mask(crc32c(data, n)); }

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(data);
  put_le(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

TfRecordWriter::TfRecordWriter(const fs::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("Could not create the TensorBoard event file", path, errno);
}

TfRecordWriter::~TfRecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TfRecordWriter::write(std::string_view data) {
  const std::string rec = tfrecord(data);
  size_t done = 0;
  while (done < rec.size()) {
    const ssize_t w = ::write(fd_, rec.data() + done, rec.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      // Leave the file ending in a whole record (best effort; a reader drops a cut-off tail anyway).
      if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {}
      fail("Could not append to the TensorBoard event file", path_, err);
    }
    done += static_cast<size_t>(w);
  }
  size_ += rec.size();
}

void TfRecordWriter::sync() {
  if (::fsync(fd_) != 0) fail("Could not flush the TensorBoard event file to disk", path_, errno);
}

TfRecords read_tfrecords(const fs::path& path) {
  const std::string bytes = read_file(path);
  TfRecords out;
  size_t pos = 0;
  while (bytes.size() - pos >= 12) {
    const char* h = bytes.data() + pos;
    if (static_cast<uint32_t>(get_le(h + 8, 4)) != masked_crc32c(h, 8)) {
      out.damaged = true;
      break;
    }
    const uint64_t len = get_le(h, 8);
    if (len > bytes.size() - pos - 12 || bytes.size() - pos - 12 - len < 4) break;  // cut off
    const char* d = h + 12;
    if (static_cast<uint32_t>(get_le(d + len, 4)) != masked_crc32c(d, len)) {
      out.damaged = true;
      break;
    }
    out.records.emplace_back(d, len);
    pos += 12 + len + 4;
    out.valid_bytes = pos;
  }
  return out;
}

}  // namespace ampgan::io
