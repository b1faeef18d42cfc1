#include "core/run/histograms_log.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/backend/elementwise.h"
#include "core/common/error.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {
constexpr size_t kFixedColumns = 4;  // step, network, precision, scale
}

std::string HistogramsLog::header() {
  // The bins by their exponent, so the file reads without this code: "e-64" .. "e31".
  std::string h = "step,network,precision,scale";
  for (int e = ew::kHistMinExp; e <= ew::kHistMaxExp; ++e) h += ",e" + std::to_string(e);
  return h + ",zero,nonfinite";
}

HistogramsLog::HistogramsLog(const fs::path& path) : log_(std::make_unique<io::AppendLog>(path)) {
  if (log_->size() == 0) log_->append_line(header());
}

void HistogramsLog::write(const HistogramRow& r) {
  std::string line = std::to_string(r.step) + "," + r.network + "," + precision_name(r.precision);
  char buf[32];
  std::snprintf(buf, sizeof buf, ",%.9g", r.scale);
  line += buf;
  for (int i = 0; i < ew::kHistBins; ++i) {
    const float c = i < static_cast<int>(r.counts.size()) ? r.counts[i] : 0.f;
    std::snprintf(buf, sizeof buf, ",%.9g", static_cast<double>(c));  // counts: whole numbers, short
    line += buf;
  }
  log_->append_line(line);
}

bool HistogramsLog::parse(const std::string& line, HistogramRow& out) {
  std::vector<std::string> c;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) c.push_back(cell);
  if (c.size() != kFixedColumns + ew::kHistBins || (c[1] != "G" && c[1] != "D")) return false;
  char* end = nullptr;
  out.step = std::strtoll(c[0].c_str(), &end, 10);
  if (end == c[0].c_str()) return false;
  out.network = c[1][0];
  try {
    out.precision = parse_precision(c[2]);
  } catch (const std::exception&) {
    return false;
  }
  out.scale = std::strtod(c[3].c_str(), nullptr);
  out.counts.resize(ew::kHistBins);
  for (int i = 0; i < ew::kHistBins; ++i) out.counts[i] = std::strtof(c[kFixedColumns + i].c_str(), nullptr);
  return true;
}

void HistogramsLog::trim(const fs::path& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::istringstream in(io::read_file(path));
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  HistogramRow r;
  while (std::getline(in, line))
    if (parse(line, r) && r.step <= step) out += line + "\n";
  io::write_file_atomic(path, out);
}

std::vector<HistogramRow> HistogramsLog::read(const fs::path& path) {
  std::vector<HistogramRow> rows;
  if (!fs::exists(path)) return rows;
  std::istringstream in(io::read_file(path));
  std::string line;
  std::getline(in, line);
  if (line != header())
    throw Error("histograms.csv has an unexpected header row", path.string(),
                "open a run folder made by AMP GAN Studio");
  HistogramRow r;
  while (std::getline(in, line))
    if (parse(line, r)) rows.push_back(r);  // a half-written last row is skipped
  return rows;
}

}  // namespace ampgan
