// The CPU backend: the reference implementation of every Backend op, and the default where
// there is no GPU. Half-precision tensors are stored as real 16-bit values and each op rounds
// where a GPU would (half in, FP32 accumulate, half out), so loss scaling, underflow and
// overflow behave as on a GPU. Matrix products go through OpenBLAS or oneDNN, whichever its
// KernelPlan measured faster for each shape (cpu_kernel_plan.h); everything runs on the thread
// pool of core/common/parallel.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_conv_onednn.h"
#include "core/backend/cpu/cpu_kernel_plan.h"

namespace ampgan {

// Not final: tests derive from it to plant faults (an overflow in a chosen layer's gradient).
class CpuBackend : public Backend, private Allocator {
 public:
  CpuBackend();
  ~CpuBackend() override;

  DeviceKind kind() const override { return DeviceKind::CPU; }
  std::string name() const override;
  // AMPGAN_CPU_KERNELS=auto|openblas|onednn, where set, overrides every set_cpu_kernels() (the
  // settings' --cpu-kernels): for running the whole suite, or any command, on one kind of kernel.
  void set_cpu_kernels(CpuKernels mode) override;
  std::vector<KernelChoice> kernel_choices() const override { return plan_.choices(); }
  void reuse_kernel_choices(const std::vector<KernelChoice>& recorded) override { plan_.reuse(recorded); }
  // One kernel for every product and, with conv, one way for every convolution (cpu::kIm2col or
  // cpu::kDirect; cpu_kernel_plan.h), for the tests that compare kernels.
  void force_kernel(cpu::GemmKernel k, std::optional<std::string> conv = std::nullopt) { plan_.force(k, conv); }

  Tensor empty(Shape shape, DType dtype, MemCategory category) override;
  void upload(Tensor& dst, const void* host, size_t nbytes) override;
  void download(const Tensor& src, void* host, size_t nbytes) override;

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
  void batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                const Tensor& scalars, const std::vector<int>& skip_slots) override;
  void batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, float eps, Tensor& y) override;
  void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& save_mean,
                          const Tensor& save_invstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                          bool accumulate) override;

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

  // Widens count elements of t starting at offset into out (FP32); narrows back, rounding.
  static void widen(const Tensor& t, int64_t offset, int64_t count, float* out);
  static void narrow(const float* in, Tensor& t, int64_t offset, int64_t count);

 private:
  void release(Storage& s) override;
  // Grow-only FP32 scratch buffers, counted as workspace memory.
  float* scratch(int slot, size_t floats);
  enum ScratchSlot {
    kCol,
    kWeights,
    kRowsF,
    kAccum,
    kGemmA,
    kGemmB,
    kGemmC,
    kTiles,  // im2col's (cpu_linalg.cpp)
    kPacked,
    kPackedLast,
    kPartials  // direct's (cpu_conv.cpp)
  };

  // A convolution's two ways (cpu_conv.cpp chooses, per direction, geometry and dtype). Each
  // reserve_* requests the scratch its way would, so that the memory a step needs does not
  // depend on the way chosen (it may differ between batch sizes; the largest-batch prediction
  // fits a line to the memory).
  void reserve_im2col(cpu::ConvDirection d, const ConvGeometry& g, DType dt);
  void conv_forward_im2col(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y);
  void conv_backward_data_im2col(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx);
  void conv_backward_filter_im2col(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                   bool accumulate);
  bool reserve_direct(cpu::ConvDirection d, const ConvGeometry& g, DType dt);  // false: no direct way here
  void conv_forward_direct(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y);
  void conv_backward_data_direct(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx);
  void conv_backward_filter_direct(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                   bool accumulate);
  // Runs run(way) with the plan's way for this convolution, measuring the ways first when new.
  void conv_planned(cpu::ConvDirection d, const ConvGeometry& g, DType dt, const std::function<void(bool direct)>& run,
                    const std::function<void()>& restore);

  std::vector<Tensor> scratch_;
  cpu::KernelPlan plan_;
};

// Brings OpenBLAS's per-caller GEMM buffers to full speed, once per process (cpu_linalg.cpp
// says why); the constructor calls it.
void warm_openblas();

}  // namespace ampgan
