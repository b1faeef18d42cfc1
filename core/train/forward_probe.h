// Where a forward overflow started: re-runs the forward passes of the last step once (G on its
// latents, D on the real batch and on G's output), layer by layer, checking every activation for
// inf/NaN, and applies nothing (batch-norm statistics are staged and reset, no gradient is
// made). Run only on overflow steps: clean steps pay nothing.
//
// It uses the weights and batches as they are now: on the CPU, right after the overflowing step
// (D's weights unchanged since its step was skipped; G's, if G's step counted, one update on).
// On a GPU with steps in flight it may see a later step's batch.
#pragma once

#include <string>

#include "core/train/trainer.h"

namespace ampgan {

struct ForwardProbe {
  bool found = false;
  std::string layer;  // "D.2": the network and the layer's index, as in layers.csv
  std::string type;   // the layer's type, e.g. "Conv2d"
  std::string input;  // "latents", "real images" or "generated images"
};

ForwardProbe probe_forward(Trainer& t);

}  // namespace ampgan
