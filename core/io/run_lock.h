// One writer per run folder. A writer (train, resume, the GUI's Session) holds two exclusive
// flock(2) locks for the run's lifetime: one on the run folder itself, which deleting or
// replacing a file cannot lift, and one on <run>/run.lock, whose text names the holder (pid,
// host, command, start time) so a second writer is told who has the folder. The kernel drops
// both when the process dies, however it dies, so a lock file left by a killed writer is stale
// by construction and is taken over (and reported) by the next writer. A writer that finds its
// run.lock deleted or replaced writes it again (refresh). Readers (sample, eval, the GUI's
// "open run") need no lock: every file a writer replaces is replaced atomically.
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

  // Checks that the folder's path still names the locked folder (throws Error if it was moved or
  // replaced: writing by path would then go elsewhere) and writes run.lock again if it was
  // deleted or replaced, so the next writer is told who holds the folder. Cheap (two stat calls).
  void refresh();

 private:
  void open_and_lock_file();
  void write_description();

  std::filesystem::path dir_, path_;
  std::string writer_;
  int dir_fd_ = -1;  // the folder's lock; -1 where the file system has no locks on folders
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
