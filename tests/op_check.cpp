#include "tests/op_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <map>
#include <optional>

#include "core/backend/cpu/cpu_gemm.h"
#include "core/backend/cuda_plugin.h"
#include "core/backend/elementwise.h"
#include "core/common/cpu_features.h"
#include "core/common/rng.h"
#include "core/tensor/half.h"
#include "tests/op_cases.h"
#include "tests/test_support.h"

namespace ampgan::testing {

// ---- the backends ----------------------------------------------------------------------------------

CpuBackend& reference() {
  static CpuBackend* b = [] {
    auto* r = new CpuBackend();
    r->force_kernel(cpu::GemmKernel::OpenBlas);
    return r;
  }();
  return *b;
}

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {"cpu", "cpu-onednn-f32", "cpu-onednn-bf16", "cpu-onednn-conv", "cuda"};
  return names;
}

namespace {

// The CPU backend with one oneDNN kernel forced (and, with conv, one way for every convolution);
// null with the reason where it cannot run here.
Backend* cpu_with_kernel(cpu::GemmKernel k, std::string* why, std::optional<std::string> conv = std::nullopt) {
  if (!cpu::onednn_available()) {
    if (why) *why = "this build has no oneDNN (install libdnnl-dev and rebuild)";
    return nullptr;
  }
  if (k == cpu::GemmKernel::OneDnnBf16 && !cpu_features().avx512_bf16) {
    if (why)
      *why = "this CPU has no AVX512-BF16 (" + cpu_features().summary() + "), where oneDNN 2.6 has no BF16 kernel";
    return nullptr;
  }
  static std::map<std::pair<cpu::GemmKernel, bool>, CpuBackend*> made;
  CpuBackend*& b = made[{k, conv.has_value()}];
  if (!b) {
    b = new CpuBackend();
    b->force_kernel(k, conv);
  }
  return b;
}

// The CUDA backend, created once; null with the reason when there is no usable GPU.
Backend* cuda_backend(std::string* why) {
  static bool tried = false;
  static Backend* backend = nullptr;
  static std::string reason;
  if (!tried) {
    tried = true;
    std::string none;
    const std::vector<GpuInfo> gpus = list_gpus(&none);
    const bool usable = std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return g.usable; });
    if (!usable) {
      reason = "no usable GPU: " + (none.empty() ? std::string("list_gpus() found no usable GPU") : none);
    } else {
      try {
        backend = create_backend("cuda").release();
      } catch (const std::exception& e) {
        reason = std::string("the CUDA backend could not start: ") + e.what();
      }
    }
  }
  if (why) *why = reason;
  return backend;
}

}  // namespace

Backend* backend_named(const std::string& name, std::string* why) {
  if (name == "cpu") return &reference();
  if (name == "cpu-onednn-f32") return cpu_with_kernel(cpu::GemmKernel::OneDnnF32, why);
  if (name == "cpu-onednn-bf16") return cpu_with_kernel(cpu::GemmKernel::OneDnnBf16, why);
  if (name == "cpu-onednn-conv")  // BF16 convolutions in BF16 where the CPU can, else in FP32
    return cpu_with_kernel(cpu_features().avx512_bf16 ? cpu::GemmKernel::OneDnnBf16 : cpu::GemmKernel::OneDnnF32, why,
                           std::string(cpu::kDirect));
  if (name == "cuda") return cuda_backend(why);
  if (why) *why = "unknown backend " + name;
  return nullptr;
}

void reset_backend(Backend& b) {
  b.drop_capture();
  b.set_allow_tf32(false);
  b.set_deterministic(true);
}

// ---- read-backs ----------------------------------------------------------------------------------------

std::vector<uint32_t> tensor_bits(Backend& b, const Tensor& t) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<uint32_t> out(n);
  if (t.dtype() == DType::F32) {
    b.download(t, out.data(), t.nbytes());
  } else {
    std::vector<uint16_t> h(n);
    b.download(t, h.data(), t.nbytes());
    for (size_t i = 0; i < n; ++i) out[i] = h[i];
  }
  return out;
}

