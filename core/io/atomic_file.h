// Crash-safe file writing. Every file a run leaves on disk (config, checkpoints, samples) is
// written whole or not at all, and the append-only logs (metrics.csv, events.jsonl) never end
// in half a line, so a run killed at any instant can be resumed and its history read back.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ampgan::io {

// Writes bytes to "<path>.tmp-<pid>-<n>", fsyncs it, renames it over path and fsyncs the folder:
// a crash never leaves a half-written file, and an existing file is replaced only by a complete
// one. Throws Error naming path if anything fails (the temporary file is removed then, and the
// old file, if any, is left as it was).
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// The most read_file reads unless told otherwise: beyond any checkpoint or log a run writes.
constexpr uint64_t kReadFileMaxBytes = uint64_t{16} << 30;
// The most a settings file (--config, a run's config.json) may be.
constexpr uint64_t kConfigFileMaxBytes = uint64_t{16} << 20;

// The whole file. Throws Error if it is missing, a folder, not a regular file (a FIFO would block
// the reader forever, a device such as /dev/zero never ends), larger than max_bytes, or unreadable.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = kReadFileMaxBytes);

// A file opened for reading in parts, with read_file's checks, for readers that read a header
// first and only then what the header says (never more than the file holds).
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path, uint64_t max_bytes = kReadFileMaxBytes);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }  // at open
  // Exactly n bytes at offset into dst; throws Error naming the file if it ends first or a read fails.
  void read_at(uint64_t offset, void* dst, size_t n) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Append-only text log. Each append_line writes one whole line ('\n' added) with a single
// write(2), so it reaches the kernel at once (no user-space buffer to lose); sync() fsyncs.
// Opening an existing file whose last line is incomplete (a crash mid-line) truncates that
// partial line away, so readers only ever see whole lines. The folder must exist (see
// ensure_writable_dir); throws Error if the file cannot be opened for writing.
class AppendLog {
 public:
  explicit AppendLog(const std::filesystem::path& p);
  ~AppendLog();
  AppendLog(AppendLog&& o) noexcept;
  AppendLog& operator=(AppendLog&& o) noexcept;
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  // `line` must not contain '\n' (one trailing '\n' is tolerated and not doubled). On a failed
  // write (disk full) the partial line is cut off again and Error is thrown.
  void append_line(std::string_view line);
  void sync();
  const std::filesystem::path& path() const { return path_; }

  // Bytes in the file now (0 for a new or emptied log: e.g. write a CSV header then).
  uint64_t size() const { return size_; }
  // Bytes of an incomplete last line that opening the file cut off (0 normally).
  uint64_t truncated_bytes() const { return truncated_; }

 private:
  void close_fd() noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t truncated_ = 0;
};

// Checks that dir exists (creating it and its parents if needed) and is a folder this process
// can create files in (tested by creating one, which also catches read-only file systems).
// Throws Error naming dir otherwise ("is a file", "not writable"), with a hint.
void ensure_writable_dir(const std::filesystem::path& dir);

}  // namespace ampgan::io
