#include "core/backend/profiling_backend.h"

namespace ampgan {

const char* op_family_name(OpFamily f) {
  switch (f) {
    case OpFamily::Conv:
      return "conv";
    case OpFamily::Gemm:
      return "gemm";
    case OpFamily::BatchNorm:
      return "batch norm";
    case OpFamily::Elementwise:
      return "element-wise";
    case OpFamily::Loss:
      return "loss";
    case OpFamily::AmpPasses:
      return "AMP passes";
    case OpFamily::Optimizer:
      return "optimizer";
    case OpFamily::Data:
      return "data";
    case OpFamily::Count:
      break;
  }
  return "?";
}

double OpProfile::total_seconds() const {
  double s = 0;
  for (double v : seconds) s += v;
  return s;
}

template <typename Op>
void ProfilingBackend::timed(OpFamily family, double flops, Op&& op) {
  const auto start = std::chrono::steady_clock::now();
  op();
  inner_.synchronize();
  const size_t i = static_cast<size_t>(family);
  profile_.seconds[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  profile_.calls[i] += 1;
  profile_.matmul_flops += flops;
}

Tensor ProfilingBackend::empty(Shape shape, DType dtype, MemCategory category) {
  return inner_.empty(shape, dtype, category);
}
void ProfilingBackend::upload(Tensor& dst, const void* host, size_t nbytes) {
  timed(OpFamily::Data, 0, [&] { inner_.upload(dst, host, nbytes); });
}
void ProfilingBackend::download(const Tensor& src, void* host, size_t nbytes) {
  timed(OpFamily::Data, 0, [&] { inner_.download(src, host, nbytes); });
}
std::unique_ptr<HostReadback> ProfilingBackend::read_async(const Tensor& src_f32) {
  std::unique_ptr<HostReadback> r;
  timed(OpFamily::Data, 0, [&] { r = inner_.read_async(src_f32); });
  return r;
}

void ProfilingBackend::fill(Tensor& t, float value) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.fill(t, value); });
}
void ProfilingBackend::copy(const Tensor& src, Tensor& dst) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.copy(src, dst); });
}
void ProfilingBackend::cast(const Tensor& src, Tensor& dst) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.cast(src, dst); });
}
void ProfilingBackend::fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter, float stddev) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.fill_normal(t, seed, stream, counter, stddev); });
}
void ProfilingBackend::copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.copy_scalar(src, src_index, dst, dst_index); });
}
void ProfilingBackend::add_scalar(Tensor& dst, int index, float value) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.add_scalar(dst, index, value); });
}
void ProfilingBackend::count_increment(Tensor& count) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.count_increment(count); });
}

void ProfilingBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a,
                            const Tensor& b, float beta, Tensor& c) {
  timed(OpFamily::Gemm, 2.0 * m * n * k, [&] { inner_.gemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, c); });
}
void ProfilingBackend::conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  timed(OpFamily::Conv, g.flops(), [&] { inner_.conv2d_forward(g, x, w, y); });
}
void ProfilingBackend::conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) {
  timed(OpFamily::Conv, g.flops(), [&] { inner_.conv2d_backward_data(g, dy, w, dx); });
}
void ProfilingBackend::conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                              bool accumulate) {
  timed(OpFamily::Conv, g.flops(), [&] { inner_.conv2d_backward_filter(g, x, dy, dw, accumulate); });
}
void ProfilingBackend::bias_add(Tensor& y, const Tensor& b) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.bias_add(y, b); });
}
void ProfilingBackend::bias_backward(const Tensor& dy, Tensor& db, bool accumulate) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.bias_backward(dy, db, accumulate); });
}

void ProfilingBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                               Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                                               bool update_running, Tensor& y, Tensor& save_mean, Tensor& save_invstd) {
  timed(OpFamily::BatchNorm, 0, [&] {
    inner_.batchnorm_forward_train(x, gamma, beta, running_mean, running_var, momentum, eps, update_running, y,
                                   save_mean, save_invstd);
  });
}
void ProfilingBackend::batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                              const Tensor& running_mean, const Tensor& running_var, float eps,
                                              Tensor& y) {
  timed(OpFamily::BatchNorm, 0,
        [&] { inner_.batchnorm_forward_eval(x, gamma, beta, running_mean, running_var, eps, y); });
}
void ProfilingBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                          const Tensor& save_mean, const Tensor& save_invstd, Tensor& dx,
                                          Tensor& dgamma, Tensor& dbeta, bool accumulate) {
  timed(OpFamily::BatchNorm, 0,
        [&] { inner_.batchnorm_backward(x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta, accumulate); });
}

void ProfilingBackend::batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                                const Tensor& scalars, const std::vector<int>& skip_slots) {
  timed(OpFamily::BatchNorm, 0, [&] { inner_.batchnorm_commit_running(running, staged, scalars, skip_slots); });
}

void ProfilingBackend::activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.activation_forward(act, alpha, x, y); });
}
void ProfilingBackend::activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.activation_backward(act, alpha, y, dy, dx); });
}

void ProfilingBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.add(a, b, y); });
}
void ProfilingBackend::upsample2x_forward(const Tensor& x, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.upsample2x_forward(x, y); });
}
void ProfilingBackend::upsample2x_backward(const Tensor& dy, Tensor& dx) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.upsample2x_backward(dy, dx); });
}
void ProfilingBackend::avgpool2x_forward(const Tensor& x, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.avgpool2x_forward(x, y); });
}
void ProfilingBackend::avgpool2x_backward(const Tensor& dy, Tensor& dx) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.avgpool2x_backward(dy, dx); });
}
void ProfilingBackend::global_sum_pool_forward(const Tensor& x, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.global_sum_pool_forward(x, y); });
}
void ProfilingBackend::global_sum_pool_backward(const Tensor& dy, Tensor& dx) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.global_sum_pool_backward(dy, dx); });
}
void ProfilingBackend::modulate_forward(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.modulate_forward(x, scale, shift, y); });
}
void ProfilingBackend::modulate_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, Tensor& dx,
                                         Tensor& dscale, Tensor& dshift) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.modulate_backward(x, dy, scale, dx, dscale, dshift); });
}
void ProfilingBackend::row_dot_forward(const Tensor& a, const Tensor& b, Tensor& y) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.row_dot_forward(a, b, y); });
}
void ProfilingBackend::row_dot_backward(const Tensor& a, const Tensor& b, const Tensor& dy, Tensor& da, Tensor& db) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.row_dot_backward(a, b, dy, da, db); });
}

void ProfilingBackend::spectral_norm_power_iteration(const Tensor& w, Tensor& u, Tensor& v) {
  timed(OpFamily::Gemm, 4.0 * static_cast<double>(w.numel()), [&] { inner_.spectral_norm_power_iteration(w, u, v); });
}
void ProfilingBackend::spectral_norm_forward(const Tensor& w, const Tensor& u, const Tensor& v, Tensor& sigma,
                                             Tensor& w_sn) {
  timed(OpFamily::Gemm, 2.0 * static_cast<double>(w.numel()),
        [&] { inner_.spectral_norm_forward(w, u, v, sigma, w_sn); });
}
void ProfilingBackend::spectral_norm_backward(const Tensor& g, const Tensor& w, const Tensor& u, const Tensor& v,
                                              const Tensor& sigma, Tensor& dw, bool accumulate) {
  timed(OpFamily::Gemm, 2.0 * static_cast<double>(w.numel()),
        [&] { inner_.spectral_norm_backward(g, w, u, v, sigma, dw, accumulate); });
}

void ProfilingBackend::gan_loss(LossKind kind, LossRole role, const Tensor& logits, const Tensor& scaler_state,
                                Tensor& dlogits, Tensor& scalars, int loss_slot, int prob_slot) {
  timed(OpFamily::Loss, 0,
        [&] { inner_.gan_loss(kind, role, logits, scaler_state, dlogits, scalars, loss_slot, prob_slot); });
}
void ProfilingBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits,
                                             Tensor& scalars, int loss_slot, int correct_slot) {
  timed(OpFamily::Loss, 0,
        [&] { inner_.softmax_cross_entropy(logits, labels, dlogits, scalars, loss_slot, correct_slot); });
}

void ProfilingBackend::grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state, Tensor& scalars,
                                  const GradStatSlots& slots) {
  timed(OpFamily::AmpPasses, 0, [&] { inner_.grad_stats(grads, scaler_state, scalars, slots); });
}
void ProfilingBackend::grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) {
  timed(OpFamily::AmpPasses, 0, [&] { inner_.grad_histogram(grads, hist); });
}

void ProfilingBackend::clamp_forward(const Tensor& x, Tensor& y, float c) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.clamp_forward(x, y, c); });
}

void ProfilingBackend::clamp_backward(const Tensor& x, const Tensor& dy, Tensor& dx, float c) {
  timed(OpFamily::Elementwise, 0, [&] { inner_.clamp_backward(x, dy, dx, c); });
}

void ProfilingBackend::nan_to_num(const std::vector<Tensor>& grads, float bound, Tensor& scalars, int count_slot,
                                  int found_inf_slot) {
  timed(OpFamily::AmpPasses, 0, [&] { inner_.nan_to_num(grads, bound, scalars, count_slot, found_inf_slot); });
}
void ProfilingBackend::adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg, Tensor& step_count,
                                 const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) {
  timed(OpFamily::Optimizer, 0,
        [&] { inner_.adam_step(params, cfg, step_count, scaler_state, scalars, found_inf_slot); });
}
void ProfilingBackend::ema_update(const std::vector<Tensor>& shadow, const std::vector<Tensor>& params, float decay,
                                  float rampup, const Tensor& step_count, const Tensor& scalars, int found_inf_slot) {
  timed(OpFamily::Optimizer, 0,
        [&] { inner_.ema_update(shadow, params, decay, rampup, step_count, scalars, found_inf_slot); });
}
void ProfilingBackend::scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg, const Tensor& scalars,
                                     const std::vector<int>& found_inf_slots) {
  timed(OpFamily::AmpPasses, 0, [&] { inner_.scaler_update(scaler_state, cfg, scalars, found_inf_slots); });
}

}  // namespace ampgan
