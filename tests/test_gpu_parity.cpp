// GPU parity: every Backend op, in every dtype, on the CUDA backend against the CPU backend (the
// reference), in the manner of ggml's test-backend-ops; then whole training steps. Without a
// usable GPU every test is skipped, visibly, with the reason list_gpus() gives.
//
// Failure messages name the op, the dtype and the case (geometry, activation, ...), the error
// found and the bound it broke, and the worst element (index, CPU value, GPU value).
//
// ---- Tolerances: ||gpu - cpu|| / ||cpu|| (normalised) unless marked ulp or exact --------------
//
// | family                                  | f32        | f16        | bf16       |
// |-----------------------------------------|------------|------------|------------|
// | exact element-wise (fill, copy, cast,   | exact bits | exact bits | exact bits |
// |   relu/lrelu/identity, bias_add, scalar |            |            |            |
// |   ops, scaler_update, counts, histogram)|            |            |            |
// | a*b+c element-wise (tanh backward, Adam | exact bits (1e-5 / 2e-3 / 1e-2 if FMA      |
// |   moments) with --fmad=false            |   contraction is on: see kFmaNote)         |
// | transcendental (tanh, philox normal)    | <= 8 ulp   | <= 1 ulp   | <= 1 ulp   |
// | gemm, convolutions (FP32 accumulate)    | 1e-5       | 2e-3       | 1e-2       |
// | batch norm, bias gradient (FP32 stats)  | 1e-5       | 2e-3       | 1e-2       |
// | TF32 gemm / convolution                 | 5e-3       |            |            |
// | losses: values / dlogits                | 1e-6 relative / 1e-5, FP32 only         |
// | grad sum of squares                     | 1e-5 relative                           |
// | Adam master weights / half copies       | 1e-6       | <= 1 ulp   | <= 1 ulp   |
// | 10 training steps, per-step losses      | 2e-3 (fp32), 3e-2 (fp16), |d| / max(1, |cpu|)|
//
// Why:
// - Exact: the CUDA kernels call the same functions (core/backend/elementwise.h, half.h, rng.h)
//   on the same input bits; IEEE +, *, /, sqrt are correctly rounded on both sides, subnormals
//   are kept (nvcc's default -ftz=false), so the bits must agree. The only exception is nvcc's
//   default FMA contraction (--fmad=true) of a * b + c, which rounds once where the CPU rounds
//   twice; tests that depend on it ask the backend (cuda_fma_contraction) and relax.
// - Transcendentals: CUDA's expf/logf/tanhf/sinf/cosf are within 1-2 ulp of glibc's; the normal
//   numbers go through logf, sqrtf, cosf/sinf and a product (a few ulp in FP32). Storing to a
//   16-bit format rounds away all but at most one half-ulp step.
// - Reductions (gemm, conv, batch norm, bias gradient, sums of squares): FP32 accumulation in a
//   different order; relative error ~1e-7 * sqrt(terms), so 1e-5 in FP32. Half outputs are the
//   FP32 result rounded once: where the two FP32 results straddle a rounding boundary the stored
//   values differ by one half-ulp (2^-11 relative in f16, 2^-8 in bf16); the normalised error is
//   at most about sqrt(fraction flipped) * ulp, hence 2e-3 / 1e-2.
// - TF32 rounds inputs to 10 mantissa bits: ~1e-3 relative per product.
// - Adam: the bias corrections use powf (ulp differences in the step size), which moves the
//   weights by ~1e-7 of an update; the moments are exact.
// - Whole steps: per-op differences compound through 10 GAN steps; the bounds leave room for that
//   while catching any real divergence (a wrong op moves the losses by far more).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/amp/precision.h"

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/tensor/half.h"
#include "core/train/trainer.h"
#include "tests/test_support.h"

#include "core/backend/cuda_plugin.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

// ---- tolerances (see the table above) --------------------------------------------------------

constexpr double kReduceTol[3] = {1e-5, 2e-3, 1e-2};  // by DType: f32, f16, bf16
constexpr double kTf32Tol = 5e-3;
constexpr double kLossTol = 1e-6;       // loss values (sums in double of per-logit FP32 terms)
constexpr double kDlogitsTol = 1e-5;    // sigmoid(x) - target: expf's ulps, amplified where they cancel
constexpr double kSumSqTol = 1e-5;
constexpr int kTranscendentalUlps[3] = {8, 1, 1};
constexpr double kTrainTolFp32 = 2e-3, kTrainTolFp16 = 3e-2;
constexpr const char* kFmaNote =
    "this build contracts a*b+c into FMAs in device code (nvcc --fmad=true): expressions the CPU "
    "rounds twice are rounded once on the GPU, so exactness is relaxed to the reduction bounds. "
    "Build the CUDA sources with --fmad=false for bit-exact element-wise parity.";

double reduce_tol(DType t) { return kReduceTol[static_cast<int>(t)]; }

const DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16};

// ---- the two backends --------------------------------------------------------------------------

CpuBackend& cpu() {
  static CpuBackend* b = new CpuBackend();  // never destroyed: tensors may outlive static teardown
  return *b;
}

// The CUDA backend, created once for the whole test program; null with the reason when there is
// no usable GPU.
Backend* gpu_backend(std::string* why) {
  static bool tried = false;
  static Backend* backend = nullptr;
  static std::string reason;
  if (!tried) {
    tried = true;
    std::string none;
    const std::vector<GpuInfo> gpus = list_gpus(&none);
    const bool usable = std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return g.usable; });
    if (!usable) {
      reason = none.empty() ? "list_gpus() found no usable GPU" : none;
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

bool fma_on(Backend& g) { return cuda_fma_contraction(g); }

class GpuParity : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    g_ = gpu_backend(&why);
    if (!g_) GTEST_SKIP() << "no usable GPU: " << why;
    // A test that failed half-way must not leave the shared backend capturing or in TF32 mode.
    // Deterministic algorithms chosen for the CPU's arithmetic: exact replays, comparable sums.
    g_->drop_capture();
    g_->set_allow_tf32(false);
    g_->set_deterministic(true);
  }
  Backend& gpu() { return *g_; }
  Backend* g_ = nullptr;
};

// ---- tensors on both backends --------------------------------------------------------------------

struct Both {
  Tensor c, g;  // CPU, GPU
};

Both both(Backend& gpu, Shape s, DType t, const std::vector<float>& v, MemCategory cat = MemCategory::Data) {
  return Both{make_tensor(cpu(), s, t, v, cat), make_tensor(gpu, s, t, v, cat)};
}

Both both_empty(Backend& gpu, Shape s, DType t) {
  return Both{cpu().empty(s, t, MemCategory::Data), gpu.empty(s, t, MemCategory::Data)};
}

std::vector<float> scaled_normal(size_t n, uint64_t seed, float stddev, float mean = 0.0f) {
  std::vector<float> v = random_normal(n, seed, stddev);
  for (float& x : v) x += mean;
  return v;
}

// Raw element bits (widened to 32 bits).
std::vector<uint32_t> bits(Backend& b, const Tensor& t) {
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

float bits_value(DType t, uint32_t b) {
  switch (t) {
    case DType::F16: return half_bits_to_float(static_cast<uint16_t>(b));
    case DType::BF16: return bf16_bits_to_float(static_cast<uint16_t>(b));
    default: return bits_float(b);
  }
}

bool bits_nan(DType t, uint32_t b) { return std::isnan(bits_value(t, b)); }

// Position on the number line in ulps of the storage format (monotonic across zero).
int64_t ordered(DType t, uint32_t b) {
  const uint32_t sign = t == DType::F32 ? 0x80000000u : 0x8000u;
  const int64_t mag = static_cast<int64_t>(b & (sign - 1));
  return (b & sign) ? -mag : mag;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// Every element bit-identical (NaNs included); a on backend ba, b on backend bb.
::testing::AssertionResult bits_equal(const std::string& what, Backend& ba, const Tensor& a_t, Backend& bb,
                                      const Tensor& b_t, const char* sides) {
  const auto a = bits(ba, a_t), b = bits(bb, b_t);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      if (!bad) first = i;
      ++bad;
    }
  if (!bad && a.size() == b.size()) return ::testing::AssertionSuccess();
  char buf[64];
  std::snprintf(buf, sizeof buf, "bits 0x%x vs 0x%x", a[first], b[first]);
  return ::testing::AssertionFailure() << what << " [" << dtype_name(a_t.dtype()) << ", " << a_t.shape().str()
                                       << "]: " << bad << " of " << a.size() << " elements differ (expected bit-exact, "
                                       << sides << "); first at " << first << ": " << fmt(bits_value(a_t.dtype(), a[first]))
                                       << " vs " << fmt(bits_value(a_t.dtype(), b[first])) << " (" << buf << ")";
}

// c on the CPU, g on the GPU.
::testing::AssertionResult same_bits(const std::string& what, Backend& gpu, const Tensor& c, const Tensor& g) {
  return bits_equal(what, cpu(), c, gpu, g, "cpu vs gpu");
}

// Both on the GPU.
::testing::AssertionResult same_bits_on_gpu(const std::string& what, Backend& gpu, const Tensor& a, const Tensor& b) {
  return bits_equal(what, gpu, a, gpu, b, "gpu vs gpu");
}

::testing::AssertionResult within_ulps(const std::string& what, Backend& gpu, const Tensor& c, const Tensor& g,
                                       int64_t max_ulps) {
  const auto a = bits(cpu(), c), b = bits(gpu, g);
  int64_t worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool na = bits_nan(c.dtype(), a[i]), nb = bits_nan(c.dtype(), b[i]);
    const int64_t d = (na || nb) ? (na && nb ? 0 : INT64_MAX / 2) : std::llabs(ordered(c.dtype(), a[i]) - ordered(c.dtype(), b[i]));
    if (d > worst) worst = d, at = i;
  }
  if (worst <= max_ulps) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << " [" << dtype_name(c.dtype()) << ", " << c.shape().str()
                                       << "]: " << worst << " ulp apart at element " << at << " (bound " << max_ulps
                                       << "): cpu " << fmt(bits_value(c.dtype(), a[at])) << ", gpu "
                                       << fmt(bits_value(c.dtype(), b[at]));
}

::testing::AssertionResult close(const std::string& what, Backend& gpu, const Tensor& c, const Tensor& g, double tol) {
  const auto a = to_host(cpu(), c), b = to_host(gpu, g);
  const double err = normalized_error(b, a);
  if (err <= tol) return ::testing::AssertionSuccess();
  size_t at = 0;
  double worst = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::isnan(a[i]) != std::isnan(b[i]) ? INFINITY : std::fabs(double(a[i]) - double(b[i]));
    if (d > worst) worst = d, at = i;
  }
  return ::testing::AssertionFailure() << what << " [" << dtype_name(c.dtype()) << ", " << c.shape().str()
                                       << "]: normalised error " << err << " > " << tol << "; worst element " << at
                                       << ": cpu " << fmt(a[at]) << ", gpu " << fmt(b[at]);
}

