// CPU backend: the im2col way of each convolution (cpu_conv.cpp chooses between it and oneDNN's
// direct convolution, cpu_conv_onednn.cpp): im2col + a matrix product, whose
// half operands are widened to FP32 exactly (or, for a BF16 kernel, multiplied as BF16, whose
// products are exact in FP32), the product accumulates in FP32, and the result is rounded once
// into the output's dtype -- where a tensor core rounds. Which kernel multiplies (OpenBLAS or
// oneDNN, cpu_gemm.h) is the backend's KernelPlan's choice per product shape.
//
// The work is cut into tiles whose boundaries depend only on the geometry, never on the thread
// count, each multiplied while its operands are hot in the cache, one thread per tile:
//   forward, and the data gradient of a stride-1 "same" convolution (a flipped forward
//     convolution): im2col rows a tile at a time (kTileFloats, which fits the L2 cache);
//   other data gradients (strided, or DCGAN's transposed convolutions): whole samples a tile,
//     each sample's columns scattered back (col2im) by the thread that made them;
//   the filter gradient: groups of row tiles summed into per-group partials added in group
//     order, or, for wide filters, whole-batch columns and a product split by output column.
// So results are the same run to run and at any thread count.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_conv_onednn.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/backend/cpu/cpu_gemm.h"
#include "core/backend/cpu/cpu_product_parts.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::direct;
using cpu::Form;
using cpu::GemmKernel;
using cpu::GemmShape;
using cpu::load;
using cpu::offset_by;
using cpu::part_shape;
using cpu::Split;
using cpu::split_gemm;
using cpu::split_of;

namespace {

// im2col buffers of the wide-filter gradient are cut into chunks of whole samples of at most
// this many floats (32 MiB).
constexpr int64_t kColBudget = int64_t{8} << 20;

// One tile of im2col rows: 256 KiB, half of a Zen core's L2 (4x larger tiles made the filter
// gradient slower, 4x smaller changed little).
constexpr int64_t kTileFloats = int64_t{64} << 10;
// Filter-gradient partial sums (groups x k x rsc floats) the tiled path may hold: 16 MiB.
constexpr int64_t kPartialFloats = int64_t{4} << 20;
constexpr int64_t kGroups = 8;

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

int64_t samples_per_chunk(const ConvGeometry& g) {
  const int64_t per_sample = int64_t{g.out_h()} * g.out_w() * g.r * g.s * g.c;
  return std::clamp<int64_t>(kColBudget / std::max<int64_t>(1, per_sample), 1, g.n);
}

// At least 64 rows: shorter products (DCGAN's 2048-wide 4x4 layers would get 32) ran slower
// than longer ones.
int64_t tile_rows(int64_t rsc) { return std::clamp<int64_t>(kTileFloats / rsc / 8 * 8, 64, 4096); }

// col(rows [r0, r1) of the flattened (n, out_h, out_w) output positions, r*s*c) from x (NHWC), in
// form f; out-of-image taps are zero. A filter row's taps are consecutive pixels of x at any
// stride, so each is one copy of (taps inside the image) * c values, not one per tap: with 16
// channels a tap is 64 bytes, and a copy call per tap took a fifth of a ResNet step. Serial:
// called inside one tile's task.
void im2col_rows(const ConvGeometry& g, const Tensor& x, Form f, int64_t r0, int64_t r1, void* col) {
  const int oh = g.out_h(), ow = g.out_w();
  const int64_t rsc = int64_t{g.r} * g.s * g.c, sc = int64_t{g.s} * g.c;
  for (int64_t row = r0; row < r1; ++row) {
    const int n = static_cast<int>(row / (int64_t{oh} * ow));
    const int pos = static_cast<int>(row % (int64_t{oh} * ow)), oy = pos / ow, ox = pos % ow;
    void* dst = offset_by(col, f, (row - r0) * rsc);
    const int ix0 = ox * g.stride - g.pad;
    const int j0 = std::max(0, -ix0), j1 = std::min(g.s, g.w - ix0);  // taps inside the image
    for (int i = 0; i < g.r; ++i) {
      const int iy = oy * g.stride - g.pad + i;
      void* d = offset_by(dst, f, i * sc);
      if (iy < 0 || iy >= g.h || j1 <= j0) {
        std::memset(d, 0, f.elem() * sc);  // +0 in FP32 and in BF16
        continue;
      }
      if (j0 > 0) std::memset(d, 0, f.elem() * j0 * g.c);
      load(f, cpu::at(x.data(), x.dtype(), ((int64_t{n} * g.h + iy) * g.w + ix0 + j0) * g.c),
           offset_by(d, f, int64_t{j0} * g.c), int64_t{j1 - j0} * g.c);
      if (j1 < g.s) std::memset(offset_by(d, f, int64_t{j1} * g.c), 0, f.elem() * (g.s - j1) * g.c);
    }
  }
}

// col(rows of samples [n0, n1), r*s*c) from x, for the wide-filter gradient: one job per output row.
void im2col(const ConvGeometry& g, const Tensor& x, Form f, int n0, int n1, void* col) {
  const int64_t ow = g.out_w(), rsc = int64_t{g.r} * g.s * g.c, first = int64_t{n0} * g.out_h() * ow;
  parallel_chunks(int64_t{n1 - n0} * g.out_h(), [&](int64_t job) {
    im2col_rows(g, x, f, first + job * ow, first + (job + 1) * ow, offset_by(col, f, job * ow * rsc));
  });
}

// dx_f (samples [n0, n1), NHWC, FP32) = scatter-add of dcol, sample by sample in a fixed order.
// Serial: called inside one tile's task.
void col2im_samples(const ConvGeometry& g, const float* dcol, int64_t samples, float* dxf) {
  const int oh = g.out_h(), ow = g.out_w();
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  const int64_t sample = int64_t{g.h} * g.w * g.c;
  std::memset(dxf, 0, sizeof(float) * sample * samples);
  for (int64_t n = 0; n < samples; ++n) {
    float* dx = dxf + n * sample;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const float* src = dcol + ((n * oh + oy) * ow + ox) * rsc;
        for (int i = 0; i < g.r; ++i) {
          const int iy = oy * g.stride - g.pad + i;
          if (iy < 0 || iy >= g.h) continue;
          for (int j = 0; j < g.s; ++j) {
            const int ix = ox * g.stride - g.pad + j;
            if (ix < 0 || ix >= g.w) continue;
            const float* s = src + (int64_t{i} * g.s + j) * g.c;
            float* d = dx + (int64_t{iy} * g.w + ix) * g.c;
            for (int c = 0; c < g.c; ++c) d[c] += s[c];
          }
        }
      }
  }
}

