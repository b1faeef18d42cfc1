// Guards for the files a command writes, checked before anything is computed or written: an
// output never replaces one of the command's inputs (not even with --force, and not through a
// symlink or hard link), and replaces another existing file only with --force.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ampgan::cli {

// Throws Error naming `out` (and `option`, e.g. "--grid") if writing it would replace an input
// or, without force, any existing file; also if it is a folder.
void check_output_file(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs, bool force,
                       const std::string& option);

}  // namespace ampgan::cli
