// CPU backend: batch norm over all axes but the last (NHWC: per channel). Statistics and
// parameters are FP32 whatever the activations' dtype; per-channel sums are combined from
// fixed row chunks in order, so they are deterministic.
#include <cmath>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/cpu_convert.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace ampgan {

namespace {

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CPU backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

int64_t row_grain(int64_t c) { return std::max<int64_t>(1, 16384 / c); }

// Rows [r0, r1) of an (rows, c) tensor as FP32: the tensor's memory if FP32, else widened.
const float* rows_f32(const Tensor& t, int64_t r0, int64_t r1, int64_t c, std::vector<float>& buf) {
  if (t.dtype() == DType::F32) return t.as<float>() + r0 * c;
  buf.resize(static_cast<size_t>((r1 - r0) * c));
  cpu::widen(t.dtype(), cpu::at(t.data(), t.dtype(), r0 * c), buf.data(), (r1 - r0) * c);
  return buf.data();
}

// Per-channel sums over all rows of f(chunk_rows, n_rows, acc) accumulations, combined in order.
template <typename F>
std::vector<double> channel_sums(int64_t rows, int64_t c, F f) {
  const int64_t grain = row_grain(c);
  const int64_t chunks = chunk_count(rows, grain);
  std::vector<double> parts(chunks * c, 0.0);
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> acc(c, 0.0f);
    f(r0, r1, acc.data());
    double* p = parts.data() + (r0 / grain) * c;
    for (int64_t j = 0; j < c; ++j) p[j] = acc[j];
  });
  std::vector<double> out(c, 0.0);
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t j = 0; j < c; ++j) out[j] += parts[k * c + j];
  return out;
}

// y = normalize(x) with per-channel mean/invstd/gamma/beta, narrowed to y's dtype.
void normalize(const Tensor& x, Tensor& y, int64_t rows, int64_t c, const float* mean, const float* invstd,
               const float* g, const float* b) {
  parallel_for(rows, row_grain(c), [&](int64_t r0, int64_t r1) {
    std::vector<float> buf, out(static_cast<size_t>((r1 - r0) * c));
    const float* xs = rows_f32(x, r0, r1, c, buf);
    for (int64_t r = 0; r < r1 - r0; ++r)
      for (int64_t j = 0; j < c; ++j) out[r * c + j] = ew::bn_normalize(xs[r * c + j], mean[j], invstd[j], g[j], b[j]);
    cpu::narrow(y.dtype(), out.data(), cpu::at(y.data(), y.dtype(), r0 * c), (r1 - r0) * c);
  });
}

}  // namespace

void CpuBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                                         Tensor& running_var, float momentum, float eps, bool update_running, Tensor& y,
                                         Tensor& save_mean, Tensor& save_invstd) {
  const int64_t c = gamma.numel(), rows = x.numel() / c;
  check(x.dtype() == y.dtype() && x.numel() == y.numel() && x.numel() % c == 0 && rows > 1, "batchnorm_forward_train",
        "shape mismatch");
  float* mean = save_mean.as<float>();
  float* invstd = save_invstd.as<float>();
  const std::vector<double> sums = channel_sums(rows, c, [&](int64_t r0, int64_t r1, float* acc) {
    std::vector<float> buf;
    const float* xs = rows_f32(x, r0, r1, c, buf);
    for (int64_t r = 0; r < r1 - r0; ++r)
      for (int64_t j = 0; j < c; ++j) acc[j] += xs[r * c + j];
  });
  for (int64_t j = 0; j < c; ++j) mean[j] = static_cast<float>(sums[j] / rows);
  const std::vector<double> sq = channel_sums(rows, c, [&](int64_t r0, int64_t r1, float* acc) {
    std::vector<float> buf;
    const float* xs = rows_f32(x, r0, r1, c, buf);
    for (int64_t r = 0; r < r1 - r0; ++r)
      for (int64_t j = 0; j < c; ++j) {
        const float d = xs[r * c + j] - mean[j];
        acc[j] += d * d;
      }
  });
  for (int64_t j = 0; j < c; ++j) {
    const double var = sq[j] / rows;
    invstd[j] = static_cast<float>(1.0 / std::sqrt(var + eps));
    if (update_running) {
      float& rm = running_mean.as<float>()[j];
      float& rv = running_var.as<float>()[j];
      rm = (1.0f - momentum) * rm + momentum * mean[j];
      rv = (1.0f - momentum) * rv + momentum * static_cast<float>(var * rows / (rows - 1));
    }
  }
  normalize(x, y, rows, c, mean, invstd, gamma.as<float>(), beta.as<float>());
}

