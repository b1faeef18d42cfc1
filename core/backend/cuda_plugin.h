// The CUDA backend is a plugin (libampgan-cuda.so) loaded at run time. AMP GAN Studio and its
// package then run on any machine, and depend on no NVIDIA package; where the NVIDIA driver,
// the CUDA runtime, cuBLAS and cuDNN are installed, the plugin loads and the GPU is used. The
// plugin links against the engine's symbols in the executable that loads it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

namespace dist {
class Communicator;
}

// Bumped whenever Backend's virtual functions change: a plugin built against another table of
// them must be refused, not called.
constexpr int kCudaPluginAbi = 3;

// What the plugin exports, through extern "C" ampgan_cuda_plugin_api().
struct CudaPluginApi {
  int abi_version;
  std::vector<GpuInfo> (*list_gpus)(std::string* why_none);
  std::unique_ptr<Backend> (*make_backend)(int device_index);
  bool (*fma_contraction)(Backend& backend);  // for the parity tests
  // Collective over `bootstrap`'s ranks: an NCCL communicator for the CUDA tensors of `backend`,
  // on its stream (gpu/cuda_nccl.cpp); nullptr on every rank, *why saying why, where any rank
  // has no NCCL (not compiled in, or libnccl.so.2 missing).
  dist::Communicator* (*make_nccl)(Backend& backend, dist::Communicator& bootstrap, std::string* why);
};

// The loaded plugin (loaded once), or nullptr with *why saying why: not built, not found, or
// NVIDIA's libraries missing (then the message says what to install).
const CudaPluginApi* cuda_plugin(std::string* why = nullptr);

// Whether the CUDA backend's device code contracts a * b + c into FMAs (false for other backends).
bool cuda_fma_contraction(Backend& backend);

}  // namespace ampgan
