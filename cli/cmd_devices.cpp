// ampgan devices: which NVIDIA GPUs this build can use, or why none.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_precision.h"
#include "core/common/cpu_features.h"
#include "core/common/parallel.h"

namespace ampgan::cli {

int cmd_devices(int argc, char** argv) {
  Args a("devices", "ampgan devices", "Lists the GPUs the CUDA backend sees, and the CPU fallback.");
  return guarded("devices", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    std::string why;
    const auto gpus = list_gpus(&why);
    for (const GpuInfo& g : gpus)
      std::printf("cuda:%d  %s  compute capability %d.%d  %.1f GiB (%.1f GiB free)  %s\n", g.index, g.name.c_str(),
                  g.cc_major, g.cc_minor, g.total_memory / 1073741824.0, g.free_memory / 1073741824.0,
                  g.usable ? "usable" : "NOT usable (needs compute capability 7.5 or newer)");
    if (gpus.empty()) std::printf("no usable NVIDIA GPU: %s\n", why.c_str());
    std::printf("cpu     %d threads (always available; --backend auto falls back to it)\n", cpu_threads());
    std::printf("        features: %s\n", cpu_features().summary().c_str());
    for (const char* p : {"fp32", "fp16", "bf16"}) std::printf("        %s: %s\n", p, cpu_precision_support(p).c_str());
    return 0;
  });
}

}  // namespace ampgan::cli
