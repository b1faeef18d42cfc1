#include "core/backend/cpu/cpu_kernel_plan.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/common/cache_dir.h"
#include "core/common/cpu_features.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/tensor/half.h"

namespace ampgan::cpu {

std::vector<GemmKernel> gemm_candidates(DType dt) {
  std::vector<GemmKernel> k = {GemmKernel::OpenBlas};
  if (onednn_available()) {
    k.push_back(GemmKernel::OneDnnF32);
    if (dt == DType::BF16) k.push_back(GemmKernel::OneDnnBf16);
  }
  return k;
}

double time_gemm(GemmKernel k, const GemmShape& s) {
  const size_t na = size_t(s.ta ? s.k : s.m) * s.lda, nb = size_t(s.tb ? s.n : s.k) * s.ldb, nc = size_t(s.m) * s.ldc;
  std::vector<float> a(na), b(nb), c(nc, 0.0f);
  for (size_t i = 0; i < na; ++i) a[i] = 0.01f * float(i % 13) - 0.06f;
  for (size_t i = 0; i < nb; ++i) b[i] = 0.02f * float(i % 7) - 0.06f;
  std::vector<uint16_t> ab, bb;
  const void* pa = a.data();
  const void* pb = b.data();
  if (reads_bf16(k)) {
    ab.resize(na);
    bb.resize(nb);
    for (size_t i = 0; i < na; ++i) ab[i] = float_to_bf16_bits(a[i]);
    for (size_t i = 0; i < nb; ++i) bb[i] = float_to_bf16_bits(b[i]);
    pa = ab.data();
    pb = bb.data();
  }
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  gemm_serial(k, s, pa, pb, c.data());  // makes the primitive (JIT), untimed
  const double once = std::chrono::duration<double>(clock::now() - t0).count();
  const int reps = std::clamp(static_cast<int>(1e-3 / std::max(once, 1e-7)), 1, 64);
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    t0 = clock::now();
    for (int r = 0; r < reps; ++r) gemm_serial(k, s, pa, pb, c.data());
    best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count() / reps);
  }
  return best;
}

namespace {

// What makes timings comparable between two processes: the CPU, the thread count, the libraries.
std::string host_signature() {
  std::string model;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 1);
      break;
    }
  return model + " | " + cpu_features().summary() + " | " + std::to_string(cpu_threads()) + " threads | " +
         onednn_summary() + " | OpenBLAS " + openblas_get_config() + " " + openblas_get_corename();
}

std::filesystem::path host_file() {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : host_signature()) h = (h ^ ch) * 1099511628211ull;
  char name[48];
  std::snprintf(name, sizeof name, "cpu-kernels-%016llx.txt", static_cast<unsigned long long>(h));
  return cache_dir() / name;
}

std::map<std::string, GemmKernel> parse(const std::string& text) {
  std::map<std::string, GemmKernel> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.find('\t');
    GemmKernel k;
    if (line.empty() || line[0] == '#' || tab == std::string::npos || !parse_gemm_kernel(line.substr(tab + 1), &k))
      continue;
    out[line.substr(0, tab)] = k;
  }
  return out;
}

// This host's choices: looked up (and added) under an exclusive lock on the file, so that two
// processes starting together measure a shape once and agree. Without a writable cache folder
// the choice is only this process's.
GemmKernel host_choice(const std::string& key, const std::function<GemmKernel()>& measure,
                       const std::function<bool(GemmKernel)>& usable) {
  static std::mutex mu;
  static std::map<std::string, GemmKernel> known;
  std::lock_guard lock(mu);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  std::error_code ec;
  const std::filesystem::path file = host_file();
  std::filesystem::create_directories(file.parent_path(), ec);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0 && ::flock(fd, LOCK_EX) == 0) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    for (const auto& [k, v] : parse(text))
      if (usable(v)) known[k] = v;
    it = known.find(key);
    if (it == known.end()) {
      const GemmKernel k = measure();
      known[key] = k;
      std::string line;
      if (text.empty()) line = "# AMP GAN Studio: the CPU backend's fastest kernel per product on " + host_signature() + "\n";
      line += key + "\t" + gemm_kernel_name(k) + "\n";
      ::lseek(fd, 0, SEEK_END);
      if (::write(fd, line.data(), line.size()) < 0) {
        // A full or read-only cache only costs a measurement next time.
      }
    }
    ::close(fd);  // releases the lock
    return known[key];
  }
  if (fd >= 0) ::close(fd);
  return known[key] = measure();
}