// Bit-exact, or the given bound when the device contracts FMAs.
::testing::AssertionResult exact_unless_fma(const std::string& what, Backend& gpu, const Tensor& c, const Tensor& g) {
  if (!fma_on(gpu)) return same_bits(what, gpu, c, g);
  auto r = close(what, gpu, c, g, reduce_tol(c.dtype()));
  if (!r) r << "\n" << kFmaNote;
  return r;
}

std::vector<float> host(Backend& b, const Tensor& t) { return to_host(b, t); }

double rel(double gpu_v, double cpu_v) { return std::fabs(gpu_v - cpu_v) / std::max(1e-30, std::fabs(cpu_v)); }

// Values with the awkward cases of every format mixed into normal numbers.
std::vector<float> special_values(size_t n, uint64_t seed) {
  std::vector<float> v = random_normal(n, seed, 3.0f);
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f, 1e-8f, 3e-8f,
                            6e-8f, 2.9e-8f, 5.96e-8f, 6.1e-5f, 6.0e-5f, -1e-7f, 1e-39f, -1e-40f, 1e-45f, 3.4e38f,
                            -3.4e38f, INFINITY, -INFINITY, NAN, 1.00390625f, 1.001953125f, 0.333333f, 1e30f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0] && i * 37 < n; ++i) v[i * 37] = specials[i];
  for (size_t i = 5; i < n; i += 11) v[i] *= 1e-6f;  // a spread of exponents
  for (size_t i = 7; i < n; i += 13) v[i] *= 1e4f;
  return v;
}

// ---- filling, conversion, scalars ------------------------------------------------------------------

TEST_F(GpuParity, FillIsExact) {
  for (DType t : kAllTypes)
    for (float value : {0.0f, -0.0f, 1.5f, -3.25f, 70000.0f, 1e-6f, 1e-42f, INFINITY}) {
      Both x = both_empty(gpu(), Shape{1001}, t);
      cpu().fill(x.c, value);
      gpu().fill(x.g, value);
      EXPECT_TRUE(same_bits("fill(" + fmt(value) + ")", gpu(), x.c, x.g));
    }
}

TEST_F(GpuParity, CopyAndCastAreExact) {
  const auto v = special_values(4099, 11);
  for (DType from : kAllTypes) {
    Both src = both(gpu(), Shape{4099}, from, v);
    Both same = both_empty(gpu(), Shape{4099}, from);
    cpu().copy(src.c, same.c);
    gpu().copy(src.g, same.g);
    EXPECT_TRUE(same_bits("copy", gpu(), same.c, same.g));
    for (DType to : kAllTypes) {
      Both dst = both_empty(gpu(), Shape{4099}, to);
      cpu().cast(src.c, dst.c);
      gpu().cast(src.g, dst.g);
      EXPECT_TRUE(same_bits(std::string("cast ") + dtype_name(from) + " -> " + dtype_name(to), gpu(), dst.c, dst.g));
    }
  }
}

TEST_F(GpuParity, FillNormalDrawsTheCpuPhiloxNumbers) {
  // -1: no counter tensor; 2^24 + 1: a count one float could not hold.
  for (DType t : kAllTypes)
    for (int64_t counter_value : {int64_t{-1}, int64_t{0}, int64_t{3}, int64_t{16777217}}) {
      Both x = both_empty(gpu(), Shape{10001}, t);
      Tensor cc, cg;
      if (counter_value >= 0) {
        float c[2];
        ew::count_store(c, static_cast<uint64_t>(counter_value));
        Both counter = both(gpu(), Shape{2}, DType::F32, {c[0], c[1]});
        cc = counter.c;
        cg = counter.g;
      }
      cpu().fill_normal(x.c, 1234, 77, cc, 0.5f);
      gpu().fill_normal(x.g, 1234, 77, cg, 0.5f);
      const std::string what = "fill_normal(counter " + std::to_string(counter_value) + ")";
      EXPECT_TRUE(within_ulps(what, gpu(), x.c, x.g, kTranscendentalUlps[static_cast<int>(t)]));
      EXPECT_TRUE(close(what, gpu(), x.c, x.g, t == DType::F32 ? 1e-6 : reduce_tol(t)));
    }
}

TEST_F(GpuParity, ScalarOpsAreExact) {
  const std::vector<float> v = {1.5f, -2.0f, 0.125f, 7.0f, 0.0f};
  Both a = both(gpu(), Shape{5}, DType::F32, v);
  Both b = both(gpu(), Shape{5}, DType::F32, {9, 9, 9, 9, 9});
  cpu().copy_scalar(a.c, 3, b.c, 1);
  gpu().copy_scalar(a.g, 3, b.g, 1);
  cpu().add_scalar(b.c, 4, 0.1f);
  gpu().add_scalar(b.g, 4, 0.1f);
  cpu().add_scalar(b.c, 4, 0.2f);
  gpu().add_scalar(b.g, 4, 0.2f);
  EXPECT_TRUE(same_bits("copy_scalar + add_scalar", gpu(), b.c, b.g));
  // A [lo, hi] count carries at 2^24: 2^24 - 1 + 2 = [1, 1].
  Both count = both(gpu(), Shape{2}, DType::F32, {16777215.0f, 0.0f});
  for (int i = 0; i < 2; ++i) {
    cpu().count_increment(count.c);
    gpu().count_increment(count.g);
  }
  EXPECT_TRUE(same_bits("count_increment across 2^24", gpu(), count.c, count.g));
  EXPECT_EQ(host(gpu(), count.g), (std::vector<float>{1.0f, 1.0f})) << "count_increment: 2^24 - 1 + 2";
}

// ---- activations and bias -----------------------------------------------------------------------------

struct ActCase {
  ew::Act act;
  float alpha;
  const char* name;
};
const ActCase kActs[] = {{ew::Act::ReLU, 0.0f, "relu"},
                         {ew::Act::LeakyReLU, 0.2f, "leaky_relu(0.2)"},
                         {ew::Act::Tanh, 0.0f, "tanh"},
                         {ew::Act::Identity, 0.0f, "identity"}};

TEST_F(GpuParity, ActivationsForwardAndBackward) {
  // 5003: element by element; 4096: the 16-byte vector path (whole vectors, aligned).
  for (const int64_t n : {int64_t{5003}, int64_t{4096}}) {
    std::vector<float> xv = random_normal(n, 21, 2.0f);
    xv[0] = 0.0f, xv[1] = -0.0f, xv[2] = 20.0f, xv[3] = -20.0f, xv[4] = 1e-6f, xv[5] = -65504.0f;
    const auto dyv = random_normal(n, 22, 1.0f);
    for (DType t : kAllTypes)
      for (const ActCase& a : kActs) {
        const std::string what = std::string("activation_forward ") + a.name + " n=" + std::to_string(n);
        Both x = both(gpu(), Shape{n}, t, xv), y = both_empty(gpu(), Shape{n}, t);
        cpu().activation_forward(a.act, a.alpha, x.c, y.c);
        gpu().activation_forward(a.act, a.alpha, x.g, y.g);
        if (a.act == ew::Act::Tanh)
          EXPECT_TRUE(within_ulps(what, gpu(), y.c, y.g, kTranscendentalUlps[static_cast<int>(t)]));
        else
          EXPECT_TRUE(same_bits(what, gpu(), y.c, y.g));

        // Backward from the same y on both sides (the CPU's), so only the backward math is compared.
        Both ys = both(gpu(), Shape{n}, t, host(cpu(), y.c));
        Both dy = both(gpu(), Shape{n}, t, dyv), dx = both_empty(gpu(), Shape{n}, t);
        cpu().activation_backward(a.act, a.alpha, ys.c, dy.c, dx.c);
        gpu().activation_backward(a.act, a.alpha, ys.g, dy.g, dx.g);
        const std::string bwhat = std::string("activation_backward ") + a.name + " n=" + std::to_string(n);
        if (a.act == ew::Act::Tanh) EXPECT_TRUE(exact_unless_fma(bwhat, gpu(), dx.c, dx.g));
        else EXPECT_TRUE(same_bits(bwhat, gpu(), dx.c, dx.g));

        // In place (y aliases x, dx aliases dy), as the layers may call it.
        Both inplace = both(gpu(), Shape{n}, t, xv);
        cpu().activation_forward(a.act, a.alpha, inplace.c, inplace.c);
        gpu().activation_forward(a.act, a.alpha, inplace.g, inplace.g);
        if (a.act != ew::Act::Tanh) EXPECT_TRUE(same_bits(what + " (in place)", gpu(), inplace.c, inplace.g));
      }
  }
}

// ---- AMP safeguards: activation clamp, nan_to_num (issue 13) --------------------------------------

TEST_F(GpuParity, ClampForwardAndBackwardAreExact) {
  const auto xv = special_values(5003, 31);
  const auto dyv = random_normal(5003, 32, 1.0f);
  for (DType t : kAllTypes)
    for (float c : {256.0f, 1.0f, 65504.0f}) {
      const std::string what = "clamp(" + fmt(c) + ")";
      Both x = both(gpu(), Shape{5003}, t, xv), y = both_empty(gpu(), Shape{5003}, t);
      cpu().clamp_forward(x.c, y.c, c);
      gpu().clamp_forward(x.g, y.g, c);
      EXPECT_TRUE(same_bits(what + " forward", gpu(), y.c, y.g));
      Both dy = both(gpu(), Shape{5003}, t, dyv), dx = both_empty(gpu(), Shape{5003}, t);
      cpu().clamp_backward(x.c, dy.c, dx.c, c);
      gpu().clamp_backward(x.g, dy.g, dx.g, c);
      EXPECT_TRUE(same_bits(what + " backward", gpu(), dx.c, dx.g));
    }
}

TEST_F(GpuParity, NanToNumReplacesTheSameValuesAndCountsThem) {
  const auto v = special_values(70001, 33);  // more than one block's worth, several specials
  for (DType t : kAllTypes) {
    Both a = both(gpu(), Shape{70001}, t, v), b = both(gpu(), Shape{257}, t, special_values(257, 34));
    Both sc = both(gpu(), Shape{8}, DType::F32, {1, 0, 0, 0, 0, 0, 0, 0});
    cpu().nan_to_num({a.c, b.c}, kNanToNumBound, sc.c, 2, 0);
    gpu().nan_to_num({a.g, b.g}, kNanToNumBound, sc.g, 2, 0);
    EXPECT_TRUE(same_bits(std::string("nan_to_num ") + dtype_name(t), gpu(), a.c, a.g));
    EXPECT_TRUE(same_bits(std::string("nan_to_num (second tensor) ") + dtype_name(t), gpu(), b.c, b.g));
    EXPECT_TRUE(same_bits(std::string("nan_to_num count and flag ") + dtype_name(t), gpu(), sc.c, sc.g));
    EXPECT_GT(ew::count_load(host(cpu(), sc.c).data() + 2), 0u) << "the special values include inf and NaN";
  }
}