namespace {

float bits_value(DType t, uint32_t b) {
  switch (t) {
    case DType::F16:
      return half_bits_to_float(static_cast<uint16_t>(b));
    case DType::BF16:
      return bf16_bits_to_float(static_cast<uint16_t>(b));
    default:
      return bits_float(b);
  }
}

// Position on the number line in ulps of the storage format (monotonic across zero).
int64_t ordered(DType t, uint32_t b) {
  const uint32_t sign = t == DType::F32 ? 0x80000000u : 0x8000u;
  const int64_t mag = static_cast<int64_t>(b & (sign - 1));
  return (b & sign) ? -mag : mag;
}

Output make_output(const std::string& name, DType dtype, const std::string& shape, std::vector<uint32_t> bits,
                   std::vector<Check> checks) {
  Output o;
  o.name = name;
  o.dtype = dtype;
  o.shape = shape;
  o.values.reserve(bits.size());
  for (uint32_t b : bits) o.values.push_back(bits_value(dtype, b));
  o.bits = std::move(bits);
  o.checks = std::move(checks);
  return o;
}

}  // namespace

void Outputs::tensor(const std::string& name, const Tensor& t, std::vector<Check> checks) {
  items_.push_back(make_output(name, t.dtype(), t.shape().str(), tensor_bits(b_, t), std::move(checks)));
}

void Outputs::slice(const std::string& name, const Tensor& t, int first, int n, std::vector<Check> checks) {
  EXPECT_EQ(t.dtype(), DType::F32) << name << ": slices are of FP32 scalars tensors";
  const std::vector<uint32_t> all = tensor_bits(b_, t);
  std::vector<uint32_t> part(all.begin() + first, all.begin() + first + n);
  items_.push_back(make_output(name, DType::F32, "[" + std::to_string(first) + ", " + std::to_string(first + n) + ")",
                               std::move(part), std::move(checks)));
}

void Outputs::count(const std::string& name, const Tensor& t, int slot) {
  const std::vector<float> v = to_host(b_, t);
  Output o;
  o.name = name;
  o.shape = "count at [" + std::to_string(slot) + ", " + std::to_string(slot + 1) + "]";
  o.values = {static_cast<double>(ew::count_load(&v[slot]))};
  o.checks = {equal()};
  items_.push_back(o);
}

// ---- comparisons ------------------------------------------------------------------------------------------

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

namespace {

constexpr const char* kFmaNote =
    "this build contracts a*b+c into FMAs in device code (nvcc --fmad=true): expressions the CPU "
    "rounds twice are rounded once on the GPU, so exactness is relaxed to the reduction bounds. "
    "Build the CUDA sources with --fmad=false for bit-exact element-wise parity.";

std::string head(const Output& o, const std::string& who) {
  return o.name + " [" + dtype_name(o.dtype) + ", " + o.shape + "] on " + who + " vs cpu";
}

::testing::AssertionResult cmp_bits(const Output& a, const Output& b, const std::string& who) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.bits.size(); ++i)
    if (a.bits[i] != b.bits[i]) {
      if (!bad) first = i;
      ++bad;
    }
  if (!bad) return ::testing::AssertionSuccess();
  char buf[64];
  std::snprintf(buf, sizeof buf, "bits 0x%x vs 0x%x", a.bits[first], b.bits[first]);
  return ::testing::AssertionFailure() << head(a, who) << ": " << bad << " of " << a.bits.size()
                                       << " elements differ (expected bit-exact); first at " << first << ": cpu "
                                       << fmt(a.values[first]) << ", " << who << " " << fmt(b.values[first]) << " ("
                                       << buf << ")";
}

::testing::AssertionResult cmp_ulps(const Output& a, const Output& b, int64_t max_ulps, const std::string& who) {
  int64_t worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.bits.size(); ++i) {
    const bool na = std::isnan(a.values[i]), nb = std::isnan(b.values[i]);
    const int64_t d = (na || nb) ? (na && nb ? 0 : INT64_MAX / 2)
                                 : std::llabs(ordered(a.dtype, a.bits[i]) - ordered(a.dtype, b.bits[i]));
    if (d > worst) worst = d, at = i;
  }
  if (worst <= max_ulps) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << head(a, who) << ": " << worst << " ulp apart at element " << at << " (bound "
                                       << max_ulps << "): cpu " << fmt(a.values[at]) << ", " << who << " "
                                       << fmt(b.values[at]);
}

