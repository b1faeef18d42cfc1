// A Backend that forwards every op to another one and times it by op family, for
// `ampgan bench --profile`: where a step's time goes (convolutions, matrix products, batch
// norm, element-wise passes, losses, the AMP passes, the optimizer, data transfers).
//
// Each op is followed by synchronize(), so on a GPU the time is the op's device time plus one
// launch; that is why profiling runs eagerly (no graph capture) and in its own pass, never in
// the timed one. On the CPU every op is synchronous already and the timing costs ~50 ns a call.
#pragma once

#include <array>
#include <chrono>

#include "core/backend/backend.h"

namespace ampgan {

enum class OpFamily : uint8_t { Conv, Gemm, BatchNorm, Elementwise, Loss, AmpPasses, Optimizer, Data, Count };
constexpr size_t kOpFamilies = static_cast<size_t>(OpFamily::Count);
const char* op_family_name(OpFamily f);  // "conv", "gemm", "batch norm", ...

struct OpProfile {
  std::array<double, kOpFamilies> seconds{};
  std::array<int64_t, kOpFamilies> calls{};
  double matmul_flops = 0;  // useful FLOPs of the convolutions and matrix products (2 per MAC)
  double total_seconds() const;
};

class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(Backend& inner) : inner_(inner) {}

  const OpProfile& profile() const { return profile_; }
  void reset_profile() { profile_ = {}; }
  Backend& inner() { return inner_; }

  DeviceKind kind() const override { return inner_.kind(); }
  std::string name() const override { return inner_.name(); }
  void set_allow_tf32(bool allow) override { inner_.set_allow_tf32(allow); }
  void set_deterministic(bool on) override { inner_.set_deterministic(on); }
  void set_cpu_kernels(CpuKernels mode) override { inner_.set_cpu_kernels(mode); }
  std::vector<KernelChoice> kernel_choices() const override { return inner_.kernel_choices(); }
  void reuse_kernel_choices(const std::vector<KernelChoice>& r) override { inner_.reuse_kernel_choices(r); }

  Tensor empty(Shape shape, DType dtype, MemCategory category) override;
  void upload(Tensor& dst, const void* host, size_t nbytes) override;
  void download(const Tensor& src, void* host, size_t nbytes) override;
  std::unique_ptr<HostReadback> read_async(const Tensor& src_f32) override;
  void synchronize() override { inner_.synchronize(); }

  void fill(Tensor& t, float value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void cast(const Tensor& src, Tensor& dst) override;
  void fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter, float stddev) override;
  void copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) override;
  void add_scalar(Tensor& dst, int index, float value) override;
  void count_increment(Tensor& count) override;

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a, const Tensor& b, float beta,
            Tensor& c) override;
  void conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) override;
  void conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) override;
  void conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                              bool accumulate) override;
  void bias_add(Tensor& y, const Tensor& b) override;
  void bias_backward(const Tensor& dy, Tensor& db, bool accumulate) override;

  void batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                               Tensor& running_var, float momentum, float eps, bool update_running, Tensor& y,
                               Tensor& save_mean, Tensor& save_invstd) override;
  void batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, float eps, Tensor& y) override;
  void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& save_mean,
                          const Tensor& save_invstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                          bool accumulate) override;
  void batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                const Tensor& scalars, const std::vector<int>& skip_slots) override;

  void activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) override;
  void activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) override;

  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void upsample2x_forward(const Tensor& x, Tensor& y) override;
  void upsample2x_backward(const Tensor& dy, Tensor& dx) override;
  void avgpool2x_forward(const Tensor& x, Tensor& y) override;
  void avgpool2x_backward(const Tensor& dy, Tensor& dx) override;
  void global_sum_pool_forward(const Tensor& x, Tensor& y) override;
  void global_sum_pool_backward(const Tensor& dy, Tensor& dx) override;
  void modulate_forward(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y) override;
  void modulate_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, Tensor& dx, Tensor& dscale,
                         Tensor& dshift) override;
  void row_dot_forward(const Tensor& a, const Tensor& b, Tensor& y) override;
  void row_dot_backward(const Tensor& a, const Tensor& b, const Tensor& dy, Tensor& da, Tensor& db) override;
  void spectral_norm_power_iteration(const Tensor& w, Tensor& u, Tensor& v) override;
  void spectral_norm_forward(const Tensor& w, const Tensor& u, const Tensor& v, Tensor& sigma, Tensor& w_sn) override;
  void spectral_norm_backward(const Tensor& g, const Tensor& w, const Tensor& u, const Tensor& v, const Tensor& sigma,
                              Tensor& dw, bool accumulate) override;

  void gan_loss(LossKind kind, LossRole role, const Tensor& logits, const Tensor& scaler_state, Tensor& dlogits,
                Tensor& scalars, int loss_slot, int prob_slot) override;
  void softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits, Tensor& scalars,
                             int loss_slot, int correct_slot) override;

  void grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state, Tensor& scalars,
                  const GradStatSlots& slots) override;
  void grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) override;
  void clamp_forward(const Tensor& x, Tensor& y, float c) override;
  void clamp_backward(const Tensor& x, const Tensor& dy, Tensor& dx, float c) override;
  void nan_to_num(const std::vector<Tensor>& grads, float bound, Tensor& scalars, int count_slot,
                  int found_inf_slot) override;
  void ema_update(const std::vector<Tensor>& shadow, const std::vector<Tensor>& params, float decay, float rampup,
                  const Tensor& step_count, const Tensor& scalars, int found_inf_slot) override;
  void adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg, Tensor& step_count,
                 const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) override;
  void scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg, const Tensor& scalars,
                     const std::vector<int>& found_inf_slots) override;
  // No capture: every op must be timed on its own.

 private:
  // Runs op, waits for the device, adds the time to family.
  template <typename Op>
  void timed(OpFamily family, double flops, Op&& op);

  Backend& inner_;
  OpProfile profile_;
};

}  // namespace ampgan
