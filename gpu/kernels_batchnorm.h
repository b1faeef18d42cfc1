// Launcher of the batch-norm running-average commit (Backend::batchnorm_commit_running, in
// gpu/kernels_batchnorm.cu), apart from gpu/kernels.h so that it can change without touching
// the shared kernel header.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ampgan::gpu {

// Pairs and slots one launch takes; the backend splits longer lists into several launches.
constexpr int kMaxCommitPairs = 32;
constexpr int kMaxCommitSlots = 8;

struct BnCommitList {
  float* running[kMaxCommitPairs];
  float* staged[kMaxCommitPairs];
  int64_t n[kMaxCommitPairs];
  int count = 0;
  int slots[kMaxCommitSlots];
  int slot_count = 0;
};

// On the device: if every scalars[list.slots[j]] is 0, running = staged, else staged = running.
void batchnorm_commit_running(cudaStream_t s, const BnCommitList& list, const float* scalars);

}  // namespace ampgan::gpu
