// Data-parallel training: N ranks (processes, one device each) train one model. Every rank
// holds the whole model; rank r trains on images [r*B/N, (r+1)*B/N) of each global batch B (the
// run's --batch), so the data order is that of one device whatever N is. Each step:
//   gradients: summed over the ranks in FP32, in flat buckets, then averaged (x 1/N, once),
//              before the unscale-and-check pass; then every rank checks the same numbers,
//   found-inf: MAX over the ranks (a rank's overflow makes every rank skip and back off),
//   shown statistics (losses, D outputs): averaged,
// so weights, Adam moments and loss scales stay bit-identical on every rank. Batch-norm
// statistics are per rank (each normalises its own slice, as PyTorch DDP does by default), and
// the running averages in rank 0's checkpoint are rank 0's.
//
// Rank 0 runs the Session (it alone writes the run folder); the other ranks run a Replica
// (core/run/replica.h). At the start rank 0 broadcasts the run's configuration (its RunConfig JSON).and position,
// every rank checks its own settings against them (a mismatch stops every rank with the
// reason), and rank 0's training state (weights, moments, scalers) is broadcast.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dist/communicator.h"
#include "core/train/step_sync.h"
#include "core/train/trainer.h"

namespace ampgan {
namespace data {
struct ImageSet;
}
}  // namespace ampgan

namespace ampgan::dist {

// What a rank knows of itself, to compare with rank 0: the program, the backend's kind, the
// dataset it loaded, and (where the rank has its own command line) the configuration (its RunConfig JSON).
nlohmann::json rank_facts(const nlohmann::json* own_config, const data::ImageSet& data, const Backend& backend);

class DataParallel final : public StepSync {
 public:
  // global: the TrainerConfig of the whole run (batch = the global batch). Throws
  // Error when the batch does not split over the ranks (rank 0 meets it before the first collective).
  DataParallel(Communicator& comm, Backend& backend, const TrainerConfig& global);
  ~DataParallel() override;

  // This rank's TrainerConfig: the per-rank batch, and its own latent stream (rank 0's is the
  // run's seed, as on one device; the initial weights come from rank 0 anyway).
  const TrainerConfig& rank_config() const { return local_; }
  void attach(Trainer& trainer);  // hooks into its steps

  // Rank 0 sends `header` (rank_facts plus the run's config and position); every rank returns it.
  static nlohmann::json exchange_header(Communicator& comm, const nlohmann::json* header);
  // Every rank: compares its facts with the header (CollectiveError on every rank if any rank
  // differs), then rank 0's training state is broadcast to all.
  void join(const nlohmann::json& header, const nlohmann::json& mine);

  // What the ranks agreed at a step boundary: every rank votes, one collective.
  enum class Vote : uint8_t {
    Step,  // train another step
    Stop,  // a rank was asked to stop (a signal on any rank): rank 0 finishes the run, with a
           // checkpoint, while the others wait for its End
    End,   // rank 0 ended the run
  };
  // go: rank 0's wish for another step (false: the run ends; interrupted says why, which every
  // rank learns); the other ranks pass true. Each rank adds its own stop flag (set_stop_flag).
  Vote next_step(bool go = true, bool interrupted = false);
  // A flag (a signal handler's) this rank votes with at every step boundary; nullptr: none.
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }
  // After End: whether rank 0 ended an interrupted run (every rank exits as rank 0 does).
  bool interrupted() const { return interrupted_; }
  const float* slice(const float* global_batch) const;  // this rank's part of a global batch
  std::string describe() const;                         // "2 ranks (MPI ...): global batch 64 = 2 x 32 per rank"
  int size() const { return comm_.size(); }
  int rank() const { return comm_.rank(); }
  Communicator& comm() { return comm_; }

  void before_check(const std::vector<Tensor>& grads) override;
  void after_check(Tensor& scalars, int found_inf_slot, int mean_first, int mean_end) override;

 private:
  struct Bucket {
    Tensor flat;                       // FP32, on the backend's device
    std::vector<Tensor> grads, parts;  // each gradient and its FP32 place in `flat`
    int64_t used = 0;
  };
  std::vector<Bucket>& buckets_for(const std::vector<Tensor>& grads);
  // In place on t's FP32 elements [offset, offset + count): the device communicator for device
  // tensors (NCCL), the MPI one for host tensors, else through host memory.
  void reduce(Tensor& t, int64_t offset, int64_t count, ReduceOp op, float scale);
  void broadcast(Tensor& t);

  Communicator& comm_;
  Backend& backend_;
  TrainerConfig global_, local_;
  Trainer* trainer_ = nullptr;
  std::unique_ptr<Communicator> device_comm_;  // NCCL, for a CUDA backend where it is available
  bool want_device_comm_ = false;
  std::string nccl_why_;                                // why the device communicator is not used
  std::map<const void*, std::vector<Bucket>> buckets_;  // by the first gradient's address
  std::vector<float> staging_;
  const std::atomic<bool>* stop_ = nullptr;
  bool ended_ = false, interrupted_ = false;
};

}  // namespace ampgan::dist
