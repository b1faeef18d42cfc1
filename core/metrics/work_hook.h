// A hook for long evaluation work, so a GUI can show progress and cancel it: training the
// feature classifier (minutes, once per dataset) and each evaluation. Installed per thread (the
// thread that drives the Session); nothing is reported when none is installed (the CLI).
#pragma once

#include <functional>
#include <string>
#include <utility>

namespace ampgan::metrics {

// what: "training the feature classifier", ...; done of total units. Return false to cancel:
// the evaluation then ends early without scores (NaN) and is tried again at the next interval.
using WorkHook = std::function<bool(const std::string& what, int done, int total)>;

inline WorkHook& work_hook() {
  thread_local WorkHook hook;
  return hook;
}

// Reports to this thread's hook; false: cancel.
inline bool report_work(const std::string& what, int done, int total) {
  WorkHook& h = work_hook();
  return !h || h(what, done, total);
}

// Installs a hook for a scope (restores the previous one after).
class ScopedWorkHook {
 public:
  explicit ScopedWorkHook(WorkHook h) : prev_(std::exchange(work_hook(), std::move(h))) {}
  ~ScopedWorkHook() { work_hook() = std::move(prev_); }
  ScopedWorkHook(const ScopedWorkHook&) = delete;
  ScopedWorkHook& operator=(const ScopedWorkHook&) = delete;

 private:
  WorkHook prev_;
};

}  // namespace ampgan::metrics
