// What stays on disk in a run folder: old checkpoints beyond the retention setting, and the
// temporary files of writers that died mid-write (kill -9, power loss).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace ampgan {

// Deletes the run's checkpoints (checkpoints/step_N.safetensors, regular files only) except the
// `keep` newest, those whose step is a multiple of milestone (when milestone > 0) and `current`.
// keep 0 keeps everything. checkpoints/superseded-* is never touched. Returns what was deleted.
std::vector<std::filesystem::path> prune_checkpoints(const std::filesystem::path& run_dir, int keep, int64_t milestone,
                                                     int64_t current);

// Deletes the temporary files write_file_atomic leaves when its process dies ("NAME.tmp-PID-N")
// in the run folder, samples/ and checkpoints/, if process PID no longer runs. Returns them.
std::vector<std::filesystem::path> sweep_stale_temporaries(const std::filesystem::path& run_dir);

}  // namespace ampgan
