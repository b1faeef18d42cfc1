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
#include "cli/setting_option.h"
#include "core/backend/cpu/cpu_precision.h"
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

// The CPU backend's kernel per product shape (operand dtype, transposes, m x n x k), as chosen
// for the steps above; the GEMM probes' own products among them.
void print_kernel_choices(const Backend& backend) {
  const std::vector<KernelChoice> choices = backend.kernel_choices();
  if (choices.empty()) return;
  std::map<std::string, int> per_kernel;
  for (const KernelChoice& c : choices) ++per_kernel[c.second];
  std::printf("\nCPU kernels chosen (--cpu-kernels), per product:");
  for (const auto& [k, n] : per_kernel) std::printf(" %s %d", k.c_str(), n);
  std::printf("\n");
  for (const KernelChoice& c : choices) std::printf("  %-58s %s\n", c.first.c_str(), c.second.c_str());
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
  print_kernel_choices(backend);
}

// What `ampgan bench` was asked for.
struct BenchRequest {
  TrainerConfig tc;
  std::vector<Precision> precisions;
  long long steps = 20, warmup = 3, rounds = 1;
  CpuKernels kernels = CpuKernels::Auto;
  std::string backend = "auto";
  int gpu = 0;
  bool profile = false, json = false, stats_cost = false;
};

// The settings of `ampgan train` that bench takes too, in the order --help lists them: the same
// spelling and range, and the row's help unless bench means less by it.
constexpr SharedSetting kBenchSettings[] = {
    {"backend"},
    {"gpu"},
    {"cpu_kernels"},
    {"model",
     "dcgan (default) or resnet (SNGAN/BigGAN-style, spectrally normalised D); one D\n"
     "update per G update, the recipe's other settings at their defaults"},
    {"res"},
    {"channels", "image channels: 1 (default) or 3"},
    {"width"},
    {"batch"},
    {"seed"},
    {"cuda_graphs"},
};

Args bench_args() {
  Args a("bench", "ampgan bench [OPTIONS]",
         "Times the GAN training step (one D and one G update) on random data in each precision,\n"
         "side by side in one process, and reports the median step time, images/s, the ratio to\n"
         "fp32 and the peak memory by category. Absolute times only mean something on a quiet\n"
         "machine; compare the ratios.");
  add_setting_options(a, kBenchSettings);
  a.option("precision", "P", "fp32, tf32, fp16, bf16 or all (default: all this backend offers)")
      .option("steps", "N", "timed steps per precision and round (20)")
      .option("warmup", "N", "untimed steps first (3)")
      .option("rounds", "R", "repeat the precisions R times, interleaved, for noisy machines (1)")
      .flag("profile",
            "also time each op family (conv, gemm, batch norm, element-wise, AMP passes, optimizer,\n"
            "data) in an extra eager pass per precision, and compare conv+gemm with a GEMM probe")
      .flag("max-batch",
            "find the largest batch that fits in each precision instead of timing: peak memory\n"
            "at --batch (default 8) and twice it, a linear prediction, checked by running there")
      .option("memory-budget", "MiB",
              "the memory --max-batch fills (default: 90% of the GPU's free memory;\n"
              "required on the CPU)")
      .flag("tensor-stats-cost",
            "run each precision also without the per-tensor gradient statistics\n"
            "(layers.csv, the overflow locator), interleaved, to measure their cost")
      .flag("json", "one JSON object per precision instead of the table");
  return a;
}

