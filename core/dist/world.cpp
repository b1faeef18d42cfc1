#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/dist/communicator.h"

namespace ampgan::dist {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPluginName = "libampgan-mpi.so";

// Beside the CUDA plugin: build tree build/<tool>/../lib/ampgan-studio, installed
// bin/../lib/<arch>/ampgan-studio, or where AMPGAN_MPI_PLUGIN says.
std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("AMPGAN_MPI_PLUGIN")) out.emplace_back(env);
  std::error_code ec;
  const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (!ec) {
    out.push_back(dir / ".." / "lib" / "ampgan-studio" / kPluginName);
    out.push_back(dir / ".." / AMPGAN_INSTALL_LIBDIR / "ampgan-studio" / kPluginName);
  }
#if defined(AMPGAN_BUILD_MPI_PLUGIN_DIR)
  out.push_back(fs::path(AMPGAN_BUILD_MPI_PLUGIN_DIR) / kPluginName);  // tests run from elsewhere in the build tree
#endif
  return out;
}

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

std::unique_ptr<Communicator> world(double timeout_s) {
  if (!launched_by_mpirun()) return nullptr;
  std::error_code ec;
  for (const fs::path& p : candidates()) {
    if (!fs::exists(p, ec)) continue;
    // RTLD_GLOBAL: Open MPI loads its own components with dlopen and they need libmpi's symbols.
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char* e = dlerror();
      throw Error(std::string("the MPI support (") + p.lexically_normal().string() +
                      ") could not be loaded: " + (e ? e : "unknown error"),
                  "mpirun", "install Open MPI's runtime (Debian: openmpi-bin, libopenmpi3)");
    }
    using Entry = const MpiPluginApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "ampgan_mpi_plugin_api"));
    const MpiPluginApi* api = entry ? entry() : nullptr;
    if (!api || api->abi_version != kMpiPluginAbi)
      throw Error(
          "the MPI support at " + p.lexically_normal().string() + " belongs to another version of AMP GAN Studio",
          "mpirun", "reinstall the package");
    std::string err;
    Communicator* c = api->create_world(timeout_s, &err);
    if (!c) throw Error("MPI did not start: " + err, "mpirun", "run the program under Open MPI's mpirun");
    return std::unique_ptr<Communicator>(c);
  }
  throw Error(
      "started by mpirun, but this build has no MPI support (libampgan-mpi.so is built where Open MPI's "
      "development files are found)",
      "mpirun", "install libopenmpi-dev and rebuild, or run without mpirun");
}

}  // namespace ampgan::dist
