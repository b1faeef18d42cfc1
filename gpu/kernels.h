// The CUDA backend's own kernels, behind plain launch functions (defined in kernels_*.cu) so the
// host-side backend compiles with g++. Every kernel computes with the shared element-wise
// functions of core/backend/elementwise.h and core/common/rng.h, so its arithmetic is the CPU
// backend's, and every reduction is deterministic (fixed grids, fixed combination order): a
// replayed graph computes bit for bit what the eager run computed.
//
// Pointers are device pointers; every launch is asynchronous on the given stream, captured into
// a graph when the stream is capturing, and checked for launch errors.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/backend/backend.h"

namespace ampgan::gpu {

// ---- element-wise (kernels_elementwise.cu) ------------------------------------------------------
void fill(cudaStream_t s, void* p, DType t, int64_t n, float value);
void cast(cudaStream_t s, const void* src, DType st, void* dst, DType dt, int64_t n);
// stream += ew::count_load(counter) (an FP32 [lo, hi] count) on the device when counter is not null.
void fill_normal(cudaStream_t s, void* p, DType t, int64_t n, uint64_t seed, uint64_t stream, const float* counter,
                 float stddev);
void add_scalar(cudaStream_t s, float* p, int index, float value);
void count_increment(cudaStream_t s, float* count);  // ew::count_increment
void activation_forward(cudaStream_t s, DType t, ew::Act act, float alpha, const void* x, void* y, int64_t n);
void activation_backward(cudaStream_t s, DType t, ew::Act act, float alpha, const void* y, const void* dy, void* dx,
                         int64_t n);
// y (rows, c) += b (c), b FP32.
void bias_add(cudaStream_t s, DType t, void* y, const float* b, int64_t rows, int64_t c);

// ---- AMP safeguards (kernels_amp_guards.cu): ew::clamp_value / clamp_grad / nan_to_num_value ----
void clamp_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, float c);
void clamp_backward(cudaStream_t s, DType t, const void* x, const void* dy, void* dx, int64_t n, float c);
struct NanToNumDesc {
  void* data;
  int64_t n;
  DType dtype;
};
size_t nan_to_num_workspace_bytes();
// In place over every tensor; scalars[count_slot..+1] += replaced (FP32 [lo, hi] count),
// scalars[found_inf_slot] = 0 when found_inf_slot >= 0.
void nan_to_num(cudaStream_t s, const NanToNumDesc* grads, int count, float bound, float* scalars, int count_slot,
                int found_inf_slot, void* ws);

// ---- residual sums and resampling (kernels_resample.cu), NHWC, shapes of the smaller side ----
void add(cudaStream_t s, DType t, const void* a, const void* b, void* y, int64_t n);
// x (n, h, w, c) -> y (n, 2h, 2w, c) and back (sum of each 2x2 block).
void upsample2x_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t h, int64_t w, int64_t c);
void upsample2x_backward(cudaStream_t s, DType t, const void* dy, void* dx, int64_t n, int64_t h, int64_t w, int64_t c);
// x (n, 2h, 2w, c) -> y (n, h, w, c) and back (a quarter of dy to each input).
void avgpool2x_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t h, int64_t w, int64_t c);
void avgpool2x_backward(cudaStream_t s, DType t, const void* dy, void* dx, int64_t n, int64_t h, int64_t w, int64_t c);
// x (n, h, w, c) -> y (n, c) and back (dy copied to every position).
void global_sum_pool_forward(cudaStream_t s, DType t, const void* x, void* y, int64_t n, int64_t hw, int64_t c);
void global_sum_pool_backward(cudaStream_t s, DType t, const void* dy, void* dx, int64_t n, int64_t hw, int64_t c);

// ---- class conditioning (kernels_conditioning.cu), NHWC as (n, hw, c); scale, shift FP32 (n, c) ----
void modulate_forward(cudaStream_t s, DType t, const void* x, const float* scale, const float* shift, void* y,
                      int64_t n, int64_t hw, int64_t c);
void modulate_backward(cudaStream_t s, DType t, const void* x, const void* dy, const float* scale, void* dx,
                       float* dscale, float* dshift, int64_t n, int64_t hw, int64_t c);
// a, b (n, f) -> y (n) and back.
void row_dot_forward(cudaStream_t s, DType t, const void* a, const void* b, void* y, int64_t n, int64_t f);
void row_dot_backward(cudaStream_t s, DType t, const void* a, const void* b, const void* dy, void* da, void* db,
                      int64_t n, int64_t f);

// ---- spectral norm (kernels_spectral_norm.cu): w (rows, cols) FP32; ws of
// spectral_norm_workspace_bytes(rows) ----
size_t spectral_norm_workspace_bytes(int64_t rows);
void spectral_norm_power_iteration(cudaStream_t s, const float* w, float* u, float* v, int64_t rows, int64_t cols,
                                   void* ws);
