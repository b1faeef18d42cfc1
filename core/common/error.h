// ampgan::Error: what failed, on what input, and what to do about it. Core code throws it; the
// CLI prints it and exits non-zero, the GUI shows it in a dialog and keeps running.
#pragma once

#include <stdexcept>
#include <string>

namespace ampgan {

class Error : public std::runtime_error {
 public:
  // what: what went wrong; subject: the input it concerns (a path, an option); hint: what to do.
  Error(std::string what, std::string subject = {}, std::string hint = {});

  const std::string& what_failed() const { return what_; }
  const std::string& subject() const { return subject_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string what_, subject_, hint_;
};

// Thrown when a device runs out of memory, so callers can suggest a smaller batch.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// Thrown when the user asked to stop (Ctrl-C, SIGTERM) while work that cannot stop halfway ran
// (loading a dataset): nothing was written; the CLI exits 130.
class Cancelled : public Error {
 public:
  using Error::Error;
};

// Internal invariant checks (programming errors, not user input).
#define AMPGAN_CHECK(cond, msg)                                                       \
  do {                                                                                \
    if (!(cond))                                                                      \
      throw ::ampgan::Error(std::string("internal check failed: ") + (msg), __FILE__, \
                            "please report this as a bug with the command you ran");  \
  } while (0)

}  // namespace ampgan
