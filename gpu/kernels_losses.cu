// The losses on the GPU: the GAN losses (BCE with logits, hinge) with their gradients scaled by
// the loss scale, and softmax cross-entropy (the classifier of the metrics). Sums in double in
// the CPU's order. The CPU version is core/backend/cpu/cpu_losses.cpp.
#include "gpu/kernel_common.cuh"

namespace ampgan::gpu {

namespace {

// One block: n is a batch of logits. Sums in double as the CPU does; dlogits element-wise.
__global__ void gan_loss_kernel(LossKind kind, LossRole role, const float* x, int64_t n, const float* scaler_state,
                                float* dx, float* scalars, int loss_slot, int prob_slot) {
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
__global__ void softmax_rows_kernel(const float* x, const float* labels, int64_t n, int64_t k, float* dx,
                                    double* row_loss, int* row_correct) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    bool right = false;
    row_loss[i] =
        ew::softmax_xent_row(x + i * k, k, static_cast<int64_t>(labels[i]), static_cast<double>(n), dx + i * k, right);
    row_correct[i] = right ? 1 : 0;
  }
}

// One thread, summing rows in order as the CPU's loop does.
__global__ void softmax_finalize_kernel(const double* row_loss, const int* row_correct, int64_t n, float* scalars,
                                        int loss_slot, int correct_slot) {
  double loss = 0.0;
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    loss += row_loss[i];
    correct += row_correct[i];
  }
  scalars[loss_slot] = static_cast<float>(loss / static_cast<double>(n));
  scalars[correct_slot] = static_cast<float>(correct);
}

}  // namespace

void gan_loss(cudaStream_t s, LossKind kind, LossRole role, const float* logits, int64_t n, const float* scaler_state,
              float* dlogits, float* scalars, int loss_slot, int prob_slot) {
  gan_loss_kernel<<<1, kThreads, 0, s>>>(kind, role, logits, n, scaler_state, dlogits, scalars, loss_slot, prob_slot);
  AMPGAN_LAUNCHED("gan_loss_kernel");
}

size_t softmax_ce_workspace_bytes(int64_t n) { return static_cast<size_t>(n) * (sizeof(double) + sizeof(int)) + 16; }

void softmax_cross_entropy(cudaStream_t s, const float* logits, const float* labels, int64_t n, int64_t k,
                           float* dlogits, float* scalars, int loss_slot, int correct_slot, void* ws) {
  double* row_loss = static_cast<double*>(ws);
  int* row_correct = reinterpret_cast<int*>(row_loss + n);
  softmax_rows_kernel<<<grid_for(n, 1), kThreads, 0, s>>>(logits, labels, n, k, dlogits, row_loss, row_correct);
  AMPGAN_LAUNCHED("softmax_rows_kernel");
  softmax_finalize_kernel<<<1, 1, 0, s>>>(row_loss, row_correct, n, scalars, loss_slot, correct_slot);
  AMPGAN_LAUNCHED("softmax_finalize_kernel");
}

}  // namespace ampgan::gpu
