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

std::map<std::string, std::string> parse(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (line.empty() || line[0] == '#' || tab == std::string::npos) continue;
    out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

// This host's choices: looked up (and added) under an exclusive lock on the file, so that two
// processes starting together measure a shape once and agree. Without a writable cache folder
// the choice is only this process's. A recorded choice that cannot run here (another build, a
// kernel that no longer exists) is measured again. measure may be empty: then nothing is
// measured, and "" returned where nothing usable is recorded.
std::string host_choice(const std::string& key, const std::function<std::string()>& measure,
                        const std::function<bool(const std::string&)>& usable) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mu);
  auto it = known.find(key);
  if (it != known.end() && usable(it->second)) return it->second;
  std::error_code ec;
  const std::filesystem::path file = host_file();
  std::filesystem::create_directories(file.parent_path(), ec);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    if (fd >= 0) ::close(fd);
    if (!measure) return "";
    return known[key] = measure();
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  for (const auto& [k, v] : parse(text)) known[k] = v;
  it = known.find(key);
  std::string out;
  if (it != known.end() && usable(it->second)) {
    out = it->second;
  } else if (measure) {
    out = known[key] = measure();
    std::string line;
    if (text.empty())
      line = "# AMP GAN Studio: the CPU backend's fastest kernel per product on " + host_signature() + "\n";
    line += key + "\t" + out + "\n";
    ::lseek(fd, 0, SEEK_END);
    if (::write(fd, line.data(), line.size()) < 0) {
      // A full or read-only cache only costs a measurement next time.
    }
  }
  ::close(fd);  // releases the lock
  return out;
}

std::string plan_key(const GemmShape& s, DType dt) { return std::string(dtype_name(dt)) + " " + s.key(); }

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

void KernelPlan::set_mode(CpuKernels mode) {
  std::lock_guard lock(mu_);
  if (mode != mode_ || kernel_ || conv_) chosen_.clear();
  mode_ = mode;
  kernel_.reset();
  conv_.reset();
}

CpuKernels KernelPlan::mode() const {
  std::lock_guard lock(mu_);
  return mode_;
}

void KernelPlan::force(GemmKernel k, std::optional<std::string> conv) {
  std::lock_guard lock(mu_);
  chosen_.clear();
  kernel_ = k;
  conv_ = std::move(conv);
}

GemmKernel KernelPlan::forced(const GemmShape& s, DType dt) const {
  if (kernel_) {
    const GemmKernel k = *kernel_ == GemmKernel::OneDnnBf16 && dt != DType::BF16 ? GemmKernel::OneDnnF32 : *kernel_;
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

std::string KernelPlan::choose_among(const std::string& key, const std::vector<std::string>& candidates,
                                     const std::function<std::string()>& fastest) {
  {
    std::lock_guard lock(mu_);
    auto it = chosen_.find(key);
    if (it != chosen_.end()) return it->second;
    auto rec = recorded_.find(key);
    if (rec != recorded_.end() && contains(candidates, rec->second)) return chosen_[key] = rec->second;
  }
  // Not under mu_: measuring a convolution chooses the products it runs.
  const std::string k = host_choice(key, fastest, [&](const std::string& v) { return contains(candidates, v); });
  std::lock_guard lock(mu_);
  return chosen_[key] = k;
}

GemmKernel KernelPlan::choose(const GemmShape& s, DType dt) {
  {
    std::lock_guard lock(mu_);
    if (mode_ != CpuKernels::Auto || kernel_) {
      const GemmKernel k = forced(s, dt);
      chosen_[plan_key(s, dt)] = gemm_kernel_name(k);
      return k;
    }
  }
  std::vector<std::string> names;
  for (GemmKernel c : gemm_candidates(dt))
    if (onednn_supports(c, s)) names.push_back(gemm_kernel_name(c));
  const std::string name = choose_among(plan_key(s, dt), names, [&] {
    std::string best = gemm_kernel_name(GemmKernel::OpenBlas);
    double best_s = 1e30;
    for (const std::string& c : names) {
      GemmKernel k;
      parse_gemm_kernel(c, &k);
      const double t = time_gemm(k, s);
      if (t < best_s) best_s = t, best = c;
    }
    return best;
  });
  GemmKernel k = GemmKernel::OpenBlas;
  parse_gemm_kernel(name, &k);
  return k;
}

std::string KernelPlan::choose_conv(const std::string& key, const std::vector<std::string>& candidates,
                                    const std::function<double(const std::string&)>& time) {
  {
    std::lock_guard lock(mu_);
    auto it = chosen_.find(key);
    if (it != chosen_.end()) return it->second;
    std::string way;
    if (conv_ && contains(candidates, *conv_))
      way = *conv_;
    else if (kernel_ || mode_ == CpuKernels::OpenBlas)
      way = kIm2col;
    else if (mode_ == CpuKernels::OneDnn)
      way = contains(candidates, kDirect) ? kDirect : kIm2col;
    else if (candidates.size() == 1)
      way = candidates.front();
    else if (auto rec = recorded_.find(key); rec != recorded_.end() && contains(candidates, rec->second))
      way = rec->second;
    if (!way.empty()) return chosen_[key] = way;
  }
  auto usable = [&](const std::string& v) { return contains(candidates, v); };
  std::string way = host_choice(key, {}, usable);
  if (way.empty()) {
    // Each way once untimed first, outside the host record's lock: it plans the products it runs
    // (which takes that lock) and makes its primitives. Then timed, under the lock.
    for (const std::string& c : candidates) time(c);
    way = host_choice(
        key,
        [&] {
          std::string best = candidates.front();
          double best_s = 1e30;
          for (const std::string& c : candidates) {
            const double t = time(c);
            if (t < best_s) best_s = t, best = c;
          }
          return best;
        },
        usable);
  }
  std::lock_guard lock(mu_);
  return chosen_[key] = way;
}

std::vector<std::pair<std::string, std::string>> KernelPlan::choices() const {
  std::lock_guard lock(mu_);
  return {chosen_.begin(), chosen_.end()};
}

void KernelPlan::reuse(const std::vector<std::pair<std::string, std::string>>& recorded) {
  std::lock_guard lock(mu_);
  for (const auto& [key, name] : recorded) {
    recorded_[key] = name;
    chosen_.erase(key);
  }
}

}  // namespace ampgan::cpu