void spectral_norm_forward(cudaStream_t s, DType t, const float* w, const float* u, const float* v, int64_t rows,
                           int64_t cols, float* sigma, void* w_sn, void* ws);
void spectral_norm_backward(cudaStream_t s, DType t, const void* g, const float* w, const float* u, const float* v,
                            const float* sigma, int64_t rows, int64_t cols, void* dw, bool accumulate, void* ws);

// Channel padding for tensor-core convolutions. src (rows_src, c) -> dst (rows_dst, cp): rows
// beyond rows_src and channels beyond c are zero. elem_bytes 2 or 4.
void pad_channels(cudaStream_t s, size_t elem_bytes, const void* src, int64_t rows_src, int c, void* dst,
                  int64_t rows_dst, int cp);
// src (rows, cp) -> dst (rows, c), c <= cp.
void slice_channels(cudaStream_t s, size_t elem_bytes, const void* src, int cp, void* dst, int64_t rows, int c);

// ---- losses (kernels_losses.cu) ----------------------------------------------------------------
void gan_loss(cudaStream_t s, LossKind kind, LossRole role, const float* logits, int64_t n, const float* scaler_state,
              float* dlogits, float* scalars, int loss_slot, int prob_slot);
// ws: at least softmax_ce_workspace_bytes(n).
size_t softmax_ce_workspace_bytes(int64_t n);
void softmax_cross_entropy(cudaStream_t s, const float* logits, const float* labels, int64_t n, int64_t k,
                           float* dlogits, float* scalars, int loss_slot, int correct_slot, void* ws);

// ---- per-channel reductions over (rows, c) NHWC tensors: batch norm (kernels_batchnorm.cu), the
// bias gradient (kernels_linalg.cu) ----
// ws: at least channel_workspace_bytes(rows, c).
size_t channel_workspace_bytes(int64_t rows, int64_t c);
void bias_backward(cudaStream_t s, DType t, const void* dy, int64_t rows, int64_t c, float* db, bool accumulate,
                   void* ws);
void batchnorm_forward_train(cudaStream_t s, DType t, const void* x, int64_t rows, int64_t c, const float* gamma,
                             const float* beta, float* running_mean, float* running_var, float momentum, float eps,
                             bool update_running, void* y, float* save_mean, float* save_invstd, void* ws);
void batchnorm_forward_eval(cudaStream_t s, DType t, const void* x, int64_t rows, int64_t c, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float eps, void* y);
void batchnorm_backward(cudaStream_t s, DType t, const void* x, const void* dy, int64_t rows, int64_t c,
                        const float* gamma, const float* save_mean, const float* save_invstd, void* dx, float* dgamma,
                        float* dbeta, bool accumulate, void* ws);

// ---- multi-tensor passes: gradient statistics, histogram and scaler (kernels_amp.cu), Adam and
// EMA (kernels_optim.cu) ----
// Tensor lists travel as kernel parameters (by value): a captured graph keeps its own copy, so
// nothing on the host or the device has to stay alive for replays. Longer lists are split into
// several launches that write disjoint partial results, combined by one finalising kernel.
constexpr int kMaxGradTensors = 64;  // per launch; 24 bytes each
constexpr int kMaxAdamTensors = 48;  // per launch; 56 bytes each

struct GradDesc {
  const void* ptr;
  int64_t n;
  int32_t dtype;  // DType
};

// ws: at least grad_stats_workspace_bytes(count).
size_t grad_stats_workspace_bytes(int tensor_count);
void grad_stats(cudaStream_t s, const GradDesc* grads, int count, const float* scaler_state, float* scalars,
                const GradStatSlots& slots, void* ws);
size_t grad_histogram_workspace_bytes();
void grad_histogram(cudaStream_t s, const GradDesc* grads, int count, float* hist, void* ws);

struct AdamDesc {
  float* w;
  const void* g;
  float* m;
  float* v;
  void* h;  // half copy or null
  int64_t n;
  int32_t gdtype;  // DType of g
  int32_t hdtype;  // DType of h (ignored when h is null)
};
void adam_step(cudaStream_t s, const AdamDesc* params, int count, const AdamConfig& cfg, float* step_count,
               const float* scaler_state, const float* scalars, int found_inf_slot);

constexpr int kMaxScalerSlots = 16;
// The generator's EMA over one tensor (kernels_optim.cu); nothing when scalars[found_inf_slot] != 0.
void ema_update(cudaStream_t s, float* shadow, const float* param, int64_t n, float decay, float rampup,
                const float* count, const float* scalars, int found_inf_slot);
void scaler_update(cudaStream_t s, float* state, const ew::ScalerConfig& cfg, const float* scalars, const int* slots,
                   int nslots);

// Writes a * b + c for a, b, c in in[0..2] to out[0]: tells whether this build's device code
// contracts multiply-adds into FMAs (nvcc's default, --fmad=true), which makes some results
// differ from the CPU's by an ulp.
void fma_probe(cudaStream_t s, const float* in, float* out);

}  // namespace ampgan::gpu
