// The Backend: every operation the engine needs, for one kind of device. The CPU backend
// (core/backend/cpu) is the reference and runs anywhere; the CUDA backend (gpu/) implements
// the same calls for NVIDIA GPUs and is tested against the CPU one op by op.
//
// Conventions:
// - Images and activations are NHWC, convolution weights KRSC (see core/tensor/tensor.h).
// - Matrix products and convolutions take inputs of one dtype, accumulate in FP32 and round the
//   result once to the output's dtype: exactly where tensor cores round.
// - Reductions whose results the host wants (losses, gradient statistics, found-inf flags) are
//   written into a small FP32 "scalars" tensor at given slots, never returned, so that a GPU
//   step needs no host synchronisation. read_async() brings them back.
// - Everything is stream-ordered: calls return before the device has finished.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/elementwise.h"
#include "core/tensor/tensor.h"

namespace ampgan {

// A convolution: input x (n, h, w, c), weights (k, r, s, c), output y (n, out_h, out_w, k).
// A transposed convolution from y-shaped input to x-shaped output is backward_data of this.
struct ConvGeometry {
  int n = 1, h = 1, w = 1, c = 1;
  int k = 1, r = 1, s = 1;
  int stride = 1, pad = 0;
  int out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int out_w() const { return (w + 2 * pad - s) / stride + 1; }
  Shape x_shape() const { return Shape{n, h, w, c}; }
  Shape w_shape() const { return Shape{k, r, s, c}; }
  Shape y_shape() const { return Shape{n, out_h(), out_w(), k}; }
  double flops() const { return 2.0 * n * out_h() * out_w() * k * r * s * c; }
};

enum class LossKind : uint8_t { BCEWithLogits, Hinge };
// Which side of the game a loss is for: D on real images (target 1), D on generated images
// (target 0), G (non-saturating: target 1 on D's logits of generated images).
enum class LossRole : uint8_t { DReal, DFake, G };

// Slots in the scalars tensor that one network's gradient check writes. The three counts can
// pass 2^24 in large models, so each takes two slots, [slot, slot + 1] (ew::count_store).
struct GradStatSlots {
  int found_inf;   // 1 if any gradient is inf or NaN, else 0 (overwritten, not accumulated)
  int sum_sq;      // sum of squares of the unscaled gradients (g / scale)
  int zeros;       // count: gradient values that are exactly zero in their storage format
  int subnormals;  // count: gradient values that are subnormal in their storage format
  int count;       // count: gradient values inspected
  // Per-tensor statistics, gathered in the same pass (no second read of the gradients): the
  // first of kTensorStatSlots slots per tensor, in the order of grads (see TensorStatSlot);
  // -1: none.
  int per_tensor = -1;
};

// Each gradient tensor's statistics at GradStatSlots::per_tensor + kTensorStatSlots * i.
enum TensorStatSlot : int {
  kTensorMaxAbs = 0,     // max |g / scale| over the finite values (0 if none)
  kTensorNonFinite = 1,  // count [lo, hi]: inf/NaN values
  kTensorUnderflow = 3,  // count [lo, hi]: values zero or subnormal in their storage format
  kTensorStatSlots = 5
};

// One parameter tensor as Adam sees it.
struct AdamTensor {
  Tensor master;     // FP32 master weights, updated in place
  Tensor grad;       // gradient as stored (f32, f16 or bf16), still multiplied by the loss scale
  Tensor m, v;       // FP32 moments
  Tensor half_copy;  // working copy to refresh (f16/bf16), or undefined in FP32 mode
};

struct AdamConfig {
  float lr = 2e-4f, beta1 = 0.5f, beta2 = 0.999f, eps = 1e-8f;
};

// Which library runs the CPU backend's matrix products (--cpu-kernels): the fastest measured per
// product shape (auto), OpenBLAS only, or oneDNN wherever it has a fast kernel (BF16 operands in
// BF16 where the CPU has AVX512-BF16). See core/backend/cpu/cpu_kernel_plan.h.
enum class CpuKernels : uint8_t { Auto, OpenBlas, OneDnn };
const char* cpu_kernels_name(CpuKernels k);  // "auto", "openblas", "onednn"
bool parse_cpu_kernels(const std::string& s, CpuKernels* out);

// A kernel choice a backend made for one product shape: ("bf16 nt 64x128x1024 ...", "onednn-bf16").
using KernelChoice = std::pair<std::string, std::string>;

struct MemoryStats {
  std::array<size_t, static_cast<size_t>(MemCategory::Count)> current{}, peak{};
  size_t current_total = 0, peak_total = 0;
};

// Thread-safe byte counting by category, shared by the backends' allocators.
class MemoryTracker {
 public:
  void add(MemCategory c, size_t bytes);
  void remove(MemCategory c, size_t bytes);
  MemoryStats stats() const;
  void reset_peak();  // peaks restart from the current values

