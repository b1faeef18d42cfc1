// The pieces of a CPU matrix product that the GEMM and the im2col convolutions share: operands
// in the form the chosen kernel reads (FP32, or a tensor's own BF16 bits), and the split of a
// large product into parts fixed by its shape, so that each C element's sum is taken whole by one
// call and is the same at any thread count.
#pragma once

#include <algorithm>
#include <cstring>

#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_gemm.h"
#include "core/common/parallel.h"
#include "core/tensor/tensor.h"

namespace ampgan::cpu {

// A product's operands as its kernel reads them: FP32, or the tensor's own BF16 values.
struct Form {
  bool raw = false;  // the tensor's 16-bit values, not widened
  DType dt = DType::F32;
  size_t elem() const { return raw ? 2 : 4; }
  static Form of(GemmKernel k, DType dt) { return {reads_bf16(k), dt}; }
};
// count elements of t from offset in form f into dst (which must hold them).
inline void load(Form f, const void* src, void* dst, int64_t count) {
  if (f.raw)
    std::memcpy(dst, src, size_t(count) * 2);
  else
    widen(f.dt, src, static_cast<float*>(dst), count);
}
// The tensor itself when it already is in form f (FP32, or raw), else nullptr.
inline const void* direct(Form f, const Tensor& t, int64_t offset) {
  return f.raw || t.dtype() == DType::F32 ? at(t.data(), t.dtype(), offset) : nullptr;
}
inline void* offset_by(const void* p, Form f, int64_t elements) {
  return const_cast<char*>(static_cast<const char*>(p)) + elements * int64_t(f.elem());
}

// A product C(m, n) = op(A) op(B) too large for one call is split into parts along its longer
// output side, at most 8 parts of a multiple of 16 rows or columns: fixed by the shape, so the
// split (and each C element's sum, taken whole by one call) is the same at any thread count.
struct Split {
  bool rows = true;
  int part = 0, parts = 1;
};
inline Split split_of(const GemmShape& s) {
  Split sp;
  sp.rows = s.m >= s.n;
  const int len = sp.rows ? s.m : s.n;
  if (double(s.m) * s.n * s.k < 4e6 || (s.m < 32 && s.n < 32)) {
    sp.part = len;
    return sp;
  }
  sp.part = std::max(64, (len / 8 + 15) / 16 * 16);
  sp.parts = static_cast<int>(chunk_count(len, sp.part));
  return sp;
}
inline GemmShape part_shape(const GemmShape& s, const Split& sp, int len) {
  GemmShape p = s;
  (sp.rows ? p.m : p.n) = len;
  return p;
}
// Runs the split product with kernel k; a and b in form f, c FP32.
inline void split_gemm(GemmKernel k, Form f, const GemmShape& s, const Split& sp, const void* a, const void* b,
                       float* c) {
  const int len = sp.rows ? s.m : s.n;
  auto run = [&](int64_t i) {
    const int o = static_cast<int>(i) * sp.part, l = std::min(sp.part, len - o);
    const void* pa = a;
    const void* pb = b;
    float* pc = c;
    if (sp.rows) {
      pa = offset_by(a, f, s.ta ? o : int64_t{o} * s.lda);
      pc = c + int64_t{o} * s.ldc;
    } else {
      pb = offset_by(b, f, s.tb ? int64_t{o} * s.ldb : o);
      pc = c + o;
    }
    gemm_serial(k, part_shape(s, sp, l), pa, pb, pc);
  };
  if (sp.parts == 1)
    run(0);
  else
    parallel_chunks(sp.parts, run);
}

}  // namespace ampgan::cpu
