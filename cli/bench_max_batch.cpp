#include "cli/bench_max_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/train/max_batch.h"

namespace ampgan::cli {

namespace {

constexpr const char* kCats[] = {"master", "half", "grads", "adam", "activ.", "workspace", "data"};
constexpr int kCatCount = 7;

double mib(double b) { return b / 1048576.0; }

}  // namespace

int run_max_batch(const std::function<std::unique_ptr<Backend>()>& new_backend, const TrainerConfig& tc,
                  const std::vector<Precision>& precisions, double budget_mib, int probe, int gpu, bool json) {
  const std::unique_ptr<Backend> first = new_backend();
  Backend& backend = *first;  // for its kind and name
  MaxBatchOptions opt;
  opt.budget = budget_mib * 1048576.0;
  opt.budget_from = "--memory-budget";
  if (budget_mib <= 0) {
    opt.budget =
        gpu_memory_budget(backend, gpu, "--max-batch",
                          backend.kind() == DeviceKind::CUDA ? "give --memory-budget MiB"
                                                             : "give --memory-budget MiB (e.g. --memory-budget 2048)");
    opt.budget_from = kGpuBudgetFrom;
  }
  if (probe < 2) throw Error("the probe batch must be at least 2", "--batch");
  opt.probe = probe;
  opt.new_backend = new_backend;
  const MaxBatchResult result = find_max_batch(tc, precisions, opt);
  const std::vector<MaxBatchRow>& rows = result.rows;
  const double budget = result.budget;
  const std::string& budget_from = result.budget_from;

  int64_t fp32_fits = 0;
  for (const MaxBatchRow& r : rows)
    if (r.precision == Precision::FP32) fp32_fits = r.fits;
  if (json) {
    for (const MaxBatchRow& r : rows) {
      nlohmann::json j;
      j["precision"] = precision_name(r.precision);
      j["model"] = model_family_name(tc.family);
      j["res"] = tc.model.res;
      j["nc"] = tc.model.channels;
      j["width"] = tc.model.width;
      j["budget_bytes"] = budget;
      j["fixed_bytes"] = r.fit.fixed;
      j["bytes_per_image"] = r.fit.per_image;
      j["predicted_batch"] = r.predicted;
      j["verified_batch"] = r.fits;
      j["verified_peak_bytes"] = r.verified.mem.peak_total;
      if (fp32_fits > 0 && r.fits > 0) j["vs_fp32"] = static_cast<double>(r.fits) / fp32_fits;
      if (!r.problem.empty()) j["problem"] = r.problem;
      std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  }

  std::printf("Largest batch within %.0f MiB (%s): %s-%d (nc %d, width %d) on %s\n\n", mib(budget), budget_from.c_str(),
              tc.family == ModelFamily::ResNet ? "ResNet" : "DCGAN", tc.model.res, tc.model.channels, tc.model.width,
              backend.name().c_str());
  std::printf("Measured peak MiB by category, two steps at each batch:\n%-9s %6s |", "precision", "batch");
  for (const char* c : kCats) std::printf(" %9s", c);
  std::printf(" | %9s\n", "total");
  auto print_probe = [](const char* name, const MaxBatchProbe& pr) {
    std::printf("%-9s %6d |", name, pr.batch);
    for (int c = 0; c < kCatCount; ++c) std::printf(" %9.1f", mib(static_cast<double>(pr.mem.peak[c])));
    std::printf(" | %9.1f%s\n", mib(static_cast<double>(pr.mem.peak_total)), pr.oom ? "  out of memory" : "");
  };
  for (const MaxBatchRow& r : rows) {
    print_probe(precision_name(r.precision), r.small);
    print_probe(precision_name(r.precision), r.large);
  }
  std::printf("\nPrediction (peak = fixed + per image x batch) and check (two steps at the batch):\n");
  std::printf("%-9s %10s %10s %10s %10s %12s %8s\n", "precision", "fixed MiB", "MiB/image", "predicted", "verified",
              "peak MiB", "vs fp32");
  for (const MaxBatchRow& r : rows) {
    if (r.fit.per_image == 0 && !r.problem.empty()) {
      std::printf("%-9s %s\n", precision_name(r.precision), r.problem.c_str());
      continue;
    }
    char ratio[16] = "-";
    if (fp32_fits > 0 && r.fits > 0)
      std::snprintf(ratio, sizeof ratio, "%.2fx", static_cast<double>(r.fits) / fp32_fits);
    std::printf("%-9s %10.1f %10.3f %10lld %10lld %12.1f %8s%s%s\n", precision_name(r.precision), mib(r.fit.fixed),
                mib(r.fit.per_image), static_cast<long long>(r.predicted), static_cast<long long>(r.fits),
                mib(static_cast<double>(r.verified.mem.peak_total)), ratio, r.problem.empty() ? "" : "  ",
                r.problem.c_str());
    if (r.verified.oom)
      std::printf("          (out of memory at batch %d: %s)\n", r.verified.batch, r.verified.why.c_str());
  }
  std::printf(
      "\nPeaks count the memory the backend allocates (tensors of every category); not the CUDA\n"
      "context, cuDNN's or cuBLAS's own buffers, or the host process's other memory.\n");
  for (const MaxBatchRow& r : rows)
    if (is_mixed(r.precision) && !max_batch_ratio_line(result, r.precision).empty())
      std::printf("%s\n", max_batch_ratio_line(result, r.precision).c_str());
  return 0;
}

}  // namespace ampgan::cli
