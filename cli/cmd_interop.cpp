// ampgan tensorboard: a TensorBoard event file for an existing run (core/run/tensorboard_log.h).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "core/run/tensorboard_log.h"

namespace ampgan::cli {

int cmd_tensorboard(int argc, char** argv) {
  Args a("tensorboard", "ampgan tensorboard RUN_DIR [--replace]",
         "Writes a TensorBoard event file (events.out.tfevents.*) into a run folder from its\n"
         "metrics.csv, events.jsonl, samples/ and histograms.csv: for runs trained with\n"
         "--no-tensorboard or before runs wrote event files. Then: tensorboard --logdir RUN_DIR/..");
  a.flag("replace", "delete the run's existing event files once the new one is written");
  return guarded("tensorboard", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    if (a.positional().size() != 1)
      throw UsageError("tensorboard takes one run folder", "ampgan tensorboard", "see --help");
    const TensorBoardExport r = write_run_tensorboard(RunFolder(a.positional()[0]), a.has("replace"));
    std::printf("wrote %s: %lld steps of scalars, %lld sample grids, %lld histograms, %lld precision notes\n",
                r.file.string().c_str(), static_cast<long long>(r.scalar_steps), static_cast<long long>(r.images),
                static_cast<long long>(r.histograms), static_cast<long long>(r.notes));
    for (const auto& p : r.replaced) std::printf("deleted %s\n", p.string().c_str());
    return 0;
  });
}

}  // namespace ampgan::cli
