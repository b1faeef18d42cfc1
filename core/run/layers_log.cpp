#include "core/run/layers_log.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/common/error.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Shortest text that reads back to the same float (max |g| is an FP32 value).
std::string float_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

double log2_or_neg_inf(double v) { return v > 0 ? std::log2(v) : -INFINITY; }

const char* LayersLog::header() { return "step,network,layer,tensor,numel,max_abs,log2_max_abs,nonfinite,underflow"; }

LayersLog::LayersLog(const fs::path& path, std::vector<TensorName> names)
    : log_(std::make_unique<io::AppendLog>(path)), names_(std::move(names)) {
  if (log_->size() == 0) log_->append_line(header());
}

void LayersLog::write(const StepMetrics& m) {
  for (size_t k = 0; k < names_.size() && k < m.tensors.size(); ++k) {
    const TensorName& n = names_[k];
    const TensorGradStat& t = m.tensors[k];
    const double l2 = log2_or_neg_inf(t.max_abs);
    // Layer names are parameter-name prefixes (letters, digits, dots, underscores): no quoting.
    log_->append_line(std::to_string(m.step) + "," + n.network + "," + n.layer + "," + n.tensor + "," +
                      std::to_string(n.numel) + "," + float_text(t.max_abs) + "," +
                      (std::isfinite(l2) ? float_text(l2) : std::string()) + "," + std::to_string(t.nonfinite) + "," +
                      float_text(t.underflow));
  }
}

void LayersLog::trim(const fs::path& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::istringstream in(io::read_file(path));
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  while (std::getline(in, line)) {
    if (line.empty() || line.find(',') == std::string::npos) continue;
    if (split(line).size() != 9) continue;  // a half-written last row
    if (std::strtoll(line.c_str(), nullptr, 10) <= step) out += line + "\n";
  }
  io::write_file_atomic(path, out);
}

std::vector<LayerRow> LayersLog::read(const fs::path& path) {
  std::vector<LayerRow> rows;
  read_more(path, 0, rows);
  return rows;
}

uint64_t LayersLog::read_more(const fs::path& path, uint64_t offset, std::vector<LayerRow>& rows) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (fs::exists(path)) throw Error("layers.csv could not be opened", path.string(), "check the file's permissions");
    rows.clear();  // no file (yet): no rows
    return 0;
  }
  f.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(f.tellg());
  if (size < offset) {  // trimmed by a resume: start again
    rows.clear();
    offset = 0;
  }
  std::string text(size - offset, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  size_t pos = 0;
  if (offset == 0) {
    const size_t eol = text.find('\n');
    if (eol == std::string::npos) return 0;  // the header is still being written
    if (text.compare(0, eol, header()) != 0)
      throw Error("layers.csv has an unexpected header row", path.string(), "open a run folder made by AMP GAN Studio");
    pos = eol + 1;
  }
  // Complete lines only: a row still being written is read next time.
  for (size_t eol; (eol = text.find('\n', pos)) != std::string::npos; pos = eol + 1) {
    const auto c = split(text.substr(pos, eol - pos));
    if (c.size() != 9) continue;
    LayerRow r;
    r.step = std::strtoll(c[0].c_str(), nullptr, 10);
    r.name = {c[1], c[2], c[3], std::strtoll(c[4].c_str(), nullptr, 10)};
    r.stat.max_abs = std::strtof(c[5].c_str(), nullptr);
    r.stat.nonfinite = std::strtoull(c[7].c_str(), nullptr, 10);
    r.stat.underflow = std::strtod(c[8].c_str(), nullptr);
    rows.push_back(std::move(r));
  }
  return offset + pos;
}

}  // namespace ampgan
