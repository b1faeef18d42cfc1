#include "core/train/max_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/common/error.h"
#include "core/common/rng.h"

namespace ampgan {

namespace {

constexpr int kMaxTries = 6;  // verification runs per precision before giving up

}  // namespace

MaxBatchProbe measure_peak(const std::function<std::unique_ptr<Backend>()>& new_backend, TrainerConfig c, Precision p,
                           int batch) {
  std::unique_ptr<Backend> owned = new_backend();
  Backend& backend = *owned;
  MaxBatchProbe r;
  r.batch = batch;
  c.precision = p;
  c.batch = batch;
  const size_t n = static_cast<size_t>(batch) * c.n_dis * c.model.res * c.model.res * c.model.channels;
  try {
    std::vector<float> real(n);
    for (size_t i = 0; i < n; ++i)
      real[i] = std::clamp(0.5f * philox_normal(c.seed, rng_stream::kBenchData, i), -1.0f, 1.0f);
    backend.synchronize();
    backend.reset_peak_memory();
    Trainer t(backend, c);
    std::vector<int32_t> labels(static_cast<size_t>(batch));  // a conditional model's: classes in turn
    for (int i = 0; i < batch && c.model.classes > 0; ++i) labels[i] = i % c.model.classes;
    const size_t per_batch = n / c.n_dis;
    for (int s = 0; s < 2; ++s) {
      int k = 0;
      t.step_batches([&] { return RealBatch{real.data() + per_batch * k++, labels.data()}; });
    }
    t.collect(true);
    r.mem = backend.memory_stats();
  } catch (const OutOfMemoryError& e) {
    r.oom = true;
    r.why = e.what();
    r.mem = backend.memory_stats();
    backend.synchronize();
  } catch (const std::bad_alloc&) {  // the host's own memory (the batch of real images, say)
    r.oom = true;
    r.why = "host memory";
    r.mem = backend.memory_stats();
  }
  return r;
}

const MaxBatchRow* MaxBatchResult::row(Precision p) const {
  for (const MaxBatchRow& r : rows)
    if (r.precision == p) return &r;
  return nullptr;
}

int64_t MaxBatchResult::fits(Precision p) const {
  const MaxBatchRow* r = row(p);
  return r ? r->fits : 0;
}

double MaxBatchResult::ratio(Precision p) const {
  const int64_t base = fits(Precision::FP32), b = fits(p);
  return base > 0 && b > 0 ? static_cast<double>(b) / static_cast<double>(base) : 0.0;
}

MaxBatchResult find_max_batch(const TrainerConfig& tc, const std::vector<Precision>& precisions,
                              const MaxBatchOptions& opt) {
  if (opt.probe < 2) throw Error("the probe batch must be at least 2", "--batch", "batch norm needs two samples");
  if (!(opt.budget > 0))
    throw Error("the memory budget must be a positive number of MiB", "memory budget", "e.g. 1024");
  MaxBatchResult res;
  res.budget = opt.budget;
  res.budget_from = opt.budget_from;
  res.backend = opt.new_backend()->name();
  const double budget = opt.budget;
  const int probe = opt.probe;
  int done = 0, total = 3 * static_cast<int>(precisions.size());  // two probes and one check each
  auto stopped = [&] { return opt.stop && opt.stop->load(); };
  auto measured = [&](Precision p, int batch) {
    ++done;
    if (opt.progress) {
      char what[96];
      std::snprintf(what, sizeof what, "largest batch: %s at batch %d", precision_name(p), batch);
      opt.progress(what, done, std::max(done, total));
    }
  };

  for (size_t k = 0; k < precisions.size(); ++k) {
    const Precision p = precisions[k];
    MaxBatchRow r;
    r.precision = p;
    if (stopped()) break;
    r.small = measure_peak(opt.new_backend, tc, p, probe);
    measured(p, probe);
    if (stopped()) break;
    r.large = measure_peak(opt.new_backend, tc, p, 2 * probe);
    measured(p, 2 * probe);
    if (r.small.oom || r.large.oom) {
      r.problem = "out of memory already at batch " + std::to_string(r.small.oom ? probe : 2 * probe) + ": " +
                  (r.small.oom ? r.small.why : r.large.why);
      total -= 1;  // no check to run
      res.rows.push_back(r);
      continue;
    }
    r.fit = fit_memory(probe, static_cast<double>(r.small.mem.peak_total), 2 * probe,
                       static_cast<double>(r.large.mem.peak_total));
    r.predicted = largest_batch(r.fit, budget, kMinBatch, kMaxBatch);
    // Check by running there; where the line was optimistic, scale down by what was measured.
    int64_t b = r.predicted;
    if (b < 2) total -= 1;
    while (b >= 2 && r.tries < kMaxTries) {
      if (stopped()) break;
      if (r.tries > 0) ++total;  // a step down: one more measurement than expected
      ++r.tries;
      r.verified = measure_peak(opt.new_backend, tc, p, static_cast<int>(b));
      measured(p, static_cast<int>(b));
      const double peak = static_cast<double>(r.verified.mem.peak_total);
      if (!r.verified.oom && peak <= budget) {
        r.fits = b;
        break;
      }
      // Over by `excess`: step down by what the line says it costs, and a little more.
      const double excess = r.verified.oom ? 0.1 * budget : peak - budget;
      b -= std::max<int64_t>(1, static_cast<int64_t>(std::ceil(1.05 * excess / std::max(r.fit.per_image, 1.0))));
    }
    if (r.predicted == 0)
      r.problem = "not even a batch of 2 fits";
    else if (r.fits == 0 && stopped())
      r.problem = "stopped before the check";
    else if (r.fits == 0)
      r.problem = "no batch verified within " + std::to_string(kMaxTries) + " tries";
    res.rows.push_back(r);
  }
  res.stopped = stopped();
  return res;
}

double gpu_memory_budget(const Backend& backend, int gpu, const std::string& input, const std::string& remedy) {
  if (backend.kind() != DeviceKind::CUDA) throw Error("the CPU has no memory limit of its own to fill", input, remedy);
  double budget = 0;
  for (const GpuInfo& g : list_gpus())
    if (g.index == gpu) budget = 0.9 * static_cast<double>(g.free_memory);
  if (!(budget > 0)) throw Error("cannot read the GPU's free memory", input, remedy);
  return budget;
}

std::string max_batch_ratio_line(const MaxBatchResult& r, Precision amp) {
  const int64_t base = r.fits(Precision::FP32), b = r.fits(amp);
  if (base <= 0 || b <= 0) return {};
  char line[160];
  std::snprintf(line, sizeof line, "%s fits %.1f× the FP32 batch (%lld against %lld)", precision_label(amp),
                static_cast<double>(b) / static_cast<double>(base), static_cast<long long>(b),
                static_cast<long long>(base));
  return line;
}

}  // namespace ampgan
