// ampgan bench: the training step on random data, timed in each precision side by side, with
// peak memory by category. The numbers a user compares AMP on and off with.
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "core/common/rng.h"
#include "core/train/trainer.h"

namespace ampgan::cli {

namespace {

struct Result {
  Precision precision;
  std::vector<double> step_ms;
  MemoryStats mem;
  int skipped = 0;
  double median() const {
    std::vector<double> v = step_ms;
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
};

double mib(size_t b) { return b / 1048576.0; }

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a("bench", "ampgan bench [OPTIONS]",
         "Times the DCGAN training step (one D and one G update) on random data in each precision,\n"
         "side by side in one process, and reports the median step time, images/s, the ratio to\n"
         "fp32 and the peak memory by category. Absolute times only mean something on a quiet\n"
         "machine; compare the ratios.");
  a.option("backend", "B", "auto (default), cpu or cuda")
      .option("gpu", "N", "which GPU (0)")
      .option("res", "R", "resolution: 32 (default), 64 or 128")
      .option("nc", "C", "image channels: 1 (default) or 3")
      .option("width", "W", "network width (64)")
      .option("batch", "B", "batch size (64)")
      .option("precision", "P", "fp32, tf32, fp16, bf16 or all (default: all this backend offers)")
      .option("steps", "N", "timed steps per precision and round (20)")
      .option("warmup", "N", "untimed steps first (3)")
      .option("rounds", "R", "repeat the precisions R times, interleaved, for noisy machines (1)")
      .option("seed", "S", "seed (0)")
      .flag("no-cuda-graphs", "launch each op instead of replaying a CUDA graph")
      .flag("json", "one JSON object per precision instead of the table");
  return guarded("bench", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    TrainerConfig tc;
    tc.model.res = static_cast<int>(a.integer("res", 32));
    tc.model.channels = static_cast<int>(a.integer("nc", 1));
    tc.model.width = static_cast<int>(a.integer("width", 64));
    tc.batch = static_cast<int>(a.integer("batch", 64));
    tc.use_graphs = !a.has("no-cuda-graphs");
    tc.seed = static_cast<uint64_t>(a.integer("seed", 0));
    tc.model.validate();
    const long long steps = a.integer("steps", 20), warmup = a.integer("warmup", 3), rounds = a.integer("rounds", 1);
    if (steps < 1 || warmup < 0 || rounds < 1) throw Error("--steps and --rounds must be at least 1, --warmup at least 0", "ampgan bench");
    if (tc.batch < 2) throw Error("batch size must be at least 2", "--batch");
    std::string note;
    auto backend = create_backend(a.str("backend", "auto"), &note, static_cast<int>(a.integer("gpu", 0)));
    const bool json = a.has("json");
    if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());

    std::vector<Precision> precisions;
    const std::string p = a.str("precision", "all");
    if (p == "all") {
      precisions = {Precision::FP32};
      if (backend->kind() == DeviceKind::CUDA) precisions.push_back(Precision::TF32);
      precisions.push_back(Precision::FP16);
      precisions.push_back(Precision::BF16);
    } else {
      precisions = {parse_precision(p)};
    }

    // Random "images" in [-1, 1]: only the step is timed, as in the PyTorch peer.
    const size_t per_batch = static_cast<size_t>(tc.batch) * tc.model.res * tc.model.res * tc.model.channels;
    std::vector<float> real(per_batch);
    for (size_t i = 0; i < per_batch; ++i) real[i] = std::clamp(0.5f * philox_normal(tc.seed, rng_stream::kBenchData, i), -1.0f, 1.0f);

    std::vector<Result> results(precisions.size());
    for (long long r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < precisions.size(); ++i) {
        Result& res = results[i];
        res.precision = precisions[i];
        backend->synchronize();
        backend->reset_peak_memory();
        TrainerConfig c = tc;
        c.precision = precisions[i];
        {
          Trainer t(*backend, c);
          for (long long s = 0; s < warmup; ++s) t.step(real.data());
          t.collect(true);
          for (long long s = 0; s < steps; ++s) {
            t.step(real.data());
            for (const StepMetrics& m : t.collect(false)) {
              res.step_ms.push_back(m.step_ms);
              res.skipped += m.skipped_d + m.skipped_g;
            }
          }
          for (const StepMetrics& m : t.collect(true)) {
            res.step_ms.push_back(m.step_ms);
            res.skipped += m.skipped_d + m.skipped_g;
          }
          if (r == 0) res.mem = backend->memory_stats();
        }
      }
    }

    double fp32_ms = 0;
    for (const Result& r : results)
      if (r.precision == Precision::FP32) fp32_ms = r.median();
    const char* kCats[] = {"master_fp32", "half_copies", "gradients", "adam_moments", "activations", "workspace", "data"};
    if (!json) {
      std::printf("DCGAN-%d (nc %d, width %d), batch %d on %s\n%lld timed steps after %lld warm-up, %lld round(s)\n\n",
                  tc.model.res, tc.model.channels, tc.model.width, tc.batch, backend->name().c_str(), steps, warmup, rounds);
      std::printf("%-9s %10s %10s %8s %9s | peak MiB: %7s %7s %7s %7s %8s %8s %7s\n", "precision", "step ms", "images/s",
                  "vs fp32", "overflows", "master", "half", "grads", "adam", "activ.", "workspace", "total");
    }
    for (const Result& r : results) {
      const double med = r.median();
      const double ips = med > 0 ? tc.batch * 1000.0 / med : 0;
      const double speedup = fp32_ms > 0 && med > 0 ? fp32_ms / med : 0;
      const auto& pk = r.mem.peak;
      if (json) {
        nlohmann::json j;
        j["backend"] = backend->kind() == DeviceKind::CUDA ? "cuda" : "cpu";
        j["device"] = backend->name();
        j["precision"] = precision_name(r.precision);
        j["res"] = tc.model.res;
        j["nc"] = tc.model.channels;
        j["width"] = tc.model.width;
        j["batch"] = tc.batch;
        j["steps"] = r.step_ms.size();
        j["step_ms_median"] = med;
        j["images_per_s"] = ips;
        if (fp32_ms > 0) j["speedup_vs_fp32"] = speedup;
        j["overflows"] = r.skipped;
        nlohmann::json m;
        for (size_t c = 0; c < 7; ++c) m[kCats[c]] = pk[c];
        m["total"] = r.mem.peak_total;
        j["peak_mem_bytes"] = m;
        std::printf("%s\n", j.dump().c_str());
      } else {
        char ratio[16] = "-";
        if (fp32_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", speedup);
        std::printf("%-9s %10.1f %10.1f %8s %9d | %17.1f %7.1f %7.1f %7.1f %8.1f %8.1f %7.1f\n", precision_name(r.precision),
                    med, ips, ratio, r.skipped, mib(pk[0]), mib(pk[1]), mib(pk[2]), mib(pk[3]), mib(pk[4]), mib(pk[5]),
                    mib(r.mem.peak_total));
      }
    }
    if (!json)
      std::printf("\nPeaks are per category over each precision's run; 'total' is the peak of the sum.\n"
                  "On the CPU, half modes emulate the GPU's rounding in FP32 arithmetic: they show the\n"
                  "memory saved, not a speed-up (the CPU has no fast half-precision matrix units).\n");
    return 0;
  });
}

}  // namespace ampgan::cli
