#include "core/run/overflow_locator.h"

namespace ampgan {

void locate_overflow(const std::vector<TensorName>& names, const StepMetrics& m, const std::string& network,
                     RunEvent& e) {
  const int k = first_nonfinite_in_backward_order(names, m.tensors, network);
  if (k < 0) return;
  const TensorName& n = names[static_cast<size_t>(k)];
  const TensorGradStat& t = m.tensors[static_cast<size_t>(k)];
  e.data["layer"] = n.layer;
  e.data["tensor"] = n.tensor;
  e.data["nonfinite"] = t.nonfinite;
  e.data["origin"] = "backward";
  e.message += "; first non-finite gradient in backward order: " + n.layer + "." + n.tensor + " (" +
               std::to_string(t.nonfinite) + " of " + std::to_string(n.numel) + " values)";
}

void add_forward_location(const ForwardProbe& p, RunEvent& e) {
  if (!p.found) return;
  e.data["origin"] = "forward";
  e.data["forward_layer"] = p.layer;
  e.data["forward_type"] = p.type;
  e.data["forward_input"] = p.input;
  e.message += "; it started in the forward pass: the first activation with inf/NaN is " + p.layer + " (" + p.type +
               ") on " + p.input;
}

}  // namespace ampgan
