// CUDA backend: the devices this machine has (for `ampgan devices`, the studio's device list and
// --backend auto), or why there are none, in words a user can act on.
#include <algorithm>
#include <string>
#include <vector>

#include "gpu/cuda_backend.h"
#include "gpu/cuda_backend_impl.h"

namespace ampgan {

namespace {

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

std::vector<GpuInfo> gpu_list_devices(std::string* why_none) {
  std::vector<GpuInfo> out;
  std::string why;
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    int driver = 0, runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaGetLastError();
    const std::string code = std::string(" (") + cudaGetErrorName(st) + ")";
    if (st == cudaErrorInsufficientDriver && driver == 0)
      why = "no NVIDIA driver is installed or loaded" + code;
    else if (st == cudaErrorInsufficientDriver)
      why = "the NVIDIA driver supports CUDA " + cuda_version(driver) + " but this build needs CUDA " +
            cuda_version(runtime) + code + ": update the driver";
    else if (st == cudaErrorNoDevice)
      why = "the NVIDIA driver found no CUDA-capable GPU" + code;
    else
      why = std::string("the CUDA runtime could not start: ") + cudaGetErrorString(st) + code;
    if (why_none) *why_none = why;
    return out;
  }
  if (n == 0) {
    if (why_none) *why_none = "the NVIDIA driver found no CUDA-capable GPU";
    return out;
  }
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  std::vector<std::string> reasons;
  for (int i = 0; i < n; ++i) {
    GpuInfo g;
    g.index = i;
    cudaDeviceProp p{};
    const cudaError_t pst = cudaGetDeviceProperties(&p, i);
    if (pst != cudaSuccess) {
      (void)cudaGetLastError();
      g.name = "GPU " + std::to_string(i);
      reasons.push_back("GPU " + std::to_string(i) + " could not be queried (" + cudaGetErrorName(pst) + ")");
      out.push_back(g);
      continue;
    }
    g.name = p.name;
    g.total_memory = p.totalGlobalMem;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.usable = p.major * 10 + p.minor >= 75;
    if (!g.usable) {
      reasons.push_back("GPU " + std::to_string(i) + " (" + g.name + ") has compute capability " +
                        std::to_string(p.major) + "." + std::to_string(p.minor) +
                        "; this build (CUDA 13) needs 7.5 (Turing) or newer");
    } else {
      size_t free_b = 0, total_b = 0;
      cudaError_t mst = cudaSetDevice(i);
      if (mst == cudaSuccess) mst = cudaMemGetInfo(&free_b, &total_b);
      if (mst != cudaSuccess) {
        (void)cudaGetLastError();
        g.usable = false;
        reasons.push_back("GPU " + std::to_string(i) + " (" + g.name +
                          ") could not be opened: " + cudaGetErrorName(mst) + " (" + cudaGetErrorString(mst) + ")");
      } else {
        g.free_memory = free_b;
      }
    }
    out.push_back(g);
  }
  if (previous >= 0) (void)cudaSetDevice(previous);
  const bool any = std::any_of(out.begin(), out.end(), [](const GpuInfo& g) { return g.usable; });
  if (why_none) {
    why.clear();
    if (!any)
      for (size_t i = 0; i < reasons.size(); ++i) why += (i ? "; " : "") + reasons[i];
    *why_none = why;
  }
  return out;
}

}  // namespace ampgan
