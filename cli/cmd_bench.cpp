// ampgan bench: the training step on random data, timed in each precision side by side, with
// peak memory by category. The numbers a user compares AMP on and off with.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/bench_max_batch.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/train_options.h"
#include "core/backend/profiling_backend.h"
#include "core/common/cpu_features.h"
#include "core/common/rng.h"
#include "core/train/trainer.h"

namespace ampgan::cli {

namespace {

struct Result {
  Precision precision;
  bool tensor_stats = true;
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

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The machine's matrix-product rate in one dtype through this backend's own gemm (inputs in
// dtype, FP32 output): the "limit" the step's convolutions and products are measured against.
// A short probe, n^3 multiply-adds, median of 5 after one untimed call.
double gemm_peak_gflops(Backend& b, DType dt, int n) {
  Tensor a = b.empty(Shape{n, n}, dt, MemCategory::Workspace), bm = b.empty(Shape{n, n}, dt, MemCategory::Workspace);
  Tensor c = b.empty(Shape{n, n}, DType::F32, MemCategory::Workspace);
  b.fill(a, 0.5f);
  b.fill(bm, 0.25f);
  std::vector<double> s;
  for (int i = 0; i < 6; ++i) {
    b.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    b.gemm(false, false, n, n, n, 1.0f, a, bm, 0.0f, c);
    b.synchronize();
    if (i > 0) s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * n * n * n / median_of(s) / 1e9;
}

// Time per op family of eager steps on a ProfilingBackend (one sync after every op).
struct Profiled {
  Precision precision;
  OpProfile ops;
  double wall_s = 0;
  int steps = 0;
};

Profiled profile_steps(Backend& backend, TrainerConfig c, const std::vector<float>& real, long long steps) {
  ProfilingBackend pb(backend);
  c.use_graphs = false;
  Trainer t(pb, c);
  for (int s = 0; s < 2; ++s) t.step(real.data());
  t.collect(true);
  pb.reset_profile();
  const auto t0 = std::chrono::steady_clock::now();
  for (long long s = 0; s < steps; ++s) t.step(real.data());
  t.collect(true);
  Profiled p;
  p.precision = c.precision;
  p.ops = pb.profile();
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.steps = static_cast<int>(steps);
  return p;
}

void print_profile(const std::vector<Profiled>& prof, Backend& backend) {
  std::printf("\nProfile (--profile): ms per step by op family, eager, one device sync after each op\n");
  std::printf("%-14s", "family");
  for (const Profiled& p : prof) std::printf(" %14s", precision_name(p.precision));
  std::printf("\n");
  for (size_t f = 0; f < kOpFamilies; ++f) {
    std::printf("%-14s", op_family_name(static_cast<OpFamily>(f)));
    for (const Profiled& p : prof) {
      const double ms = p.ops.seconds[f] * 1e3 / p.steps;
      std::printf(" %7.2f (%3.0f%%)", ms, 100.0 * p.ops.seconds[f] / p.wall_s);
    }
    std::printf("\n");
  }
  std::printf("%-14s", "other (host)");
  for (const Profiled& p : prof) {
    const double rest = std::max(0.0, p.wall_s - p.ops.total_seconds());
    std::printf(" %7.2f (%3.0f%%)", rest * 1e3 / p.steps, 100.0 * rest / p.wall_s);
  }
  std::printf("\n%-14s", "step");
  for (const Profiled& p : prof) std::printf(" %7.2f       ", p.wall_s * 1e3 / p.steps);
  std::printf("\n\nHow close to the limit (conv + gemm against this machine's GEMM rate, %s):\n",
              backend.kind() == DeviceKind::CPU ? cpu_features().summary().c_str() : backend.name().c_str());
  std::map<DType, double> peaks;
  for (const Profiled& p : prof) {
    const DType dt = compute_dtype(p.precision);
    if (!peaks.count(dt)) {
      backend.set_allow_tf32(p.precision == Precision::TF32);
      peaks[dt] = gemm_peak_gflops(backend, dt, backend.kind() == DeviceKind::CPU ? 768 : 4096);
      backend.set_allow_tf32(false);
    }
    const size_t conv = static_cast<size_t>(OpFamily::Conv), gemm = static_cast<size_t>(OpFamily::Gemm);
    const double mm_s = p.ops.seconds[conv] + p.ops.seconds[gemm];
    const double achieved = mm_s > 0 ? p.ops.matmul_flops / mm_s / 1e9 : 0;
    std::printf("  %-5s conv+gemm %7.1f GFLOP/s = %3.0f%% of the %s GEMM probe (%.1f GFLOP/s); %.1f GFLOP a step\n",
                precision_name(p.precision), achieved, peaks[dt] > 0 ? 100.0 * achieved / peaks[dt] : 0.0,
                dtype_name(dt), peaks[dt], p.ops.matmul_flops / p.steps / 1e9);
  }
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a("bench", "ampgan bench [OPTIONS]",
         "Times the GAN training step (one D and one G update) on random data in each precision,\n"
         "side by side in one process, and reports the median step time, images/s, the ratio to\n"
         "fp32 and the peak memory by category. Absolute times only mean something on a quiet\n"
         "machine; compare the ratios.");
  a.option("backend", "B", "auto (default), cpu or cuda")
      .option("gpu", "N", "which GPU (0)")
      .option("model", "M", "dcgan (default) or resnet (SNGAN/BigGAN-style, spectrally normalised D)")
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
      .flag("profile", "also time each op family (conv, gemm, batch norm, element-wise, AMP passes, optimizer,\n"
                       "data) in an extra eager pass per precision, and compare conv+gemm with a GEMM probe")
      .flag("max-batch", "find the largest batch that fits in each precision instead of timing: peak memory\n"
                         "at --batch (default 8) and twice it, a linear prediction, checked by running there")
      .option("memory-budget", "MiB", "the memory --max-batch fills (default: 90% of the GPU's free memory;\n"
                                      "required on the CPU)")
      .flag("tensor-stats-cost", "run each precision also without the per-tensor gradient statistics\n"
                                     "(layers.csv, the overflow locator), interleaved, to measure their cost")
      .flag("json", "one JSON object per precision instead of the table");
  return guarded("bench", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    TrainerConfig tc;
    tc.family = parse_model_family(a.str("model", "dcgan"));
    if (tc.family == ModelFamily::ResNet) tc.model.latent = 128;  // SNGAN's and BigGAN's z
    // The training settings' own ranges, checked before any narrowing.
    tc.model.res = setting_value(a, "res", "res", 32).get<int>();
    tc.model.channels = static_cast<int>(a.integer("nc", 1, 1, 3));
    tc.model.width = setting_value(a, "width", "width", 64).get<int>();
    tc.batch = setting_value(a, "batch", "batch", 64).get<int>();
    tc.use_graphs = !a.has("no-cuda-graphs");
    tc.seed = setting_value(a, "seed", "seed", 0).get<uint64_t>();
    tc.model.validate();
    const long long steps = a.integer("steps", 20, 1, 1000000), warmup = a.integer("warmup", 3, 0, 1000000),
                    rounds = a.integer("rounds", 1, 1, 1000);
    const int gpu = setting_value(a, "gpu", "gpu", 0).get<int>();
    std::string note;
    auto backend = create_backend(a.str("backend", "auto"), &note, gpu);
    const bool json = a.has("json");
    if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());

    if (a.has("memory-budget") && !a.has("max-batch"))
      throw Error("--memory-budget only applies to --max-batch", "--memory-budget", "add --max-batch");
    if (a.has("memory-budget") && !(a.real("memory-budget", 0) > 0))
      throw Error("the memory budget must be a positive number of MiB", "--memory-budget", "e.g. --memory-budget 2048");

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

    if (a.has("max-batch"))
      return run_max_batch([&] { return create_backend(a.str("backend", "auto"), nullptr, gpu); }, tc, precisions,
                           a.has("memory-budget") ? a.real("memory-budget", 0) : 0,
                           setting_value(a, "batch", "batch", 8).get<int>(), gpu, json);

    // Random "images" in [-1, 1]: only the step is timed, as in the PyTorch peer.
    const size_t per_batch = static_cast<size_t>(tc.batch) * tc.model.res * tc.model.res * tc.model.channels;
    std::vector<float> real(per_batch);
    for (size_t i = 0; i < per_batch; ++i) real[i] = std::clamp(0.5f * philox_normal(tc.seed, rng_stream::kBenchData, i), -1.0f, 1.0f);

    // With --tensor-stats-cost each precision runs twice per round, with and without.
    const bool stats_cost = a.has("tensor-stats-cost");
    std::vector<Result> results;
    for (Precision pr : precisions) {
      results.push_back({pr, true, {}, {}, 0});
      if (stats_cost) results.push_back({pr, false, {}, {}, 0});
    }
    for (long long r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < results.size(); ++i) {
        Result& res = results[i];
        backend->synchronize();
        backend->reset_peak_memory();
        TrainerConfig c = tc;
        c.precision = res.precision;
        c.tensor_stats = res.tensor_stats;
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
      if (r.precision == Precision::FP32 && r.tensor_stats) fp32_ms = r.median();
    const char* kCats[] = {"master_fp32", "half_copies", "gradients", "adam_moments", "activations", "workspace", "data"};
    if (!json) {
      std::printf("%s-%d (nc %d, width %d), batch %d on %s\n%lld timed steps after %lld warm-up, %lld round(s)\n\n",
                  tc.family == ModelFamily::ResNet ? "ResNet" : "DCGAN", tc.model.res, tc.model.channels, tc.model.width, tc.batch, backend->name().c_str(), steps, warmup, rounds);
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
        j["tensor_stats"] = r.tensor_stats;
        j["model"] = model_family_name(tc.family);
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
        const std::string label = std::string(precision_name(r.precision)) + (r.tensor_stats ? "" : "-nostat");
        std::printf("%-9s %10.1f %10.1f %8s %9d | %17.1f %7.1f %7.1f %7.1f %8.1f %8.1f %7.1f\n", label.c_str(),
                    med, ips, ratio, r.skipped, mib(pk[0]), mib(pk[1]), mib(pk[2]), mib(pk[3]), mib(pk[4]), mib(pk[5]),
                    mib(r.mem.peak_total));
      }
    }
    if (!json) {
      std::printf("\nPeaks are per category over each precision's run; 'total' is the peak of the sum.\n");
      if (backend->kind() == DeviceKind::CPU) {
        std::printf("CPU: %s\n", cpu_features().summary().c_str());
        for (const Result& r : results)
          if (is_mixed(r.precision) && r.tensor_stats)
            std::printf("  %s: %s\n", precision_name(r.precision), cpu_precision_support(precision_name(r.precision)).c_str());
      }
    }
    if (a.has("profile")) {
      std::vector<Profiled> prof;
      for (const Result& r : results) {
        if (!r.tensor_stats) continue;
        TrainerConfig c = tc;
        c.precision = r.precision;
        prof.push_back(profile_steps(*backend, c, real, steps));
      }
      print_profile(prof, *backend);
    }
    return 0;
  });
}

}  // namespace ampgan::cli
