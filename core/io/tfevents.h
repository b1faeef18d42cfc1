// TensorBoard's event files (events.out.tfevents.*) at the level of records: TFRecord framing
// around opaque bytes (one serialized Event each; core/run/tensorboard_log.h makes them).
//
// A record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   data[length]                  | uint32 masked CRC-32C of data
// with mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8, as TensorFlow's record writer and
// TensorBoard's reader define it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ampgan::io {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum TFRecord uses. Our own
// table version: zlib has only CRC-32 (another polynomial), and Debian's libcrc32c is a Python
// extension, not a C library; 20 lines beat a dependency for a value per record.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
uint32_t masked_crc32c(const void* data, size_t n);

// One framed record.
std::string tfrecord(std::string_view data);

// Appends records to a new file, one write(2) per record, so that a process killed at any
// instant leaves whole records followed by at most one cut-off tail (which read_tfrecords drops).
class TfRecordWriter {
 public:
  // Creates `path`, which must not exist (O_EXCL: two writers never share a file). Throws Error
  // naming the path if it cannot.
  explicit TfRecordWriter(const std::filesystem::path& path);
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  void write(std::string_view data);  // throws Error naming the file (disk full: the tail is cut off again)
  void sync();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

struct TfRecords {
  std::vector<std::string> records;  // each record's data, in file order
  uint64_t valid_bytes = 0;          // the file's length up to the end of the last whole record
  bool damaged = false;              // a CRC mismatch (not a cut-off tail) ended the read early
};

// The whole records of a file: reading stops at a cut-off tail (a killed writer) or at the first
// record whose CRC does not match. Throws Error if the file cannot be read.
TfRecords read_tfrecords(const std::filesystem::path& path);

}  // namespace ampgan::io