// Runs fn(tile, task) for every tile, each task (one per thread) taking the next tile until none
// is left; task indexes its own scratch. The scratch is the same at every batch size, so the
// memory a step needs stays linear in the batch (the largest-batch prediction relies on it).
int64_t task_count() { return cpu_threads(); }
void for_each_tile(int64_t tiles, const std::function<void(int64_t tile, int64_t task)>& fn) {
  std::atomic<int64_t> next{0};
  parallel_chunks(std::min<int64_t>(task_count(), tiles), [&](int64_t task) {
    for (int64_t t = next.fetch_add(1); t < tiles; t = next.fetch_add(1)) fn(t, task);
  });
}

GemmShape forward_shape(const ConvGeometry& g, int64_t rows) {
  const int rsc = g.r * g.s * g.c;
  return {false, true, static_cast<int>(rows), g.k, rsc, rsc, rsc, g.k};
}

// y (rows, k) = im2col(x) * w^T, tile by tile; wop: the weights (k, rsc) in the kernel's form.
void forward_tiled(const ConvGeometry& g, const Tensor& x, GemmKernel kern, const void* wop, Tensor& y,
                   float* scratch) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c, rows = int64_t{g.n} * g.out_h() * g.out_w();
  const int64_t tr = tile_rows(rsc), per_task = tr * (rsc + g.k);
  const bool f32 = y.dtype() == DType::F32;
  const Form f = Form::of(kern, x.dtype());
  for_each_tile(chunk_count(rows, tr), [&](int64_t t, int64_t task) {
    const int64_t r0 = t * tr, r1 = std::min(rows, r0 + tr);
    float* col = scratch + task * per_task;
    float* out = f32 ? y.as<float>() + r0 * g.k : col + tr * rsc;
    im2col_rows(g, x, f, r0, r1, col);
    cpu::gemm_serial(kern, forward_shape(g, r1 - r0), col, wop, out);
    if (!f32) cpu::narrow(y.dtype(), out, cpu::at(y.data(), y.dtype(), r0 * g.k), (r1 - r0) * g.k);
  });
}

int64_t forward_scratch(const ConvGeometry& g) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  return task_count() * tile_rows(rsc) * (rsc + g.k);
}

