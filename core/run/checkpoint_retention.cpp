#include "core/run/checkpoint_retention.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <regex>

#include "core/run/checkpoint.h"
#include "core/run/run_folder.h"

namespace ampgan {

namespace fs = std::filesystem;

std::vector<fs::path> prune_checkpoints(const fs::path& run_dir, int keep, int64_t milestone, int64_t current) {
  std::vector<fs::path> removed;
  if (keep <= 0) return removed;
  std::vector<std::pair<int64_t, fs::path>> all;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RunFolder(run_dir).checkpoints_dir(), ec)) {
    std::error_code ec2;
    if (!e.is_regular_file(ec2)) continue;
    int64_t step = -1;
    try {
      step = step_of_checkpoint_name(e.path());
    } catch (const std::exception&) {
      continue;  // not a name a run writes: not ours to delete
    }
    if (step >= 0) all.emplace_back(step, e.path());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) {
    const auto& [step, path] = all[i];
    if (step == current || (milestone > 0 && step % milestone == 0)) continue;
    std::error_code ec3;
    if (fs::remove(path, ec3)) removed.push_back(path);
  }
  return removed;
}

std::vector<fs::path> sweep_stale_temporaries(const fs::path& run_dir) {
  static const std::regex re(".+\\.tmp-([0-9]{1,9})-[0-9]+");
  std::vector<fs::path> removed;
  const RunFolder folder(run_dir);
  for (const fs::path& dir : {folder.dir(), folder.samples_dir(), folder.checkpoints_dir()}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::error_code ec2;
      if (!e.is_regular_file(ec2)) continue;
      std::smatch m;
      const std::string name = e.path().filename().string();
      if (!std::regex_match(name, m, re)) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(m[1]));
      // A live writer (ours, or another program writing here) keeps its file.
      if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
      if (fs::remove(e.path(), ec2)) removed.push_back(e.path());
    }
  }
  return removed;
}

}  // namespace ampgan