// ||b - a|| / ||a|| as normalized_error computes it (0 when both are zero).
::testing::AssertionResult cmp_norm(const Output& a, const Output& b, double tol, bool strict, const std::string& who) {
  const std::vector<float> fa(a.values.begin(), a.values.end()), fb(b.values.begin(), b.values.end());
  const double err = normalized_error(fb, fa);
  if (strict ? err < tol : err <= tol) return ::testing::AssertionSuccess();
  size_t at = 0;
  double worst = -1;
  for (size_t i = 0; i < fa.size(); ++i) {
    const double d = std::isnan(fa[i]) != std::isnan(fb[i]) ? INFINITY : std::fabs(double(fa[i]) - double(fb[i]));
    if (d > worst) worst = d, at = i;
  }
  return ::testing::AssertionFailure() << head(a, who) << ": normalised error " << err << (strict ? " >= " : " > ")
                                       << tol << "; worst element " << at << ": cpu " << fmt(fa[at]) << ", " << who
                                       << " " << fmt(fb[at]);
}

::testing::AssertionResult cmp_rel(const Output& a, const Output& b, double tol, const std::string& who) {
  for (size_t i = 0; i < a.values.size(); ++i) {
    const double x = a.values[i], y = b.values[i];
    const bool ok = std::isinf(x) ? std::isinf(y) : std::fabs(y - x) / std::max(1e-30, std::fabs(x)) <= tol;
    if (!ok)
      return ::testing::AssertionFailure() << head(a, who) << ": element " << i << " relative error "
                                           << std::fabs(y - x) / std::max(1e-30, std::fabs(x)) << " > " << tol
                                           << ": cpu " << fmt(x) << ", " << who << " " << fmt(y);
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult cmp_equal(const Output& a, const Output& b, const std::string& who) {
  for (size_t i = 0; i < a.values.size(); ++i)
    if (!(a.values[i] == b.values[i]))
      return ::testing::AssertionFailure() << head(a, who) << ": element " << i << " differs (expected equal): cpu "
                                           << fmt(a.values[i]) << ", " << who << " " << fmt(b.values[i]);
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult compare_output(const Output& a, const Output& b, const Check& c, DType case_dtype, bool fma,
                                          const std::string& who) {
  if (a.values.size() != b.values.size() || a.dtype != b.dtype)
    return ::testing::AssertionFailure() << head(a, who) << ": " << b.values.size() << " " << dtype_name(b.dtype)
                                         << " elements, expected " << a.values.size();
  const bool have_bits = a.bits.size() == a.values.size();
  switch (c.kind) {
    case CmpKind::Bits:
      return have_bits ? cmp_bits(a, b, who) : cmp_equal(a, b, who);
    case CmpKind::ExactUnlessFma: {
      if (!fma) return have_bits ? cmp_bits(a, b, who) : cmp_equal(a, b, who);
      auto r = cmp_norm(a, b, c.bound.at(case_dtype), false, who);
      if (!r) r << "\n" << kFmaNote;
      return r;
    }
    case CmpKind::Ulps:
      if (have_bits) return cmp_ulps(a, b, static_cast<int64_t>(c.bound.at(case_dtype)), who);
      break;
    case CmpKind::Norm:
      return cmp_norm(a, b, c.bound.at(case_dtype), false, who);
    case CmpKind::NormBelow:
      return cmp_norm(a, b, c.bound.at(case_dtype), true, who);
    case CmpKind::Rel:
      return cmp_rel(a, b, c.bound.at(case_dtype), who);
    case CmpKind::Equal:
      return cmp_equal(a, b, who);
  }
  return ::testing::AssertionFailure() << head(a, who) << ": an ulp comparison of an output without bits (a count)";
}

void compare_outputs(const std::string& what, DType case_dtype, const std::string& who, Backend& backend,
                     const Outputs& ref, const Outputs& got, const Check* instead) {
  const bool fma = cuda_fma_contraction(backend);
  const auto& a = ref.items();
  const auto& b = got.items();
  EXPECT_EQ(a.size(), b.size()) << what << ": " << who << " gave " << b.size() << " outputs, the cpu " << a.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].name != b[i].name) {
      ADD_FAILURE() << what << ": output " << i << " is " << b[i].name << " on " << who << ", " << a[i].name
                    << " on the cpu";
      continue;
    }
    if (instead)
      EXPECT_TRUE(compare_output(a[i], b[i], *instead, case_dtype, fma, who)) << what;
    else
      for (const Check& c : a[i].checks) EXPECT_TRUE(compare_output(a[i], b[i], c, case_dtype, fma, who)) << what;
  }
}

