// Per-parameter-tensor gradient statistics of one step, from the fused unscale-and-check pass
// (Backend::grad_stats with GradStatSlots::per_tensor): what layers.csv, the overflow locator
// and the GUI's Layers view show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ampgan {

// Where a gradient tensor belongs: network "D" or "G", layer "D.3" (the network and the
// parameter name's prefix, as the checkpoint names it), tensor "weight" or "bias".
struct TensorName {
  std::string network, layer, tensor;
  int64_t numel = 0;
};

struct TensorGradStat {
  float max_abs = 0;       // max |g / scale| over the finite values
  uint64_t nonfinite = 0;  // inf/NaN values
  double underflow = 0;    // fraction of values zero or subnormal in their storage format
};

// The first tensor, in backward order (the reverse of parameter order within a network), whose
// gradient holds inf/NaN: where the non-finite values started. names and stats are parallel
// (Trainer::tensor_names()); network restricts the search ("D" or "G"). -1: none.
inline int first_nonfinite_in_backward_order(const std::vector<TensorName>& names,
                                             const std::vector<TensorGradStat>& stats, const std::string& network) {
  for (size_t k = stats.size(); k-- > 0;)
    if (k < names.size() && names[k].network == network && stats[k].nonfinite > 0) return static_cast<int>(k);
  return -1;
}

}  // namespace ampgan