void CpuBackend::batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                          const Tensor& scalars, const std::vector<int>& skip_slots) {
  check(running.size() == staged.size() && scalars.dtype() == DType::F32, "batchnorm_commit_running",
        "pairs of FP32 tensors and FP32 scalars expected");
  bool skip = false;
  for (int s : skip_slots) {
    check(s >= 0 && s < scalars.numel(), "batchnorm_commit_running", "slot out of range");
    skip |= scalars.as<float>()[s] != 0.0f;
  }
  for (size_t i = 0; i < running.size(); ++i) {
    check(
        running[i].dtype() == DType::F32 && staged[i].dtype() == DType::F32 && running[i].numel() == staged[i].numel(),
        "batchnorm_commit_running", "pairs of FP32 tensors of equal size expected");
    float* r = running[i].as<float>();
    float* st = staged[i].as<float>();
    for (int64_t j = 0; j < running[i].numel(); ++j) {
      if (skip)
        st[j] = r[j];
      else
        r[j] = st[j];
    }
  }
}

void CpuBackend::batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  const int64_t c = gamma.numel(), rows = x.numel() / c;
  check(x.dtype() == y.dtype() && x.numel() == y.numel(), "batchnorm_forward_eval", "shape mismatch");
  std::vector<float> invstd(c);
  for (int64_t j = 0; j < c; ++j) invstd[j] = 1.0f / std::sqrt(running_var.as<float>()[j] + eps);
  normalize(x, y, rows, c, running_mean.as<float>(), invstd.data(), gamma.as<float>(), beta.as<float>());
}

void CpuBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& save_mean,
                                    const Tensor& save_invstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                                    bool accumulate) {
  const int64_t c = gamma.numel(), rows = x.numel() / c;
  check(x.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && x.numel() == dy.numel(), "batchnorm_backward",
        "shape mismatch");
  const float* mean = save_mean.as<float>();
  const float* invstd = save_invstd.as<float>();
  const float* g = gamma.as<float>();
  // sums[0..c) = sum dy, sums[c..2c) = sum dy * xhat
  const std::vector<double> sums = channel_sums(rows, 2 * c, [&](int64_t r0, int64_t r1, float* acc) {
    std::vector<float> xb, db;
    const float* xs = rows_f32(x, r0, r1, c, xb);
    const float* ds = rows_f32(dy, r0, r1, c, db);
    for (int64_t r = 0; r < r1 - r0; ++r)
      for (int64_t j = 0; j < c; ++j) {
        const float d = ds[r * c + j];
        acc[j] += d;
        acc[c + j] += d * (xs[r * c + j] - mean[j]) * invstd[j];
      }
  });
  std::vector<float> mean_dy(c), mean_dy_xhat(c);
  float* dg = dgamma.as<float>();
  float* dbt = dbeta.as<float>();
  for (int64_t j = 0; j < c; ++j) {
    mean_dy[j] = static_cast<float>(sums[j] / rows);
    mean_dy_xhat[j] = static_cast<float>(sums[c + j] / rows);
    dg[j] = static_cast<float>((accumulate ? dg[j] : 0.0) + sums[c + j]);
    dbt[j] = static_cast<float>((accumulate ? dbt[j] : 0.0) + sums[j]);
  }
  parallel_for(rows, row_grain(c), [&](int64_t r0, int64_t r1) {
    std::vector<float> xb, db, out(static_cast<size_t>((r1 - r0) * c));
    const float* xs = rows_f32(x, r0, r1, c, xb);
    const float* ds = rows_f32(dy, r0, r1, c, db);
    for (int64_t r = 0; r < r1 - r0; ++r)
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (xs[r * c + j] - mean[j]) * invstd[j];
        out[r * c + j] = ew::bn_backward_dx(ds[r * c + j], xhat, g[j], invstd[j], mean_dy[j], mean_dy_xhat[j]);
      }
    cpu::narrow(dx.dtype(), out.data(), cpu::at(dx.data(), dx.dtype(), r0 * c), (r1 - r0) * c);
  });
}

}  // namespace ampgan