// ---- the gradient check --------------------------------------------------------------------------------

double weighted_sum(Backend& b, const Tensor& y, const std::vector<float>& r) {
  const std::vector<float> v = to_host(b, y);
  EXPECT_EQ(v.size(), r.size()) << "weighted_sum: r must have y's size";
  double s = 0;
  for (size_t i = 0; i < v.size() && i < r.size(); ++i) s += double(r[i]) * double(v[i]);
  return s;
}

void check_gradients(const std::string& what, Backend& b, GradProblem p) {
  const std::vector<Tensor> grads = p.gradients();
  const double h = p.step > 0 ? p.step : kGradStep;
  ASSERT_EQ(grads.size(), p.inputs.size()) << what << ": one gradient per input";
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    Tensor& x = p.inputs[k].x;
    ASSERT_EQ(x.dtype(), DType::F32) << what << ": the gradient check perturbs FP32 inputs";
    ASSERT_EQ(grads[k].numel(), x.numel()) << what << ": gradient of " << p.inputs[k].name;
    const std::vector<float> g = to_host(b, grads[k]);
    std::vector<float> xv = to_host(b, x);
    const uint64_t n = xv.size();
    // A deterministic sample: every element of a small input, else kGradSamples drawn evenly
    // (one per stretch of n / kGradSamples, at a Philox-chosen place in it).
    std::vector<uint64_t> at;
    if (n <= kGradSamples) {
      for (uint64_t i = 0; i < n; ++i) at.push_back(i);
    } else {
      for (uint64_t s = 0; s < kGradSamples; ++s) {
        const uint64_t lo = s * n / kGradSamples, hi = (s + 1) * n / kGradSamples;
        at.push_back(lo + philox_below(17, k, s, hi - lo));
      }
    }
    double num = 0, den = 0, worst = -1;
    uint64_t worst_at = 0;
    double worst_fd = 0;
    for (uint64_t i : at) {
      const float x0 = xv[i];
      // The step as the FP32 values really differ, so the rounding of x +- h costs nothing.
      const float xp = x0 + static_cast<float>(h), xm = x0 - static_cast<float>(h);
      xv[i] = xp;
      b.upload(x, xv.data(), xv.size() * sizeof(float));
      const double lp = p.objective();
      xv[i] = xm;
      b.upload(x, xv.data(), xv.size() * sizeof(float));
      const double lm = p.objective();
      xv[i] = x0;
      const double fd = (lp - lm) / (double(xp) - double(xm));
      const double d = fd - double(g[i]);
      num += d * d;
      den += double(g[i]) * double(g[i]);
      if (std::fabs(d) > worst) worst = std::fabs(d), worst_at = i, worst_fd = fd;
    }
    b.upload(x, xv.data(), xv.size() * sizeof(float));
    const double err = den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
    EXPECT_LE(err, kGradTol) << what << ": d/d " << p.inputs[k].name << " " << x.shape().str() << " over " << at.size()
                             << " sampled elements: normalised error " << err << " > " << kGradTol << " (step "
                             << fmt(h) << "); worst element " << worst_at << ": backward " << fmt(g[worst_at])
                             << ", central difference " << fmt(worst_fd);
  }
}

}  // namespace ampgan::testing