TEST_F(GpuParity, BiasAddIsExactAndBiasBackwardSums) {
  for (DType t : kAllTypes)
    for (int c : {1, 3, 64, 100}) {
      const int rows = 517;
      const std::string tag = " c=" + std::to_string(c);
      Both y = both(gpu(), Shape{rows, c}, t, random_normal(size_t(rows) * c, 31 + c, 1.0f));
      Both b = both(gpu(), Shape{c}, DType::F32, random_normal(c, 32 + c, 0.5f));
      cpu().bias_add(y.c, b.c);
      gpu().bias_add(y.g, b.g);
      EXPECT_TRUE(same_bits("bias_add" + tag, gpu(), y.c, y.g));

      Both dy = both(gpu(), Shape{rows, c}, t, random_normal(size_t(rows) * c, 33 + c, 1.0f));
      for (bool acc : {false, true}) {
        Both db = both(gpu(), Shape{c}, DType::F32, random_normal(c, 34 + c, 1.0f));
        cpu().bias_backward(dy.c, db.c, acc);
        gpu().bias_backward(dy.g, db.g, acc);
        EXPECT_TRUE(close(std::string("bias_backward(dy ") + dtype_name(t) + (acc ? ", accumulate)" : ")") + tag, gpu(),
                          db.c, db.g, kReduceTol[0]));
      }
    }
}

// ---- matrix products --------------------------------------------------------------------------------

TEST_F(GpuParity, GemmAllTransposesAndOutputTypes) {
  struct Dims {
    int m, n, k;
  };
  for (DType t : kAllTypes)
    for (Dims d : {Dims{37, 29, 53}, Dims{16, 100, 128}, Dims{1, 8, 300}})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (DType ct : t == DType::F32 ? std::vector<DType>{DType::F32} : std::vector<DType>{DType::F32, t})
            for (float beta : {0.0f, 0.75f}) {
              const std::string what = "gemm(ta=" + std::to_string(ta) + ", tb=" + std::to_string(tb) + ", m=" +
                                       std::to_string(d.m) + ", n=" + std::to_string(d.n) + ", k=" + std::to_string(d.k) +
                                       ", C " + dtype_name(ct) + ", beta " + fmt(beta) + ")";
              Both a = both(gpu(), Shape{int64_t(d.m) * d.k}, t, random_normal(size_t(d.m) * d.k, 41, 1.0f));
              Both b = both(gpu(), Shape{int64_t(d.k) * d.n}, t, random_normal(size_t(d.k) * d.n, 42, 0.1f));
              Both c = both(gpu(), Shape{int64_t(d.m) * d.n}, ct, random_normal(size_t(d.m) * d.n, 43, 1.0f));
              cpu().gemm(ta, tb, d.m, d.n, d.k, 1.5f, a.c, b.c, beta, c.c);
              gpu().gemm(ta, tb, d.m, d.n, d.k, 1.5f, a.g, b.g, beta, c.g);
              EXPECT_TRUE(close(what + " A/B " + dtype_name(t), gpu(), c.c, c.g,
                                std::max(reduce_tol(t), reduce_tol(ct))));
            }
}

TEST_F(GpuParity, Tf32GemmAndConvStayNearFp32) {
  Both a = both(gpu(), Shape{64 * 256}, DType::F32, random_normal(64 * 256, 51, 1.0f));
  Both b = both(gpu(), Shape{256 * 48}, DType::F32, random_normal(256 * 48, 52, 0.1f));
  Both c = both_empty(gpu(), Shape{64 * 48}, DType::F32);
  gpu().set_allow_tf32(true);
  cpu().gemm(false, false, 64, 48, 256, 1.0f, a.c, b.c, 0.0f, c.c);
  gpu().gemm(false, false, 64, 48, 256, 1.0f, a.g, b.g, 0.0f, c.g);
  EXPECT_TRUE(close("gemm with TF32 allowed", gpu(), c.c, c.g, kTf32Tol));
  ConvGeometry g;
  g.n = 4, g.h = g.w = 8, g.c = 64, g.k = 32, g.r = g.s = 4, g.stride = 2, g.pad = 1;
  Both x = both(gpu(), g.x_shape(), DType::F32, random_normal(g.x_shape().numel(), 53, 1.0f));
  Both w = both(gpu(), g.w_shape(), DType::F32, random_normal(g.w_shape().numel(), 54, 0.03f));
  Both y = both_empty(gpu(), g.y_shape(), DType::F32);
  cpu().conv2d_forward(g, x.c, w.c, y.c);
  gpu().conv2d_forward(g, x.g, w.g, y.g);
  gpu().set_allow_tf32(false);
  EXPECT_TRUE(close("conv2d_forward with TF32 allowed", gpu(), y.c, y.g, kTf32Tol));
  // And back to strict FP32: the cached TF32 plan must not be reused.
  gpu().conv2d_forward(g, x.g, w.g, y.g);
  EXPECT_TRUE(close("conv2d_forward after TF32 is forbidden again", gpu(), y.c, y.g, kReduceTol[0]));
}

// ---- convolutions --------------------------------------------------------------------------------------

struct ConvCase {
  const char* name;
  int n, h, w, c, k, r, stride, pad;
  ConvGeometry geometry() const {
    ConvGeometry g;
    g.n = n, g.h = h, g.w = w, g.c = c, g.k = k, g.r = g.s = r, g.stride = stride, g.pad = pad;
    return g;
  }
};

// The DCGAN's geometries (4x4 kernels, stride 2 pad 1; the 4x4 stride-1 pad-0 ends), the 1- and
// 3-channel image layers, channel counts that are not multiples of 8 (the latent's 100, the
// logit's 1), odd image sizes, and 3x3 / 1x1 kernels.
const ConvCase kConvCases[] = {
    {"D_first_grey_c1_k8_4x4_s2_p1", 4, 16, 16, 1, 8, 4, 2, 1},
    {"D_first_rgb_c3_k16_4x4_s2_p1", 4, 16, 16, 3, 16, 4, 2, 1},
    {"D_mid_c64_k128_4x4_s2_p1", 4, 8, 8, 64, 128, 4, 2, 1},
    {"D_logit_c128_k1_4x4_s1_p0", 8, 4, 4, 128, 1, 4, 1, 0},
    {"G_first_c128_k100_4x4_s1_p0", 8, 4, 4, 128, 100, 4, 1, 0},
    {"G_last_rgb_c3_k32_4x4_s2_p1", 4, 16, 16, 3, 32, 4, 2, 1},
    {"c3_k8_3x3_s1_p1", 2, 9, 9, 3, 8, 3, 1, 1},
    {"c64_k64_3x3_s1_p0", 2, 6, 6, 64, 64, 3, 1, 0},
    {"odd_c1_k16_4x4_s2_p1_7x5", 3, 7, 5, 1, 16, 4, 2, 1},
    {"c5_k3_1x1_s1_p0", 2, 5, 5, 5, 3, 1, 1, 0},
    {"c64_k64_1x1_s2_p0", 2, 8, 8, 64, 64, 1, 2, 0},
};

struct ConvParam {
  ConvCase cc;
  DType dtype;
};

class GpuConvParity : public ::testing::TestWithParam<ConvParam> {
 protected:
  void SetUp() override {
    std::string why;
    g_ = gpu_backend(&why);
    if (!g_) GTEST_SKIP() << "no usable GPU: " << why;
    g_->drop_capture();
    g_->set_allow_tf32(false);
    g_->set_deterministic(true);
  }
  Backend* g_ = nullptr;
};

TEST_P(GpuConvParity, ForwardBackwardDataBackwardFilter) {
  Backend& gpu = *g_;
  const ConvCase& cc = GetParam().cc;
  const DType t = GetParam().dtype;
  const ConvGeometry g = cc.geometry();
  const double tol = reduce_tol(t);
  const std::string tag = std::string(" ") + cc.name;
  const float wstd = 1.0f / std::sqrt(float(g.r * g.s * g.c));
  Both x = both(gpu, g.x_shape(), t, random_normal(g.x_shape().numel(), 61, 1.0f));
  Both w = both(gpu, g.w_shape(), t, random_normal(g.w_shape().numel(), 62, wstd));
  Both dy = both(gpu, g.y_shape(), t, random_normal(g.y_shape().numel(), 63, 1.0f));

  Both y = both_empty(gpu, g.y_shape(), t);
  cpu().conv2d_forward(g, x.c, w.c, y.c);
  gpu.conv2d_forward(g, x.g, w.g, y.g);
  EXPECT_TRUE(close("conv2d_forward" + tag, gpu, y.c, y.g, tol));

  Both dx = both_empty(gpu, g.x_shape(), t);
  cpu().conv2d_backward_data(g, dy.c, w.c, dx.c);
  gpu.conv2d_backward_data(g, dy.g, w.g, dx.g);
  EXPECT_TRUE(close("conv2d_backward_data (= transposed conv forward)" + tag, gpu, dx.c, dx.g, tol));

  const auto dw0 = random_normal(g.w_shape().numel(), 64, 2.0f);
  for (bool acc : {false, true}) {
    Both dw = both(gpu, g.w_shape(), t, dw0);
    cpu().conv2d_backward_filter(g, x.c, dy.c, dw.c, acc);
    gpu.conv2d_backward_filter(g, x.g, dy.g, dw.g, acc);
    EXPECT_TRUE(close(std::string("conv2d_backward_filter") + (acc ? " accumulate=true" : " accumulate=false") + tag,
                      gpu, dw.c, dw.g, tol));
  }
  // Run again: the cached plan and grown workspaces must give the same bits (determinism).
  Both y2 = both_empty(gpu, g.y_shape(), t);
  gpu.conv2d_forward(g, x.g, w.g, y2.g);
  EXPECT_TRUE(same_bits_on_gpu("conv2d_forward repeated (cached plan, deterministic algorithm)" + tag, gpu, y.g, y2.g));
}

void PrintTo(const ConvParam& p, std::ostream* os) { *os << p.cc.name << " " << dtype_name(p.dtype); }

std::vector<ConvParam> conv_params() {
  std::vector<ConvParam> v;
  for (const ConvCase& c : kConvCases)
    for (DType t : kAllTypes) v.push_back({c, t});
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllGeometries, GpuConvParity, ::testing::ValuesIn(conv_params()),
                         [](const ::testing::TestParamInfo<ConvParam>& info) {
                           return std::string(info.param.cc.name) + "_" + dtype_name(info.param.dtype);
                         });

