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
  const int fd = ::open((dir / kRunLockName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  std::string holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) holder = describe(read_all(fd));
  }
  ::close(fd);
  return holder;
}

RunLock::RunLock(const fs::path& dir, const std::string& writer) : path_(dir / kRunLockName) {
  // A file replaced between our open and our flock (a user deleting run.lock) would give two
  // holders of two different files; re-open until the locked file is the one the path names.
  for (int attempt = 0;; ++attempt) {
    created_ = false;
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ >= 0) created_ = true;
    else if (errno == EEXIST) fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd_ < 0) {
      const int err = errno;
      throw Error("could not open the run folder's lock file: " + std::system_category().message(err), path_.string(),
                  err == ELOOP ? "run.lock is a symbolic link; remove it" : "check that the run folder is writable");
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error("the run folder's lock file is not a regular file", path_.string(), "remove it and try again");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = err == EWOULDBLOCK ? describe(read_all(fd_)) : "";
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw Error("the run folder is in use: another writer holds its lock (" + holder + ")", dir.string(),
                    "wait until that run stops, or stop it (Ctrl-C in its terminal, Stop in the GUI, or kill the "
                    "pid); one run folder takes one writer at a time. Reading it (sample, eval, opening it in "
                    "the GUI) is fine meanwhile");
      throw Error("could not lock the run folder: " + std::system_category().message(err), path_.string(),
                  "the file system may not support locks; use a run folder on a local disk");
    }
    struct stat now {};
    if (::stat(path_.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) break;
    ::close(fd_);
    fd_ = -1;
    if (attempt == 10) throw Error("the run folder's lock file keeps being replaced", path_.string(), "try again");
  }
  // Holding the lock proves that whoever wrote a description here has ended (the kernel dropped
  // its lock), since a holder empties the file before it releases the lock.
  stale_ = read_all(fd_);
  if (!stale_.empty()) stale_ = describe(stale_);
  nlohmann::json j;
  j["pid"] = static_cast<long long>(::getpid());
  j["host"] = hostname();
  j["command"] = writer;
  j["since"] = now_text();
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error("could not write the run folder's lock file: " + std::system_category().message(err), path_.string(),
                "check that the disk is not full and the folder is writable");
  }
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // Emptied while still locked, so a non-empty file found by the next holder means a writer died.
  if (::ftruncate(fd_, 0) != 0) {
  }
  ::close(fd_);  // drops the flock
}

}  // namespace ampgan::io
