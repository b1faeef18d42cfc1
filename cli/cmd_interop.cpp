// ampgan tensorboard: a TensorBoard event file for an existing run (core/run/tensorboard_log.h);
// ampgan export-onnx: a run's generator as an ONNX model (core/run/onnx_export.h).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/outputs.h"
#include "core/run/onnx_export.h"
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

int cmd_export_onnx(int argc, char** argv) {
  Args a("export-onnx", "ampgan export-onnx RUN_DIR --out G.onnx [--ema] [--step N] [--half] [--bn-stats S]",
         "Writes the generator of a run's checkpoint as an ONNX model (opset 17) for onnxruntime and\n"
         "other ONNX tools: input z float32 [batch, latent] ~ N(0, 1) (and, for a class-conditional\n"
         "run, class int64 [batch]: each image's class), output images float32\n"
         "[batch, channels, res, res] in [-1, 1]; batch norm folded into the convolutions, on\n"
         "standing statistics of the exported weights (ampgan sample --bn-stats standing computes\n"
         "the same images).");
  a.option("out", "G.onnx", "the model file to write")
      .option("step", "N", "the checkpoint of step N (default: the newest)")
      .flag("ema", "the EMA generator's weights (what ampgan sample shows for a run\nthat keeps one)")
      .flag("half", "float16 weights and compute (input and output stay float32,\nthrough Cast nodes)")
      .option("bn-stats", "S",
              "standing (default): batch norm on the average statistics of 512 latents\n"
              "with the exported weights; running: on the running averages training kept\n"
              "(they trail the weights: an EMA generator's images fade)")
      .flag("force", "replace an existing G.onnx (never a checkpoint)");
  return guarded("export-onnx", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    if (a.positional().size() != 1)
      throw UsageError("export-onnx takes one run folder", "ampgan export-onnx", "see --help");
    if (!a.has("out")) throw UsageError("--out G.onnx is required", "ampgan export-onnx");
    const std::string bn = a.str("bn-stats", "standing");
    if (bn != "standing" && bn != "running")
      throw UsageError("--bn-stats is standing or running, not '" + bn + "'", "--bn-stats",
                       "an exported model has no batch to take statistics of");
    const int64_t step = a.has("step") ? a.integer("step", 0, 0, kMaxSteps) : -1;
    const std::filesystem::path run = a.positional()[0], out = a.str("out");
    const std::filesystem::path ckpt = onnx_source_checkpoint(run, step);
    check_output_file(out, {ckpt}, a.has("force"), "--out");
    OnnxExportOptions o;
    o.ema = a.has("ema");
    o.half = a.has("half");
    o.bn = bn == "running" ? BnStats::Running : BnStats::Standing;
    const OnnxExportResult r = export_onnx(ckpt, -1, out, o);
    std::printf("wrote %s: opset %d, %s, %s generator of step %lld, batch norm on %s statistics, %zu nodes, %.1f MiB\n",
                r.file.string().c_str(), r.opset, o.half ? "float16" : "float32", o.ema ? "EMA" : "trained",
                static_cast<long long>(r.step), bn_stats_name(o.bn), r.nodes, static_cast<double>(r.bytes) / (1 << 20));
    if (r.classes > 0)
      std::printf("class-conditional: input 'class' int64 [batch], each image's class, 0 to %d\n", r.classes - 1);
    if (r.has_ema && !o.ema)
      std::printf("note: the run keeps an EMA generator, which ampgan sample shows; --ema exports that one\n");
    return 0;
  });
}

}  // namespace ampgan::cli