std::string plan_key(const GemmShape& s, DType dt) { return std::string(dtype_name(dt)) + " " + s.key(); }

}  // namespace

void KernelPlan::set_mode(CpuKernels mode) {
  std::lock_guard lock(mu_);
  if (mode != mode_ || forced_kernel_) chosen_.clear();
  mode_ = mode;
  forced_kernel_ = false;
}

void KernelPlan::force(GemmKernel k) {
  std::lock_guard lock(mu_);
  chosen_.clear();
  forced_kernel_ = true;
  kernel_ = k;
}

GemmKernel KernelPlan::forced(const GemmShape& s, DType dt) const {
  if (forced_kernel_) {
    const GemmKernel k = kernel_ == GemmKernel::OneDnnBf16 && dt != DType::BF16 ? GemmKernel::OneDnnF32 : kernel_;
    if (!onednn_supports(k, s))
      throw Error(std::string(gemm_kernel_name(k)) + " cannot run " + s.key() + " here (" + onednn_summary() + ")",
                  "the CPU kernel", "choose another kernel");
    return k;
  }
  if (mode_ == CpuKernels::OpenBlas) return GemmKernel::OpenBlas;
  if (!onednn_available())
    throw Error("this build has no oneDNN", "--cpu-kernels onednn", "use --cpu-kernels auto or openblas");
  if (dt == DType::BF16 && onednn_supports(GemmKernel::OneDnnBf16, s)) return GemmKernel::OneDnnBf16;
  if (onednn_supports(GemmKernel::OneDnnF32, s)) return GemmKernel::OneDnnF32;
  throw Error("oneDNN has no fast product for " + s.key() + " on this CPU", "--cpu-kernels onednn",
              "use --cpu-kernels auto or openblas");
}

GemmKernel KernelPlan::choose(const GemmShape& s, DType dt) {
  const std::string key = plan_key(s, dt);
  std::lock_guard lock(mu_);
  auto it = chosen_.find(key);
  if (it != chosen_.end()) return it->second;
  auto usable = [&](GemmKernel k) {
    const auto c = gemm_candidates(dt);
    return std::find(c.begin(), c.end(), k) != c.end() && onednn_supports(k, s);
  };
  GemmKernel k;
  auto rec = recorded_.find(key);
  if (mode_ != CpuKernels::Auto || forced_kernel_) {
    k = forced(s, dt);
  } else if (rec != recorded_.end() && usable(rec->second)) {
    k = rec->second;
  } else {
    k = host_choice(key, [&] {
      GemmKernel best = GemmKernel::OpenBlas;
      double best_s = 1e30;
      for (GemmKernel c : gemm_candidates(dt)) {
        if (!onednn_supports(c, s)) continue;
        const double t = time_gemm(c, s);
        if (t < best_s) best_s = t, best = c;
      }
      return best;
    }, usable);
  }
  return chosen_[key] = k;
}

std::vector<std::pair<std::string, std::string>> KernelPlan::choices() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : chosen_) out.emplace_back(k, gemm_kernel_name(v));
  return out;
}

void KernelPlan::reuse(const std::vector<std::pair<std::string, std::string>>& recorded) {
  std::lock_guard lock(mu_);
  for (const auto& [key, name] : recorded) {
    GemmKernel k;
    if (!parse_gemm_kernel(name, &k)) continue;
    recorded_[key] = k;
    chosen_.erase(key);
  }
}

}  // namespace ampgan::cpu