// The request from the parsed options; `precisions` stays empty for "all" (the backend decides).
BenchRequest bench_request(const Args& a) {
  BenchRequest r;
  // Through a RunConfig, as train reads them: the rows' ranges, validate()'s rules, and
  // trainer_config()'s model (the ResNet's z of 128).
  RunConfig c;
  apply_setting_options(a, kBenchSettings, c);
  if (c.channels == 0) c.channels = 1;  // random data has no channels of its own
  c.validate();
  r.tc = c.trainer_config(c.channels);
  r.backend = c.backend;
  r.gpu = c.gpu;
  r.kernels = c.cpu_kernels;
  r.steps = a.integer("steps", 20, 1, 1000000);
  r.warmup = a.integer("warmup", 3, 0, 1000000);
  r.rounds = a.integer("rounds", 1, 1, 1000);
  if (a.has("memory-budget") && !a.has("max-batch"))
    throw Error("--memory-budget only applies to --max-batch", "--memory-budget", "add --max-batch");
  if (a.has("memory-budget") && !(a.real("memory-budget", 0) > 0))
    throw Error("the memory budget must be a positive number of MiB", "--memory-budget", "e.g. --memory-budget 2048");
  if (const std::string p = a.str("precision", "all"); p != "all") r.precisions = {parse_precision(p)};
  r.profile = a.has("profile");
  r.json = a.has("json");
  r.stats_cost = a.has("tensor-stats-cost");
  return r;
}

// Every precision (with and without per-tensor statistics, for --tensor-stats-cost) trained in
// turn, round after round, on the same random "images" in [-1, 1]: only the step is timed, as in
// the PyTorch peer.
std::vector<Result> time_precisions(Backend& backend, const BenchRequest& r, const std::vector<float>& real) {
  std::vector<Result> results;
  for (Precision pr : r.precisions) {
    results.push_back({pr, true, {}, {}, 0});
    if (r.stats_cost) results.push_back({pr, false, {}, {}, 0});
  }
  for (long long round = 0; round < r.rounds; ++round)
    for (Result& res : results) {
      backend.synchronize();
      backend.reset_peak_memory();
      TrainerConfig c = r.tc;
      c.precision = res.precision;
      c.tensor_stats = res.tensor_stats;
      Trainer t(backend, c);
      for (long long s = 0; s < r.warmup; ++s) t.step(real.data());
      t.collect(true);
      auto take = [&](const std::vector<StepMetrics>& rows) {
        for (const StepMetrics& m : rows) {
          res.step_ms.push_back(m.step_ms);
          res.skipped += m.skipped_d + m.skipped_g;
        }
      };
      for (long long s = 0; s < r.steps; ++s) {
        t.step(real.data());
        take(t.collect(false));
      }
      take(t.collect(true));
      if (round == 0) res.mem = backend.memory_stats();
    }
  return results;
}

