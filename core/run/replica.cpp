#include "core/run/replica.h"

#include "core/data/batch_loader.h"
#include "core/data/image_set.h"
#include "core/dist/data_parallel.h"
#include "core/settings/run_config.h"

namespace ampgan::dist {

int64_t run_replica(Communicator& comm, const RunConfig* own, const std::atomic<bool>* stop, bool* interrupted) {
  const nlohmann::json h = DataParallel::exchange_header(comm, nullptr);
  const RunConfig cfg = RunConfig::from_json(h.at("run_config"), "rank 0's configuration");
  data::LoadOptions lo;
  lo.res = cfg.res;
  lo.channels = h.at("dataset_channels").get<int>();
  lo.synthetic_count = cfg.synthetic_count;
  lo.seed = cfg.seed;
  const data::ImageSet set = data::load_dataset(cfg.dataset, lo);
  std::string note;
  std::unique_ptr<Backend> backend = create_backend(cfg.backend, &note, cfg.gpu + comm.local_rank());
  backend->set_cpu_kernels(cfg.cpu_kernels);  // the choices themselves: this host's record, as rank 0's
  const nlohmann::json own_json = own ? own->to_json() : nlohmann::json();
  const nlohmann::json mine = rank_facts(own ? &own_json : nullptr, set, *backend);

  DataParallel dp(comm, *backend, cfg.trainer_config(set.channels));
  dp.set_stop_flag(stop);
  Trainer trainer(*backend, dp.rank_config());
  dp.attach(trainer);
  trainer.set_precision(parse_precision(h.at("precision").get<std::string>()));
  dp.join(h, mine);
  const int64_t start = h.at("step").get<int64_t>();
  trainer.set_iteration(start);
  data::BatchLoader loader(set, cfg.batch, cfg.seed, h.at("batches_consumed").get<int64_t>());
  for (DataParallel::Vote v; (v = dp.next_step()) != DataParallel::Vote::End;) {
    if (v == DataParallel::Vote::Stop) continue;            // rank 0 finishes the run; this rank waits for its End
    trainer.step([&] { return dp.slice(loader.next()); });  // n_dis batches, as on rank 0
    trainer.collect();
  }
  trainer.collect(true);
  if (interrupted) *interrupted = dp.interrupted();
  return trainer.iteration() - start;
}

}  // namespace ampgan::dist
