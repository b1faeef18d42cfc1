#include "core/train/step_graph.h"

#include "core/common/error.h"

namespace ampgan {

void StepGraph::run(const std::function<void()>& body) {
  if (!enabled_ || failed_ || !backend_.supports_capture()) return body();
  if (!captured_ && eager_steps_since_change_ >= 1) {
    try {
      backend_.begin_capture();
      body();
      backend_.end_capture();
      captured_ = true;
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const Error& e) {
      backend_.drop_capture();
      failed_ = true;
      warnings_.push_back(std::string("CUDA graph capture failed, running the step op by op: ") + e.what());
    }
  }
  if (captured_) {
    backend_.replay();
  } else {
    body();
    ++eager_steps_since_change_;
  }
}

void StepGraph::invalidate() {
  backend_.drop_capture();
  captured_ = false;
  eager_steps_since_change_ = 0;
}

std::vector<std::string> StepGraph::take_warnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

}  // namespace ampgan
