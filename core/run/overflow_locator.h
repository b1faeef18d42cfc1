// Names where an overflow started, for the "overflow" event: from the step's per-tensor
// gradient statistics (gathered on every step by the fused check, so locating costs nothing
// on clean steps), the first tensor in backward order whose gradient held inf/NaN.
#pragma once

#include <string>
#include <vector>

#include "core/run/run_event.h"
#include "core/train/forward_probe.h"
#include "core/train/step_metrics.h"

namespace ampgan {

// Adds "layer", "tensor", "nonfinite" (and "origin": "backward") to e.data and the location to
// e.message when one of `network`'s tensors held inf/NaN; otherwise leaves e as it is (a
// network skipped only because a shared scaler saw the other's overflow).
void locate_overflow(const std::vector<TensorName>& names, const StepMetrics& m, const std::string& network,
                     RunEvent& e);

// When the forward probe found an activation holding inf/NaN, the overflow started there: sets
// "origin": "forward", "forward_layer", "forward_type", "forward_input" and says so.
void add_forward_location(const ForwardProbe& p, RunEvent& e);

}  // namespace ampgan
