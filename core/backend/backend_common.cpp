// Parts of the Backend shared by every implementation: memory accounting, a synchronous
// read-back for backends without asynchronous copies, and backend selection.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"

#include "core/backend/cuda_plugin.h"

namespace ampgan {

const char* cpu_kernels_name(CpuKernels k) {
  switch (k) {
    case CpuKernels::Auto:
      return "auto";
    case CpuKernels::OpenBlas:
      return "openblas";
    case CpuKernels::OneDnn:
      return "onednn";
  }
  return "?";
}

bool parse_cpu_kernels(const std::string& s, CpuKernels* out) {
  for (CpuKernels k : {CpuKernels::Auto, CpuKernels::OpenBlas, CpuKernels::OneDnn})
    if (s == cpu_kernels_name(k)) {
      *out = k;
      return true;
    }
  return false;
}

void MemoryTracker::add(MemCategory c, size_t bytes) {
  const size_t i = static_cast<size_t>(c);
  const size_t now = current_[i].fetch_add(bytes) + bytes;
  size_t p = peak_[i].load();
  while (now > p && !peak_[i].compare_exchange_weak(p, now)) {}
  const size_t total = total_.fetch_add(bytes) + bytes;
  size_t pt = peak_total_.load();
  while (total > pt && !peak_total_.compare_exchange_weak(pt, total)) {}
}

void MemoryTracker::remove(MemCategory c, size_t bytes) {
  current_[static_cast<size_t>(c)].fetch_sub(bytes);
  total_.fetch_sub(bytes);
}

MemoryStats MemoryTracker::stats() const {
  MemoryStats s;
  for (size_t i = 0; i < kN; ++i) {
    s.current[i] = current_[i].load();
    s.peak[i] = peak_[i].load();
  }
  s.current_total = total_.load();
  s.peak_total = peak_total_.load();
  return s;
}

void MemoryTracker::reset_peak() {
  for (size_t i = 0; i < kN; ++i) peak_[i].store(current_[i].load());
  peak_total_.store(total_.load());
}

namespace {
class SyncReadback final : public HostReadback {
 public:
  explicit SyncReadback(std::vector<float> v) : values_(std::move(v)) {}
  bool ready() override { return true; }
  const float* wait() override { return values_.data(); }

 private:
  std::vector<float> values_;
};
}  // namespace

std::unique_ptr<HostReadback> Backend::read_async(const Tensor& src) {
  AMPGAN_CHECK(src.dtype() == DType::F32, "read_async takes FP32 tensors");
  std::vector<float> v(static_cast<size_t>(src.numel()));
  download(src, v.data(), src.nbytes());
  return std::make_unique<SyncReadback>(std::move(v));
}

bool cuda_backend_compiled() { return cuda_plugin() != nullptr; }

std::vector<GpuInfo> list_gpus(std::string* why_none) {
  const CudaPluginApi* api = cuda_plugin(why_none);
  return api ? api->list_gpus(why_none) : std::vector<GpuInfo>{};
}

std::unique_ptr<Backend> create_backend(const std::string& which, std::string* note, int gpu) {
  if (which == "cpu") return std::make_unique<CpuBackend>();
  if (which != "auto" && which != "cuda")
    throw Error("unknown backend '" + which + "'", "--backend", "use auto, cpu or cuda");
  std::string why;
  const std::vector<GpuInfo> gpus = list_gpus(&why);
  auto chosen = std::find_if(gpus.begin(), gpus.end(), [&](const GpuInfo& g) { return g.index == gpu && g.usable; });
  if (chosen == gpus.end() && which == "cuda" && !gpus.empty()) {
    const bool exists = std::any_of(gpus.begin(), gpus.end(), [&](const GpuInfo& g) { return g.index == gpu; });
    throw Error(exists ? "GPU " + std::to_string(gpu) + " cannot be used (compute capability 7.5 or newer is needed)"
                       : "there is no GPU " + std::to_string(gpu),
                "--gpu", "run 'ampgan devices' to see the GPUs and their indices");
  }
  if (chosen == gpus.end()) {
    chosen = std::find_if(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return g.usable; });
    if (chosen != gpus.end() && note)
      *note = "GPU " + std::to_string(gpu) + " is not usable; training on GPU " + std::to_string(chosen->index);
  }
  if (chosen == gpus.end()) {
    if (which == "cuda")
      throw Error("no usable NVIDIA GPU: " + why, "--backend cuda",
                  "run 'ampgan devices' for details, or use --backend cpu (or auto)");
    if (note) *note = "no usable GPU (" + why + "); training on the CPU";
    return std::make_unique<CpuBackend>();
  }
  return cuda_plugin()->make_backend(chosen->index);
}

}  // namespace ampgan
