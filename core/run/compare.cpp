#include "core/run/compare.h"

#include <cstdio>
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

MaxBatchResult compare_max_batch(const RunConfig& base, Precision amp, int channels, const std::atomic<bool>* stop,
                                 std::function<void(const std::string& what, int done, int total)> progress) {
  MaxBatchOptions opt;
  opt.new_backend = [&base] {
    std::unique_ptr<Backend> b = create_backend(base.backend, nullptr, base.gpu);
    b->set_cpu_kernels(base.cpu_kernels);
    return b;
  };
  {
    const std::unique_ptr<Backend> b = opt.new_backend();
    if (b->kind() == DeviceKind::CUDA) {
      opt.budget = gpu_memory_budget(*b, base.gpu, "memory budget", "check the GPU with 'ampgan devices'");
      opt.budget_from = kGpuBudgetFrom;
    } else {
      if (base.memory_budget_mib < 16)
        throw Error("the memory budget must be at least 16 MiB", "memory_budget_mib", "e.g. 1024 (1 GiB)");
      opt.budget = base.memory_budget_mib * 1048576.0;
      opt.budget_from = "memory budget";
    }
  }
  opt.probe = base.batch;
  opt.stop = stop;
  opt.progress = std::move(progress);
  const auto modes = compare_modes(amp);
  // A conditional comparison's class count is the dataset's, which is not loaded here; the class
  // parameters are a few thousand values beside batch-sized activations, so ten stand in.
  return find_max_batch(base.trainer_config(channels, base.conditional && base.classes == 0 ? 10 : -1),
                        {modes.begin(), modes.end()}, opt);
}

void set_max_batch(CompareRun& run, Precision mode, const MaxBatchResult& r) {
  run.max_batch = r.fits(mode);
  run.max_batch_searched =
      !(r.stopped && run.max_batch == 0);  // a stopped search found nothing, it did not find "none"
  run.max_batch_ratio = mode == Precision::FP32 ? (run.max_batch > 0 ? 1.0 : 0.0) : r.ratio(mode);
}

std::string compare_max_batch_verdict(const MaxBatchResult& r, Precision amp) {
  char budget[128];
  std::snprintf(budget, sizeof budget, "%.0f MiB (%s)", r.budget / 1048576.0, r.budget_from.c_str());
  const std::string line = max_batch_ratio_line(r, amp);
  if (!line.empty()) return line + " within " + budget;
  if (r.stopped) return "the largest-batch search was stopped";
  for (const MaxBatchRow& row : r.rows)
    if (!row.problem.empty())
      return std::string("largest batch within ") + budget + ": " + precision_label(row.precision) + ": " + row.problem;
  return {};
}

void check_compare_mode(Precision amp, const std::string& input) {
  if (amp == Precision::FP32)
    throw Error("FP32 is the baseline of the comparison, not its other side", input, "use fp16, bf16 or tf32");
}

}  // namespace ampgan