// The data gradient of a stride-1 convolution is the forward convolution of dy with the filter
// flipped in space and its channel axes swapped, padded by r - 1 - pad: a gather, so it tiles
// like the forward pass instead of scattering through col2im. Only for "same" padding (3x3 pad
// 1, 1x1 pad 0), where the flipped convolution pads as little as the forward one (DCGAN's
// first 1x1 -> 4x4 layer would multiply 15 zero taps in 16), and not for a few input channels
// (an RGB image's gradient): a product with 1-3 output columns runs far below the GEMM rate.
bool backward_data_as_forward(const ConvGeometry& g) {
  return g.stride == 1 && g.r == g.s && 2 * g.pad == g.r - 1 && g.c >= 8;
}
ConvGeometry flipped(const ConvGeometry& g) {
  ConvGeometry f = g;
  f.h = g.out_h();
  f.w = g.out_w();
  f.c = g.k;
  f.k = g.c;
  f.pad = g.r - 1 - g.pad;
  return f;
}
// wt (c, r, s, k) from w (k, r, s, c) in form f: wt[c][r-1-i][s-1-j][k] = w[k][i][j][c].
void flip_weights(const ConvGeometry& g, const Tensor& w, Form f, void* wt) {
  const int64_t rs = int64_t{g.r} * g.s;
  parallel_chunks(g.k, [&](int64_t kk) {
    for (int64_t ij = 0; ij < rs; ++ij) {
      alignas(64) float row[512];
      for (int64_t c0 = 0; c0 < g.c; c0 += 512) {
        const int64_t cn = std::min<int64_t>(512, g.c - c0);
        load(f, cpu::at(w.data(), w.dtype(), (kk * rs + ij) * g.c + c0), row, cn);
        for (int64_t c = 0; c < cn; ++c) {
          const int64_t to = ((c0 + c) * rs + (rs - 1 - ij)) * g.k + kk;
          if (f.raw)
            static_cast<uint16_t*>(wt)[to] = reinterpret_cast<const uint16_t*>(row)[c];
          else
            static_cast<float*>(wt)[to] = row[c];
        }
      }
    }
  });
}

// Samples per tile of the scattering data gradient: its columns (spatial x rsc floats) fit a
// tile, at least one sample. Not capped by the batch: the scratch is then the same at every
// batch size (the largest-batch prediction fits a line to the memory of small batches).
int64_t col2im_samples_per_tile(const ConvGeometry& g) {
  const int64_t cols = int64_t{g.out_h()} * g.out_w() * g.r * g.s * g.c;
  return std::max<int64_t>(1, kTileFloats / std::max<int64_t>(1, cols));
}
GemmShape backward_data_shape(const ConvGeometry& g, int64_t rows) {
  const int rsc = g.r * g.s * g.c;
  return {false, false, static_cast<int>(rows), rsc, g.k, g.k, rsc, rsc};
}

// Whether the filter gradient tiles: each of kGroups groups of consecutive tiles sums into its
// own FP32 partial (k * rsc floats), and the partials are added in group order. Not for wide
// filters (rsc > 1024, DCGAN's deeper 4x4 layers): their partials are large and their tiles
// short, and the whole-batch product was 2.5x faster there.
bool filter_tiles(const ConvGeometry& g) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c;
  return rsc <= 1024 && kGroups * g.k * rsc <= kPartialFloats;
}
// A tile's transposed partial: col_tile^T * dy_tile (rsc x k), added to the group's sum.
GemmShape filter_tile_shape(const ConvGeometry& g, int64_t rows, bool accumulate) {
  const int rsc = g.r * g.s * g.c;
  return {true, false, rsc, g.k, static_cast<int>(rows), rsc, g.k, g.k, 1.0f, accumulate ? 1.0f : 0.0f};
}
// The wide filters' product dw (k x rsc) (+)= dy^T * col over a chunk of rows.
GemmShape filter_chunk_shape(const ConvGeometry& g, int64_t rows, bool accumulate) {
  const int rsc = g.r * g.s * g.c;
  return {true, false, g.k, rsc, static_cast<int>(rows), g.k, rsc, rsc, 1.0f, accumulate ? 1.0f : 0.0f};
}

}  // namespace

// ---- the im2col way of each convolution (cpu_conv.cpp chooses between it and oneDNN's) ----

