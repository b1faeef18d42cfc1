#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "core/common/error.h"

namespace ampgan::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::system_category().message(err); }

// What the user can do about a failed open/write, by cause.
std::string hint_for(int err) {
  switch (err) {
    case ENOENT:
      return "The folder does not exist; create it or choose another one";
    case ENOTDIR:
      return "A part of the path is a file, not a folder; choose another location";
    case EISDIR:
      return "A folder has that name; remove or rename it, or choose another name";
    case EACCES:
    case EPERM:
      return "You have no permission to write there; choose another folder";
    case EROFS:
      return "The file system is read-only; choose another folder";
    case ENOSPC:
    case EDQUOT:
      return "The disk is full; free some space and try again";
    default:
      return "Check that the folder exists, is writable and has free space";
  }
}

[[noreturn]] void fail(const std::string& what, const fs::path& path, int err) {
  throw Error(what + ": " + errno_text(err), path.string(), hint_for(err));
}

// Writes all of [p, p+n), retrying on EINTR and short writes. Returns 0 or an errno.
int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

// Makes a rename in dir durable. Best effort: the file itself is already complete and in
// place, and some file systems refuse fsync on folders, so an error here is not worth a throw.
void fsync_dir(const fs::path& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  (void)::fsync(dfd);
  ::close(dfd);
}

// Distinguishes temporary files of several threads writing the same path at once.
std::atomic<uint64_t> g_tmp_counter{0};

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  const fs::path tmp =
      path.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(g_tmp_counter.fetch_add(1));
  // O_EXCL | O_NOFOLLOW: a file or link planted under the temporary name is never written through.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("Could not write the file", path, errno);

  int err = write_all(fd, bytes.data(), bytes.size());
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;  // NFS may report write errors only here
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    fail("Could not write the file", path, err);
  }
  fsync_dir(path.parent_path());
}

namespace {

// Opens path for reading after the checks read_file promises; returns the descriptor (blocking
// again) and the file's size.
int open_regular(const fs::path& path, uint64_t max_bytes, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw Error("File not found", path.string(), "Check the path");
    fail("Could not open the file", path, err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("Could not open the file", path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error("This is a folder, not a file", path.string(), "Choose a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a plain file";
    throw Error(std::string("This is not a regular file but ") + kind, path.string(),
                "Give a regular file; pipes and devices are not read (save the data to a file first)");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error("The file is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                    " this kind of file can be",
                path.string(), "Check that this is the file you meant");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

}  // namespace

std::string read_file(const fs::path& path, uint64_t max_bytes) {
  uint64_t size = 0;
  const int fd = open_regular(path, max_bytes, &size);
  std::string out;
  if (size > 0) out.reserve(static_cast<size_t>(size));
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error("Could not read the file: " + errno_text(err), path.string(),
                  "The disk or file may be damaged; try a copy of it");
    }
    if (r == 0) break;
    out.append(buf.data(), static_cast<size_t>(r));
    if (out.size() > max_bytes) {  // the file grew while being read
      ::close(fd);
      throw Error("The file grew beyond " + std::to_string(max_bytes) + " bytes while being read", path.string(),
                  "Read it when nothing is writing it");
    }
  }
  ::close(fd);
  return out;
}

InputFile::InputFile(const fs::path& path, uint64_t max_bytes) : path_(path) {
  fd_ = open_regular(path, max_bytes, &size_);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, void* dst, size_t n) const {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, std::min<size_t>(n, size_t{1} << 30), static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int err = errno;
      throw Error("Could not read the file: " + errno_text(err), path_.string(),
                  "The disk or file may be damaged; try a copy of it");
    }
    if (r == 0)
      throw Error("The file ended at byte " + std::to_string(offset) + ", before the data its header announces",
                  path_.string(), "The file is truncated (or was cut while being read); use another copy");
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}

// ---- AppendLog --------------------------------------------------------------------------------

AppendLog::AppendLog(const fs::path& p) : path_(p) {
  // O_RDWR (not O_WRONLY): opening must read the tail to find an incomplete last line.
  // O_NOFOLLOW: a log is the run folder's own file; a symbolic link planted in its place (even a
  // dangling one) would make the run create and append to a file outside the folder.
  fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ELOOP)
      throw Error("Could not open the log file for writing: it is a symbolic link", p.string(),
                  "A run's logs are its own files; remove the link (a copy of what it points to may take its place)");
    fail("Could not open the log file for writing", p, err);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    close_fd();
    fail("Could not open the log file for writing", p, err);
  }
  if (!S_ISREG(st.st_mode)) {
    close_fd();
    throw Error("Could not open the log file for writing: it is not a regular file", p.string(),
                "Remove it (a FIFO or device in a run folder is not a log) and try again");
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  // Find the end of the last complete line, scanning backwards in blocks.
  uint64_t keep = 0;
  if (size > 0) {
    char last = 0;
    if (::pread(fd_, &last, 1, static_cast<off_t>(size - 1)) != 1) {
      const int err = errno;
      close_fd();
      fail("Could not read the log file", p, err);
    }
    if (last == '\n') {
      keep = size;
    } else {
      std::vector<char> buf(64 * 1024);
      uint64_t end = size;
      while (end > 0 && keep == 0) {
        const uint64_t begin = end > buf.size() ? end - buf.size() : 0;
        const ssize_t r = ::pread(fd_, buf.data(), end - begin, static_cast<off_t>(begin));
        if (r != static_cast<ssize_t>(end - begin)) {
          const int err = r < 0 ? errno : EIO;
          close_fd();
          fail("Could not read the log file", p, err);
        }
        for (uint64_t i = end - begin; i > 0; --i) {
          if (buf[i - 1] == '\n') {
            keep = begin + i;
            break;
          }
        }
        end = begin;
      }
    }
  }
  if (keep < size) {
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0) {
      const int err = errno;
      close_fd();
      fail("Could not cut off the incomplete last line of the log file", p, err);
    }
    (void)::fsync(fd_);
  }
  size_ = keep;
  truncated_ = size - keep;
}

