// CPU backend: the class-conditioning ops (conditional batch norm's modulation, the projection
// discriminator's inner product). The CUDA versions are gpu/kernels_conditioning.cu; both use
// the arithmetic and the summation order of core/backend/conditioning.h.
#include <algorithm>
#include <vector>

#include "core/backend/conditioning.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::kTile;

namespace {
constexpr int64_t kRowGrain = 64;  // pixels per parallel chunk
}  // namespace

void CpuBackend::modulate_forward(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y) {
  const Nhwc s = check_modulate(x, scale, shift, y, "modulate_forward");
  const DType dt = x.dtype();
  const float* sc = scale.as<float>();
  const float* sh = shift.as<float>();
  parallel_for(s.rows(), kRowGrain, [&](int64_t p0, int64_t p1) {
    float buf[kTile];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / (s.h * s.w);
      for (int64_t c0 = 0; c0 < s.c; c0 += kTile) {
        const int64_t m = std::min<int64_t>(kTile, s.c - c0), at = p * s.c + c0;
        const float* xv = cpu::tile_in(dt, x.data(), at, m, buf);
        float* out = cpu::tile_out(dt, y.data(), at, buf);
        for (int64_t i = 0; i < m; ++i) out[i] = ew::modulate(xv[i], sc[n * s.c + c0 + i], sh[n * s.c + c0 + i]);
        cpu::tile_done(dt, out, y.data(), at, m);
      }
    }
  });
}

void CpuBackend::modulate_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, Tensor& dx, Tensor& dscale,
                                   Tensor& dshift) {
  const Nhwc s = check_modulate(x, scale, dscale, dx, "modulate_backward");
  check_modulate(dy, dshift, scale, dx, "modulate_backward");
  const DType dt = x.dtype();
  const float* sc = scale.as<float>();
  // One job per sample: each (n, c) sums its positions in row-major order, as the GPU's one
  // thread per (n, c) does.
  parallel_for(s.n, 1, [&](int64_t n0, int64_t n1) {
    float xb[kTile], gb[kTile], ob[kTile];
    for (int64_t n = n0; n < n1; ++n) {
      float* ds = dscale.as<float>() + n * s.c;
      float* dt_sum = dshift.as<float>() + n * s.c;
      std::fill(ds, ds + s.c, 0.0f);
      std::fill(dt_sum, dt_sum + s.c, 0.0f);
      for (int64_t p = n * s.h * s.w; p < (n + 1) * s.h * s.w; ++p)
        for (int64_t c0 = 0; c0 < s.c; c0 += kTile) {
          const int64_t m = std::min<int64_t>(kTile, s.c - c0), at = p * s.c + c0;
          const float* xv = cpu::tile_in(dt, x.data(), at, m, xb);
          const float* g = cpu::tile_in(dt, dy.data(), at, m, gb);
          float* out = cpu::tile_out(dt, dx.data(), at, ob);
          for (int64_t i = 0; i < m; ++i) {
            ds[c0 + i] += g[i] * xv[i];
            dt_sum[c0 + i] += g[i];
            out[i] = g[i] * sc[n * s.c + c0 + i];
          }
          cpu::tile_done(dt, out, dx.data(), at, m);
        }
    }
  });
}

void CpuBackend::row_dot_forward(const Tensor& a, const Tensor& b, Tensor& y) {
  const Rows r = check_row_dot(a, b, y, "row_dot_forward");
  const DType dt = a.dtype();
  parallel_for(r.n, 1, [&](int64_t n0, int64_t n1) {
    float ab[kTile], bb[kTile];
    for (int64_t n = n0; n < n1; ++n) {
      float acc = 0.0f;  // features in order, as the GPU's one thread per row
      for (int64_t f0 = 0; f0 < r.f; f0 += kTile) {
        const int64_t m = std::min<int64_t>(kTile, r.f - f0);
        const float* av = cpu::tile_in(dt, a.data(), n * r.f + f0, m, ab);
        const float* bv = cpu::tile_in(dt, b.data(), n * r.f + f0, m, bb);
        for (int64_t i = 0; i < m; ++i) acc += av[i] * bv[i];
      }
      cpu::narrow(dt, &acc, cpu::at(y.data(), dt, n), 1);
    }
  });
}

void CpuBackend::row_dot_backward(const Tensor& a, const Tensor& b, const Tensor& dy, Tensor& da, Tensor& db) {
  const Rows r = check_row_dot(a, b, dy, "row_dot_backward");
  check_row_dot(da, db, dy, "row_dot_backward");
  if (da.shape() != a.shape()) cpu::require(false, "row_dot_backward", "the gradients must have the operands' shape");
  const DType dt = a.dtype();
  std::vector<float> g(static_cast<size_t>(r.n));
  cpu::widen(dt, dy.data(), g.data(), r.n);
  parallel_for(r.n, 1, [&](int64_t n0, int64_t n1) {
    float ab[kTile], bb[kTile], oa[kTile], ob[kTile];
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t f0 = 0; f0 < r.f; f0 += kTile) {
        const int64_t m = std::min<int64_t>(kTile, r.f - f0), at = n * r.f + f0;
        const float* av = cpu::tile_in(dt, a.data(), at, m, ab);
        const float* bv = cpu::tile_in(dt, b.data(), at, m, bb);
        float* out_a = cpu::tile_out(dt, da.data(), at, oa);
        float* out_b = cpu::tile_out(dt, db.data(), at, ob);
        for (int64_t i = 0; i < m; ++i) {
          const float ga = g[n] * bv[i], gb = g[n] * av[i];  // both read before either is written
          out_a[i] = ga;
          out_b[i] = gb;
        }
        cpu::tile_done(dt, out_a, da.data(), at, m);
        cpu::tile_done(dt, out_b, db.data(), at, m);
      }
  });
}

}  // namespace ampgan