void CpuBackend::reserve_im2col(cpu::ConvDirection d, const ConvGeometry& g, DType dt) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
  if (dt != DType::F32) scratch(kWeights, size_t(g.k) * rsc);
  if (d == cpu::ConvDirection::Forward) {
    scratch(kTiles, size_t(forward_scratch(g)));
  } else if (d == cpu::ConvDirection::BackwardData) {
    if (backward_data_as_forward(g)) {
      scratch(kWeights, size_t(g.k) * rsc);
      scratch(kTiles, size_t(forward_scratch(flipped(g))));
    } else {
      const int64_t spt = col2im_samples_per_tile(g), sample = int64_t{g.h} * g.w * g.c;
      scratch(kTiles, size_t(task_count() * (spt * spatial * (rsc + (dt == DType::F32 ? 0 : g.k)) +
                                             (dt == DType::F32 ? 0 : spt * sample))));
    }
  } else {
    if (dt != DType::F32) scratch(kAccum, size_t(g.k * rsc));
    if (filter_tiles(g)) {
      scratch(kTiles, size_t(kGroups * g.k * rsc + task_count() * tile_rows(rsc) * (rsc + g.k)));
    } else {
      const int64_t rows = std::min<int64_t>(g.n, samples_per_chunk(g)) * spatial;
      scratch(kCol, size_t(rows * rsc));
      if (dt != DType::F32) scratch(kRowsF, size_t(rows * g.k));
    }
  }
}

void CpuBackend::conv_forward_im2col(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c, rows = int64_t{g.n} * g.out_h() * g.out_w();
  const GemmKernel kern = plan_.choose(forward_shape(g, std::min(rows, tile_rows(rsc))), x.dtype());
  const Form f = Form::of(kern, x.dtype());
  float* t = w.dtype() == DType::F32 ? nullptr : scratch(kWeights, size_t(g.k) * rsc);
  const void* wop = direct(f, w, 0);
  if (!wop) {
    widen(w, 0, g.k * rsc, t);
    wop = t;
  }
  forward_tiled(g, x, kern, wop, y, scratch(kTiles, size_t(forward_scratch(g))));
}

void CpuBackend::conv_backward_data_im2col(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
  if (backward_data_as_forward(g)) {
    const ConvGeometry fg = flipped(g);
    const int64_t frows = int64_t{fg.n} * fg.out_h() * fg.out_w();
    const GemmKernel kern = plan_.choose(forward_shape(fg, std::min(frows, tile_rows(rsc))), dy.dtype());
    float* wt = scratch(kWeights, size_t(g.k) * rsc);
    flip_weights(g, w, Form::of(kern, w.dtype()), wt);
    forward_tiled(fg, dy, kern, wt, dx, scratch(kTiles, size_t(forward_scratch(fg))));
    return;
  }
  // Whole samples a tile: dcol = dy * w for the tile's samples, scattered into their dx.
  const int64_t sample = int64_t{g.h} * g.w * g.c, spt = col2im_samples_per_tile(g);
  const GemmKernel kern = plan_.choose(backward_data_shape(g, spt * spatial), dy.dtype());
  const Form f = Form::of(kern, dy.dtype());
  float* wt = w.dtype() == DType::F32 ? nullptr : scratch(kWeights, size_t(g.k) * rsc);
  const void* wop = direct(f, w, 0);
  if (!wop) {
    widen(w, 0, g.k * rsc, wt);
    wop = wt;
  }
  const bool dx_f32 = dx.dtype() == DType::F32;
  const int64_t per_task = spt * spatial * (rsc + (dy.dtype() == DType::F32 ? 0 : g.k)) + (dx_f32 ? 0 : spt * sample);
  float* scr = scratch(kTiles, size_t(task_count() * per_task));
  for_each_tile(chunk_count(g.n, spt), [&](int64_t t, int64_t task) {
    const int64_t n0 = t * spt, n1 = std::min<int64_t>(g.n, n0 + spt), rows = (n1 - n0) * spatial;
    float* dcol = scr + task * per_task;
    float* dyt = dcol + spt * spatial * rsc;
    float* dxt = dyt + (dy.dtype() == DType::F32 ? 0 : spt * spatial * g.k);
    const void* dyop = direct(f, dy, n0 * spatial * g.k);
    if (!dyop) {
      cpu::widen(dy.dtype(), cpu::at(dy.data(), dy.dtype(), n0 * spatial * g.k), dyt, rows * g.k);
      dyop = dyt;
    }
    cpu::gemm_serial(kern, backward_data_shape(g, rows), dyop, wop, dcol);
    float* dxf = dx_f32 ? dx.as<float>() + n0 * sample : dxt;
    col2im_samples(g, dcol, n1 - n0, dxf);
    if (!dx_f32) cpu::narrow(dx.dtype(), dxf, cpu::at(dx.data(), dx.dtype(), n0 * sample), (n1 - n0) * sample);
  });
}

