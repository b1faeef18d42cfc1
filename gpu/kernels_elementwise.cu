// Element-wise kernels, losses and the one-thread scaler update. Each mirrors a loop of the CPU
// backend (core/backend/cpu/cpu_backend.cpp) and calls the same shared functions.
#include "core/common/rng.h"
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

// ---- fill, cast, random ------------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T v) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) p[i] = v;
}

template <typename S, typename D>
__global__ void cast_kernel(const typename S::T* src, typename D::T* dst, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) dst[i] = D::store(S::load(src[i]));
}

template <typename S>
__global__ void fill_normal_kernel(typename S::T* p, int64_t n, uint64_t seed, uint64_t stream,
                                   const float* counter, float stddev) {
  // As the CPU: stream += the count, read on the device so replays draw fresh numbers.
  if (counter) stream += ew::count_load(counter);
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    p[i] = S::store(stddev * philox_normal(seed, stream, static_cast<uint64_t>(i)));
}

__global__ void add_scalar_kernel(float* p, int index, float value) { p[index] += value; }

__global__ void count_increment_kernel(float* count) { ew::count_increment(count); }

// ---- activations, bias -------------------------------------------------------------------------

template <typename S>
__global__ void act_forward_kernel(ew::Act act, float alpha, const typename S::T* x,
                                   typename S::T* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    y[i] = S::store(ew::act_forward(act, alpha, S::load(x[i])));
}

// The same arithmetic, 16 bytes per access (vec16_ok); nv = n / Vec16::N.
template <typename S>
__global__ void act_forward_vec_kernel(ew::Act act, float alpha, const typename S::T* x,
                                       typename S::T* y, int64_t nv) {
  using V = Vec16<typename S::T>;
  for (int64_t k = global_thread(); k < nv; k += grid_stride()) {
    V v = load16(x, k);
#pragma unroll
    for (int e = 0; e < V::N; ++e) v.v[e] = S::store(ew::act_forward(act, alpha, S::load(v.v[e])));
    store16(y, k, v);
  }
}

template <typename S>
__global__ void act_backward_kernel(ew::Act act, float alpha, const typename S::T* y,
                                    const typename S::T* dy, typename S::T* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    dx[i] = S::store(ew::act_backward(act, alpha, S::load(y[i]), S::load(dy[i])));
}

template <typename S>
__global__ void act_backward_vec_kernel(ew::Act act, float alpha, const typename S::T* y,
                                        const typename S::T* dy, typename S::T* dx, int64_t nv) {
  using V = Vec16<typename S::T>;
  for (int64_t k = global_thread(); k < nv; k += grid_stride()) {
    const V vy = load16(y, k);
    V v = load16(dy, k);
#pragma unroll
    for (int e = 0; e < V::N; ++e) v.v[e] = S::store(ew::act_backward(act, alpha, S::load(vy.v[e]), S::load(v.v[e])));
    store16(dx, k, v);
  }
}

template <typename S>
__global__ void bias_add_kernel(typename S::T* y, const float* b, int64_t n, int c) {
  RowCol rc(global_thread(), grid_stride(), c);
  for (int64_t i = global_thread(); i < n; i += grid_stride(), rc.advance()) y[i] = S::store(S::load(y[i]) + b[rc.j]);
}

// ---- channel padding ---------------------------------------------------------------------------

template <typename U>
__global__ void pad_kernel(const U* src, int64_t rows_src, int c, U* dst, int64_t rows_dst, int cp) {
  const int64_t n = rows_dst * cp;
  RowCol rc(global_thread(), grid_stride(), cp);
  for (int64_t i = global_thread(); i < n; i += grid_stride(), rc.advance())
    dst[i] = (rc.r < rows_src && rc.j < c) ? src[rc.r * c + rc.j] : U(0);
}

template <typename U>
__global__ void slice_kernel(const U* src, int cp, U* dst, int64_t rows, int c) {
  const int64_t n = rows * c;
  RowCol rc(global_thread(), grid_stride(), c);
  for (int64_t i = global_thread(); i < n; i += grid_stride(), rc.advance()) dst[i] = src[rc.r * cp + rc.j];
}

// ---- losses ------------------------------------------------------------------------------------

