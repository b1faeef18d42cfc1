#include "core/run/compare.h"

#include <filesystem>

#include "core/common/error.h"
#include "core/common/timestamp.h"

namespace ampgan {

std::string compare_root(const RunConfig& base, Precision amp) {
  if (!base.out_dir.empty()) return base.out_dir;
  RunConfig probe = base;
  probe.precision = amp;
  return (std::filesystem::path(base.runs_root) / (local_timestamp() + "-compare-" + probe.default_name())).string();
}

RunConfig compare_run_config(const RunConfig& base, Precision mode, const std::string& root) {
  RunConfig cfg = base;
  cfg.precision = mode;
  cfg.out_dir = (std::filesystem::path(root) / precision_name(mode)).string();
  cfg.name.clear();
  return cfg;
}

void check_compare_mode(Precision amp, const std::string& input) {
  if (amp == Precision::FP32)
    throw Error("FP32 is the baseline of the comparison, not its other side", input, "use fp16, bf16 or tf32");
}

}  // namespace ampgan