// The default mode (what training and `ampgan bench` use): algorithms timed by cudnnFind*Ex,
// non-deterministic ones allowed. They must compute the same convolutions.
TEST_F(GpuParity, TimedConvolutionAlgorithmsMatchTheCpu) {
  gpu().set_deterministic(false);
  for (const ConvCase& cc : kConvCases) {
    const std::string name = cc.name;
    if (name.rfind("D_mid", 0) != 0 && name.rfind("G_last", 0) != 0 && name.rfind("D_first_rgb", 0) != 0) continue;
    for (DType t : kAllTypes) {
      const ConvGeometry g = cc.geometry();
      const double tol = reduce_tol(t);
      const std::string tag = std::string(" timed ") + cc.name + " " + dtype_name(t);
      const float wstd = 1.0f / std::sqrt(float(g.r * g.s * g.c));
      Both x = both(gpu(), g.x_shape(), t, random_normal(g.x_shape().numel(), 61, 1.0f));
      Both w = both(gpu(), g.w_shape(), t, random_normal(g.w_shape().numel(), 62, wstd));
      Both dy = both(gpu(), g.y_shape(), t, random_normal(g.y_shape().numel(), 63, 1.0f));
      Both y = both_empty(gpu(), g.y_shape(), t), dx = both_empty(gpu(), g.x_shape(), t);
      Both dw = both(gpu(), g.w_shape(), t, random_normal(g.w_shape().numel(), 64, 2.0f));
      cpu().conv2d_forward(g, x.c, w.c, y.c);
      gpu().conv2d_forward(g, x.g, w.g, y.g);
      EXPECT_TRUE(close("conv2d_forward" + tag, gpu(), y.c, y.g, tol));
      cpu().conv2d_backward_data(g, dy.c, w.c, dx.c);
      gpu().conv2d_backward_data(g, dy.g, w.g, dx.g);
      EXPECT_TRUE(close("conv2d_backward_data" + tag, gpu(), dx.c, dx.g, tol));
      cpu().conv2d_backward_filter(g, x.c, dy.c, dw.c, true);
      gpu().conv2d_backward_filter(g, x.g, dy.g, dw.g, true);
      EXPECT_TRUE(close("conv2d_backward_filter accumulate=true" + tag, gpu(), dw.c, dw.g, tol));
    }
  }
  gpu().set_deterministic(true);
}

// ---- batch norm ----------------------------------------------------------------------------------------

TEST_F(GpuParity, BatchNormTrainEvalBackward) {
  const int shapes[][4] = {{8, 4, 4, 64}, {16, 8, 8, 8}, {4, 16, 16, 3}, {2, 3, 3, 100}, {64, 1, 1, 32}};
  for (DType t : kAllTypes)
    for (const auto& s : shapes) {
      const Shape shape{s[0], s[1], s[2], s[3]};
      const int c = s[3];
      const int64_t n = shape.numel();
      const double tol = reduce_tol(t);
      const std::string tag = " " + shape.str();
      Both x = both(gpu(), shape, t, scaled_normal(n, 71, 1.5f, 0.3f));
      Both gamma = both(gpu(), Shape{c}, DType::F32, scaled_normal(c, 72, 0.1f, 1.0f));
      Both beta = both(gpu(), Shape{c}, DType::F32, random_normal(c, 73, 0.1f));
      const auto rm0 = random_normal(c, 74, 0.1f), rv0 = scaled_normal(c, 75, 0.1f, 1.0f);
      for (bool update : {true, false}) {
        const std::string what = std::string("batchnorm_forward_train(update_running=") + (update ? "true" : "false") + ")";
        Both rm = both(gpu(), Shape{c}, DType::F32, rm0), rv = both(gpu(), Shape{c}, DType::F32, rv0);
        Both y = both_empty(gpu(), shape, t);
        Both mean = both_empty(gpu(), Shape{c}, DType::F32), invstd = both_empty(gpu(), Shape{c}, DType::F32);
        cpu().batchnorm_forward_train(x.c, gamma.c, beta.c, rm.c, rv.c, 0.1f, 1e-5f, update, y.c, mean.c, invstd.c);
        gpu().batchnorm_forward_train(x.g, gamma.g, beta.g, rm.g, rv.g, 0.1f, 1e-5f, update, y.g, mean.g, invstd.g);
        EXPECT_TRUE(close(what + " y" + tag, gpu(), y.c, y.g, tol));
        EXPECT_TRUE(close(what + " save_mean" + tag, gpu(), mean.c, mean.g, kReduceTol[0]));
        EXPECT_TRUE(close(what + " save_invstd" + tag, gpu(), invstd.c, invstd.g, kReduceTol[0]));
        if (update) {
          EXPECT_TRUE(close(what + " running_mean" + tag, gpu(), rm.c, rm.g, kReduceTol[0]));
          EXPECT_TRUE(close(what + " running_var (unbiased)" + tag, gpu(), rv.c, rv.g, kReduceTol[0]));
        } else {
          Both rm_init = both(gpu(), Shape{c}, DType::F32, rm0), rv_init = both(gpu(), Shape{c}, DType::F32, rv0);
          EXPECT_TRUE(same_bits_on_gpu(what + " running_mean untouched" + tag, gpu(), rm_init.g, rm.g));
          EXPECT_TRUE(same_bits_on_gpu(what + " running_var untouched" + tag, gpu(), rv_init.g, rv.g));
        }

        // Backward from the same saved statistics (the CPU's) on both sides.
        Both sm = both(gpu(), Shape{c}, DType::F32, host(cpu(), mean.c));
        Both si = both(gpu(), Shape{c}, DType::F32, host(cpu(), invstd.c));
        Both dy = both(gpu(), shape, t, random_normal(n, 76, 1.0f));
        for (bool acc : {false, true}) {
          const std::string bw = std::string("batchnorm_backward(accumulate=") + (acc ? "true" : "false") + ")";
          Both dx = both_empty(gpu(), shape, t);
          Both dg = both(gpu(), Shape{c}, DType::F32, random_normal(c, 77, 1.0f));
          Both db = both(gpu(), Shape{c}, DType::F32, random_normal(c, 78, 1.0f));
          cpu().batchnorm_backward(x.c, dy.c, gamma.c, sm.c, si.c, dx.c, dg.c, db.c, acc);
          gpu().batchnorm_backward(x.g, dy.g, gamma.g, sm.g, si.g, dx.g, dg.g, db.g, acc);
          EXPECT_TRUE(close(bw + " dx" + tag, gpu(), dx.c, dx.g, tol));
          EXPECT_TRUE(close(bw + " dgamma" + tag, gpu(), dg.c, dg.g, kReduceTol[0]));
          EXPECT_TRUE(close(bw + " dbeta" + tag, gpu(), db.c, db.g, kReduceTol[0]));
        }
      }
      Both rm = both(gpu(), Shape{c}, DType::F32, rm0), rv = both(gpu(), Shape{c}, DType::F32, rv0);
      Both y = both_empty(gpu(), shape, t);
      cpu().batchnorm_forward_eval(x.c, gamma.c, beta.c, rm.c, rv.c, 1e-5f, y.c);
      gpu().batchnorm_forward_eval(x.g, gamma.g, beta.g, rm.g, rv.g, 1e-5f, y.g);
      EXPECT_TRUE(exact_unless_fma("batchnorm_forward_eval" + tag, gpu(), y.c, y.g));
    }
}

// The commit of staged running statistics: a plain copy in one direction or the other, decided on
// the device from the found-inf flags, so exact; several pairs per launch and more pairs than one
// launch takes.
TEST_F(GpuParity, BatchNormCommitRunningIsExact) {
  for (int pairs : {1, 5, 40}) {
    for (const std::vector<int>& slots : {std::vector<int>{0}, std::vector<int>{0, 1}, std::vector<int>{}}) {
      Both scalars = both(gpu(), Shape{4}, DType::F32, {0.0f, 1.0f, 0.0f, 0.0f});
      std::vector<Both> running, staged;
      std::vector<Tensor> rc, rg, sc, sg;
      for (int i = 0; i < pairs; ++i) {
        const int64_t n = 1 + (i * 37) % 300;
        running.push_back(both(gpu(), Shape{n}, DType::F32, random_normal(n, 80 + i, 1.0f)));
        staged.push_back(both(gpu(), Shape{n}, DType::F32, random_normal(n, 180 + i, 1.0f)));
      }
      for (int i = 0; i < pairs; ++i) {
        rc.push_back(running[i].c), rg.push_back(running[i].g), sc.push_back(staged[i].c), sg.push_back(staged[i].g);
      }
      const std::vector<float> before_r = host(cpu(), rc[pairs - 1]), before_s = host(cpu(), sc[pairs - 1]);
      cpu().batchnorm_commit_running(rc, sc, scalars.c, slots);
      gpu().batchnorm_commit_running(rg, sg, scalars.g, slots);
      const bool skip = slots.size() == 2;  // slot 1 holds a found-inf flag
      const std::string what = "batchnorm_commit_running(" + std::to_string(pairs) + " pairs, " +
                               (skip ? "revert" : "commit") + ")";
      EXPECT_EQ(host(cpu(), rc[pairs - 1]), skip ? before_r : before_s) << what;
      EXPECT_EQ(host(cpu(), sc[pairs - 1]), skip ? before_r : before_s) << what;
      for (int i = 0; i < pairs; ++i) {
        EXPECT_TRUE(same_bits(what + " running", gpu(), rc[i], rg[i]));
        EXPECT_TRUE(same_bits(what + " staged", gpu(), sc[i], sg[i]));
      }
    }
  }
}

// ---- losses --------------------------------------------------------------------------------------------

TEST_F(GpuParity, GanLossesIncludingLogitsOf100) {
  const int n = 67;
  std::vector<float> logits = random_normal(n, 81, 2.0f);
  logits[0] = 100.0f, logits[1] = -100.0f, logits[2] = 0.0f, logits[3] = 20.0f, logits[4] = -20.0f,
  logits[5] = 1.0f, logits[6] = -1.0f, logits[7] = 1e-7f;
  const LossKind kinds[] = {LossKind::BCEWithLogits, LossKind::Hinge};
  const LossRole roles[] = {LossRole::DReal, LossRole::DFake, LossRole::G};
  const char* kind_names[] = {"bce_with_logits", "hinge"};
  const char* role_names[] = {"D(real)", "D(fake)", "G"};
  for (int ki = 0; ki < 2; ++ki)
    for (int ri = 0; ri < 3; ++ri)
      for (int prob_slot : {5, -1}) {
        const std::string what = std::string("gan_loss ") + kind_names[ki] + " " + role_names[ri] +
                                 (prob_slot < 0 ? " (no prob slot)" : "");
        Both x = both(gpu(), Shape{n}, DType::F32, logits);
        Both state = both(gpu(), Shape{2}, DType::F32, {1024.0f, 3.0f});
        Both dx = both_empty(gpu(), Shape{n}, DType::F32);
        // Slot 2 accumulates (+=), slot 5 is overwritten, the rest must stay as they were.
        const std::vector<float> s0 = {9, 9, 0.25f, 9, 9, 9, 9, 9};
        Both s = both(gpu(), Shape{8}, DType::F32, s0);
        cpu().gan_loss(kinds[ki], roles[ri], x.c, state.c, dx.c, s.c, 2, prob_slot);
        gpu().gan_loss(kinds[ki], roles[ri], x.g, state.g, dx.g, s.g, 2, prob_slot);
        EXPECT_TRUE(close(what + " dlogits", gpu(), dx.c, dx.g, kDlogitsTol));
        const auto sc = host(cpu(), s.c), sg = host(gpu(), s.g);
        EXPECT_LE(rel(sg[2], sc[2]), kLossTol) << what << ": loss slot (+=) cpu " << sc[2] << " gpu " << sg[2];
        if (prob_slot >= 0)
          EXPECT_LE(rel(sg[5], sc[5]), kLossTol) << what << ": mean sigmoid slot cpu " << sc[5] << " gpu " << sg[5];
        for (int i : {0, 1, 3, 4, 6, 7})
          EXPECT_EQ(sg[i], s0[i]) << what << ": scalars[" << i << "] must be untouched";
        if (prob_slot < 0) EXPECT_EQ(sg[5], s0[5]) << what << ": scalars[5] must be untouched";
      }
}

