// Session's side of data-parallel training: rank 0 sends the run (configuration, position) to the
// other ranks (dist::run_replica), the ranks check each other's settings, and rank 0's state is
// broadcast. Kept apart from session.cpp, which knows nothing else of ranks.
#include "core/dist/data_parallel.h"
#include "core/run/session.h"

namespace ampgan {

std::vector<std::string> Session::start_parallel(int64_t step, int64_t batches_consumed, int previous_world_size) {
  std::vector<std::string> notes;
  const int n = parallel_ ? parallel_->size() : 1;
  if (step > 0 && previous_world_size != n)
    notes.push_back("resumed with " + std::to_string(n) + " rank" + (n == 1 ? "" : "s") +
                    " (the run was trained with " + std::to_string(previous_world_size) + " until step " +
                    std::to_string(step) + "); the global batch stays " + std::to_string(cfg_.batch) +
                    " and the data order continues");
  if (!parallel_) return notes;
  const nlohmann::json own = cfg_.to_json();
  nlohmann::json h = dist::rank_facts(&own, *data_, *backend_);
  h["run_config"] = cfg_.to_json();
  h["step"] = step;
  h["batches_consumed"] = batches_consumed;
  h["precision"] = precision_name(trainer_->precision());
  dist::DataParallel::exchange_header(parallel_->comm(), &h);
  parallel_->join(h, h);
  notes.insert(notes.begin(), "data-parallel over " + parallel_->describe());
  return notes;
}

}  // namespace ampgan