// One block: n is a batch of logits. Sums in double as the CPU does; dlogits element-wise.
__global__ void gan_loss_kernel(LossKind kind, LossRole role, const float* x, int64_t n,
                                const float* scaler_state, float* dx, float* scalars,
                                int loss_slot, int prob_slot) {
  __shared__ double shared[kThreads];
  const float scale = scaler_state[0];
  const float target = role == LossRole::DFake ? 0.0f : 1.0f;
  const ew::HingeRole hr = role == LossRole::DReal   ? ew::HingeRole::DReal
                           : role == LossRole::DFake ? ew::HingeRole::DFake
                                                     : ew::HingeRole::G;
  const float inv_n = 1.0f / static_cast<float>(n);
  double loss = 0.0, prob = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float xi = x[i];
    if (kind == LossKind::BCEWithLogits) {
      loss += ew::bce_logits_loss(xi, target);
      dx[i] = ew::bce_logits_grad(xi, target) * inv_n * scale;
    } else {
      loss += ew::hinge_loss(hr, xi);
      dx[i] = ew::hinge_grad(hr, xi) * inv_n * scale;
    }
    prob += ew::sigmoid(xi);
  }
  loss = block_sum(loss, shared);
  prob = block_sum(prob, shared);
  if (threadIdx.x == 0) {
    scalars[loss_slot] += static_cast<float>(loss / static_cast<double>(n));
    if (prob_slot >= 0) scalars[prob_slot] = static_cast<float>(prob / static_cast<double>(n));
  }
}

// One thread per row: row loss (double) and whether the argmax is the label, into ws.
__global__ void softmax_rows_kernel(const float* x, const float* labels, int64_t n, int64_t k,
                                    float* dx, double* row_loss, int* row_correct) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    bool right = false;
    row_loss[i] = ew::softmax_xent_row(x + i * k, k, static_cast<int64_t>(labels[i]), static_cast<double>(n),
                                       dx + i * k, right);
    row_correct[i] = right ? 1 : 0;
  }
}

// One thread, summing rows in order as the CPU's loop does.
__global__ void softmax_finalize_kernel(const double* row_loss, const int* row_correct, int64_t n,
                                        float* scalars, int loss_slot, int correct_slot) {
  double loss = 0.0;
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    loss += row_loss[i];
    correct += row_correct[i];
  }
  scalars[loss_slot] = static_cast<float>(loss / static_cast<double>(n));
  scalars[correct_slot] = static_cast<float>(correct);
}

// ---- loss scaler -------------------------------------------------------------------------------

struct SlotList {
  int n;
  int slot[kMaxScalerSlots];
};

__global__ void scaler_update_kernel(float* state, ew::ScalerConfig cfg, const float* scalars, SlotList slots) {
  bool found = false;
  for (int i = 0; i < slots.n; ++i) found |= scalars[slots.slot[i]] != 0.0f;
  ew::scaler_update(state[0], state[1], found, cfg);
}

__global__ void fma_probe_kernel(const float* in, float* out) { out[0] = in[0] * in[1] + in[2]; }

}  // namespace

// ---- launchers ---------------------------------------------------------------------------------

void fill(cudaStream_t s, void* p, DType t, int64_t n, float value) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    fill_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(p), n, S::store(value));
  });
  AMPGAN_LAUNCHED("fill_kernel");
}

void cast(cudaStream_t s, const void* src, DType st, void* dst, DType dt, int64_t n) {
  if (n <= 0) return;
  dispatch(st, [&](auto stag) {
    dispatch(dt, [&](auto dtag) {
      using S = decltype(stag);
      using D = decltype(dtag);
      cast_kernel<S, D><<<grid_for(n), kThreads, 0, s>>>(static_cast<const typename S::T*>(src),
                                                         static_cast<typename D::T*>(dst), n);
    });
  });
  AMPGAN_LAUNCHED("cast_kernel");
}

void fill_normal(cudaStream_t s, void* p, DType t, int64_t n, uint64_t seed, uint64_t stream,
                 const float* counter, float stddev) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    fill_normal_kernel<S><<<grid_for(n, 2), kThreads, 0, s>>>(static_cast<typename S::T*>(p), n, seed,
                                                              stream, counter, stddev);
  });
  AMPGAN_LAUNCHED("fill_normal_kernel");
}

void add_scalar(cudaStream_t s, float* p, int index, float value) {
  add_scalar_kernel<<<1, 1, 0, s>>>(p, index, value);
  AMPGAN_LAUNCHED("add_scalar_kernel");
}

void count_increment(cudaStream_t s, float* count) {
  count_increment_kernel<<<1, 1, 0, s>>>(count);
  AMPGAN_LAUNCHED("count_increment_kernel");
}

void activation_forward(cudaStream_t s, DType t, ew::Act act, float alpha, const void* x, void* y, int64_t n) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, n, sizeof(T), {x, y})) {  // one row: activations have no channels
      const int64_t nv = n / Vec16<T>::N;
      act_forward_vec_kernel<S><<<grid_for(nv), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(x),
                                                                  static_cast<T*>(y), nv);
    } else {
      act_forward_kernel<S><<<grid_for(n), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(x),
                                                             static_cast<T*>(y), n);
    }
  });
  AMPGAN_LAUNCHED("act_forward_kernel");
}