TEST_F(GpuParity, SoftmaxCrossEntropy) {
  const int n = 37, k = 10;
  std::vector<float> logits = random_normal(size_t(n) * k, 91, 3.0f), labels(n);
  for (int i = 0; i < n; ++i) labels[i] = float(philox_below(5, 5, i, k));
  logits[0] = 100.0f, logits[11] = -100.0f;
  Both x = both(gpu(), Shape{n, k}, DType::F32, logits), y = both(gpu(), Shape{n}, DType::F32, labels);
  Both dx = both_empty(gpu(), Shape{n, k}, DType::F32);
  Both s = both(gpu(), Shape{4}, DType::F32, {7, 7, 7, 7});
  cpu().softmax_cross_entropy(x.c, y.c, dx.c, s.c, 1, 3);
  gpu().softmax_cross_entropy(x.g, y.g, dx.g, s.g, 1, 3);
  EXPECT_TRUE(close("softmax_cross_entropy dlogits", gpu(), dx.c, dx.g, kDlogitsTol));
  const auto sc = host(cpu(), s.c), sg = host(gpu(), s.g);
  EXPECT_LE(rel(sg[1], sc[1]), kLossTol) << "softmax_cross_entropy loss: cpu " << sc[1] << " gpu " << sg[1];
  EXPECT_EQ(sg[3], sc[3]) << "softmax_cross_entropy correct count";
  EXPECT_EQ(sg[0], 7.0f);
  EXPECT_EQ(sg[2], 7.0f);
}

// ---- gradient statistics, histogram, Adam, scaler --------------------------------------------------

struct GradSet {
  std::vector<Both> grads;
  std::vector<Tensor> cpu_list() const {
    std::vector<Tensor> v;
    for (const Both& b : grads) v.push_back(b.c);
    return v;
  }
  std::vector<Tensor> gpu_list() const {
    std::vector<Tensor> v;
    for (const Both& b : grads) v.push_back(b.g);
    return v;
  }
};

// A network's gradients as the trainer produces them in a half mode: half conv-weight gradients,
// FP32 batch-norm gradients, scaled by S = 1024, with exact zeros and subnormals of each format
// planted, optionally an inf or a NaN.
GradSet make_grads(Backend& gpu, DType half, float planted, int extra_tensors = 0) {
  GradSet s;
  auto add = [&](Shape shape, DType t, uint64_t seed, float stddev) {
    std::vector<float> v = random_normal(shape.numel(), seed, stddev);
    for (size_t i = 0; i < v.size(); i += 17) v[i] = 0.0f;
    const float sub = t == DType::F16 ? 0x1p-20f : t == DType::BF16 ? 1e-39f : 1e-40f;
    for (size_t i = 3; i < v.size(); i += 29) v[i] = (i & 1) ? sub : -sub;
    s.grads.push_back(both(gpu, shape, t, v, MemCategory::Gradient));
  };
  add(Shape{64, 4, 4, 3}, half, 101, 1024.0f * 1e-3f);
  add(Shape{64}, DType::F32, 102, 1024.0f * 1e-2f);
  add(Shape{64}, DType::F32, 103, 1024.0f * 1e-2f);
  add(Shape{128, 4, 4, 64}, half, 104, 1024.0f * 1e-4f);
  add(Shape{1, 4, 4, 128}, half, 105, 1e-5f);  // mostly subnormal in f16 (below 2^-14), normal in bf16/f32
  for (int i = 0; i < extra_tensors; ++i) add(Shape{33 + i}, i % 2 ? half : DType::F32, 200 + i, 10.0f);
  if (planted != 0.0f) {
    Both& target = s.grads[3];
    std::vector<float> v = host(cpu(), target.c);
    v[12345] = planted;
    target = both(gpu, target.c.shape(), target.c.dtype(), v, MemCategory::Gradient);
  }
  return s;
}

TEST_F(GpuParity, GradStatsCountsAndFlags) {
  const GradStatSlots slots{1, 2, 3, 5, 7};  // counts take [slot, slot + 1]
  const DType halves[] = {DType::F16, DType::BF16, DType::F32};
  for (DType half : halves)
    for (float planted : {0.0f, INFINITY, -INFINITY, NAN, 1e30f})
      for (int extra : {0, 70}) {
        if (half != DType::F32 && planted == 1e30f) continue;  // 1e30 is inf in f16 and ok in bf16
        GradSet gs = make_grads(gpu(), half, planted, extra);
        Both state = both(gpu(), Shape{2}, DType::F32, {1024.0f, 0.0f});
        Both s = both(gpu(), Shape{10}, DType::F32, std::vector<float>(10, 7.0f));
        cpu().grad_stats(gs.cpu_list(), state.c, s.c, slots);
        gpu().grad_stats(gs.gpu_list(), state.g, s.g, slots);
        const auto sc = host(cpu(), s.c), sg = host(gpu(), s.g);
        const std::string what = std::string("grad_stats (") + dtype_name(half) + " grads, planted " + fmt(planted) +
                                 ", " + std::to_string(gs.grads.size()) + " tensors)";
        EXPECT_EQ(sg[1], sc[1]) << what << ": found_inf";
        EXPECT_EQ(ew::count_load(&sg[3]), ew::count_load(&sc[3])) << what << ": zero count";
        EXPECT_EQ(ew::count_load(&sg[5]), ew::count_load(&sc[5])) << what << ": subnormal count";
        EXPECT_EQ(ew::count_load(&sg[7]), ew::count_load(&sc[7])) << what << ": value count";
        EXPECT_EQ(sg[8], 0.0f) << what << ": the value count's high slot (fewer than 2^24 values)";
        EXPECT_EQ(sg[0], 7.0f) << what << ": slot 0 must be untouched";
        EXPECT_EQ(sg[9], 7.0f) << what << ": slot 9 must be untouched";
        if (sc[1] == 0.0f) {  // sum of squares is defined for finite gradients only
          if (std::isinf(sc[2])) EXPECT_TRUE(std::isinf(sg[2])) << what << ": sum_sq cpu inf, gpu " << sg[2];
          else EXPECT_LE(rel(sg[2], sc[2]), kSumSqTol) << what << ": sum_sq cpu " << sc[2] << " gpu " << sg[2];
        }
        if (planted == 0.0f) EXPECT_GT(sc[4], 0.0f) << what << ": the test must plant subnormals";
      }
  // An empty list writes zeros.
  Both state = both(gpu(), Shape{2}, DType::F32, {1.0f, 0.0f});
  Both s = both(gpu(), Shape{10}, DType::F32, std::vector<float>(10, 7.0f));
  cpu().grad_stats({}, state.c, s.c, slots);
  gpu().grad_stats({}, state.g, s.g, slots);
  EXPECT_TRUE(same_bits("grad_stats of an empty list", gpu(), s.c, s.g));
}

// Per-tensor statistics (max |g / scale|, inf/NaN and underflow counts) are order-independent,
// so the GPU's equal the CPU's bit for bit, across the 64-tensor launch split too.
TEST_F(GpuParity, GradStatsPerTensorMatchCpu) {
  for (DType half : {DType::F16, DType::BF16, DType::F32})
    for (float planted : {0.0f, INFINITY, NAN})
      for (int extra : {0, 70}) {
        GradSet gs = make_grads(gpu(), half, planted, extra);
        const int n = static_cast<int>(gs.grads.size()), base = 9;
        const int total = base + kTensorStatSlots * n + 1;
        const GradStatSlots slots{0, 1, 2, 4, 6, base};
        Both state = both(gpu(), Shape{2}, DType::F32, {1024.0f, 0.0f});
        Both s = both(gpu(), Shape{total}, DType::F32, std::vector<float>(total, 7.0f));
        cpu().grad_stats(gs.cpu_list(), state.c, s.c, slots);
        gpu().grad_stats(gs.gpu_list(), state.g, s.g, slots);
        const auto sc = host(cpu(), s.c), sg = host(gpu(), s.g);
        const std::string what = std::string("per-tensor grad_stats (") + dtype_name(half) + ", planted " +
                                 fmt(planted) + ", " + std::to_string(n) + " tensors)";
        for (int i = base; i < total; ++i) EXPECT_EQ(std::memcmp(&sc[i], &sg[i], 4), 0) << what << ": slot " << i << " cpu " << sc[i] << " gpu " << sg[i];
        if (planted != 0.0f) EXPECT_EQ(ew::count_load(&sc[base + 3 * kTensorStatSlots + kTensorNonFinite]), 1u) << what;
      }
}

TEST_F(GpuParity, GradHistogramCountsAreExact) {
  for (DType half : kAllTypes)
    for (float planted : {0.0f, INFINITY, NAN})
      for (int extra : {0, 70}) {
        GradSet gs = make_grads(gpu(), half, planted, extra);
        Both hist = both_empty(gpu(), Shape{ew::kHistBins}, DType::F32);
        cpu().grad_histogram(gs.cpu_list(), hist.c);
        gpu().grad_histogram(gs.gpu_list(), hist.g);
        EXPECT_TRUE(same_bits(std::string("grad_histogram (") + dtype_name(half) + " grads, planted " + fmt(planted) +
                                  ", " + std::to_string(gs.grads.size()) + " tensors)",
                              gpu(), hist.c, hist.g));
      }
}

struct AdamSet {
  std::vector<Both> master, grad, m, v, half;
  Both step;
  std::vector<AdamTensor> list(bool on_gpu) const {
    std::vector<AdamTensor> out;
    for (size_t i = 0; i < master.size(); ++i) {
      AdamTensor t;
      t.master = on_gpu ? master[i].g : master[i].c;
      t.grad = on_gpu ? grad[i].g : grad[i].c;
      t.m = on_gpu ? m[i].g : m[i].c;
      t.v = on_gpu ? v[i].g : v[i].c;
      if (half[i].c.defined()) t.half_copy = on_gpu ? half[i].g : half[i].c;
      out.push_back(t);
    }
    return out;
  }
};

