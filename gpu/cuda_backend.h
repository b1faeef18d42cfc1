// The CUDA backend's entry points, callable from plain C++ (no CUDA headers here). The plugin
// hands them to the engine through ampgan_cuda_plugin_api() (gpu/plugin_entry.cpp); the names
// differ from the engine's own wrappers so neither can stand in for the other when it loads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

// GPUs the CUDA runtime sees; why_none explains an empty or unusable list (no driver, no device,
// compute capability below 7.5). Never prints, never aborts.
std::vector<GpuInfo> gpu_list_devices(std::string* why_none);
std::unique_ptr<Backend> gpu_make_backend(int device_index);

// For the parity tests: whether this build's device code contracts a * b + c into FMA
// instructions (nvcc's default --fmad=true). Then element-wise results that the CPU computes
// with a separate multiply and add may differ by an ulp. False for a non-CUDA backend.
bool gpu_fma_contraction(Backend& backend);

// CudaPluginApi::make_nccl (gpu/cuda_nccl.cpp).
namespace dist {
class Communicator;
}
dist::Communicator* gpu_make_nccl(Backend& backend, dist::Communicator& bootstrap, std::string* why);

}  // namespace ampgan
