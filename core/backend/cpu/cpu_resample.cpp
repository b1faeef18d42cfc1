// CPU backend: residual sums and the ResNet GAN's resampling ops (nearest-neighbour x2, 2x2
// average pooling, global sum pooling). The CUDA versions are gpu/kernels_resample.cu; both use
// the arithmetic of core/backend/resample.h.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/backend/resample.h"
#include "core/common/parallel.h"

namespace ampgan {

using cpu::kGrain;
using cpu::kTile;
using cpu::tiles;

namespace {
constexpr int64_t kRowGrain = 64;  // output rows (pixels) per parallel chunk
}  // namespace

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_add(a, b, y);
  const DType dt = y.dtype();
  parallel_for(y.numel(), kGrain, [&](int64_t i0, int64_t i1) {
    float bb[kTile];
    tiles(i0, i1, [&](int64_t t, int64_t n, float* buf) {
      const float* av = cpu::tile_in(dt, a.data(), t, n, buf);
      const float* bv = cpu::tile_in(dt, b.data(), t, n, bb);
      float* out = cpu::tile_out(dt, y.data(), t, buf);
      for (int64_t i = 0; i < n; ++i) out[i] = av[i] + bv[i];
      cpu::tile_done(dt, out, y.data(), t, n);
    });
  });
}

// big (n, 2h, 2w, c) = each pixel of small (n, h, w, c) spread over its 2x2 block: copied bit
// for bit (upsampling's forward pass), or a quarter of it, rounded once (average pooling's
// backward pass). One job per row of big. Values are converted a tile of channels at a time
// (cpu_convert's vectorised F16C / AVX2 paths), never one by one: element-wise FP16 conversion
// in software made these ops 4-6x slower in FP16 than in BF16.
template <bool kQuarter>
void spread_blocks(const Nhwc& s, const Tensor& small, Tensor& big) {
  const DType dt = big.dtype();
  const size_t es = dtype_size(dt);
  // Pixels converted together: a ResNet's pixels are 16-64 channels, and a conversion call per
  // pixel cost more than the arithmetic.
  const int64_t span = s.c >= kTile ? 1 : kTile / s.c;
  parallel_for(s.n * 2 * s.h, 4, [&](int64_t r0, int64_t r1) {
    float buf[kTile], wide[2 * kTile];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / (2 * s.h), oy = r % (2 * s.h);
      const int64_t in = ((n * s.h + oy / 2) * s.w) * s.c, out = r * 2 * s.w * s.c;
      if (!kQuarter) {
        for (int64_t ox = 0; ox < 2 * s.w; ++ox)
          std::memcpy(cpu::at(big.data(), dt, out + ox * s.c), cpu::at(small.data(), dt, in + (ox / 2) * s.c),
                      es * s.c);
        continue;
      }
      if (s.c < kTile) {
        for (int64_t x0 = 0; x0 < s.w; x0 += span) {
          const int64_t px = std::min(span, s.w - x0), m = px * s.c;
          cpu::widen(dt, cpu::at(small.data(), dt, in + x0 * s.c), buf, m);
          for (int64_t i = 0; i < px; ++i)
            for (int64_t j = 0; j < s.c; ++j)
              wide[2 * i * s.c + j] = wide[(2 * i + 1) * s.c + j] = buf[i * s.c + j] * 0.25f;
          cpu::narrow(dt, wide, cpu::at(big.data(), dt, out + 2 * x0 * s.c), 2 * m);
        }
        continue;
      }
      for (int64_t ox = 0; ox < 2 * s.w; ++ox) {
        const void* src = cpu::at(small.data(), dt, in + (ox / 2) * s.c);
        void* dst = cpu::at(big.data(), dt, out + ox * s.c);
        for (int64_t c0 = 0; c0 < s.c; c0 += kTile) {
          const int64_t m = std::min<int64_t>(kTile, s.c - c0);
          cpu::widen(dt, cpu::at(src, dt, c0), buf, m);
          for (int64_t i = 0; i < m; ++i) buf[i] *= 0.25f;
          cpu::narrow(dt, buf, cpu::at(dst, dt, c0), m);
        }
      }
    }
  });
}

void CpuBackend::upsample2x_forward(const Tensor& x, Tensor& y) {
  spread_blocks<false>(check_resample2x(y, x, "upsample2x_forward"), x, y);
}

