// CudaBackend::batchnorm_commit_running (see core/backend/backend.h), kept out of
// gpu/cuda_backend.cpp; the kernel is in gpu/kernels_batchnorm_running.cu.
#include <string>

#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels_batchnorm_running.h"

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
    check(running[i].dtype() == DType::F32 && staged[i].dtype() == DType::F32 &&
              running[i].numel() == staged[i].numel(),
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

}  // namespace ampgan::gpu
