// How the long-running commands (train, resume, compare, doctor, timelapse) stop: the first SIGINT, SIGTERM
// or SIGHUP sets g_stop, which they check at every step boundary and in long work (dataset
// loading, the feature classifier); a second one exits at once with status 130.
#pragma once

#include <atomic>

namespace ampgan::cli {

extern std::atomic<bool> g_stop;
// Under mpirun, ranks other than 0 write nothing: their second signal must not end them, since
// mpirun would then end rank 0 before its checkpoint.
extern std::atomic<bool> g_exit_on_second;

// Installs the handlers (and ignores SIGPIPE: a vanished reader of stdout only makes the progress
// output fail, never the work).
void install_signal_handlers();

}  // namespace ampgan::cli
