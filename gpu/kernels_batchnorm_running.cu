// The batch-norm running-average commit: one launch per network and step, its decision taken on
// the device from the found-inf flags, so it needs no host synchronisation and is captured into
// the step's graph. Mirrors CpuBackend::batchnorm_commit_running (core/backend/cpu/cpu_batchnorm.cpp).
#include "gpu/kernel_common.cuh"
#include "gpu/kernels_batchnorm_running.h"

namespace ampgan::gpu {

namespace {

__global__ void bn_commit_running_kernel(BnCommitList list, const float* scalars) {
  bool skip = false;
  for (int j = 0; j < list.slot_count; ++j) skip |= scalars[list.slots[j]] != 0.0f;
  for (int t = 0; t < list.count; ++t) {
    float* r = list.running[t];
    float* st = list.staged[t];
    for (int64_t i = global_thread(); i < list.n[t]; i += grid_stride()) {
      if (skip) st[i] = r[i];
      else r[i] = st[i];
    }
  }
}

}  // namespace

void batchnorm_commit_running(cudaStream_t s, const BnCommitList& list, const float* scalars) {
  if (list.count == 0) return;
  int64_t most = 0;
  for (int t = 0; t < list.count; ++t) most = most > list.n[t] ? most : list.n[t];
  bn_commit_running_kernel<<<grid_for(most), kThreads, 0, s>>>(list, scalars);
  AMPGAN_LAUNCHED("bn_commit_running_kernel");
}

}  // namespace ampgan::gpu
