// ampgan bench --max-batch: the largest batch that fits a memory budget in each precision.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/train/trainer.h"

namespace ampgan::cli {

// budget_mib <= 0: the GPU's free memory (an error on the CPU, which needs a budget).
// probe: the smaller of the two measured batches (the other is twice it).
// new_backend: a fresh backend for each measurement, so that grow-only caches (the CPU's scratch
// buffers, a GPU's pool) of one batch size are not counted at the next.
int run_max_batch(const std::function<std::unique_ptr<Backend>()>& new_backend, const TrainerConfig& tc,
                  const std::vector<Precision>& precisions, double budget_mib, int probe, int gpu, bool json);

}  // namespace ampgan::cli