void print_results(const std::vector<Result>& results, const BenchRequest& r, Backend& backend) {
  const TrainerConfig& tc = r.tc;
  double fp32_ms = 0;
  for (const Result& res : results)
    if (res.precision == Precision::FP32 && res.tensor_stats) fp32_ms = res.median();
  const char* kCats[] = {"master_fp32", "half_copies", "gradients", "adam_moments", "activations", "workspace", "data"};
  if (!r.json) {
    std::printf("%s-%d (nc %d, width %d), batch %d on %s\n%lld timed steps after %lld warm-up, %lld round(s)\n\n",
                tc.family == ModelFamily::ResNet ? "ResNet" : "DCGAN", tc.model.res, tc.model.channels, tc.model.width,
                tc.batch, backend.name().c_str(), r.steps, r.warmup, r.rounds);
    std::printf("%-9s %10s %10s %8s %9s | peak MiB: %7s %7s %7s %7s %8s %8s %7s\n", "precision", "step ms", "images/s",
                "vs fp32", "overflows", "master", "half", "grads", "adam", "activ.", "workspace", "total");
  }
  for (const Result& res : results) {
    const double med = res.median();
    const double ips = med > 0 ? tc.batch * 1000.0 / med : 0;
    const double speedup = fp32_ms > 0 && med > 0 ? fp32_ms / med : 0;
    const auto& pk = res.mem.peak;
    if (r.json) {
      nlohmann::json j;
      j["backend"] = backend.kind() == DeviceKind::CUDA ? "cuda" : "cpu";
      j["device"] = backend.name();
      j["precision"] = precision_name(res.precision);
      j["tensor_stats"] = res.tensor_stats;
      j["model"] = model_family_name(tc.family);
      j["res"] = tc.model.res;
      j["nc"] = tc.model.channels;
      j["width"] = tc.model.width;
      j["batch"] = tc.batch;
      j["steps"] = res.step_ms.size();
      j["step_ms_median"] = med;
      j["images_per_s"] = ips;
      if (fp32_ms > 0) j["speedup_vs_fp32"] = speedup;
      j["overflows"] = res.skipped;
      nlohmann::json m;
      for (size_t c = 0; c < 7; ++c) m[kCats[c]] = pk[c];
      m["total"] = res.mem.peak_total;
      j["peak_mem_bytes"] = m;
      std::printf("%s\n", j.dump().c_str());
    } else {
      char ratio[16] = "-";
      if (fp32_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", speedup);
      const std::string label = std::string(precision_name(res.precision)) + (res.tensor_stats ? "" : "-nostat");
      std::printf("%-9s %10.1f %10.1f %8s %9d | %17.1f %7.1f %7.1f %7.1f %8.1f %8.1f %7.1f\n", label.c_str(), med, ips,
                  ratio, res.skipped, mib(pk[0]), mib(pk[1]), mib(pk[2]), mib(pk[3]), mib(pk[4]), mib(pk[5]),
                  mib(res.mem.peak_total));
    }
  }
  if (r.json) return;
  std::printf("\nPeaks are per category over each precision's run; 'total' is the peak of the sum.\n");
  if (backend.kind() == DeviceKind::CPU) {
    std::printf("CPU: %s\n", cpu_features().summary().c_str());
    for (const Result& res : results)
      if (is_mixed(res.precision) && res.tensor_stats)
        std::printf("  %s: %s\n", precision_name(res.precision),
                    cpu_precision_support(precision_name(res.precision), r.kernels).c_str());
  }
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a = bench_args();
  return guarded("bench", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    BenchRequest r = bench_request(a);
    const auto new_backend = [&](std::string* why) {
      std::unique_ptr<Backend> b = create_backend(r.backend, why, r.gpu);
      b->set_cpu_kernels(r.kernels);
      return b;
    };
    std::string note;
    auto backend = new_backend(&note);
    if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
    if (r.precisions.empty()) {  // all this backend offers
      r.precisions = {Precision::FP32};
      if (backend->kind() == DeviceKind::CUDA) r.precisions.push_back(Precision::TF32);
      r.precisions.push_back(Precision::FP16);
      r.precisions.push_back(Precision::BF16);
    }
    if (a.has("max-batch"))
      return run_max_batch([&] { return new_backend(nullptr); }, r.tc, r.precisions,
                           a.has("memory-budget") ? a.real("memory-budget", 0) : 0, a.has("batch") ? r.tc.batch : 8,
                           r.gpu, r.json);  // --batch, read once above
    const size_t per_batch = static_cast<size_t>(r.tc.batch) * r.tc.model.res * r.tc.model.res * r.tc.model.channels;
    std::vector<float> real(per_batch);
    for (size_t i = 0; i < per_batch; ++i)
      real[i] = std::clamp(0.5f * philox_normal(r.tc.seed, rng_stream::kBenchData, i), -1.0f, 1.0f);
    const std::vector<Result> results = time_precisions(*backend, r, real);
    print_results(results, r, *backend);
    if (r.profile) {
      std::vector<Profiled> prof;
      for (const Result& res : results) {
        if (!res.tensor_stats) continue;
        TrainerConfig c = r.tc;
        c.precision = res.precision;
        prof.push_back(profile_steps(*backend, c, real, r.steps));
      }
      print_profile(prof, *backend);
    }
    return 0;
  });
}

}  // namespace ampgan::cli