void CpuBackend::conv_backward_filter_im2col(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                             bool accumulate) {
  const int64_t rsc = int64_t{g.r} * g.s * g.c, spatial = int64_t{g.out_h()} * g.out_w();
  float* dwf = dw.dtype() == DType::F32 ? dw.as<float>() : scratch(kAccum, size_t(g.k * rsc));
  if (dw.dtype() != DType::F32 && accumulate) widen(dw, 0, g.k * rsc, dwf);
  if (filter_tiles(g)) {
    // Group q sums its consecutive tiles into partial q, kept transposed (col_tile^T * dy_tile,
    // rsc x k: OpenBLAS runs this shape 1.4x faster than k x rsc); the partials are then added
    // in group order, so the order of the sum is fixed by the geometry.
    const int64_t rows = int64_t{g.n} * spatial, tr = tile_rows(rsc), tiles = chunk_count(rows, tr);
    const int64_t per_task = tr * (rsc + g.k), groups = kGroups;
    // One kernel for every tile (the first of a group starts its sum, the others add to it).
    const GemmKernel kern = plan_.choose(filter_tile_shape(g, std::min(rows, tr), true), x.dtype());
    const Form f = Form::of(kern, x.dtype());
    float* partial = scratch(kTiles, size_t(groups * g.k * rsc + task_count() * per_task));
    float* task_scratch = partial + groups * g.k * rsc;
    for_each_tile(groups, [&](int64_t q, int64_t task) {
      float* col = task_scratch + task * per_task;
      float* dyt = col + tr * rsc;
      float* out = partial + q * g.k * rsc;
      // (Fewer tiles than groups at tiny batches: an empty group adds zero.)
      if (q * tiles / groups == (q + 1) * tiles / groups) std::memset(out, 0, sizeof(float) * g.k * rsc);
      for (int64_t t = q * tiles / groups; t < (q + 1) * tiles / groups; ++t) {
        const int64_t r0 = t * tr, r1 = std::min(rows, r0 + tr);
        im2col_rows(g, x, f, r0, r1, col);
        const void* d = direct(f, dy, r0 * g.k);
        if (!d) {
          cpu::widen(dy.dtype(), cpu::at(dy.data(), dy.dtype(), r0 * g.k), dyt, (r1 - r0) * g.k);
          d = dyt;
        }
        cpu::gemm_serial(kern, filter_tile_shape(g, r1 - r0, t != q * tiles / groups), col, d, out);
      }
    });
    parallel_chunks(g.k, [&](int64_t kk) {
      for (int64_t i = 0; i < rsc; ++i) {
        float sum = partial[i * g.k + kk];
        for (int64_t q = 1; q < groups; ++q) sum += partial[(q * rsc + i) * g.k + kk];
        float& o = dwf[kk * rsc + i];
        o = accumulate ? o + sum : sum;
      }
    });
  } else {
    const int64_t chunk = samples_per_chunk(g);
    const GemmShape first = filter_chunk_shape(g, std::min<int64_t>(g.n, chunk) * spatial, accumulate);
    const Split sp = split_of(first);
    const GemmKernel kern = plan_.choose(part_shape(first, sp, sp.part), x.dtype());
    const Form f = Form::of(kern, x.dtype());
    bool acc = accumulate;
    for (int n0 = 0; n0 < g.n; n0 += static_cast<int>(chunk)) {
      const int n1 = static_cast<int>(std::min<int64_t>(g.n, n0 + chunk));
      const int64_t rows = int64_t{n1 - n0} * spatial;
      float* col = scratch(kCol, size_t(rows * rsc));
      float* dyt = dy.dtype() == DType::F32 ? nullptr : scratch(kRowsF, size_t(rows * g.k));
      im2col(g, x, f, n0, n1, col);
      const void* dyop = direct(f, dy, int64_t{n0} * spatial * g.k);
      if (!dyop) {
        widen(dy, int64_t{n0} * spatial * g.k, rows * g.k, dyt);
        dyop = dyt;
      }
      const GemmShape s = filter_chunk_shape(g, rows, acc);
      split_gemm(kern, f, s, split_of(s), dyop, col, dwf);
      acc = true;
    }
  }
  if (dw.dtype() != DType::F32) narrow(dwf, dw, 0, g.k * rsc);
}

}  // namespace ampgan
