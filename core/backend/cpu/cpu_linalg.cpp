// CPU backend: matrix products and the bias. A product's half operands are widened to FP32
// exactly (or, for a BF16 kernel, multiplied as BF16, whose products are exact in FP32), the
// product accumulates in FP32, and the result is rounded once into the output's dtype -- where a
// tensor core rounds. Which kernel multiplies (OpenBLAS or oneDNN, cpu_gemm.h) is the backend's
// KernelPlan's choice per product shape; a large product is split into parts fixed by its shape
// (cpu_product_parts.h). The convolutions' im2col way is in cpu_conv_im2col.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/backend/cpu/cpu_gemm.h"
#include "core/backend/cpu/cpu_product_parts.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::Form;
using cpu::GemmKernel;
using cpu::GemmShape;
using cpu::Split;

namespace {

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

}  // namespace

// OpenBLAS 0.3.21 (Debian 12, pthread build) ran the narrow products of a convolution (e.g.
// 112 x 64 x 576) at half its rate -- 18-20 GFLOP/s a core here instead of 36-40 -- in every
// thread that had not yet run one product with a wide B panel (n >= ~512); one 512^3 product
// per thread once is enough, and costs ~10 ms. Its GEMM buffers are taken per concurrent
// caller, so every pool thread runs it at the same time (they wait for each other), and each
// gets a warmed buffer.
void warm_openblas() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int threads = cpu_threads(), n = 512;
    std::vector<float> a(size_t(n) * n, 1.0f), b(size_t(n) * n, 0.5f);
    std::atomic<int> arrived{0};
    parallel_chunks(threads, [&](int64_t) {
      arrived.fetch_add(1);
      // Bounded: called from inside a parallel region, the chunks run one after another.
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (arrived.load() < threads && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      std::vector<float> c(size_t(n) * n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                  n);
    });
  });
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) {
  check(a.dtype() == b.dtype(), "gemm", "A and B must share a dtype");
  check(c.dtype() == DType::F32 || c.dtype() == a.dtype(), "gemm", "C must be FP32 or A's dtype");
  check(a.numel() >= int64_t{m} * k && b.numel() >= int64_t{k} * n && c.numel() >= int64_t{m} * n, "gemm",
        "operand smaller than m, n, k");
  const GemmShape s{trans_a, trans_b, m, n, k, trans_a ? m : k, trans_b ? k : n, n, alpha, beta};
  const Split sp = cpu::split_of(s);
  const GemmKernel kern = plan_.choose(cpu::part_shape(s, sp, sp.part), a.dtype());
  const Form f = Form::of(kern, a.dtype());
  // Scratch for widened operands of half tensors whichever kernel runs (here and below), so that
  // the memory a step needs does not depend on the kernels chosen: the largest-batch prediction
  // fits a line to it, and the kernels may differ between batch sizes.
  float* wa = a.dtype() == DType::F32 ? nullptr : scratch(kGemmA, size_t(m) * k);
  float* wb = b.dtype() == DType::F32 ? nullptr : scratch(kGemmB, size_t(k) * n);
  const void* af = cpu::direct(f, a, 0);
  const void* bf = cpu::direct(f, b, 0);
  if (!af) {
    widen(a, 0, int64_t{m} * k, wa);
    af = wa;
  }
  if (!bf) {
    widen(b, 0, int64_t{k} * n, wb);
    bf = wb;
  }
  float* cf = c.dtype() == DType::F32 ? c.as<float>() : scratch(kGemmC, size_t(m) * n);
  if (c.dtype() != DType::F32 && beta != 0.0f) widen(c, 0, int64_t{m} * n, cf);
  cpu::split_gemm(kern, f, s, sp, af, bf, cf);
  if (c.dtype() != DType::F32) narrow(cf, c, 0, int64_t{m} * n);
}

// Both bias loops convert a tile of a row's channels at a time (vectorised), not value by value.
void CpuBackend::bias_add(Tensor& y, const Tensor& b) {
  check(b.dtype() == DType::F32 && y.numel() % b.numel() == 0, "bias_add", "bias must be FP32 (channels)");
  const int64_t c = b.numel(), rows = y.numel() / c;
  const float* bv = b.as<float>();
  const DType dt = y.dtype();
  // Half-precision rows are converted a block of rows at a time: a ResNet's rows are 16-64
  // channels, and a conversion call per row cost more than the additions.
  const int64_t block = c >= cpu::kTile ? 1 : cpu::kTile / c;
  parallel_for(rows, std::max<int64_t>(1, 32768 / c), [&](int64_t r0, int64_t r1) {
    float buf[cpu::kTile];
    if (c < cpu::kTile) {
      for (int64_t r = r0; r < r1; r += block) {
        const int64_t nr = std::min(block, r1 - r), at = r * c;
        const float* in = cpu::tile_in(dt, y.data(), at, nr * c, buf);
        float* out = cpu::tile_out(dt, y.data(), at, buf);
        for (int64_t i = 0; i < nr; ++i)
          for (int64_t j = 0; j < c; ++j) out[i * c + j] = in[i * c + j] + bv[j];
        cpu::tile_done(dt, out, y.data(), at, nr * c);
      }
      return;
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c0 = 0; c0 < c; c0 += cpu::kTile) {
        const int64_t m = std::min<int64_t>(cpu::kTile, c - c0), at = r * c + c0;
        const float* in = cpu::tile_in(dt, y.data(), at, m, buf);
        float* out = cpu::tile_out(dt, y.data(), at, buf);
        for (int64_t j = 0; j < m; ++j) out[j] = in[j] + bv[c0 + j];
        cpu::tile_done(dt, out, y.data(), at, m);
      }
  });
}

void CpuBackend::bias_backward(const Tensor& dy, Tensor& db, bool accumulate) {
  check(db.dtype() == DType::F32 && dy.numel() % db.numel() == 0, "bias_backward", "db must be FP32 (channels)");
  const int64_t c = db.numel(), rows = dy.numel() / c;
  const int64_t grain = std::max<int64_t>(1, 32768 / c);
  std::vector<double> parts(chunk_count(rows, grain) * c, 0.0);
  const DType dt = dy.dtype();
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    double* p = parts.data() + (r0 / grain) * c;
    float buf[cpu::kTile];
    if (c < cpu::kTile) {  // a block of rows per conversion, as in bias_add; the same sums in the same order
      const int64_t block = cpu::kTile / c;
      for (int64_t r = r0; r < r1; r += block) {
        const int64_t nr = std::min(block, r1 - r);
        const float* g = cpu::tile_in(dt, dy.data(), r * c, nr * c, buf);
        for (int64_t i = 0; i < nr; ++i) cpu::add_to_f64(g + i * c, p, c);
      }
      return;
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c0 = 0; c0 < c; c0 += cpu::kTile) {
        const int64_t m = std::min<int64_t>(cpu::kTile, c - c0);
        const float* g = cpu::tile_in(dt, dy.data(), r * c + c0, m, buf);
        cpu::add_to_f64(g, p + c0, m);
      }
  });
  float* out = db.as<float>();
  for (int64_t j = 0; j < c; ++j) {
    double sum = accumulate ? out[j] : 0.0;
    for (size_t p = 0; p < parts.size() / c; ++p) sum += parts[p * c + j];
    out[j] = static_cast<float>(sum);
  }
}

}  // namespace ampgan
