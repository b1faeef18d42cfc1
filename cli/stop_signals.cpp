#include "cli/stop_signals.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <thread>

namespace ampgan::cli {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_exit_on_second{true};

namespace {

// The first signal asks for a clean stop (end of the step, checkpoint); under mpirun every rank
// votes with it at the next step boundary, so a signal to any rank stops them all. Long work
// checks the flag too (dataset loading, the feature classifier's training: see drive). A second
// signal means the user will not wait: exit at once. Every file on disk is whole then
// (write_file_atomic, AppendLog), the newest checkpoint is kept, and a temporary file left is
// swept on resume.
void on_signal(int) {
  if (g_stop.exchange(true)) {
    if (!g_exit_on_second.load()) {
      static const char wait[] =
          "\nampgan: this rank is already stopping; it ends when rank 0 has written its checkpoint\n";
      (void)!::write(2, wait, sizeof wait - 1);
      return;
    }
    static const char msg[] = "\nampgan: second interrupt: exiting now; the newest checkpoint is kept\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(130);
  }
}

}  // namespace

// Ctrl-C, kill, a closed terminal or a dropped SSH session (SIGHUP) all stop training the same
// way: at the end of the step, with a checkpoint and a "stop" event. SIGPIPE is ignored, so a
// vanished reader of stdout (`| head`, `| tee` killed by the same Ctrl-C) only makes the progress
// output fail, never the run.
void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, nullptr);
  // The handler must never run on a thread that computes: oneDNN 2.6's generated GEMM kernels
  // point the stack pointer into the heap, so a signal frame pushed there corrupts the heap
  // (oneDNN issue #4845, fixed upstream by PR #4855; Debian 12 has 2.6.3). So the signals are
  // taken by a thread of their own that only waits, and blocked in this thread, whose later
  // threads (the thread pool, the batch loader, OpenMP's) inherit the block. The pool's workers
  // block them themselves too (core/common/parallel.cpp), whenever they were started.
  static bool started = false;
  if (started) return;
  started = true;
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, sig);
  std::thread([stop] {
    pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
    pthread_setname_np(pthread_self(), "ampgan-signals");
    for (;;) ::pause();  // the handler runs here; the process ends with main
  }).detach();
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

}  // namespace ampgan::cli