AppendLog::~AppendLog() { close_fd(); }

AppendLog::AppendLog(AppendLog&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), size_(o.size_), truncated_(o.truncated_) {
  o.fd_ = -1;
}

AppendLog& AppendLog::operator=(AppendLog&& o) noexcept {
  if (this != &o) {
    close_fd();
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    size_ = o.size_;
    truncated_ = o.truncated_;
    o.fd_ = -1;
  }
  return *this;
}

void AppendLog::close_fd() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void AppendLog::append_line(std::string_view line) {
  AMPGAN_CHECK(fd_ >= 0, "AppendLog used after being moved from");
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  AMPGAN_CHECK(line.find('\n') == std::string_view::npos, "AppendLog::append_line given text with a line break inside");
  std::string buf;
  buf.reserve(line.size() + 1);
  buf.append(line);
  buf.push_back('\n');
  const int err = write_all(fd_, buf.data(), buf.size());
  if (err) {
    // Cut off whatever part of the line made it, so the log still ends in a whole line.
    // Best effort: if this fails too, the partial line is cut off when the log is reopened.
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {}
    fail("Could not append to the log file", path_, err);
  }
  size_ += buf.size();
}

void AppendLog::sync() {
  AMPGAN_CHECK(fd_ >= 0, "AppendLog used after being moved from");
  if (::fsync(fd_) != 0) fail("Could not flush the log file to disk", path_, errno);
}

// ---- folders ----------------------------------------------------------------------------------

void ensure_writable_dir(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw Error("This is a file, not a folder", dir.string(), "Choose a folder, or move the file out of the way");
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) {
      // create_directories says "File exists" when a parent is a file; say which.
      for (fs::path p = dir.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
        std::error_code ec2;
        if (fs::exists(p, ec2) && !fs::is_directory(p, ec2))
          throw Error("Could not create the folder: " + p.string() + " is a file, not a folder", dir.string(),
                      "Choose another location");
      }
      throw Error("Could not create the folder: " + ec.message(), dir.string(), hint_for(ec.value()));
    }
  }
  // access(W_OK) answers yes to root everywhere and trusts mode bits over ACLs and network
  // file systems; creating a file is the real test.
  static std::atomic<uint64_t> probe_counter{0};
  const fs::path probe =
      dir / (".ampgan-write-test-" + std::to_string(::getpid()) + "-" + std::to_string(probe_counter.fetch_add(1)));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Error("This folder is not writable: " + errno_text(err), dir.string(), hint_for(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace ampgan::io
