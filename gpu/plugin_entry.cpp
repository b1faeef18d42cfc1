// The one symbol the engine looks up in libampgan-cuda.so (core/backend/cuda_plugin.cpp).
#include "core/backend/cuda_plugin.h"
#include "gpu/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) const ampgan::CudaPluginApi* ampgan_cuda_plugin_api() {
  static const ampgan::CudaPluginApi api{ampgan::kCudaPluginAbi, &ampgan::gpu_list_devices, &ampgan::gpu_make_backend,
                                         &ampgan::gpu_fma_contraction, &ampgan::gpu_make_nccl};
  return &api;
}
