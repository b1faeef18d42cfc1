// CPU backend: residual sums and the ResNet GAN's resampling ops (nearest-neighbour x2, 2x2
// average pooling, global sum pooling). The CUDA versions are gpu/kernels_resample.cu; both use
// the arithmetic of core/backend/resample.h.
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/backend/resample.h"
#include "core/common/parallel.h"

namespace ampgan {

namespace {
constexpr int64_t kRowGrain = 64;  // output rows (pixels) per parallel chunk
}  // namespace

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_add(a, b, y);
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    const T* pa = a.as<T>();
    const T* pb = b.as<T>();
    T* py = y.as<T>();
    parallel_for(y.numel(), int64_t{1} << 15, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) py[i] = S::store(S::load(pa[i]) + S::load(pb[i]));
    });
  });
}

// big (n, 2h, 2w, c) = each pixel of small (n, h, w, c) spread over its 2x2 block: copied bit
// for bit (upsampling's forward pass), or a quarter of it, rounded once (average pooling's
// backward pass). One job per row of big.
template <bool kQuarter>
void spread_blocks(const Nhwc& s, const Tensor& small, Tensor& big) {
  dispatch_dtype(big.dtype(), [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    const T* src = small.as<T>();
    T* dst = big.as<T>();
    parallel_for(s.n * 2 * s.h, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / (2 * s.h), oy = r % (2 * s.h);
        const T* in = src + ((n * s.h + oy / 2) * s.w) * s.c;
        T* out = dst + r * 2 * s.w * s.c;
        for (int64_t ox = 0; ox < 2 * s.w; ++ox)
          for (int64_t ch = 0; ch < s.c; ++ch) {
            const T v = in[(ox / 2) * s.c + ch];
            out[ox * s.c + ch] = kQuarter ? S::store(S::load(v) * 0.25f) : v;
          }
      }
    });
  });
}

void CpuBackend::upsample2x_forward(const Tensor& x, Tensor& y) {
  spread_blocks<false>(check_resample2x(y, x, "upsample2x_forward"), x, y);
}

// small (n, h, w, c) = the sum (or mean) of each 2x2 block of big (n, 2h, 2w, c), per channel,
// in the order of ew::sum4: upsampling's backward pass and average pooling's forward pass.
template <bool kMean>
void combine_blocks(const Nhwc& s, const Tensor& big, Tensor& small) {
  dispatch_dtype(small.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const typename S::T* in = big.as<typename S::T>();
    typename S::T* out = small.as<typename S::T>();
    parallel_for(s.rows(), kRowGrain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / (s.h * s.w), yx = p % (s.h * s.w), y = yx / s.w, x = yx % s.w;
        const int64_t row = 2 * s.w * s.c;  // one row of big
        const typename S::T* b00 = in + ((n * 2 * s.h + 2 * y) * 2 * s.w + 2 * x) * s.c;
        for (int64_t ch = 0; ch < s.c; ++ch) {
          const float v00 = S::load(b00[ch]), v01 = S::load(b00[s.c + ch]);
          const float v10 = S::load(b00[row + ch]), v11 = S::load(b00[row + s.c + ch]);
          out[p * s.c + ch] = S::store(kMean ? ew::mean4(v00, v01, v10, v11) : ew::sum4(v00, v01, v10, v11));
        }
      }
    });
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
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    const T* in = x.as<T>();
    T* out = y.as<T>();
    parallel_for(s.n, 1, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t ch = 0; ch < s.c; ++ch) {
          float acc = 0.0f;  // positions in row-major order, as the GPU's one thread per (n, c)
          for (int64_t p = 0; p < s.h * s.w; ++p) acc += S::load(in[(n * s.h * s.w + p) * s.c + ch]);
          out[n * s.c + ch] = S::store(acc);
        }
    });
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
