// The profiling backend (ampgan bench --profile) and the CPU feature report: profiling must not
// change a single bit of training, must put every op in its family with the right FLOP count,
// and the CPU features must agree with what the kernel reports.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_gemm.h"
#include "core/backend/cpu/cpu_precision.h"
#include "core/backend/profiling_backend.h"
#include "core/common/cpu_features.h"
#include "core/common/rng.h"
#include "core/train/trainer.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

std::vector<float> batch(const TrainerConfig& c) {
  std::vector<float> v(static_cast<size_t>(c.batch) * 32 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::tanh(philox_normal(7, 1, i));
  return v;
}

// Bit equality that also holds for NaN (a skipped step's empty gradient norm).
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST(ProfilingBackend, TrainsBitIdenticallyAndCountsEveryFamily) {
  for (Precision p : {Precision::FP32, Precision::FP16}) {
    CpuBackend plain_b, inner_b;
    ProfilingBackend prof(inner_b);
    const TrainerConfig c = tiny_dcgan(p);
    const auto real = batch(c);
    Trainer plain(plain_b, c), timed(prof, c);
    std::vector<StepMetrics> a, b;
    for (int s = 0; s < 3; ++s) {
      plain.step(real.data());
      timed.step(real.data());
    }
    a = plain.collect(true);
    b = timed.collect(true);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(same_bits(a[i].loss_d, b[i].loss_d)) << precision_name(p) << " step " << i;
      EXPECT_TRUE(same_bits(a[i].loss_g, b[i].loss_g)) << precision_name(p) << " step " << i;
      EXPECT_TRUE(same_bits(a[i].grad_norm_d, b[i].grad_norm_d)) << precision_name(p) << " step " << i;
      EXPECT_TRUE(same_bits(a[i].grad_norm_g, b[i].grad_norm_g)) << precision_name(p) << " step " << i;
    }
    const OpProfile& op = prof.profile();
    for (OpFamily f : {OpFamily::Conv, OpFamily::BatchNorm, OpFamily::Elementwise, OpFamily::Loss, OpFamily::AmpPasses,
                       OpFamily::Optimizer, OpFamily::Data}) {
      EXPECT_GT(op.calls[static_cast<size_t>(f)], 0) << op_family_name(f);
      EXPECT_GT(op.seconds[static_cast<size_t>(f)], 0.0) << op_family_name(f);
    }
    EXPECT_EQ(op.calls[static_cast<size_t>(OpFamily::Gemm)], 0);  // the DCGAN has no Linear layer
    EXPECT_GT(op.matmul_flops, 0.0);
  }
}

TEST(ProfilingBackend, CountsTheFlopsOfEachProduct) {
  CpuBackend inner;
  ProfilingBackend prof(inner);
  ConvGeometry g;
  g.n = 2, g.h = g.w = 8, g.c = 4, g.k = 6, g.r = g.s = 3, g.pad = 1;
  Tensor x = make_tensor(prof, g.x_shape(), DType::F32, random_normal(g.x_shape().numel(), 1));
  Tensor w = make_tensor(prof, g.w_shape(), DType::F32, random_normal(g.w_shape().numel(), 2));
  Tensor y = prof.empty(g.y_shape(), DType::F32, MemCategory::Activation);
  prof.reset_profile();
  prof.conv2d_forward(g, x, w, y);
  EXPECT_EQ(prof.profile().matmul_flops, 2.0 * 2 * 8 * 8 * 6 * 3 * 3 * 4);
  EXPECT_EQ(prof.profile().calls[static_cast<size_t>(OpFamily::Conv)], 1);
  Tensor a = make_tensor(prof, Shape{3 * 5}, DType::F32, random_normal(15, 3));
  Tensor bm = make_tensor(prof, Shape{5 * 7}, DType::F32, random_normal(35, 4));
  Tensor c = prof.empty(Shape{3 * 7}, DType::F32, MemCategory::Activation);
  prof.reset_profile();
  prof.gemm(false, false, 3, 7, 5, 1.0f, a, bm, 0.0f, c);
  EXPECT_EQ(prof.profile().matmul_flops, 2.0 * 3 * 7 * 5);
  EXPECT_EQ(prof.profile().calls[static_cast<size_t>(OpFamily::Gemm)], 1);
  // the result is the inner backend's
  Tensor c2 = inner.empty(Shape{3 * 7}, DType::F32, MemCategory::Activation);
  inner.gemm(false, false, 3, 7, 5, 1.0f, a, bm, 0.0f, c2);
  EXPECT_EQ(to_host(inner, c), to_host(inner, c2));
}

TEST(CpuFeatures, AgreeWithTheKernelsCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1);
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line on this system";
  std::set<std::string> have;
  std::istringstream ss(flags);
  for (std::string f; ss >> f;) have.insert(f);
  // AMPGAN_CPU_FEATURES=avx2 (running the suite as an AVX2-only host) hides AVX-512 and what
  // builds on it.
  const char* as = std::getenv("AMPGAN_CPU_FEATURES");
  if (as && std::string(as) == "avx2")
    for (const char* hidden : {"avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16"}) have.erase(hidden);
  const CpuFeatures& f = cpu_features();
  // The kernel lists only what it enabled (XCR0), as the detection does.
  EXPECT_EQ(f.avx2, have.count("avx2") > 0);
  EXPECT_EQ(f.fma, have.count("fma") > 0);
  EXPECT_EQ(f.f16c, have.count("f16c") > 0);
  EXPECT_EQ(f.avx512f, have.count("avx512f") > 0);
  EXPECT_EQ(f.avx512_bf16, have.count("avx512_bf16") > 0);
  EXPECT_EQ(f.avx512_fp16, have.count("avx512_fp16") > 0);
  EXPECT_EQ(f.amx_bf16, have.count("amx_bf16") > 0 && have.count("amx_tile") > 0);
  std::printf("this CPU: %s\n", f.summary().c_str());
}

TEST(CpuFeatures, NamePerPrecisionWhetherItIsHardware) {
  EXPECT_NE(cpu_precision_support("fp32").find("hardware"), std::string::npos);
  // FP16 is multiplied in FP32 on every CPU this build knows; it must say so.
  EXPECT_EQ(cpu_precision_support("fp16").rfind("emulated", 0), 0u);
  EXPECT_FALSE(cpu_precision_is_hardware("fp16"));
  // BF16 is hardware exactly where oneDNN multiplies it as BF16: AVX512-BF16, oneDNN in the build,
  // and the kernels not forced to OpenBLAS.
  const bool bf16_unit = cpu_features().avx512_bf16 && cpu::onednn_available();
  EXPECT_EQ(cpu_precision_is_hardware("bf16"), bf16_unit);
  EXPECT_EQ(cpu_precision_support("bf16").rfind(bf16_unit ? "hardware" : "emulated", 0), 0u)
      << cpu_precision_support("bf16");
  EXPECT_FALSE(cpu_precision_is_hardware("bf16", CpuKernels::OpenBlas));
  EXPECT_EQ(cpu_precision_support("bf16", CpuKernels::OpenBlas).rfind("emulated", 0), 0u);
  const bool has_unit = cpu_features().avx512_bf16 || cpu_features().amx_bf16;
  EXPECT_EQ(cpu_precision_support("bf16", CpuKernels::OpenBlas).find("has no AVX512-BF16") == std::string::npos,
            has_unit);
}
