#include "cli/outputs.h"

#include "core/common/error.h"

namespace ampgan::cli {

namespace fs = std::filesystem;

void check_output_file(const fs::path& out, const std::vector<fs::path>& inputs, bool force,
                       const std::string& option) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (!fs::exists(st)) return;
  if (fs::is_directory(st))
    throw Error(option + " names a folder, not a file", out.string(), "give the name of the file to write");
  for (const fs::path& in : inputs) {
    std::error_code ec2;
    // equivalent() compares device and inode, so a symlink or hard link to the input counts too.
    if (fs::equivalent(out, in, ec2))
      throw Error("the output would replace the input " + in.string() + " (nothing was written)", out.string(),
                  "choose another output file for " + option);
  }
  if (!force)
    throw Error("the output file already exists (it was left untouched)", out.string(),
                "choose another name for " + option + ", or add --force to replace it");
}

}  // namespace ampgan::cli
