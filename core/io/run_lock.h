// One writer per run folder. A writer (train, resume, the GUI's Session) holds an exclusive
// flock(2) on <run>/run.lock for the run's lifetime; the file names the holder (pid, host,
// command, start time) so a second writer is told who has the folder. The kernel drops the lock
// when its process dies, however it dies, so a lock file left by a killed writer is stale by
// construction and is taken over (and reported) by the next writer. Readers (sample, eval, the
// GUI's "open run") need no lock: every file a writer replaces is replaced atomically.
#pragma once

#include <filesystem>
#include <string>

namespace ampgan::io {

constexpr const char* kRunLockName = "run.lock";

class RunLock {
 public:
  // Locks dir (which must exist), or throws Error naming the current holder and what to do.
  // writer describes this process for others (e.g. the command line).
  RunLock(const std::filesystem::path& dir, const std::string& writer);
  ~RunLock();  // empties the file, then drops the lock
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  // The description a previous holder left when it ended without releasing the lock (killed,
  // crashed, power cut); empty normally.
  const std::string& stale_holder() const { return stale_; }
  // True if this lock created run.lock (it did not exist before).
  bool created_file() const { return created_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool created_ = false;
  std::string stale_;
};

// If a writer holds dir's lock now, its description ("pid 12 on host h, 'ampgan train ...', since
// ..."); else empty. For messages only: the answer may be stale by the time it is shown.
std::string run_lock_holder(const std::filesystem::path& dir);

// The process's own command line ("ampgan train --out x"), for RunLock's writer description.
std::string this_command_line();

}  // namespace ampgan::io
