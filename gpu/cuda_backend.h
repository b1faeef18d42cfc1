// The CUDA backend's entry points, callable from plain C++ (no CUDA headers here).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

// GPUs the CUDA runtime sees; why_none explains an empty or unusable list (no driver, no device,
// compute capability below 7.5).
std::vector<GpuInfo> cuda_list_gpus(std::string* why_none);
std::unique_ptr<Backend> make_cuda_backend(int device_index);

}  // namespace ampgan
