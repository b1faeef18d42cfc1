// CUDA backend, batch norm: training and eval forward, backward (per-channel reductions in
// gpu/kernels_batchnorm.cu) and the running statistics' commit after the step's skip decision
// (also gpu/kernels_batchnorm.cu). The CPU version is core/backend/cpu/cpu_batchnorm.cpp.
#include <string>

#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"
#include "gpu/kernels_batchnorm.h"

namespace ampgan::gpu {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw Error("CUDA backend: batchnorm_commit_running: " + what, "", "this is a bug in the caller");
}

}  // namespace

void CudaBackend::batchnorm_commit_running(const std::vector<Tensor>& running, const std::vector<Tensor>& staged,
                                           const Tensor& scalars, const std::vector<int>& skip_slots) {
  check(running.size() == staged.size() && scalars.dtype() == DType::F32, "pairs of tensors and FP32 scalars expected");
  check(skip_slots.size() <= static_cast<size_t>(kMaxCommitSlots), "too many skip slots");
  BnCommitList list;
  for (int s : skip_slots) {
    check(s >= 0 && s < scalars.numel(), "slot out of range");
    list.slots[list.slot_count++] = s;
  }
  activate();
  for (size_t i = 0; i < running.size(); ++i) {
    check(
        running[i].dtype() == DType::F32 && staged[i].dtype() == DType::F32 && running[i].numel() == staged[i].numel(),
        "pairs of FP32 tensors of equal size expected");
    list.running[list.count] = running[i].as<float>();
    list.staged[list.count] = staged[i].as<float>();
    list.n[list.count] = running[i].numel();
    if (++list.count == kMaxCommitPairs || i + 1 == running.size()) {
      gpu::batchnorm_commit_running(stream_, list, scalars.as<float>());
      list.count = 0;
    }
  }
}

void CudaBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                                          bool update_running, Tensor& y, Tensor& save_mean, Tensor& save_invstd) {
  const int64_t c = gamma.numel(), rows = c ? x.numel() / c : 0;
  require(x.dtype() == y.dtype() && x.numel() == y.numel() && c > 0 && x.numel() % c == 0 && rows > 1,
          "batchnorm_forward_train", "shape mismatch");
  require(gamma.dtype() == DType::F32 && beta.dtype() == DType::F32 && save_mean.dtype() == DType::F32 &&
              save_invstd.dtype() == DType::F32 && running_mean.dtype() == DType::F32 &&
              running_var.dtype() == DType::F32,
          "batchnorm_forward_train", "statistics and parameters must be FP32");
  activate();
  void* ws = workspace(kWsReduce, gpu::channel_workspace_bytes(rows, c), "batchnorm_forward_train");
  gpu::batchnorm_forward_train(stream_, x.dtype(), x.data(), rows, c, gamma.as<float>(), beta.as<float>(),
                               running_mean.as<float>(), running_var.as<float>(), momentum, eps, update_running,
                               y.data(), save_mean.as<float>(), save_invstd.as<float>(), ws);
}

void CudaBackend::batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  const int64_t c = gamma.numel(), rows = c ? x.numel() / c : 0;
  require(x.dtype() == y.dtype() && x.numel() == y.numel() && c > 0 && x.numel() % c == 0, "batchnorm_forward_eval",
          "shape mismatch");
  activate();
  gpu::batchnorm_forward_eval(stream_, x.dtype(), x.data(), rows, c, gamma.as<float>(), beta.as<float>(),
                              running_mean.as<float>(), running_var.as<float>(), eps, y.data());
}

void CudaBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& save_mean,
                                     const Tensor& save_invstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                                     bool accumulate) {
  const int64_t c = gamma.numel(), rows = c ? x.numel() / c : 0;
  require(x.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && x.numel() == dy.numel() && dx.numel() == x.numel() &&
              c > 0 && x.numel() % c == 0,
          "batchnorm_backward", "shape mismatch");
  activate();
  void* ws = workspace(kWsReduce, gpu::channel_workspace_bytes(rows, c), "batchnorm_backward");
  gpu::batchnorm_backward(stream_, x.dtype(), x.data(), dy.data(), rows, c, gamma.as<float>(), save_mean.as<float>(),
                          save_invstd.as<float>(), dx.data(), dgamma.as<float>(), dbeta.as<float>(), accumulate, ws);
}

}  // namespace ampgan::gpu
