#include "core/run/run_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <system_error>

#include "core/common/error.h"
#include "core/common/timestamp.h"
#include "core/io/atomic_file.h"
#include "core/io/run_lock.h"
#include "core/run/histograms_log.h"
#include "core/run/layers_log.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

fs::path numbered(const fs::path& dir, int64_t step, const char* ext) {
  char name[64];
  std::snprintf(name, sizeof name, "step_%06lld%s", static_cast<long long>(step), ext);
  return dir / name;
}

}  // namespace

fs::path RunFolder::sample_grid(int64_t step) const { return numbered(samples_dir(), step, ".png"); }

std::map<int64_t, fs::path> RunFolder::sample_grids() const {
  std::map<int64_t, fs::path> grids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(samples_dir(), ec)) {
    long long step = 0;
    char tail = 0;
    if (std::sscanf(e.path().filename().c_str(), "step_%lld.pn%c", &step, &tail) == 2 && tail == 'g' &&
        e.path().extension() == ".png" && step >= 0 && e.is_regular_file(ec))
      grids[step] = e.path();
  }
  return grids;
}
fs::path RunFolder::checkpoint(int64_t step) const { return numbered(checkpoints_dir(), step, ".safetensors"); }

std::vector<fs::path> RunFolder::tensorboard_files() const {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().filename().string().rfind(kTensorBoardPrefix, 0) == 0 && e.is_regular_file(ec) && !e.is_symlink(ec))
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path RunFolder::new_tensorboard_file() const {
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = 0;
  const std::string base = std::string(kTensorBoardPrefix) +
                           std::to_string(static_cast<long long>(std::time(nullptr))) + "." + host + "." +
                           std::to_string(static_cast<long long>(::getpid()));
  fs::path p = dir_ / base;
  std::error_code ec;
  for (int n = 1; fs::exists(fs::symlink_status(p, ec)); ++n) p = dir_ / (base + "." + std::to_string(n));
  return p;
}

bool RunFolder::exists() const {
  std::error_code ec;
  return fs::exists(config(), ec);  // a FIFO or folder named so gets read_file's clear refusal
}

bool RunFolder::holds_files() const {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().filename() != io::kRunLockName) return true;
  return false;
}

bool RunFolder::has_checkpoint() const {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints_dir(), ec))
    if (e.path().extension() == ".safetensors") return true;
  return false;
}

void RunFolder::check_own_files() const {
  std::vector<const char*> names = log_names();
  names.insert(names.begin(), kConfig);
  for (const char* name : names) {
    const fs::path p = dir_ / name;
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st) || fs::is_regular_file(st)) continue;
    std::string what = "not a regular file";
    if (fs::is_symlink(st)) {
      const fs::path target = fs::read_symlink(p, ec);
      what = "a symbolic link" + (ec ? std::string() : " to " + target.string()) +
             (fs::exists(p, ec) ? std::string() : " (which does not exist)");
    } else if (fs::is_directory(st)) {
      what = "a folder";
    } else if (fs::is_fifo(st)) {
      what = "a FIFO (named pipe)";
    }
    throw Error(std::string(name) + " is " + what +
                    "; a run's files must be its own regular files, so that "
                    "nothing is written outside the run folder (nothing was changed)",
                p.string(), "remove it, or put a copy of the file it stands for in its place, and try again");
  }
}

RunConfig RunFolder::read_config() const {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    throw Error("no such run folder", dir_.string(), "give the folder 'ampgan train' created (under runs/)");
  if (!fs::exists(config(), ec))
    throw Error("not a run folder: it has no config.json", dir_.string(), "give the folder 'ampgan train' created");
  try {
    return RunConfig::from_json(nlohmann::json::parse(io::read_file(config(), io::kConfigFileMaxBytes)),
                                config().string());
  } catch (const nlohmann::json::exception&) {
    throw Error("config.json is not valid JSON", config().string(), "restore it or start a new run");
  }
}

void RunFolder::write_config(const RunConfig& c) const { io::write_file_atomic(config(), c.to_json().dump(2) + "\n"); }