// small (n, h, w, c) = the sum (or mean) of each 2x2 block of big (n, 2h, 2w, c), per channel,
// in the order of ew::sum4: upsampling's backward pass and average pooling's forward pass.
template <bool kMean>
void combine_blocks(const Nhwc& s, const Tensor& big, Tensor& small) {
  const DType dt = small.dtype();
  const int64_t row = 2 * s.w * s.c;  // one row of big
  if (s.c < kTile) {
    // A run of `span` output pixels at a time: their two rows of big widened in two calls
    // instead of four per pixel (see spread_blocks); the same sums in the same order.
    const int64_t span = kTile / s.c;
    parallel_for(s.n * s.h, std::max<int64_t>(1, kRowGrain / std::max<int64_t>(1, s.w)), [&](int64_t q0, int64_t q1) {
      float top[2 * kTile], bottom[2 * kTile], res[kTile];
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t n = q / s.h, y = q % s.h, b0 = (n * 2 * s.h + 2 * y) * row;
        for (int64_t x0 = 0; x0 < s.w; x0 += span) {
          const int64_t px = std::min(span, s.w - x0), m = px * s.c;
          cpu::widen(dt, cpu::at(big.data(), dt, b0 + 2 * x0 * s.c), top, 2 * m);
          cpu::widen(dt, cpu::at(big.data(), dt, b0 + row + 2 * x0 * s.c), bottom, 2 * m);
          for (int64_t i = 0; i < px; ++i)
            for (int64_t j = 0; j < s.c; ++j) {
              const int64_t l = 2 * i * s.c + j, r = l + s.c;
              res[i * s.c + j] = kMean ? ew::mean4(top[l], top[r], bottom[l], bottom[r])
                                       : ew::sum4(top[l], top[r], bottom[l], bottom[r]);
            }
          cpu::narrow(dt, res, cpu::at(small.data(), dt, (q * s.w + x0) * s.c), m);
        }
      }
    });
    return;
  }
  parallel_for(s.rows(), kRowGrain, [&](int64_t p0, int64_t p1) {
    float v[4][kTile];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / (s.h * s.w), yx = p % (s.h * s.w), y = yx / s.w, x = yx % s.w;
      const int64_t b00 = ((n * 2 * s.h + 2 * y) * 2 * s.w + 2 * x) * s.c;
      const int64_t corner[4] = {b00, b00 + s.c, b00 + row, b00 + row + s.c};
      for (int64_t c0 = 0; c0 < s.c; c0 += kTile) {
        const int64_t m = std::min<int64_t>(kTile, s.c - c0);
        for (int q = 0; q < 4; ++q) cpu::widen(dt, cpu::at(big.data(), dt, corner[q] + c0), v[q], m);
        for (int64_t i = 0; i < m; ++i)
          v[0][i] =
              kMean ? ew::mean4(v[0][i], v[1][i], v[2][i], v[3][i]) : ew::sum4(v[0][i], v[1][i], v[2][i], v[3][i]);
        cpu::narrow(dt, v[0], cpu::at(small.data(), dt, p * s.c + c0), m);
      }
    }
  });
}

void CpuBackend::upsample2x_backward(const Tensor& dy, Tensor& dx) {
  combine_blocks<false>(check_resample2x(dy, dx, "upsample2x_backward"), dy, dx);
}

void CpuBackend::avgpool2x_forward(const Tensor& x, Tensor& y) {
  combine_blocks<true>(check_resample2x(x, y, "avgpool2x_forward"), x, y);
}

void CpuBackend::avgpool2x_backward(const Tensor& dy, Tensor& dx) {
  spread_blocks<true>(check_resample2x(dx, dy, "avgpool2x_backward"), dy, dx);
}

void CpuBackend::global_sum_pool_forward(const Tensor& x, Tensor& y) {
  const Nhwc s = check_sum_pool(x, y, "global_sum_pool_forward");
  const DType dt = x.dtype();
  parallel_for(s.n, 1, [&](int64_t n0, int64_t n1) {
    std::vector<float> acc(static_cast<size_t>(s.c));
    float buf[kTile];
    for (int64_t n = n0; n < n1; ++n) {
      // Each channel sums the positions in row-major order, as the GPU's one thread per (n, c).
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t p = 0; p < s.h * s.w; ++p)
        for (int64_t c0 = 0; c0 < s.c; c0 += kTile) {
          const int64_t m = std::min<int64_t>(kTile, s.c - c0);
          cpu::widen(dt, cpu::at(x.data(), dt, (n * s.h * s.w + p) * s.c + c0), buf, m);
          for (int64_t i = 0; i < m; ++i) acc[c0 + i] += buf[i];
        }
      cpu::narrow(dt, acc.data(), cpu::at(y.data(), dt, n * s.c), s.c);
    }
  });
}

void CpuBackend::global_sum_pool_backward(const Tensor& dy, Tensor& dx) {
  const Nhwc s = check_sum_pool(dx, dy, "global_sum_pool_backward");
  dispatch_dtype(dx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::T;
    const T* g = dy.as<T>();
    T* out = dx.as<T>();
    parallel_for(s.rows(), kRowGrain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* src = g + (p / (s.h * s.w)) * s.c;
        for (int64_t ch = 0; ch < s.c; ++ch) out[p * s.c + ch] = src[ch];
      }
    });
  });
}

}  // namespace ampgan
