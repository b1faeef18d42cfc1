// CPU backend: batch norm over all axes but the last (NHWC: per channel). Statistics and
// parameters are FP32 whatever the activations' dtype; per-channel sums are combined from
// fixed row chunks in order, so they are deterministic.
#include <cmath>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_dispatch.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan {

namespace {

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

int64_t row_grain(int64_t c) { return std::max<int64_t>(1, 16384 / c); }

// out[j] = sum over rows of f(row, j), for j < c.
template <typename F>
void channel_sums(int64_t rows, int64_t c, F f, std::vector<double>& out) {
  const int64_t grain = row_grain(c);
  const int64_t chunks = chunk_count(rows, grain);
  std::vector<double> parts(chunks * c, 0.0);
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    double* p = parts.data() + (r0 / grain) * c;
    std::vector<float> acc(c, 0.0f);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < c; ++j) acc[j] += f(r, j);
    for (int64_t j = 0; j < c; ++j) p[j] = acc[j];
  });
  out.assign(c, 0.0);
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t j = 0; j < c; ++j) out[j] += parts[k * c + j];
}

}  // namespace

void CpuBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         Tensor& running_mean, Tensor& running_var, float momentum,
                                         float eps, bool update_running, Tensor& y,
                                         Tensor& save_mean, Tensor& save_invstd) {
  const int64_t c = gamma.numel(), rows = x.numel() / c;
  check(x.dtype() == y.dtype() && x.numel() == y.numel() && x.numel() % c == 0 && rows > 1,
        "batchnorm_forward_train", "shape mismatch");
  float* mean = save_mean.as<float>();
  float* invstd = save_invstd.as<float>();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto* xs = x.as<typename S::T>();
    std::vector<double> sums;
    channel_sums(rows, c, [&](int64_t r, int64_t j) { return S::load(xs[r * c + j]); }, sums);
    for (int64_t j = 0; j < c; ++j) mean[j] = static_cast<float>(sums[j] / rows);
    channel_sums(rows, c, [&](int64_t r, int64_t j) {
      const float d = S::load(xs[r * c + j]) - mean[j];
      return d * d;
    }, sums);
    const float* g = gamma.as<float>();
    const float* b = beta.as<float>();
    for (int64_t j = 0; j < c; ++j) {
      const double var = sums[j] / rows;
      invstd[j] = static_cast<float>(1.0 / std::sqrt(var + eps));
      if (update_running) {
        float& rm = running_mean.as<float>()[j];
        float& rv = running_var.as<float>()[j];
        rm = (1.0f - momentum) * rm + momentum * mean[j];
        rv = (1.0f - momentum) * rv + momentum * static_cast<float>(var * rows / (rows - 1));
      }
    }
    auto* ys = y.as<typename S::T>();
    parallel_for(rows, row_grain(c), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < c; ++j)
          ys[r * c + j] = S::store(ew::bn_normalize(S::load(xs[r * c + j]), mean[j], invstd[j], g[j], b[j]));
    });
  });
}

void CpuBackend::batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        const Tensor& running_mean, const Tensor& running_var,
                                        float eps, Tensor& y) {
  const int64_t c = gamma.numel(), rows = x.numel() / c;
  check(x.dtype() == y.dtype() && x.numel() == y.numel(), "batchnorm_forward_eval", "shape mismatch");
  std::vector<float> invstd(c);
  for (int64_t j = 0; j < c; ++j) invstd[j] = 1.0f / std::sqrt(running_var.as<float>()[j] + eps);
  const float* mean = running_mean.as<float>();
  const float* g = gamma.as<float>();
  const float* b = beta.as<float>();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto* xs = x.as<typename S::T>();
    auto* ys = y.as<typename S::T>();
    parallel_for(rows, row_grain(c), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < c; ++j)
          ys[r * c + j] = S::store(ew::bn_normalize(S::load(xs[r * c + j]), mean[j], invstd[j], g[j], b[j]));
    });
  });
}

void CpuBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& save_mean, const Tensor& save_invstd, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta, bool accumulate) {
  const int64_t c = gamma.numel(), rows = x.numel() / c;
  check(x.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && x.numel() == dy.numel(),
        "batchnorm_backward", "shape mismatch");
  const float* mean = save_mean.as<float>();
  const float* invstd = save_invstd.as<float>();
  const float* g = gamma.as<float>();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto* xs = x.as<typename S::T>();
    const auto* dys = dy.as<typename S::T>();
    std::vector<double> sum_dy, sum_dy_xhat;
    channel_sums(rows, c, [&](int64_t r, int64_t j) { return S::load(dys[r * c + j]); }, sum_dy);
    channel_sums(rows, c, [&](int64_t r, int64_t j) {
      return S::load(dys[r * c + j]) * (S::load(xs[r * c + j]) - mean[j]) * invstd[j];
    }, sum_dy_xhat);
    std::vector<float> mean_dy(c), mean_dy_xhat(c);
    float* dg = dgamma.as<float>();
    float* db = dbeta.as<float>();
    for (int64_t j = 0; j < c; ++j) {
      mean_dy[j] = static_cast<float>(sum_dy[j] / rows);
      mean_dy_xhat[j] = static_cast<float>(sum_dy_xhat[j] / rows);
      dg[j] = static_cast<float>((accumulate ? dg[j] : 0.0) + sum_dy_xhat[j]);
      db[j] = static_cast<float>((accumulate ? db[j] : 0.0) + sum_dy[j]);
    }
    auto* dxs = dx.as<typename S::T>();
    parallel_for(rows, row_grain(c), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < c; ++j) {
          const float xhat = (S::load(xs[r * c + j]) - mean[j]) * invstd[j];
          dxs[r * c + j] = S::store(
              ew::bn_backward_dx(S::load(dys[r * c + j]), xhat, g[j], invstd[j], mean_dy[j], mean_dy_xhat[j]));
        }
    });
  });
}

}  // namespace ampgan