 private:
  static constexpr size_t kN = static_cast<size_t>(MemCategory::Count);
  std::array<std::atomic<size_t>, kN> current_{}, peak_{};
  std::atomic<size_t> total_{0}, peak_total_{0};
};

// A host copy of a small device tensor, arriving asynchronously.
class HostReadback {
 public:
  virtual ~HostReadback() = default;
  virtual bool ready() = 0;         // non-blocking
  virtual const float* wait() = 0;  // blocks until ready; the copied FP32 values
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // for the status bar and logs, e.g. "CPU (2 threads)"
  // TF32 tensor-core math for FP32 products (tf32 mode); off gives a fair FP32 baseline.
  virtual void set_allow_tf32(bool /*allow*/) {}
  // Deterministic algorithms only, chosen for the CPU's arithmetic (the parity and graph-vs-eager
  // tests), instead of the fastest measured ones. The CPU backend always is deterministic.
  virtual void set_deterministic(bool /*on*/) {}
  // The CPU backend's product kernels (the CUDA backend has cuDNN's own search).
  virtual void set_cpu_kernels(CpuKernels /*mode*/) {}
  // The kernels chosen so far, for the run's record; and a record to reuse (a resumed run's),
  // before anything is measured again.
  virtual std::vector<KernelChoice> kernel_choices() const { return {}; }
  virtual void reuse_kernel_choices(const std::vector<KernelChoice>& /*recorded*/) {}

  // ---- memory ----
  virtual Tensor empty(Shape shape, DType dtype, MemCategory category) = 0;
  // Host bytes already in dst's dtype; nbytes must equal dst.nbytes().
  virtual void upload(Tensor& dst, const void* host, size_t nbytes) = 0;
  virtual void download(const Tensor& src, void* host, size_t nbytes) = 0;  // waits
  virtual std::unique_ptr<HostReadback> read_async(const Tensor& src_f32);
  virtual void synchronize() {}
  MemoryStats memory_stats() const { return memory_.stats(); }
  void reset_peak_memory() { memory_.reset_peak(); }

