#include "cli/bench_max_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/train/memory_fit.h"

namespace ampgan::cli {

namespace {

constexpr const char* kCats[] = {"master", "half", "grads", "adam", "activ.", "workspace", "data"};
constexpr int kCatCount = 7;
constexpr int kMaxTries = 6;  // verification runs per precision before giving up

double mib(double b) { return b / 1048576.0; }

struct Probe {
  int batch = 0;
  MemoryStats mem;
  bool oom = false;
  std::string why;  // what ran out, when oom
};

// Peak memory of two training steps at this batch (the second is the captured replay on a GPU,
// so a graph's own memory counts too). Out of memory is a result, not a failure.
Probe measure(const std::function<std::unique_ptr<Backend>()>& new_backend, TrainerConfig c, Precision p, int batch) {
  std::unique_ptr<Backend> owned = new_backend();
  Backend& backend = *owned;
  Probe r;
  r.batch = batch;
  c.precision = p;
  c.batch = batch;
  const size_t n = static_cast<size_t>(batch) * c.n_dis * c.model.res * c.model.res * c.model.channels;
  std::vector<float> real(n);
  for (size_t i = 0; i < n; ++i) real[i] = std::clamp(0.5f * philox_normal(c.seed, rng_stream::kBenchData, i), -1.0f, 1.0f);
  backend.synchronize();
  backend.reset_peak_memory();
  try {
    Trainer t(backend, c);
    for (int s = 0; s < 2; ++s) t.step(real.data());
    t.collect(true);
    r.mem = backend.memory_stats();
  } catch (const OutOfMemoryError& e) {
    r.oom = true;
    r.why = e.what();
    r.mem = backend.memory_stats();
    backend.synchronize();
  }
  return r;
}

struct Row {
  Precision precision;
  Probe small, large;
  LinearMemory fit;
  int64_t predicted = 0;
  Probe verified;          // the last verification run
  int64_t fits = 0;        // the largest batch verified within the budget (0: none)
  int tries = 0;
  std::string problem;
};

}  // namespace

int run_max_batch(const std::function<std::unique_ptr<Backend>()>& new_backend, const TrainerConfig& tc, const std::vector<Precision>& precisions,
                  double budget_mib, int probe, int gpu, bool json) {
  const std::unique_ptr<Backend> first = new_backend();
  Backend& backend = *first;  // for its kind and name
  double budget = budget_mib * 1048576.0;
  std::string budget_from = "--memory-budget";
  if (budget_mib <= 0) {
    if (backend.kind() != DeviceKind::CUDA)
      throw Error("the CPU has no memory limit of its own to fill", "--max-batch",
                  "give --memory-budget MiB (e.g. --memory-budget 2048)");
    for (const GpuInfo& g : list_gpus())
      if (g.index == gpu) budget = 0.9 * static_cast<double>(g.free_memory);
    if (budget <= 0)
      throw Error("cannot read the GPU's free memory", "--max-batch", "give --memory-budget MiB");
    budget_from = "90% of the GPU's free memory";
  }
  if (probe < 2) throw Error("the probe batch must be at least 2", "--batch");

  std::vector<Row> rows;
  for (Precision p : precisions) {
    Row r;
    r.precision = p;
    r.small = measure(new_backend, tc, p, probe);
    r.large = measure(new_backend, tc, p, 2 * probe);
    if (r.small.oom || r.large.oom) {
      r.problem = "out of memory already at batch " + std::to_string(r.small.oom ? probe : 2 * probe) + ": " +
                  (r.small.oom ? r.small.why : r.large.why);
      rows.push_back(r);
      continue;
    }
    r.fit = fit_memory(probe, static_cast<double>(r.small.mem.peak_total), 2 * probe,
                       static_cast<double>(r.large.mem.peak_total));
    r.predicted = largest_batch(r.fit, budget);
    // Check by running there; where the line was optimistic, scale down by what was measured.
    int64_t b = r.predicted;
    while (b >= 2 && r.tries < kMaxTries) {
      ++r.tries;
      r.verified = measure(new_backend, tc, p, static_cast<int>(b));
      const double peak = static_cast<double>(r.verified.mem.peak_total);
      if (!r.verified.oom && peak <= budget) {
        r.fits = b;
        break;
      }
      // Over by `excess`: step down by what the line says it costs, and a little more.
      const double excess = r.verified.oom ? 0.1 * budget : peak - budget;
      b -= std::max<int64_t>(1, static_cast<int64_t>(std::ceil(1.05 * excess / std::max(r.fit.per_image, 1.0))));
    }
    if (r.predicted == 0) r.problem = "not even a batch of 2 fits";
    else if (r.fits == 0) r.problem = "no batch verified within " + std::to_string(kMaxTries) + " tries";
    rows.push_back(r);
  }

  int64_t fp32_fits = 0;
  for (const Row& r : rows)
    if (r.precision == Precision::FP32) fp32_fits = r.fits;
  if (json) {
    for (const Row& r : rows) {
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

  std::printf("Largest batch within %.0f MiB (%s): %s-%d (nc %d, width %d) on %s\n\n", mib(budget),
              budget_from.c_str(), tc.family == ModelFamily::ResNet ? "ResNet" : "DCGAN", tc.model.res,
              tc.model.channels, tc.model.width, backend.name().c_str());
  std::printf("Measured peak MiB by category, two steps at each batch:\n%-9s %6s |", "precision", "batch");
  for (const char* c : kCats) std::printf(" %9s", c);
  std::printf(" | %9s\n", "total");
  auto print_probe = [](const char* name, const Probe& pr) {
    std::printf("%-9s %6d |", name, pr.batch);
    for (int c = 0; c < kCatCount; ++c) std::printf(" %9.1f", mib(static_cast<double>(pr.mem.peak[c])));
    std::printf(" | %9.1f%s\n", mib(static_cast<double>(pr.mem.peak_total)), pr.oom ? "  out of memory" : "");
  };
  for (const Row& r : rows) {
    print_probe(precision_name(r.precision), r.small);
    print_probe(precision_name(r.precision), r.large);
  }
  std::printf("\nPrediction (peak = fixed + per image x batch) and check (two steps at the batch):\n");
  std::printf("%-9s %10s %10s %10s %10s %12s %8s\n", "precision", "fixed MiB", "MiB/image", "predicted", "verified",
              "peak MiB", "vs fp32");
  for (const Row& r : rows) {
    if (r.fit.per_image == 0 && !r.problem.empty()) {
      std::printf("%-9s %s\n", precision_name(r.precision), r.problem.c_str());
      continue;
    }
    char ratio[16] = "-";
    if (fp32_fits > 0 && r.fits > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", static_cast<double>(r.fits) / fp32_fits);
    std::printf("%-9s %10.1f %10.3f %10lld %10lld %12.1f %8s%s%s\n", precision_name(r.precision), mib(r.fit.fixed),
                mib(r.fit.per_image), static_cast<long long>(r.predicted), static_cast<long long>(r.fits),
                mib(static_cast<double>(r.verified.mem.peak_total)), ratio, r.problem.empty() ? "" : "  ",
                r.problem.c_str());
    if (r.verified.oom) std::printf("          (out of memory at batch %d: %s)\n", r.verified.batch, r.verified.why.c_str());
  }
  std::printf("\nPeaks count the memory the backend allocates (tensors of every category); not the CUDA\n"
              "context, cuDNN's or cuBLAS's own buffers, or the host process's other memory.\n");
  for (const Row& r : rows)
    if (is_mixed(r.precision) && fp32_fits > 0 && r.fits > 0)
      std::printf("%s fits %.1f× the FP32 batch (%lld against %lld)\n", precision_label(r.precision),
                  static_cast<double>(r.fits) / fp32_fits, static_cast<long long>(r.fits),
                  static_cast<long long>(fp32_fits));
  return 0;
}

}  // namespace ampgan::cli