// Parameters as one network has them in `mode`: conv weights with gradients and working copies in
// the compute dtype, batch-norm parameters in FP32 throughout.
AdamSet make_adam(Backend& gpu, DType compute, int count, uint64_t seed) {
  AdamSet s;
  for (int i = 0; i < count; ++i) {
    const bool bn = i % 3 == 2;
    const Shape shape = bn ? Shape{64} : Shape{32, 4, 4, 3 + i};
    const DType gt = bn ? DType::F32 : compute;
    const int64_t n = shape.numel();
    s.master.push_back(both(gpu, shape, DType::F32, random_normal(n, seed + 10 * i, 0.02f), MemCategory::Master));
    s.grad.push_back(both(gpu, shape, gt, random_normal(n, seed + 10 * i + 1, 1024.0f * 0.01f), MemCategory::Gradient));
    s.m.push_back(both(gpu, shape, DType::F32, random_normal(n, seed + 10 * i + 2, 1e-3f), MemCategory::Optimizer));
    // Adam's second moment is a running mean of squares: never negative (a negative v makes
    // sqrtf(v) NaN, and the master comparison fails on any backend).
    std::vector<float> v0 = scaled_normal(n, seed + 10 * i + 3, 1e-7f, 2e-7f);
    for (float& x : v0) x = std::fabs(x);
    s.v.push_back(both(gpu, shape, DType::F32, v0, MemCategory::Optimizer));
    if (gt != DType::F32) s.half.push_back(both(gpu, shape, gt, std::vector<float>(n, 0.0f), MemCategory::HalfCopy));
    else s.half.push_back(Both{});
  }
  s.step = both(gpu, Shape{2}, DType::F32, {4.0f, 0.0f});  // [lo, hi] count: t = 4
  return s;
}

TEST_F(GpuParity, AdamStepsAndSkipsLikeTheCpu) {
  AdamConfig cfg;
  cfg.lr = 2e-4f, cfg.beta1 = 0.5f, cfg.beta2 = 0.999f, cfg.eps = 1e-8f;
  for (DType compute : kAllTypes)
    for (int count : {5, 60}) {
      AdamSet a = make_adam(gpu(), compute, count, 1000 + count);
      Both state = both(gpu(), Shape{2}, DType::F32, {1024.0f, 0.0f});
      const std::string tag = std::string(" (") + dtype_name(compute) + " compute, " + std::to_string(count) + " tensors)";
      for (int step = 0; step < 4; ++step) {
        const bool skip = step == 2;
        Both s = both(gpu(), Shape{3}, DType::F32, {0.0f, skip ? 1.0f : 0.0f, 0.0f});
        // Snapshot the GPU state before a skipped step: it must not change by a single bit.
        std::vector<std::vector<uint32_t>> before;
        if (skip)
          for (size_t i = 0; i < a.master.size(); ++i) before.push_back(bits(gpu(), a.master[i].g));
        cpu().adam_step(a.list(false), cfg, a.step.c, state.c, s.c, 1);
        gpu().adam_step(a.list(true), cfg, a.step.g, state.g, s.g, 1);
        const std::string what = "adam_step " + std::to_string(step) + (skip ? " (found_inf set: skipped)" : "") + tag;
        EXPECT_TRUE(same_bits(what + " step count", gpu(), a.step.c, a.step.g));
        if (skip)
          for (size_t i = 0; i < a.master.size(); ++i)
            EXPECT_TRUE(bits(gpu(), a.master[i].g) == before[i]) << what << ": master " << i << " changed";
        for (size_t i = 0; i < a.master.size(); ++i) {
          const std::string p = what + " param " + std::to_string(i);
          EXPECT_TRUE(close(p + " master", gpu(), a.master[i].c, a.master[i].g, 1e-6));
          EXPECT_TRUE(exact_unless_fma(p + " m", gpu(), a.m[i].c, a.m[i].g));
          EXPECT_TRUE(exact_unless_fma(p + " v", gpu(), a.v[i].c, a.v[i].g));
          if (a.half[i].c.defined()) EXPECT_TRUE(within_ulps(p + " half copy", gpu(), a.half[i].c, a.half[i].g, 1));
        }
        // New gradients for the next step, identical on both sides.
        for (size_t i = 0; i < a.grad.size(); ++i)
          a.grad[i] = both(gpu(), a.grad[i].c.shape(), a.grad[i].c.dtype(),
                           random_normal(a.grad[i].c.numel(), 5000 + 97 * step + i, 1024.0f * 0.01f), MemCategory::Gradient);
      }
      const auto steps = host(gpu(), a.step.g);
      EXPECT_EQ(steps, (std::vector<float>{7.0f, 0.0f})) << "adam_step: 4 + 3 applied steps" << tag;
    }
  // Adam's t past 2^24, where one float would stop counting: 2^24 - 1 + 2 applied steps.
  AdamSet a = make_adam(gpu(), DType::F16, 5, 77);
  a.step = both(gpu(), Shape{2}, DType::F32, {16777215.0f, 0.0f});
  Both state = both(gpu(), Shape{2}, DType::F32, {1024.0f, 0.0f});
  Both s = both(gpu(), Shape{3}, DType::F32, {0.0f, 0.0f, 0.0f});
  for (int step = 0; step < 2; ++step) {
    cpu().adam_step(a.list(false), cfg, a.step.c, state.c, s.c, 1);
    gpu().adam_step(a.list(true), cfg, a.step.g, state.g, s.g, 1);
  }
  EXPECT_TRUE(same_bits("adam_step count across 2^24", gpu(), a.step.c, a.step.g));
  EXPECT_EQ(host(gpu(), a.step.g), (std::vector<float>{1.0f, 1.0f})) << "adam_step: t = 2^24 + 1";
  for (size_t i = 0; i < a.master.size(); ++i)
    EXPECT_TRUE(close("adam_step past 2^24 master " + std::to_string(i), gpu(), a.master[i].c, a.master[i].g, 1e-6));
}

TEST_F(GpuParity, ScalerUpdateSequenceIsExact) {
  ew::ScalerConfig cfg;
  cfg.init_scale = 16.0f, cfg.growth_interval = 3, cfg.min_scale = 2.0f, cfg.max_scale = 64.0f;
  Both state = both(gpu(), Shape{2}, DType::F32, {16.0f, 0.0f});
  // found-inf flags of two networks per step: growth to the ceiling (16 -> 64), back-off down to
  // the floor (2), growth back up to the ceiling, where a further growth is refused.
  const int flags[][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 0},
                          {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0},
                          {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0},
                          {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}};
  int step = 0;
  for (const auto& f : flags) {
    Both s = both(gpu(), Shape{4}, DType::F32, {0.0f, float(f[0]), 0.0f, float(f[1]) * 3.0f});
    cpu().scaler_update(state.c, cfg, s.c, {1, 3});
    gpu().scaler_update(state.g, cfg, s.g, {1, 3});
    EXPECT_TRUE(same_bits("scaler_update step " + std::to_string(step++) + " [scale, growth tracker]", gpu(), state.c,
                          state.g));
  }
}

// ---- memory, errors, read-backs, capture ------------------------------------------------------------

TEST_F(GpuParity, MemoryIsCountedPerCategoryLikeTheCpu) {
  auto delta = [](Backend& b, const std::function<std::vector<Tensor>()>& make) {
    const MemoryStats before = b.memory_stats();
    std::vector<Tensor> keep = make();
    const MemoryStats after = b.memory_stats();
    std::vector<int64_t> d;
    for (size_t i = 0; i < before.current.size(); ++i)
      d.push_back(int64_t(after.current[i]) - int64_t(before.current[i]));
    return d;
  };
  auto alloc = [](Backend& b) {
    return [&b]() {
      std::vector<Tensor> v;
      v.push_back(b.empty(Shape{1000}, DType::F32, MemCategory::Master));
      v.push_back(b.empty(Shape{1000}, DType::F16, MemCategory::HalfCopy));
      v.push_back(b.empty(Shape{3}, DType::BF16, MemCategory::Gradient));
      v.push_back(b.empty(Shape{2, 64}, DType::F32, MemCategory::Optimizer));
      v.push_back(b.empty(Shape{64, 32, 32, 3}, DType::F16, MemCategory::Activation));
      v.push_back(b.empty(Shape{17}, DType::F32, MemCategory::Data));
      return v;
    };
  };
  const auto dc = delta(cpu(), alloc(cpu())), dg = delta(gpu(), alloc(gpu()));
  for (size_t i = 0; i < dc.size(); ++i)
    EXPECT_EQ(dg[i], dc[i]) << "bytes counted for " << mem_category_name(static_cast<MemCategory>(i));
  // And released again.
  const MemoryStats before = gpu().memory_stats();
  { Tensor t = gpu().empty(Shape{4096}, DType::F32, MemCategory::Activation); }
  EXPECT_EQ(gpu().memory_stats().current_total, before.current_total) << "a released tensor must be uncounted";
}

TEST_F(GpuParity, ErrorsAreExceptionsAndTheBackendStaysUsable) {
  Tensor t = gpu().empty(Shape{16}, DType::F32, MemCategory::Data);
  std::vector<float> host_buf(8);
  EXPECT_THROW(gpu().download(t, host_buf.data(), 8 * sizeof(float)), Error);
  try {
    (void)gpu().empty(Shape{int64_t{1} << 48}, DType::F32, MemCategory::Activation);  // 1 PiB
    ADD_FAILURE() << "allocating 1 PiB must throw OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("smaller batch"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free of"), std::string::npos) << msg;
  }
  gpu().fill(t, 2.5f);
  std::vector<float> out(16);
  gpu().download(t, out.data(), t.nbytes());
  EXPECT_EQ(out[15], 2.5f) << "the backend must work after an out-of-memory error";
}

TEST_F(GpuParity, ReadAsyncDeliversEveryValueEvenWithManyOutstanding) {
  Tensor t = gpu().empty(Shape{300}, DType::F32, MemCategory::Data);
  std::vector<std::unique_ptr<HostReadback>> pending;
  for (int i = 0; i < 20; ++i) {
    gpu().fill(t, float(i));
    pending.push_back(gpu().read_async(t));
  }
  for (int i = 0; i < 20; ++i) {
    const float* v = pending[i]->wait();
    EXPECT_TRUE(pending[i]->ready());
    EXPECT_EQ(v[0], float(i)) << "read-back " << i;
    EXPECT_EQ(v[299], float(i)) << "read-back " << i;
  }
}