  // ---- filling and conversion ----
  virtual void fill(Tensor& t, float value) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;  // same dtype and element count
  virtual void cast(const Tensor& src, Tensor& dst) = 0;  // any dtypes, same element count
  // Normal(0, stddev) numbers from Philox stream (seed, stream + counter); counter is an
  // optional count on the device, FP32 [lo, hi] (ew::count_load; so a replayed step draws fresh
  // numbers), or undefined.
  virtual void fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter, float stddev) = 0;
  // dst[dst_index] = src[src_index] (FP32 scalars), and dst[i] += value.
  virtual void copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) = 0;
  virtual void add_scalar(Tensor& dst, int index, float value) = 0;
  // count += 1 on the device, for an FP32 [lo, hi] count (ew::count_increment): exact past 2^24.
  virtual void count_increment(Tensor& count) = 0;

  // ---- matrix products, row-major: C(m,n) = alpha * op(A) * op(B) + beta * C ----
  // A, B share a dtype; C may be FP32 or that dtype. FP32 accumulate.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a, const Tensor& b,
                    float beta, Tensor& c) = 0;

  // ---- convolution (no bias; see bias_add). x, w, y share a dtype. ----
  virtual void conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) = 0;
  virtual void conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  // dw = sum over the batch (accumulate: dw += ...); dw in the dtype of x and dy.
  virtual void conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                      bool accumulate) = 0;

  // ---- bias over the last axis; b and db are FP32 ----
  virtual void bias_add(Tensor& y, const Tensor& b) = 0;
  virtual void bias_backward(const Tensor& dy, Tensor& db, bool accumulate) = 0;

  // ---- batch norm over all axes but the last; FP32 statistics and parameters ----
  // update_running false: use batch statistics without touching the running averages (for
  // sampling between steps, which must not change training).
  virtual void batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                                       Tensor& running_var, float momentum, float eps, bool update_running, Tensor& y,
                                       Tensor& save_mean, Tensor& save_invstd) = 0;
  virtual void batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) = 0;
  virtual void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& save_mean,
                                  const Tensor& save_invstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                                  bool accumulate) = 0;
  // A training step's forward passes update staged copies of the running averages, since whether
  // the step counts is known only after its backward pass. Then, for each pair i (FP32 tensors of
  // equal size): if every scalars[skip_slots[j]] is 0, running[i] = staged[i] (commit); else
  // staged[i] = running[i] (revert: a skipped step leaves the running averages as they were).
  virtual void batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                        const Tensor& scalars, const std::vector<int>& skip_slots) = 0;

  // ---- activations (y and dx may alias x and dy) ----
  virtual void activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) = 0;
  virtual void activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

  // ---- residual sums and resampling (the ResNet GAN's blocks), NHWC ----
  // FP32 arithmetic on the widened values, one rounding into the output's dtype; shapes come
  // from the tensors (4-D n, h, w, c unless said otherwise), dtypes must agree.
  // y = a + b, same size (y may alias a or b): a residual sum, and gradient fan-in.
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  // Nearest-neighbour x2: y (n, 2h, 2w, c) from x (n, h, w, c); backward sums each 2x2 block of dy.
  virtual void upsample2x_forward(const Tensor& x, Tensor& y) = 0;
  virtual void upsample2x_backward(const Tensor& dy, Tensor& dx) = 0;
  // 2x2 average pooling: y (n, h/2, w/2, c) from x (n, h, w, c), h and w even; backward gives
  // every input of a block a quarter of its dy.
  virtual void avgpool2x_forward(const Tensor& x, Tensor& y) = 0;
  virtual void avgpool2x_backward(const Tensor& dy, Tensor& dx) = 0;
  // Sum over the positions: y (n, c) from x (n, h, w, c), summed in row-major order of (h, w);
  // backward copies dy (n, c) to every position of dx.
  virtual void global_sum_pool_forward(const Tensor& x, Tensor& y) = 0;
  virtual void global_sum_pool_backward(const Tensor& dy, Tensor& dx) = 0;

  // ---- class conditioning (core/backend/conditioning.h), NHWC ----
  // Conditional batch norm's modulation: y = x * scale[n, c] + shift[n, c], scale and shift
  // (n, c) FP32. Backward: dx = dy * scale; dscale[n, c] = sum over positions of dy * x and
  // dshift[n, c] = sum of dy (FP32, overwritten).
  virtual void modulate_forward(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y) = 0;
  virtual void modulate_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, Tensor& dx, Tensor& dscale,
                                 Tensor& dshift) = 0;
  // The projection discriminator's inner product: y[n] = sum_f a[n, f] * b[n, f], a and b (n, f),
  // y (n) of their dtype. Backward: da = dy[n] * b, db = dy[n] * a.
  virtual void row_dot_forward(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  virtual void row_dot_backward(const Tensor& a, const Tensor& b, const Tensor& dy, Tensor& da, Tensor& db) = 0;

  // ---- spectral norm (the ResNet GAN's discriminator weights), FP32 whatever the precision ----
  // w is the FP32 master weight seen as a matrix (rows, cols) = (out channels, everything else);
  // u (rows) and v (cols) are FP32 vectors. Norms use eps = 1e-12 as PyTorch's spectral_norm.
  // One power iteration, in place: v = W^T u / ||W^T u||, then u = W v / ||W v||.
  virtual void spectral_norm_power_iteration(const Tensor& w, Tensor& u, Tensor& v) = 0;
  // sigma (FP32, 1) = u . (W v); w_sn = W / sigma, rounded once into w_sn's dtype.
  virtual void spectral_norm_forward(const Tensor& w, const Tensor& u, const Tensor& v, Tensor& sigma,
                                     Tensor& w_sn) = 0;
  // The gradient through W / sigma(W) with u, v held fixed (as PyTorch does): from g = dL/dW_sn
  // (g and dw share a dtype), dw (+)= (g - <g, W / sigma> u v^T) / sigma in FP32, rounded once.
  virtual void spectral_norm_backward(const Tensor& g, const Tensor& w, const Tensor& u, const Tensor& v,
                                      const Tensor& sigma, Tensor& dw, bool accumulate) = 0;

  // ---- losses, on FP32 logits (n) ----
  // scalars[loss_slot] += mean loss; scalars[prob_slot] = mean sigmoid(logit) (prob_slot < 0:
  // skip); dlogits = d(mean loss)/d(logit) * loss_scale, loss_scale = scaler_state[0].
  virtual void gan_loss(LossKind kind, LossRole role, const Tensor& logits, const Tensor& scaler_state, Tensor& dlogits,
                        Tensor& scalars, int loss_slot, int prob_slot) = 0;
  // Softmax cross-entropy for classifiers: logits (n, classes) FP32, labels (n) FP32 class ids.
  // scalars[loss_slot] = mean loss, scalars[correct_slot] = number of correct argmaxes,
  // dlogits = d(mean loss)/d(logits).
  virtual void softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits, Tensor& scalars,
                                     int loss_slot, int correct_slot) = 0;

  // ---- mixed precision ----
  // The unscale-and-check pass over one network's gradients: found-inf flag, L2 norm squared of
  // g / scale, and zero / subnormal counts (each value judged in its own storage format: for
  // half gradients these are the values lost or degraded by underflow). scale = scaler_state[0].
  // With slots.per_tensor >= 0 also each tensor's max |g / scale|, non-finite and underflow counts.
  virtual void grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state, Tensor& scalars,
                          const GradStatSlots& slots) = 0;
  // hist (FP32, ew::kHistBins) = counts of ew::exponent_bin over the stored gradient values.
  virtual void grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) = 0;
  // Adam over one network, fused: reads the scaled gradient, writes FP32 master and moments and
  // the half copy. Does nothing when scalars[found_inf_slot] != 0; otherwise step_count (FP32
  // [lo, hi], ew::count_increment) += 1 first (it is Adam's t). inv scale = 1 / scaler_state[0].
  virtual void adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg, Tensor& step_count,
                         const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) = 0;
  // The generator's EMA, FP32: shadow[i] = d * shadow[i] + (1 - d) * params[i] with
  // d = ew::ema_decay(decay, rampup, t), t = step_count (Adam's FP32 [lo, hi] count, after this
  // step's increment). Does nothing when scalars[found_inf_slot] != 0: a skipped G update does
  // not advance the average either.
  virtual void ema_update(const std::vector<Tensor>& shadow, const std::vector<Tensor>& params, float decay,
                          float rampup, const Tensor& step_count, const Tensor& scalars, int found_inf_slot) = 0;
  // scaler_state = [scale, growth_tracker]; backs off if any scalars[found_inf_slots[i]] != 0.
  virtual void scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg, const Tensor& scalars,
                             const std::vector<int>& found_inf_slots) = 0;

  // ---- AMP safeguards (StyleGAN2-ADA's recipe; CPU: cpu_amp_guards.cpp, CUDA: kernels_amp_guards.cu) ----
  // Activation clamp (conv_clamp): y = clamp(x, -c, c), same dtype and size; NaN stays NaN.
  virtual void clamp_forward(const Tensor& x, Tensor& y, float c) = 0;
  // dx = dy where |x| <= c, else 0; x holds the values before the clamp (dx may alias dy).
  virtual void clamp_backward(const Tensor& x, const Tensor& dy, Tensor& dx, float c) = 0;
  // nan_to_num over one network's gradients, in place: NaN -> 0, +-inf -> +-min(bound, the
  // largest finite value of the tensor's dtype). scalars[count_slot, count_slot + 1] (an FP32
  // [lo, hi] count, ew::count_load) += the values replaced; scalars[found_inf_slot] = 0 when
  // found_inf_slot >= 0 (nothing non-finite is left: the optimizer step applies).
  virtual void nan_to_num(const std::vector<Tensor>& grads, float bound, Tensor& scalars, int count_slot,
                          int found_inf_slot) = 0;

  // ---- whole-step capture (CUDA graphs); the CPU backend has none ----
  virtual bool supports_capture() const { return false; }
  virtual void begin_capture() {}
  virtual void end_capture() {}  // the captured work becomes the replayable step
  virtual void replay() {}
  virtual void drop_capture() {}

 protected:
  MemoryTracker memory_;
};

// "auto" picks CUDA when a usable GPU is present, else the CPU; "cpu"; "cuda" (an error
// without a GPU). gpu: the device index to use (auto falls back to the first usable one). note
// receives a one-line explanation when auto does not use that GPU.
std::unique_ptr<Backend> create_backend(const std::string& which, std::string* note = nullptr, int gpu = 0);

// Whether the CUDA backend plugin is installed and loads (core/backend/cuda_plugin.h), and the
// GPUs it sees (or why none is usable).
bool cuda_backend_compiled();
struct GpuInfo {
  int index = 0;
  std::string name;
  size_t total_memory = 0, free_memory = 0;
  int cc_major = 0, cc_minor = 0;
  bool usable = false;
};
std::vector<GpuInfo> list_gpus(std::string* why_none = nullptr);

}  // namespace ampgan
