// Where the programs keep what they can recompute but should not have to: $AMPGAN_CACHE_DIR,
// else $XDG_CACHE_HOME/ampgan, else ~/.cache/ampgan (the feature classifiers of the Fréchet
// distance, the CPU backend's kernel choices for this host).
#pragma once

#include <filesystem>

namespace ampgan {

std::filesystem::path cache_dir();

}  // namespace ampgan
