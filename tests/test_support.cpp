#include "tests/test_support.h"

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/rng.h"

namespace ampgan::testing {

TempDir::TempDir(const std::string& tag) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (tag + "-XXXXXX")).string();
  char* p = mkdtemp(tmpl.data());
  path_ = p ? std::filesystem::path(p) : std::filesystem::temp_directory_path() / tag;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<float> random_normal(size_t n, uint64_t seed, float stddev) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = stddev * philox_normal(seed, 99, i);
  return v;
}

Tensor make_tensor(Backend& b, Shape shape, DType dtype, const std::vector<float>& values, MemCategory cat) {
  CpuBackend host;
  Tensor f = host.empty(shape, DType::F32, cat);
  std::copy(values.begin(), values.end(), f.as<float>());
  Tensor h = host.empty(shape, dtype, cat);
  host.cast(f, h);
  Tensor t = b.empty(shape, dtype, cat);
  b.upload(t, h.data(), h.nbytes());
  return t;
}

std::vector<float> to_host(Backend& b, const Tensor& t) {
  CpuBackend host;
  Tensor h = host.empty(t.shape(), t.dtype(), MemCategory::Data);
  b.download(t, h.data(), h.nbytes());
  std::vector<float> out(static_cast<size_t>(t.numel()));
  CpuBackend::widen(h, 0, t.numel(), out.data());
  return out;
}

double normalized_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (a.size() != b.size()) return INFINITY;
  if (std::isnan(num)) return NAN;
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

int run_command(const std::string& cmd, std::string* output) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  std::string out;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ampgan::testing
