// ampgan eval: sample-quality metrics of a checkpoint's generator against its dataset.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/train_options.h"
#include "core/data/image_set.h"
#include "core/metrics/evaluator.h"
#include "core/run/checkpoint.h"

namespace ampgan::cli {

int cmd_eval(int argc, char** argv) {
  Args a("eval", "ampgan eval CHECKPOINT [OPTIONS]",
         "Compares the generator's images with the dataset it was trained on: the multi-scale sliced\n"
         "Wasserstein distance on Laplacian-pyramid patches (SWD, x1e3, per level and mean; any\n"
         "dataset) and, for labelled datasets, the Frechet distance on the features of a classifier\n"
         "trained on the dataset's labels (trained once, then cached). Lower is better for both.\n"
         "With the run's seed and sample count the numbers equal those its metrics.csv recorded.");
  a.option("samples", "N", "generated and real images compared (default: the run's eval_samples)")
      .option("seed", "S", "seed of the real sample and the latents (default: the run's)")
      .option("backend", "B", "auto, cpu (default) or cuda")
      .flag("json", "print one JSON object");
  return guarded("eval", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    if (a.positional().size() != 1) throw UsageError("eval takes one checkpoint file", "ampgan eval", "see --help");
    // The options are checked before the checkpoint is read, as the settings eval_samples and
    // seed are (before any narrowing: --samples 4294967298 is not 2).
    (void)setting_value(a, "samples", "eval_samples", 1024);
    (void)setting_value(a, "seed", "seed", 0);
    auto backend = create_backend(a.str("backend", "cpu"));
    CheckpointInfo info;
    auto trainer = trainer_from_checkpoint(*backend, a.positional()[0], &info);
    const RunConfig& c = info.config;
    data::LoadOptions lo;
    lo.res = c.res;
    lo.channels = info.channels;
    lo.synthetic_count = c.synthetic_count;
    lo.seed = c.seed;
    const data::ImageSet real = data::load_dataset(c.dataset, lo);
    const int samples = setting_value(a, "samples", "eval_samples", c.eval_samples).get<int>();
    const uint64_t seed = setting_value(a, "seed", "seed", c.seed).get<uint64_t>();
    metrics::Evaluator::Options eo;
    eo.notice = [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); };
    metrics::Evaluator ev(real, samples, seed, eo);
    const metrics::EvalResult r = ev.evaluate(*trainer);
    if (a.has("json")) {
      nlohmann::json j = metrics::to_json(r);
      j["step"] = info.step;
      j["checkpoint"] = a.positional()[0];
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::printf("step %lld: %s\n", static_cast<long long>(info.step), metrics::describe(r).c_str());
    }
    return 0;
  });
}

}  // namespace ampgan::cli
