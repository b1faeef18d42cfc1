// Every backend op case of the table (tests/op_cases.h), in the manner of ggml's test-backend-ops,
// in two modes:
// - Parity: each case in each of its dtypes on every backend but the CPU, against the CPU (the
//   reference), output by output with the output's comparator. Skipped, visibly and with the
//   reason, where the backend is not available (no usable GPU).
// - CpuKernels: the same on the CPU backend with each oneDNN kernel forced (cpu-onednn-f32, and
//   cpu-onednn-bf16 for the BF16 cases: AVX512-BF16 hosts only, skipped elsewhere), against the
//   reference's OpenBLAS products, with the same comparators: the kernels differ in the order
//   of FP32 sums only (op_cases.h; cpu_gemm.h for the BF16 kernel's subnormal inputs).
// - Grad: each differentiable op's backward against central differences of its own forward, on
//   every available backend, the CPU included, so that it runs everywhere (here, in CI).
// Test names: <Mode>/BackendOps<Mode>.Run/<backend>_<case>[_<dtype>], e.g.
// Parity/BackendOpsParity.Run/cuda_conv2d_k4s2p1_n4h16w16c1k8_D_first_grey_f16.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/op_cases.h"

using namespace ampgan;
using namespace ampgan::testing;

namespace {

struct ParityParam {
  const OpCase* op;
  DType dtype;
  std::string backend;
};

struct GradParam {
  const GradCase* op;
  std::string backend;
};

void PrintTo(const ParityParam& p, std::ostream* os) {
  *os << p.backend << " " << p.op->name << " " << dtype_name(p.dtype);
}
void PrintTo(const GradParam& p, std::ostream* os) { *os << p.backend << " " << p.op->name; }

// The backend of the test's parameter, reset; skipped, with the reason, where it is not there.
template <class Param>
class BackendOpsTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string& name = this->GetParam().backend;
    std::string why;
    b_ = backend_named(name, &why);
    if (!b_) GTEST_SKIP() << name << " backend not available: " << why;
    reset_backend(*b_);
  }
  Backend* b_ = nullptr;
};

class BackendOpsParity : public BackendOpsTest<ParityParam> {};

TEST_P(BackendOpsParity, Run) {
  const ParityParam& p = GetParam();
  Backend* b = b_;
  const std::string what = p.op->name + " [" + dtype_name(p.dtype) + "]";
  CpuBackend& cpu = reference();
  reset_backend(cpu);
  Outputs ref(cpu), got(*b);
  {
    SCOPED_TRACE(what + " on the cpu");
    p.op->run(cpu, p.dtype, ref);
  }
  {
    SCOPED_TRACE(what + " on " + p.backend);
    p.op->run(*b, p.dtype, got);
  }
  reset_backend(*b);  // a case may have left TF32 on
  compare_outputs(what, p.dtype, p.backend, *b, ref, got);
}

// The table itself, where no other backend is: every case in every dtype on a second CPU
// backend, which must give the reference's outputs bit for bit (the CPU is deterministic), and
// whose cases' own checks (counts, skipped steps, untouched slots) must hold.
TEST(BackendOpsTable, EveryCaseRunsOnTheCpuTwiceAlike) {
  CpuBackend& cpu = reference();
  CpuBackend second;
  second.force_kernel(cpu::GemmKernel::OpenBlas);  // the reference's kernels
  for (const OpCase& c : op_cases())
    for (DType t : c.dtypes) {
      const std::string what = c.name + " [" + dtype_name(t) + "]";
      SCOPED_TRACE(what);
      Outputs ref(cpu), got(second);
      c.run(cpu, t, ref);
      c.run(second, t, got);
      EXPECT_FALSE(ref.items().empty()) << what << ": a case without outputs";
      const Check exact = bits_exact();
      compare_outputs(what, t, "a second cpu backend", second, ref, got, &exact);
    }
}

class BackendOpsGrad : public BackendOpsTest<GradParam> {};

TEST_P(BackendOpsGrad, Run) {
  const GradParam& p = GetParam();
  const std::string what = p.op->name + " on " + p.backend;
  SCOPED_TRACE(what);
  check_gradients(what, *b_, p.op->make(*b_));
}

bool is_cpu_kernel(const std::string& backend) { return backend.rfind("cpu-", 0) == 0; }

// GPU: every backend but the CPU ones; CPU kernels: the CPU backend with a oneDNN kernel forced
// (only BF16 cases for the BF16 kernel: it multiplies FP32 and FP16 operands as onednn-f32 does).
std::vector<ParityParam> parity_params(bool cpu_kernels) {
  std::vector<ParityParam> v;
  for (const std::string& backend : backend_names()) {
    if (backend == "cpu" || is_cpu_kernel(backend) != cpu_kernels) continue;  // "cpu": the reference
    for (const OpCase& c : op_cases())
      for (DType t : c.dtypes)
        if (backend != "cpu-onednn-bf16" || t == DType::BF16) v.push_back({&c, t, backend});
  }
  return v;
}

// The gradient checks are in FP32: the BF16 kernel has none of its own.
std::vector<GradParam> grad_params() {
  std::vector<GradParam> v;
  for (const std::string& backend : backend_names())
    if (backend != "cpu-onednn-bf16")
      for (const GradCase& c : grad_cases()) v.push_back({&c, backend});
  return v;
}

std::string test_name(const std::string& backend) {
  std::string n = backend;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

auto parity_name = [](const ::testing::TestParamInfo<ParityParam>& info) {
  return test_name(info.param.backend) + "_" + info.param.op->name + "_" + dtype_name(info.param.dtype);
};
INSTANTIATE_TEST_SUITE_P(Parity, BackendOpsParity, ::testing::ValuesIn(parity_params(false)), parity_name);
INSTANTIATE_TEST_SUITE_P(CpuKernels, BackendOpsParity, ::testing::ValuesIn(parity_params(true)), parity_name);

INSTANTIATE_TEST_SUITE_P(Grad, BackendOpsGrad, ::testing::ValuesIn(grad_params()),
                         [](const ::testing::TestParamInfo<GradParam>& info) {
                           return test_name(info.param.backend) + "_" + info.param.op->name + "_f32";
                         });

}  // namespace
