#include "core/backend/cuda_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace ampgan {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPluginName = "libampgan-cuda.so";

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Where the plugin may be, in order: an explicit path, next to the program (build tree:
// build/<tool>/../lib/ampgan-studio; installed: bin/../lib/<arch>/ampgan-studio).
std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("AMPGAN_CUDA_PLUGIN")) out.emplace_back(env);
  const fs::path dir = executable_dir();
  if (!dir.empty()) {
    out.push_back(dir / ".." / "lib" / "ampgan-studio" / kPluginName);
    out.push_back(dir / ".." / AMPGAN_INSTALL_LIBDIR / "ampgan-studio" / kPluginName);
  }
#if defined(AMPGAN_BUILD_PLUGIN_DIR)
  // Programs run from elsewhere in the build tree (tests, benchmarks); never for installed ones.
  const fs::path build_dir = fs::path(AMPGAN_BUILD_PLUGIN_DIR).parent_path().parent_path();
  if (!dir.empty() && dir.string().rfind(build_dir.string(), 0) == 0)
    out.push_back(fs::path(AMPGAN_BUILD_PLUGIN_DIR) / kPluginName);
#endif
  return out;
}

struct Loaded {
  const CudaPluginApi* api = nullptr;
  std::string why;
};

Loaded load() {
  Loaded l;
  std::error_code ec;
  for (const fs::path& p : candidates()) {
    if (!fs::exists(p, ec)) continue;
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      l.why = std::string("the CUDA backend (") + p.lexically_normal().string() +
              ") could not be loaded: " + (err ? err : "unknown error") +
              ". It needs the NVIDIA driver and NVIDIA's CUDA 13 runtime, cuBLAS 13 and cuDNN 9 libraries "
              "(docs/user-guide.md, 'Using an NVIDIA GPU'; installed: /usr/share/doc/ampgan-studio/docs/user-guide.md)";
      return l;
    }
    using Entry = const CudaPluginApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "ampgan_cuda_plugin_api"));
    const CudaPluginApi* api = entry ? entry() : nullptr;
    if (!api || api->abi_version != kCudaPluginAbi) {
      l.why = "the CUDA backend at " + p.lexically_normal().string() +
              " belongs to another version of AMP GAN Studio; reinstall the package";
      return l;
    }
    l.api = api;  // the handle stays open for the life of the process
    return l;
  }
  l.why =
      "this installation has no CUDA backend (install the ampgan-studio-cuda package; from source, "
      "libampgan-cuda.so is built where the CUDA toolkit and cuDNN are present)";
  return l;
}

}  // namespace

const CudaPluginApi* cuda_plugin(std::string* why) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.api && why) *why = loaded.why;
  return loaded.api;
}

bool cuda_fma_contraction(Backend& backend) {
  const CudaPluginApi* api = cuda_plugin();
  return api && backend.kind() == DeviceKind::CUDA && api->fma_contraction(backend);
}

}  // namespace ampgan