std::vector<StepMetrics> RunFolder::read_metrics() const {
  const fs::path p = metrics();
  if (!fs::exists(p))
    throw Error("the run folder has no metrics.csv", dir_.string(), "open a folder made by AMP GAN Studio");
  std::istringstream in(io::read_file(p));
  std::string line;
  std::getline(in, line);
  const auto header = split_csv(line);
  if (header.empty() || header[0] != "step") throw Error("metrics.csv has no header row", p.string());
  std::vector<StepMetrics> out;
  while (std::getline(in, line)) {
    const auto cells = split_csv(line);
    if (cells.size() != header.size()) continue;
    try {
      out.push_back(StepMetrics::from_csv_row(header, cells));
    } catch (const Error&) {}
  }
  return out;
}

std::vector<RunEvent> RunFolder::read_events() const {
  std::vector<RunEvent> out;
  const fs::path p = events();
  if (!fs::exists(p)) return out;
  std::istringstream in(io::read_file(p));
  std::string line;
  while (std::getline(in, line)) {
    try {
      out.push_back(RunEvent::from_json(nlohmann::json::parse(line)));
    } catch (const nlohmann::json::exception&) {}
  }
  return out;
}

double RunFolder::trim_logs(int64_t step) const {
  double time_offset = 0;
  if (fs::exists(metrics())) {
    std::istringstream in(io::read_file(metrics()));
    std::string line, out, header;
    std::getline(in, header);
    const auto cols = split_csv(header);
    // A run from before columns were added (replaced_d, replaced_g) gets the current header,
    // its old rows empty cells in the new columns, so every row has the header's width.
    const auto& now = StepMetrics::columns();
    const bool upgrade = cols.size() < now.size() && std::equal(cols.begin(), cols.end(), now.begin());
    std::string current;
    for (const std::string& c : now) current += (current.empty() ? "" : ",") + c;
    const std::string pad = upgrade ? std::string(now.size() - cols.size(), ',') : std::string();
    // An emptied file stays empty: the log's opener writes the header then.
    if (!header.empty()) out = (upgrade ? current : header) + "\n";
    const auto time_col = std::find(cols.begin(), cols.end(), "time_s") - cols.begin();
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const auto cells = split_csv(line);
      if (cells.size() != cols.size()) continue;  // a half-written last row
      const int64_t st = std::strtoll(cells[0].c_str(), nullptr, 10);
      if (st <= step) {
        out += line + pad + "\n";
        if (time_col < static_cast<long>(cells.size()))
          time_offset = std::max(time_offset, std::strtod(cells[time_col].c_str(), nullptr));
      }
    }
    io::write_file_atomic(metrics(), out);
  }
  if (fs::exists(events())) {
    std::istringstream in(io::read_file(events()));
    std::string line, out;
    while (std::getline(in, line)) {
      try {
        if (nlohmann::json::parse(line).value("step", int64_t{0}) <= step) out += line + "\n";
      } catch (const nlohmann::json::exception&) {}
    }
    io::write_file_atomic(events(), out);
  }
  LayersLog::trim(layers(), step);
  HistogramsLog::trim(histograms(), step);
  return time_offset;
}

fs::path RunFolder::set_aside(const std::vector<fs::path>& files, int64_t step) const {
  // mkdir, not create_directories: a folder of that name (two resumes in one second) is never
  // shared, so one set-aside history can never overwrite another's copies.
  io::ensure_writable_dir(checkpoints_dir());
  const std::string base = "superseded-after-" + std::to_string(step) + "-" + local_timestamp();
  fs::path dir;
  for (int n = 1;; ++n) {
    dir = checkpoints_dir() / (n == 1 ? base : base + "-" + std::to_string(n));
    if (::mkdir(dir.c_str(), 0755) == 0) break;
    const int err = errno;
    if (err != EEXIST || n == 1000)
      throw Error("could not create a folder for the superseded history: " + std::system_category().message(err),
                  dir.string(), "check that the run folder is writable and the disk is not full");
  }
  for (const char* log : log_names())
    if (fs::exists(dir_ / log)) io::write_file_atomic(dir / log, io::read_file(dir_ / log));
  for (const fs::path& f : files) {
    std::error_code ec;
    fs::rename(f, dir / f.filename(), ec);
    if (ec)
      throw Error("could not move a later checkpoint aside: " + ec.message(), f.string(),
                  "check the folder's permissions");
  }
  return dir;
}

}  // namespace ampgan
