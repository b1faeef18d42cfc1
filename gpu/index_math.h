// Index arithmetic of the element-wise kernels, in a header both compilers read so that the CPU
// tests check it (tests/test_kernel_math.cpp): it decides which elements a kernel touches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/common/hd.h"

namespace ampgan::gpu {

// Row and column of a grid-stride loop's element i in a (rows, width) layout, kept up to date by
// additions: one 64-bit division per thread instead of a 64-bit % or / per element (each is a
// long emulated sequence on the GPU). Call advance() once per stride.
struct RowCol {
  int64_t r;
  int j;
  int64_t dr;
  int dj, w;
  AMPGAN_HD RowCol(int64_t i, int64_t stride, int width)
      : r(i / width),
        j(static_cast<int>(i - r * width)),
        dr(stride / width),
        dj(static_cast<int>(stride - dr * width)),
        w(width) {}
  AMPGAN_HD void advance() {
    r += dr;
    j += dj;  // < 2 * width: one correction suffices
    if (j >= w) {
      j -= w;
      ++r;
    }
  }
};

// Whether n elements of `bytes` each (in rows of `width`) can be walked 16 bytes at a time:
// whole vectors, none straddling a row, and 16-byte aligned pointers.
inline bool vec16_ok(int64_t n, int64_t width, size_t bytes, std::initializer_list<const void*> ptrs) {
  const int64_t per = static_cast<int64_t>(16 / bytes);
  if (n % per != 0 || width % per != 0) return false;
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

}  // namespace ampgan::gpu
