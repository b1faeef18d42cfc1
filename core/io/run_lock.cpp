#include "core/io/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/common/error.h"

namespace ampgan::io {

namespace fs = std::filesystem;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (off_t off = 0; out.size() < 64 * 1024;) {  // a holder line is short; never read a huge file
    const ssize_t r = ::pread(fd, buf, sizeof buf, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
    off += r;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\0')) out.pop_back();
  return out;
}

// "pid 123 on host h, 'ampgan train ...', since 2026-12-01 07:00:00" from the JSON line.
std::string describe(const std::string& text) {
  if (text.empty()) return "a writer that has not yet said who it is";
  try {
    const auto j = nlohmann::json::parse(text);
    return "pid " + std::to_string(j.at("pid").get<long long>()) + " on host " + j.at("host").get<std::string>() +
           ", '" + j.at("command").get<std::string>() + "', since " + j.at("since").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return "'" + text.substr(0, 200) + "'";
  }
}

std::string hostname() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Who holds dir, from its run.lock, without creating or locking the file.
std::string holder_of(const fs::path& dir) {
  const int fd = ::open((dir / kRunLockName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "a writer whose run.lock was deleted; it writes the file again at its next step";
  const std::string text = read_all(fd);
  ::close(fd);
  return describe(text);
}

}  // namespace

std::string this_command_line() {
  std::string out;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    out = read_all(fd);
    ::close(fd);
  }
  for (char& c : out)
    if (c == '\0') c = ' ';
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  return out.empty() ? "?" : out;
}

std::string run_lock_holder(const fs::path& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const bool held = ::flock(dfd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(dfd);
    if (held) return holder_of(dir);
  }
  const int fd = ::open((dir / kRunLockName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  std::string holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) holder = describe(read_all(fd));
  }
  ::close(fd);
  return holder;
}

namespace {

bool same_file(const struct stat& a, const struct stat& b) { return a.st_ino == b.st_ino && a.st_dev == b.st_dev; }

// flock(LOCK_EX | LOCK_NB), retried for 0.1 s: a reader asking run_lock_holder holds a shared
// lock for a moment, which must not make a starting writer think the folder is taken.
int lock_exclusive(int fd) {
  for (int i = 0;; ++i) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno != EWOULDBLOCK || i == 20) return -1;
    ::usleep(5000);
  }
}

[[noreturn]] void in_use(const fs::path& dir, const std::string& holder) {
  throw Error("the run folder is in use: another writer holds its lock (" + holder + ")", dir.string(),
              "wait until that run stops, or stop it (Ctrl-C in its terminal, Stop in the GUI, or kill the "
              "pid); one run folder takes one writer at a time. Reading it (sample, eval, opening it in "
              "the GUI) is fine meanwhile");
}

}  // namespace

RunLock::RunLock(const fs::path& dir, const std::string& writer)
    : dir_(dir), path_(dir / kRunLockName), writer_(writer) {
  // The folder's own lock comes first: deleting or replacing run.lock cannot lift it.
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    const int err = errno;
    throw Error("could not open the run folder: " + std::system_category().message(err), dir.string(),
                "check that it exists and is readable");
  }
  if (lock_exclusive(dir_fd_) != 0) {
    const int err = errno;
    ::close(dir_fd_);
    dir_fd_ = -1;
    if (err == EWOULDBLOCK) in_use(dir, holder_of(dir));
    // Some network file systems lock files but not folders: run.lock's lock then stands alone,
    // and refresh() notices a deleted run.lock at the next step.
  } else {
    struct stat now {
    }, mine{};
    if (::stat(dir.c_str(), &now) != 0 || ::fstat(dir_fd_, &mine) != 0 || !same_file(now, mine)) {
      ::close(dir_fd_);
      dir_fd_ = -1;
      throw Error("the run folder was replaced while it was being locked", dir.string(), "try again");
    }
  }
  try {
    open_and_lock_file();
    // Holding the lock proves that whoever wrote a description here has ended (the kernel dropped
    // its lock), since a holder empties the file before it releases the lock.
    stale_ = read_all(fd_);
    if (!stale_.empty()) stale_ = describe(stale_);
    write_description();
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    if (dir_fd_ >= 0) ::close(dir_fd_);
    fd_ = dir_fd_ = -1;
    throw;
  }
}

void RunLock::open_and_lock_file() {
  // A file replaced between our open and our flock (a user deleting run.lock) would give two
  // holders of two different files; re-open until the locked file is the one the path names.
  for (int attempt = 0;; ++attempt) {
    created_ = false;
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ >= 0)
      created_ = true;
    else if (errno == EEXIST)
      fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd_ < 0) {
      const int err = errno;
      throw Error("could not open the run folder's lock file: " + std::system_category().message(err), path_.string(),
                  err == ELOOP ? "run.lock is a symbolic link; remove it" : "check that the run folder is writable");
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      throw Error("the run folder's lock file is not a regular file", path_.string(), "remove it and try again");
    }
    if (lock_exclusive(fd_) != 0) {
      const int err = errno;
      const std::string holder = err == EWOULDBLOCK ? describe(read_all(fd_)) : "";
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK) in_use(dir_, holder);
      throw Error("could not lock the run folder: " + std::system_category().message(err), path_.string(),
                  "the file system may not support locks; use a run folder on a local disk");
    }
    struct stat now {};
    if (::stat(path_.c_str(), &now) == 0 && same_file(now, st)) return;
    ::close(fd_);
    fd_ = -1;
    if (attempt == 10) throw Error("the run folder's lock file keeps being replaced", path_.string(), "try again");
  }
}

void RunLock::write_description() {
  nlohmann::json j;
  j["pid"] = static_cast<long long>(::getpid());
  j["host"] = hostname();
  j["command"] = writer_;
  j["since"] = now_text();
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    const int err = errno;
    throw Error("could not write the run folder's lock file: " + std::system_category().message(err), path_.string(),
                "check that the disk is not full and the folder is writable");
  }
}

void RunLock::refresh() {
  struct stat now {
  }, mine{};
  if (dir_fd_ >= 0 && (::stat(dir_.c_str(), &now) != 0 || ::fstat(dir_fd_, &mine) != 0 || !same_file(now, mine)))
    throw Error("the run folder was moved, deleted or replaced while this run was writing it", dir_.string(),
                "this run stops without writing more; its files are where the folder went");
  if (fd_ >= 0 && ::stat(path_.c_str(), &now) == 0 && ::fstat(fd_, &mine) == 0 && same_file(now, mine)) return;
  // run.lock was deleted or replaced. The folder's lock still keeps other writers out; where
  // there is none, another writer may have locked a new run.lock, and then this one stops.
  const int old = fd_;
  const bool created = created_;
  try {
    open_and_lock_file();
    write_description();
  } catch (const Error& e) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = old;
    created_ = created;
    throw Error(
        "run.lock was deleted or replaced while this run held it, and it cannot be taken back: " + e.what_failed(),
        dir_.string(), "this run stops without writing more; one run folder takes one writer at a time");
  }
  created_ = created;
  if (old >= 0) ::close(old);
}

RunLock::~RunLock() {
  if (fd_ >= 0) {
    // Emptied while still locked, so a non-empty file found by the next holder means a writer died.
    if (::ftruncate(fd_, 0) != 0) {}
    ::close(fd_);  // drops the flock
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

}  // namespace ampgan::io