void activation_backward(cudaStream_t s, DType t, ew::Act act, float alpha, const void* y,
                         const void* dy, void* dx, int64_t n) {
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    using T = typename S::T;
    if (vec16_ok(n, n, sizeof(T), {y, dy, dx})) {
      const int64_t nv = n / Vec16<T>::N;
      act_backward_vec_kernel<S><<<grid_for(nv), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(y),
                                                                   static_cast<const T*>(dy), static_cast<T*>(dx), nv);
    } else {
      act_backward_kernel<S><<<grid_for(n), kThreads, 0, s>>>(act, alpha, static_cast<const T*>(y),
                                                              static_cast<const T*>(dy), static_cast<T*>(dx), n);
    }
  });
  AMPGAN_LAUNCHED("act_backward_kernel");
}

void bias_add(cudaStream_t s, DType t, void* y, const float* b, int64_t rows, int64_t c) {
  const int64_t n = rows * c;
  if (n <= 0) return;
  dispatch(t, [&](auto tag) {
    using S = decltype(tag);
    bias_add_kernel<S><<<grid_for(n), kThreads, 0, s>>>(static_cast<typename S::T*>(y), b, n, static_cast<int>(c));
  });
  AMPGAN_LAUNCHED("bias_add_kernel");
}

void pad_channels(cudaStream_t s, size_t elem_bytes, const void* src, int64_t rows_src, int c,
                  void* dst, int64_t rows_dst, int cp) {
  const int64_t n = rows_dst * cp;
  if (n <= 0) return;
  if (elem_bytes == 2)
    pad_kernel<uint16_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src), rows_src, c,
                                                          static_cast<uint16_t*>(dst), rows_dst, cp);
  else
    pad_kernel<uint32_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src), rows_src, c,
                                                          static_cast<uint32_t*>(dst), rows_dst, cp);
  AMPGAN_LAUNCHED("pad_kernel");
}

void slice_channels(cudaStream_t s, size_t elem_bytes, const void* src, int cp, void* dst,
                    int64_t rows, int c) {
  const int64_t n = rows * c;
  if (n <= 0) return;
  if (elem_bytes == 2)
    slice_kernel<uint16_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src), cp,
                                                            static_cast<uint16_t*>(dst), rows, c);
  else
    slice_kernel<uint32_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src), cp,
                                                            static_cast<uint32_t*>(dst), rows, c);
  AMPGAN_LAUNCHED("slice_kernel");
}

void gan_loss(cudaStream_t s, LossKind kind, LossRole role, const float* logits, int64_t n,
              const float* scaler_state, float* dlogits, float* scalars, int loss_slot, int prob_slot) {
  gan_loss_kernel<<<1, kThreads, 0, s>>>(kind, role, logits, n, scaler_state, dlogits, scalars,
                                         loss_slot, prob_slot);
  AMPGAN_LAUNCHED("gan_loss_kernel");
}

size_t softmax_ce_workspace_bytes(int64_t n) {
  return static_cast<size_t>(n) * (sizeof(double) + sizeof(int)) + 16;
}

void softmax_cross_entropy(cudaStream_t s, const float* logits, const float* labels, int64_t n,
                           int64_t k, float* dlogits, float* scalars, int loss_slot,
                           int correct_slot, void* ws) {
  double* row_loss = static_cast<double*>(ws);
  int* row_correct = reinterpret_cast<int*>(row_loss + n);
  softmax_rows_kernel<<<grid_for(n, 1), kThreads, 0, s>>>(logits, labels, n, k, dlogits, row_loss, row_correct);
  AMPGAN_LAUNCHED("softmax_rows_kernel");
  softmax_finalize_kernel<<<1, 1, 0, s>>>(row_loss, row_correct, n, scalars, loss_slot, correct_slot);
  AMPGAN_LAUNCHED("softmax_finalize_kernel");
}

void scaler_update(cudaStream_t s, float* state, const ew::ScalerConfig& cfg, const float* scalars,
                   const int* slots, int nslots) {
  SlotList list{};
  list.n = nslots;
  for (int i = 0; i < nslots; ++i) list.slot[i] = slots[i];
  scaler_update_kernel<<<1, 1, 0, s>>>(state, cfg, scalars, list);
  AMPGAN_LAUNCHED("scaler_update_kernel");
}

void fma_probe(cudaStream_t s, const float* in, float* out) {
  fma_probe_kernel<<<1, 1, 0, s>>>(in, out);
  AMPGAN_LAUNCHED("fma_probe_kernel");
}

}  // namespace ampgan::gpu
