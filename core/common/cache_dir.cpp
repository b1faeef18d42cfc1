#include "core/common/cache_dir.h"

#include <cstdlib>

namespace ampgan {

std::filesystem::path cache_dir() {
  namespace fs = std::filesystem;
  if (const char* c = std::getenv("AMPGAN_CACHE_DIR")) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return fs::path(x) / "ampgan";
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".cache" / "ampgan";
  return fs::temp_directory_path() / "ampgan-cache";
}

}  // namespace ampgan
