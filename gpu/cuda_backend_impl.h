// The CUDA backend's class (host code; see gpu/cuda_backend.h for the entry points).
//
// One stream per backend, with the cuBLAS and cuDNN handles bound to it; every op is enqueued on
// it and returns at once. Nothing in a training step synchronises with the host: the loss scale,
// growth counter and found-inf flags live in device tensors and the skip decision is taken by
// kernels; metrics come back through pinned read-back slots (read_async), so a whole step can be
// captured once as a CUDA graph (begin_capture / end_capture) and replayed.
//
// Memory is stream-ordered (cudaMallocAsync / cudaFreeAsync on the backend's stream, from the
// device's pool with an unlimited release threshold so freed blocks are reused without returning
// to the driver) and counted per MemCategory exactly as the CPU backend counts it.
//
// Anything that cannot be captured -- an allocation, an algorithm search, a host copy, a
// synchronisation -- throws a clear Error when attempted during capture (and the capture is
// abandoned so the backend stays usable).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "core/backend/backend.h"
#include "core/common/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

// Shared by the op families' files: a caller's contract violated, and a tensor as a kernel's
// gradient descriptor.
inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CUDA backend: ") + op + ": " + what, "", "this is a bug in the caller");
}
inline GradDesc grad_desc(const Tensor& t) { return GradDesc{t.data(), t.numel(), static_cast<int32_t>(t.dtype())}; }

class ReadbackPool;
struct ConvCandidate;  // cuda_conv_calls.h: one cuDNN algorithm as ranked or timed
struct ConvCalls;      // cuda_conv_calls.h: one direction's cuDNN calls

class CudaBackend final : public Backend, private Allocator {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::CUDA; }
  std::string name() const override { return name_; }
  void set_allow_tf32(bool allow) override { allow_tf32_ = allow; }
  void set_deterministic(bool on) override { deterministic_ = on; }

  Tensor empty(Shape shape, DType dtype, MemCategory category) override;
  void upload(Tensor& dst, const void* host, size_t nbytes) override;
  void download(const Tensor& src, void* host, size_t nbytes) override;
  std::unique_ptr<HostReadback> read_async(const Tensor& src_f32) override;
  void synchronize() override;

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
  // In gpu/cuda_batchnorm_running.cpp.
  void batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                const Tensor& scalars, const std::vector<int>& skip_slots) override;
  void batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, float eps, Tensor& y) override;
  void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& save_mean,
                          const Tensor& save_invstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                          bool accumulate) override;

  void activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) override;
  void activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) override;
  // residual sums and resampling: gpu/cuda_resample.cpp
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

  bool supports_capture() const override { return true; }
  void begin_capture() override;
  void end_capture() override;
  void replay() override;
  void drop_capture() override;

  // Whether device code contracts a * b + c into FMAs (built without --fmad=false).
  bool fma_contraction();

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }  // for NCCL (gpu/cuda_nccl.cpp)

 private:
  // Scratch buffers, grow-only, allocated eagerly (never during capture).
  enum Workspace : int { kWsConv, kWsPadA, kWsPadB, kWsPadOut, kWsReduce, kWsHist, kWsSoftmax, kWsCount };

  // A convolution as cuDNN runs it: descriptors (channel counts padded to multiples of 8 for
  // tensor cores where needed), the algorithm chosen once, and its workspace size.
  struct ConvPlan {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;  // x: (n, h, w, cp), y: (n, oh, ow, kp)
    cudnnFilterDescriptor_t w = nullptr;               // (kp, r, s, cp)
    cudnnConvolutionDescriptor_t conv = nullptr;
    int algo = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // the chosen algorithm's, also set on `conv`
    size_t ws_bytes = 0;
    int cp = 0, kp = 0;
    bool deterministic = true;
    ConvPlan() = default;
    ConvPlan(const ConvPlan&) = delete;
    ConvPlan& operator=(const ConvPlan&) = delete;
    ~ConvPlan();
  };
  struct ConvKey {
    int op;  // 0 forward, 1 backward data, 2 backward filter
    int n, h, w, c, k, r, s, stride, pad;
    int dtype, math;
    int deterministic;
    bool operator==(const ConvKey& o) const;
  };
  struct ConvKeyHash {
    size_t operator()(const ConvKey& k) const;
  };

  void release(Storage& s) override;
  void teardown() noexcept;                  // the destructor's work, also after a failed constructor
  void activate() const;                     // cudaSetDevice when this thread is on another device
  void not_while_capturing(const char* op);  // abandons the capture and throws
  bool capturing();
  void abandon_capture() noexcept;
  void* workspace(Workspace slot, size_t bytes, const char* op);
  void check_device_tensor(const Tensor& t, const char* op, const char* what) const;

  ConvPlan& conv_plan(int op, const ConvGeometry& g, DType dt);
  std::unique_ptr<ConvPlan> conv_descriptors(int op, const ConvGeometry& g, DType dt, int cp, int kp,
                                             cudnnMathType_t math);
  std::vector<ConvCandidate> timed_candidates(int op, const ConvGeometry& g, DType dt, const ConvPlan& plan,
                                              const ConvCalls& calls, size_t ws_bytes);
  void run_conv(int op, const ConvGeometry& g, const Tensor& a, const Tensor& b, Tensor& out, bool accumulate);

  int device_ = 0;
  int cc_ = 0;  // compute capability, major * 10 + minor
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  bool allow_tf32_ = false;
  // Convolution algorithms: false times cuDNN's candidates once per plan (cudnnFind*Ex) and takes
  // the fastest; true takes deterministic ones by heuristics, GEMM-style first. AMPGAN_CUDNN_
  // DETERMINISTIC=1 starts a backend in the deterministic mode.
  bool deterministic_ = false;

  // Allocation bookkeeping: sequence numbers tell which blocks a captured graph may reference;
  // freeing such a block while the graph exists is deferred until the graph is dropped.
  std::mutex alloc_mutex_;
  std::unordered_map<void*, uint64_t> live_;
  uint64_t next_seq_ = 1;
  uint64_t graph_seq_ = 0;  // blocks with seq < graph_seq_ may be referenced by the graph
  std::vector<void*> deferred_frees_;
  bool capturing_ = false;  // guarded by alloc_mutex_ (releases may come from any thread)

  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;

  std::array<Tensor, kWsCount> ws_;
  Tensor cublas_ws_;

  // Pinned staging for uploads: two slots, each reused once its previous copy has finished.
  struct Staging {
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
  };
  std::array<Staging, 2> staging_{};
  int next_staging_ = 0;
  std::shared_ptr<ReadbackPool> readbacks_;

  std::unordered_map<ConvKey, std::unique_ptr<ConvPlan>, ConvKeyHash> conv_plans_;
  int fma_contraction_ = -1;  // unknown until probed
};

}  // namespace ampgan::gpu