TEST_F(GpuParity, CapturedWorkReplaysLikeEagerWork) {
  // The pattern of a training step: random numbers from a device counter, element-wise work, a
  // reduction, a scalar update of the counter -- captured once, replayed three times.
  Tensor counter = gpu().empty(Shape{2}, DType::F32, MemCategory::Data);  // [lo, hi] count
  Tensor z = gpu().empty(Shape{4096}, DType::F16, MemCategory::Data);
  Tensor z32 = gpu().empty(Shape{4096}, DType::F32, MemCategory::Data);
  Tensor s = gpu().empty(Shape{8}, DType::F32, MemCategory::Data);
  Tensor state = make_tensor(gpu(), Shape{2}, DType::F32, {256.0f, 0.0f});
  gpu().fill(counter, 0.0f);
  auto body = [&] {
    gpu().fill_normal(z, 9, 1000, counter, 1.0f);
    gpu().activation_forward(ew::Act::Tanh, 0.0f, z, z);
    gpu().cast(z, z32);
    gpu().grad_stats({z32}, state, s, GradStatSlots{0, 1, 2, 4, 6});
    gpu().count_increment(counter);
  };
  body();  // eager once: workspaces exist before capture
  gpu().begin_capture();
  body();
  gpu().end_capture();
  // Grow the reduction workspace while the graph (whose grad_stats uses the old block) is alive:
  // the old block's free must be deferred until the graph is dropped. Sentinels allocated right
  // after would likely get a wrongly freed block back from the pool; the replays must not touch
  // them.
  {
    Tensor dy = make_tensor(gpu(), Shape{2, 32768}, DType::F32, std::vector<float>(65536, 1.0f));
    Tensor db = gpu().empty(Shape{32768}, DType::F32, MemCategory::Data);
    gpu().bias_backward(dy, db, false);  // a 512 KiB reduction workspace: larger than any before
    const auto sums = host(gpu(), db);
    EXPECT_EQ(sums[0], 2.0f) << "bias_backward over 2 rows of ones";
    EXPECT_EQ(sums[32767], 2.0f) << "bias_backward over 2 rows of ones";
  }
  std::vector<Tensor> sentinels;
  for (int64_t n = 16; n <= 65536; n *= 2) {
    sentinels.push_back(gpu().empty(Shape{n}, DType::F32, MemCategory::Data));
    gpu().fill(sentinels.back(), 7.0f);
  }
  for (int i = 0; i < 3; ++i) gpu().replay();
  for (const Tensor& t : sentinels) {
    const auto v = host(gpu(), t);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 7.0f; }))
        << "a replay wrote into memory allocated after the capture (" << t.numel()
        << " floats): a block the graph uses was freed while the graph was alive";
  }
  const auto replayed = bits(gpu(), z32);
  const auto replayed_stats = bits(gpu(), s);
  const auto count = host(gpu(), counter);
  EXPECT_EQ(count, (std::vector<float>{4.0f, 0.0f})) << "one eager run and three replays must each advance the counter";
  // Eager run with the counter at 3 must give the same bits as the third replay.
  const float three[2] = {3.0f, 0.0f};
  gpu().upload(counter, three, sizeof three);
  body();
  EXPECT_TRUE(bits(gpu(), z32) == replayed) << "replayed fill_normal/tanh/cast differ from the eager run";
  EXPECT_TRUE(bits(gpu(), s) == replayed_stats) << "replayed grad_stats differ from the eager run";
  gpu().drop_capture();

  // Uncapturable work during capture is an Error, and the backend recovers.
  gpu().begin_capture();
  EXPECT_THROW((void)gpu().empty(Shape{8}, DType::F32, MemCategory::Data), Error);
  gpu().begin_capture();
  std::vector<float> h(4096);
  EXPECT_THROW(gpu().download(z32, h.data(), z32.nbytes()), Error);
  gpu().fill(z32, 1.0f);
  gpu().download(z32, h.data(), z32.nbytes());
  EXPECT_EQ(h[0], 1.0f) << "the backend must work after an abandoned capture";
}

// ---- whole training steps -------------------------------------------------------------------------------

TrainerConfig small_config(Precision p, int channels = 1) {
  TrainerConfig cfg;
  cfg.model.res = 32;
  cfg.model.channels = channels;
  cfg.model.width = 16;
  cfg.batch = 16;
  cfg.precision = p;
  cfg.seed = 7;
  cfg.scaler.init_scale = 1024.0f;  // away from overflow, so both backends take the same steps
  return cfg;
}

std::vector<float> real_batch(const TrainerConfig& cfg) {
  std::vector<float> v(size_t(cfg.batch) * cfg.model.res * cfg.model.res * cfg.model.channels);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::tanh(philox_normal(3, 3, i));
  return v;
}

struct TrainRun {
  std::vector<StepMetrics> metrics;
  std::vector<std::pair<std::string, std::vector<float>>> state;
  std::vector<std::string> warnings;  // e.g. a step that could not be captured and ran op by op
};

// A run meant to replay CUDA graphs must not have fallen back to op-by-op launches: the Trainer
// only warns when a capture fails, so without this check graph-vs-eager comparisons would compare
// eager with eager and pass.
void expect_no_capture_fallback(const TrainRun& r, const std::string& what) {
  for (const std::string& w : r.warnings) ADD_FAILURE() << what << ": " << w;
}

std::vector<std::pair<std::string, std::vector<float>>> snapshot(Backend& b, Trainer& t) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const StateEntry& e : t.state()) out.push_back({e.name, to_host(b, *e.tensor)});
  return out;
}

// steps with an optional precision schedule (precision for step i) and optional work between
// steps (after step i), as the Session does between steps: sampling, histograms.
TrainRun train(Backend& b, TrainerConfig cfg, int steps, const std::function<Precision(int)>& schedule = nullptr,
               const std::function<void(Trainer&, int)>& between = nullptr) {
  TrainRun r;
  Trainer t(b, cfg);
  const auto batch = real_batch(cfg);
  for (int i = 0; i < steps; ++i) {
    if (schedule && schedule(i) != t.precision()) t.set_precision(schedule(i));
    t.step(batch.data());
    if (between) between(t, i);
    for (StepMetrics& m : t.collect(true)) r.metrics.push_back(m);
  }
  r.state = snapshot(b, t);
  r.warnings = t.take_warnings();
  return r;
}

void expect_losses_close(const TrainRun& c, const TrainRun& g, double tol, const std::string& what) {
  ASSERT_EQ(c.metrics.size(), g.metrics.size()) << what;
  for (size_t i = 0; i < c.metrics.size(); ++i) {
    const StepMetrics &a = c.metrics[i], &b = g.metrics[i];
    auto chk = [&](const char* name, double x, double y) {
      EXPECT_LE(std::fabs(y - x) / std::max(1.0, std::fabs(x)), tol)
          << what << " step " << a.step << " " << name << ": cpu " << x << ", gpu " << y;
    };
    chk("loss_d", a.loss_d, b.loss_d);
    chk("loss_g", a.loss_g, b.loss_g);
    chk("d_real", a.d_real, b.d_real);
    chk("d_fake", a.d_fake, b.d_fake);
    EXPECT_EQ(a.skipped_d, b.skipped_d) << what << " step " << a.step << " skipped_d";
    EXPECT_EQ(a.skipped_g, b.skipped_g) << what << " step " << a.step << " skipped_g";
    EXPECT_EQ(a.scale_d, b.scale_d) << what << " step " << a.step << " scale_d";
    EXPECT_EQ(a.scale_g, b.scale_g) << what << " step " << a.step << " scale_g";
  }
}

TEST_F(GpuParity, TenTrainingStepsFp32MatchTheCpu) {
  const TrainerConfig cfg = small_config(Precision::FP32);
  CpuBackend cb;
  const TrainRun c = train(cb, cfg, 10), g = train(gpu(), cfg, 10);
  expect_no_capture_fallback(g, "fp32 training (graphs on)");
  expect_losses_close(c, g, kTrainTolFp32, "fp32 training (graphs on)");
}

TEST_F(GpuParity, TenTrainingStepsFp16MatchTheCpu) {
  const TrainerConfig cfg = small_config(Precision::FP16, 3);
  CpuBackend cb;
  const TrainRun c = train(cb, cfg, 10), g = train(gpu(), cfg, 10);
  expect_no_capture_fallback(g, "fp16 training, RGB (graphs on)");
  expect_losses_close(c, g, kTrainTolFp16, "fp16 training, RGB (graphs on)");
}

TEST_F(GpuParity, ForcedOverflowIsSkippedExactlyAsOnTheCpu) {
  TrainerConfig cfg = small_config(Precision::FP16);
  cfg.scaler.init_scale = 0x1p40f;  // every half gradient overflows
  cfg.scaler.max_scale = 0x1p50f;
  for (Backend* b : {static_cast<Backend*>(&cpu()), &gpu()}) {
    const std::string who = b == &gpu() ? "gpu" : "cpu";
    Trainer t(*b, cfg);
    const auto batch = real_batch(cfg);
    auto before = snapshot(*b, t);
    float expect_scale = 0x1p40f;
    for (int i = 0; i < 5; ++i) {
      t.step(batch.data());
      const auto ms = t.collect(true);
      ASSERT_EQ(ms.size(), 1u);
      const StepMetrics& m = ms[0];
      EXPECT_TRUE(m.skipped_d) << who << " step " << m.step << ": D must be skipped at scale " << m.scale_d;
      EXPECT_TRUE(m.skipped_g) << who << " step " << m.step << ": G must be skipped at scale " << m.scale_g;
      EXPECT_EQ(m.scale_d, expect_scale) << who << " step " << m.step << ": D's scale sequence";
      EXPECT_EQ(m.scale_g, expect_scale) << who << " step " << m.step << ": G's scale sequence";
      expect_scale *= 0.5f;
      const auto after = snapshot(*b, t);
      for (size_t k = 0; k < after.size(); ++k) {
        const std::string& name = after[k].first;
        // Batch-norm running statistics move in every forward pass; scaler state is the point.
        if (name.find("running") != std::string::npos || name.rfind("scaler", 0) == 0) continue;
        EXPECT_TRUE(std::memcmp(after[k].second.data(), before[k].second.data(), after[k].second.size() * 4) == 0)
            << who << " step " << m.step << ": " << name << " changed although the step was skipped";
      }
      before = after;
    }
    for (const std::string& w : t.take_warnings()) ADD_FAILURE() << who << ": " << w;
  }
}

