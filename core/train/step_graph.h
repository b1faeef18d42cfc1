// The training step as a replayed graph, where the backend can capture one (CUDA graphs).
// Capture needs every buffer the step touches allocated first, so after any change the step runs
// eagerly once, then is captured, then replayed. Anything a captured graph bakes in (the
// precision and so the dtypes and buffers, the layer policy, the learning rates, state loaded
// from a checkpoint) calls invalidate(): the one place that rule lives. A step that cannot be
// captured still trains, op by op (slower, not wrong), and says so once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

class StepGraph {
 public:
  // enabled: the caller allows graphs (TrainerConfig::use_graphs); the backend must also
  // support capture.
  StepGraph(Backend& backend, bool enabled) : backend_(backend), enabled_(enabled) {}

  // Runs the step once: replays its graph, or captures it and replays, or runs body eagerly.
  // An OutOfMemoryError during capture is thrown on; any other Error turns graphs off for good
  // and leaves a warning (take_warnings).
  void run(const std::function<void()>& body);

  // The captured graph is out of date: drop it, run eagerly once more before capturing again.
  void invalidate();

  std::vector<std::string> take_warnings();

 private:
  Backend& backend_;
  bool enabled_;
  bool captured_ = false;
  bool failed_ = false;  // a capture failed: op by op from then on
  int eager_steps_since_change_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace ampgan
