// What the CPU backend's op families share: the dtype dispatch and the tiled element loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/elementwise.h"
#include "core/common/error.h"

namespace ampgan {

namespace cpu {

constexpr int64_t kGrain = 1 << 15;  // elements per parallel chunk in element-wise loops
constexpr int64_t kTile = 512;       // elements widened to FP32 at a time inside a chunk

inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

// Runs f(begin, count, float* tile) over [b, e) in tiles: the storage-to-FP32 conversions happen
// a tile at a time (vectorised), the arithmetic in between on FP32 values.
template <typename F>
void tiles(int64_t b, int64_t e, F&& f) {
  float buf[kTile];
  for (int64_t t = b; t < e; t += kTile) f(t, std::min(kTile, e - t), buf);
}

// A tile's FP32 inputs and outputs without a copy where the tensor is FP32 (a copy in and out of
// every tile was a tenth of an FP32 ResNet step), else through buf: in() widens into buf, out()
// gives buf, done() narrows buf into the tensor.
inline const float* tile_in(DType dt, const void* base, int64_t offset, int64_t n, float* buf) {
  if (dt == DType::F32) return static_cast<const float*>(base) + offset;
  widen(dt, at(base, dt, offset), buf, n);
  return buf;
}
inline float* tile_out(DType dt, void* base, int64_t offset, float* buf) {
  return dt == DType::F32 ? static_cast<float*>(base) + offset : buf;
}
inline void tile_done(DType dt, const float* out, void* base, int64_t offset, int64_t n) {
  if (dt != DType::F32) narrow(dt, out, at(base, dt, offset), n);
}

}  // namespace cpu

// Calls f with the storage tag (ew::F32, ew::F16, ew::BF16) of a runtime dtype.
template <typename F>
void dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32:
      f(ew::F32{});
      return;
    case DType::F16:
      f(ew::F16{});
      return;
    case DType::BF16:
      f(ew::BF16{});
      return;
  }
}

}  // namespace ampgan