TEST_F(GpuParity, GraphReplayEqualsEagerOnTheGpu) {
  // Precision switches on the way: each drops the graph, runs one eager step and recaptures.
  const auto schedule = [](int i) { return i < 4 ? Precision::FP16 : i < 6 ? Precision::BF16 : i < 8 ? Precision::FP32 : Precision::FP16; };
  TrainerConfig graphs = small_config(Precision::FP16, 3), eager = graphs;
  graphs.use_graphs = true;
  eager.use_graphs = false;
  const TrainRun a = train(gpu(), graphs, 10, schedule);
  const TrainRun b = train(gpu(), eager, 10, schedule);
  expect_no_capture_fallback(a, "graph run");
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (size_t i = 0; i < a.metrics.size(); ++i) {
    const StepMetrics &x = a.metrics[i], &y = b.metrics[i];
    const std::string at = "step " + std::to_string(x.step) + " (" + precision_name(x.precision) + ")";
    EXPECT_EQ(x.loss_d, y.loss_d) << at << " loss_d: graph " << x.loss_d << ", eager " << y.loss_d;
    EXPECT_EQ(x.loss_g, y.loss_g) << at << " loss_g";
    EXPECT_EQ(x.scale_d, y.scale_d) << at << " scale_d";
    EXPECT_EQ(x.skipped_d, y.skipped_d) << at << " skipped_d";
    EXPECT_EQ(x.skipped_g, y.skipped_g) << at << " skipped_g";
    if (!std::isnan(x.grad_norm_d)) EXPECT_EQ(x.grad_norm_d, y.grad_norm_d) << at << " grad_norm_d";
    if (!std::isnan(x.grad_norm_g)) EXPECT_EQ(x.grad_norm_g, y.grad_norm_g) << at << " grad_norm_g";
  }
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t k = 0; k < a.state.size(); ++k) {
    EXPECT_EQ(a.state[k].first, b.state[k].first);
    const double err = normalized_error(a.state[k].second, b.state[k].second);
    EXPECT_TRUE(std::memcmp(a.state[k].second.data(), b.state[k].second.data(), a.state[k].second.size() * 4) == 0)
        << a.state[k].first << " differs between graph replay and eager execution (normalised difference " << err
        << "); every GPU reduction is meant to be deterministic";
  }
}

TEST_F(GpuParity, SamplingBetweenReplayedStepsChangesNothing) {
  // What a Session does between steps while the step is a live CUDA graph: sample images (here
  // 3 more than a batch, so the last group is a new geometry: new cuDNN plans, possibly grown
  // workspaces whose old blocks the graph still uses and whose frees must be deferred) and read
  // the gradient histograms. Before the capture (after step 0) and between replays (after step 3).
  // Training must be bit-identical to a run without any of it.
  const TrainerConfig cfg = small_config(Precision::FP16, 3);
  std::vector<std::vector<float>> images;
  const auto sample = [&](Trainer& t, int i) {
    if (i != 0 && i != 3) return;
    const int n = cfg.batch + 3;
    std::vector<float> z(size_t(n) * cfg.model.latent);
    for (size_t j = 0; j < z.size(); ++j) z[j] = philox_normal(11, 11, j);
    images.push_back(t.generate(z, n));
    std::vector<float> gh, dh;
    t.gradient_histograms(gh, dh);
  };
  const TrainRun a = train(gpu(), cfg, 6, nullptr, sample);
  const TrainRun b = train(gpu(), cfg, 6);
  expect_no_capture_fallback(a, "run with sampling");
  expect_no_capture_fallback(b, "run without sampling");
  ASSERT_EQ(images.size(), 2u);
  for (const auto& im : images)
    for (float v : im) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= 1.0f) << "generated pixel " << v;
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (size_t i = 0; i < a.metrics.size(); ++i) {
    EXPECT_EQ(a.metrics[i].loss_d, b.metrics[i].loss_d) << "step " << a.metrics[i].step << " loss_d";
    EXPECT_EQ(a.metrics[i].loss_g, b.metrics[i].loss_g) << "step " << a.metrics[i].step << " loss_g";
  }
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t k = 0; k < a.state.size(); ++k)
    EXPECT_TRUE(std::memcmp(a.state[k].second.data(), b.state[k].second.data(), a.state[k].second.size() * 4) == 0)
        << a.state[k].first << " differs: sampling between steps changed training";
}

}  // namespace

// ---- residual sums and resampling (the ResNet GAN): FP32 arithmetic in a fixed order, one
// rounding, so every dtype must match the CPU bit for bit ----------------------------------------

TEST_F(GpuParity, ResidualAddAndResamplingAreExact) {
  const int n = 3, h = 5, w = 4, c = 24;  // c = 24: vector-sized rows; h odd: no power-of-two shortcut
  const Shape small{n, h, w, c}, big{n, 2 * h, 2 * w, c}, pooled{n, c};
  auto xs = random_normal(small.numel(), 501, 3.0f), xb = random_normal(big.numel(), 502, 3.0f);
  const auto xo = random_normal(small.numel(), 503, 3.0f);
  xs[0] = 60000.0f, xs[1] = -1e-7f, xb[0] = 65504.0f, xb[c] = 65504.0f;  // FP16 overflow in a sum, a subnormal
  for (DType t : kAllTypes) {
    const std::string dt = dtype_name(t);
    Both a = both(gpu(), small, t, xs), o = both(gpu(), small, t, xo), y = both_empty(gpu(), small, t);
    cpu().add(a.c, o.c, y.c);
    gpu().add(a.g, o.g, y.g);
    EXPECT_TRUE(same_bits("add " + dt, gpu(), y.c, y.g));
    Both up = both_empty(gpu(), big, t);
    cpu().upsample2x_forward(a.c, up.c);
    gpu().upsample2x_forward(a.g, up.g);
    EXPECT_TRUE(same_bits("upsample2x_forward " + dt, gpu(), up.c, up.g));
    Both dbig = both(gpu(), big, t, xb), dsmall = both_empty(gpu(), small, t);
    cpu().upsample2x_backward(dbig.c, dsmall.c);
    gpu().upsample2x_backward(dbig.g, dsmall.g);
    EXPECT_TRUE(same_bits("upsample2x_backward " + dt, gpu(), dsmall.c, dsmall.g));
    Both pool = both_empty(gpu(), small, t);
    cpu().avgpool2x_forward(dbig.c, pool.c);
    gpu().avgpool2x_forward(dbig.g, pool.g);
    EXPECT_TRUE(same_bits("avgpool2x_forward " + dt, gpu(), pool.c, pool.g));
    Both dpool = both_empty(gpu(), big, t);
    cpu().avgpool2x_backward(a.c, dpool.c);
    gpu().avgpool2x_backward(a.g, dpool.g);
    EXPECT_TRUE(same_bits("avgpool2x_backward " + dt, gpu(), dpool.c, dpool.g));
    Both sum = both_empty(gpu(), pooled, t);
    cpu().global_sum_pool_forward(dbig.c, sum.c);
    gpu().global_sum_pool_forward(dbig.g, sum.g);
    EXPECT_TRUE(same_bits("global_sum_pool_forward " + dt, gpu(), sum.c, sum.g));
    Both dsum = both(gpu(), pooled, t, random_normal(pooled.numel(), 504)), spread = both_empty(gpu(), big, t);
    cpu().global_sum_pool_backward(dsum.c, spread.c);
    gpu().global_sum_pool_backward(dsum.g, spread.g);
    EXPECT_TRUE(same_bits("global_sum_pool_backward " + dt, gpu(), spread.c, spread.g));
  }
}

// Spectral norm: FP32 with double accumulation on both sides, summed in different fixed orders,
// so sigma and the vectors may differ in the last bit or two, and the results derived from them
// by about as much relative to their norm (the backward subtracts nearly equal terms, so a
// per-element ulp bound would not hold): normalised error per dtype.
TEST_F(GpuParity, SpectralNormMatchesTheCpu) {
  const int64_t rows = 48, cols = 3 * 3 * 40;
  const auto wv = random_normal(rows * cols, 601, 0.7f), uv = random_normal(rows, 602), vv = random_normal(cols, 603);
  Both w = both(gpu(), Shape{rows, 3, 3, 40}, DType::F32, wv), u = both(gpu(), Shape{rows}, DType::F32, uv);
  Both v = both(gpu(), Shape{cols}, DType::F32, vv);
  for (int it = 0; it < 3; ++it) {
    cpu().spectral_norm_power_iteration(w.c, u.c, v.c);
    gpu().spectral_norm_power_iteration(w.g, u.g, v.g);
  }
  EXPECT_TRUE(within_ulps("spectral_norm_power_iteration u", gpu(), u.c, u.g, 4));
  EXPECT_TRUE(within_ulps("spectral_norm_power_iteration v", gpu(), v.c, v.g, 4));
  // Continue from the same u, v on both sides, so forward and backward are compared alone.
  Both u2 = both(gpu(), Shape{rows}, DType::F32, host(cpu(), u.c)), v2 = both(gpu(), Shape{cols}, DType::F32, host(cpu(), v.c));
  const double tol[] = {1e-6, 1e-3, 8e-3};  // F32, F16, BF16: a few ulps, or one rounding flip
  for (DType t : kAllTypes) {
    const std::string dt = dtype_name(t);
    const double e = tol[static_cast<int>(t)];
    Both sigma = both_empty(gpu(), Shape{1}, DType::F32), wsn = both_empty(gpu(), w.c.shape(), t);
    cpu().spectral_norm_forward(w.c, u2.c, v2.c, sigma.c, wsn.c);
    gpu().spectral_norm_forward(w.g, u2.g, v2.g, sigma.g, wsn.g);
    EXPECT_TRUE(within_ulps("spectral_norm_forward sigma " + dt, gpu(), sigma.c, sigma.g, 2));
    EXPECT_LT(normalized_error(host(gpu(), wsn.g), host(cpu(), wsn.c)), e) << "spectral_norm_forward w_sn " << dt;
    Both sig = both(gpu(), Shape{1}, DType::F32, host(cpu(), sigma.c));
    Both g = both(gpu(), w.c.shape(), t, random_normal(rows * cols, 604, 50.0f));
    Both dw = both(gpu(), w.c.shape(), t, random_normal(rows * cols, 605));
    cpu().spectral_norm_backward(g.c, w.c, u2.c, v2.c, sig.c, dw.c, true);
    gpu().spectral_norm_backward(g.g, w.g, u2.g, v2.g, sig.g, dw.g, true);
    EXPECT_LT(normalized_error(host(gpu(), dw.g), host(cpu(), dw.c)), e) << "spectral_norm_backward " << dt;
  }
}

// The generator's EMA: one multiply-add per element in FP32 and the same decay, so the shadow
// must match the CPU's bit for bit (fmad off), and stay untouched on a skipped step.
TEST_F(GpuParity, EmaUpdateIsExactAndSkipsWithG) {
  const int64_t n = 3001;
  Both sh = both(gpu(), Shape{n}, DType::F32, random_normal(n, 701)), p = both(gpu(), Shape{n}, DType::F32, random_normal(n, 702));
  std::vector<float> tv(2);
  ew::count_store(tv.data(), 7);
  Both tt = both(gpu(), Shape{2}, DType::F32, tv);
  for (float skip : {0.0f, 1.0f}) {
    Both s = both(gpu(), Shape{4}, DType::F32, {0, 0, skip, 0});
    cpu().ema_update({sh.c}, {p.c}, 0.999f, 10.0f, tt.c, s.c, 2);
    gpu().ema_update({sh.g}, {p.g}, 0.999f, 10.0f, tt.g, s.g, 2);
    EXPECT_TRUE(same_bits(skip ? "ema_update (skipped)" : "ema_update", gpu(), sh.c, sh.g));
  }
}
