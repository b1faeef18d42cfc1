// CPU backend: construction, memory, host transfers, fills, casts and the device scalars. The op
// families are beside it under matching names (cpu_<family>.cpp, gpu/cuda_<family>.cpp):
// linalg (GEMM, conv), batchnorm, elementwise, losses, amp, optim, resample, spectral_norm.
#include "core/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/backend/cpu/cpu_gemm.h"
#include "core/common/cpu_features.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"

namespace ampgan {

using cpu::kGrain;
using cpu::kTile;
using cpu::require;
using cpu::tiles;

namespace {

// AMPGAN_CPU_KERNELS, or nothing.
std::optional<CpuKernels> kernels_from_environment() {
  const char* env = std::getenv("AMPGAN_CPU_KERNELS");
  if (!env || !*env) return std::nullopt;
  CpuKernels k;
  if (!parse_cpu_kernels(env, &k))
    throw Error("unknown value '" + std::string(env) + "'", "AMPGAN_CPU_KERNELS",
                "use auto, openblas or onednn, or unset it");
  return k;
}

}  // namespace

CpuBackend::CpuBackend() {
  warm_openblas();
  if (const auto k = kernels_from_environment()) plan_.set_mode(*k);
}

void CpuBackend::set_cpu_kernels(CpuKernels mode) { plan_.set_mode(kernels_from_environment().value_or(mode)); }
CpuBackend::~CpuBackend() { scratch_.clear(); }

std::string CpuBackend::name() const {
  // The instruction sets that decide what mixed precision can buy here (core/common/cpu_features.h).
  return "CPU (" + std::to_string(cpu_threads()) + " threads, " +
         (cpu::onednn_available() ? "OpenBLAS + oneDNN, " : "OpenBLAS, ") + cpu_features().summary() + ")";
}

Tensor CpuBackend::empty(Shape shape, DType dtype, MemCategory category) {
  const size_t bytes = std::max<size_t>(64, static_cast<size_t>(shape.numel()) * dtype_size(dtype));
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p)
    throw OutOfMemoryError("out of host memory allocating " + std::to_string(rounded >> 20) + " MiB",
                           "tensor " + shape.str(), "try a smaller batch, width or resolution");
  auto st = std::make_shared<Storage>();
  st->ptr = p;
  st->bytes = rounded;
  st->category = category;
  st->owner = this;
  memory_.add(category, rounded);
  return Tensor(std::move(st), shape, dtype, DeviceKind::CPU);
}

void CpuBackend::release(Storage& s) {
  memory_.remove(s.category, s.bytes);
  std::free(s.ptr);
  s.ptr = nullptr;
}

float* CpuBackend::scratch(int slot, size_t floats) {
  if (static_cast<int>(scratch_.size()) <= slot) scratch_.resize(slot + 1);
  Tensor& t = scratch_[slot];
  if (!t.defined() || t.capacity_bytes() < floats * 4)
    t = empty(Shape{static_cast<int64_t>(std::max<size_t>(floats, 16))}, DType::F32, MemCategory::Workspace);
  return t.as<float>();
}

void CpuBackend::upload(Tensor& dst, const void* host, size_t nbytes) {
  require(nbytes == dst.nbytes(), "upload", "size mismatch");
  std::memcpy(dst.data(), host, nbytes);
}

void CpuBackend::download(const Tensor& src, void* host, size_t nbytes) {
  require(nbytes == src.nbytes(), "download", "size mismatch");
  std::memcpy(host, src.data(), nbytes);
}

void CpuBackend::widen(const Tensor& t, int64_t offset, int64_t count, float* out) {
  const void* src = cpu::at(t.data(), t.dtype(), offset);
  parallel_for(count, kGrain,
               [&](int64_t b, int64_t e) { cpu::widen(t.dtype(), cpu::at(src, t.dtype(), b), out + b, e - b); });
}

void CpuBackend::narrow(const float* in, Tensor& t, int64_t offset, int64_t count) {
  void* dst = cpu::at(t.data(), t.dtype(), offset);
  parallel_for(count, kGrain,
               [&](int64_t b, int64_t e) { cpu::narrow(t.dtype(), in + b, cpu::at(dst, t.dtype(), b), e - b); });
}

void CpuBackend::fill(Tensor& t, float value) {
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto v = S::store(value);
    std::fill_n(t.as<typename S::T>(), t.numel(), v);
  });
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  require(src.dtype() == dst.dtype() && src.numel() == dst.numel(), "copy", "dtype or size mismatch");
  if (src.data() != dst.data()) std::memmove(dst.data(), src.data(), src.nbytes());
}

void CpuBackend::cast(const Tensor& src, Tensor& dst) {
  require(src.numel() == dst.numel(), "cast", "size mismatch");
  if (src.dtype() == dst.dtype()) return copy(src, dst);
  parallel_for(src.numel(), kGrain, [&](int64_t b, int64_t e) {
    tiles(b, e, [&](int64_t t, int64_t n, float* buf) {
      cpu::widen(src.dtype(), cpu::at(src.data(), src.dtype(), t), buf, n);
      cpu::narrow(dst.dtype(), buf, cpu::at(dst.data(), dst.dtype(), t), n);
    });
  });
}

void CpuBackend::fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter, float stddev) {
  if (counter.defined()) {
    require(counter.dtype() == DType::F32 && counter.numel() == 2, "fill_normal",
            "the counter must be an FP32 [lo, hi] count");
    stream += ew::count_load(counter.as<float>());
  }
  parallel_for(t.numel(), kGrain, [&](int64_t b, int64_t e) {
    tiles(b, e, [&](int64_t s, int64_t n, float* buf) {
      for (int64_t i = 0; i < n; ++i) buf[i] = stddev * philox_normal(seed, stream, s + i);
      cpu::narrow(t.dtype(), buf, cpu::at(t.data(), t.dtype(), s), n);
    });
  });
}

void CpuBackend::copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) {
  dst.as<float>()[dst_index] = src.as<float>()[src_index];
}

void CpuBackend::add_scalar(Tensor& dst, int index, float value) { dst.as<float>()[index] += value; }

void CpuBackend::count_increment(Tensor& count) {
  require(count.dtype() == DType::F32 && count.numel() == 2, "count_increment", "an FP32 [lo, hi] count");
  ew::count_increment(count.as<float>());
}

}  // namespace ampgan
