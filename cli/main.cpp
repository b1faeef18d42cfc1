// ampgan: the command-line twin of AMP GAN Studio. Same engine, same Session, headless.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "core/common/error.h"

namespace {

const char* kHelp =
    "ampgan - train GANs with mixed precision (FP16/BF16 compute, FP32 master weights,\n"
    "dynamic loss scaling) on the CPU or an NVIDIA GPU, and see what it does.\n"
    "\n"
    "Usage: ampgan COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  train             train a GAN (DCGAN or ResNet); writes a run folder\n"
    "                    (metrics.csv, events.jsonl, samples/, checkpoints/)\n"
    "  resume RUN_DIR    continue a run from its newest checkpoint\n"
    "  compare           train twice, FP32 and an AMP mode, and print the comparison table\n"
    "  doctor            find the cheapest remedy that trains these settings cleanly in fp16/bf16\n"
    "  sample CKPT       write a grid (--grid FILE.png) or single images (--each DIR)\n"
    "  export-generator CKPT OUT.safetensors\n"
    "                    the generator's weights, loadable into the PyTorch peer\n"
    "  eval CKPT         sample-quality metrics (sliced Wasserstein, Frechet distance)\n"
    "  tensorboard RUN_DIR\n"
    "                    write a TensorBoard event file for an existing run\n"
    "  timelapse RUN_DIR --out FILE.mp4|FILE.webp\n"
    "                    the run's sample grids over training as a video\n"
    "  export-onnx RUN_DIR --out G.onnx\n"
    "                    the generator as an ONNX model (onnxruntime, Netron, ...)\n"
    "  bench             time the training step in each precision, with memory by category\n"
    "  devices           list NVIDIA GPUs, or say why none is usable\n"
    "\n"
    "  ampgan COMMAND --help    options of a command\n"
    "  ampgan --version\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ampgan::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kHelp, stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    std::printf("ampgan %s\n", AMPGAN_VERSION);
    return 0;
  }
  if (cmd == "bench") return cmd_bench(argc, argv);
  if (cmd == "devices") return cmd_devices(argc, argv);
#if defined(AMPGAN_COMPUTE_ONLY)
  for (const char* full : {"train", "resume", "compare", "doctor", "sample", "export-generator", "eval", "tensorboard",
                           "timelapse", "export-onnx"})
    if (cmd == full) {
      std::fprintf(stderr,
                   "ampgan: '%s' is not in this compute-only build (AMPGAN_COMPUTE_ONLY=ON); only bench "
                   "and devices are\n",
                   full);
      return 2;
    }
#else
  if (cmd == "train") return cmd_train(argc, argv);
  if (cmd == "resume") return cmd_resume(argc, argv);
  if (cmd == "compare") return cmd_compare(argc, argv);
  if (cmd == "doctor") return cmd_doctor(argc, argv);
  if (cmd == "sample") return cmd_sample(argc, argv);
  if (cmd == "export-generator") return cmd_export_generator(argc, argv);
  if (cmd == "eval") return cmd_eval(argc, argv);
  if (cmd == "tensorboard") return cmd_tensorboard(argc, argv);
  if (cmd == "timelapse") return cmd_timelapse(argc, argv);
  if (cmd == "export-onnx") return cmd_export_onnx(argc, argv);
#endif
  std::fprintf(stderr, "ampgan: unknown command '%s'. Run 'ampgan --help' for the list.\n", cmd.c_str());
  return 2;
}
