#include "core/run/tensorboard_log.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/backend/ew/histogram.h"
#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/run_lock.h"
#include "core/io/tensorboard_event.pb.h"
#include "core/run/run_event.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

constexpr int kDtString = 7;  // TensorFlow's DataType DT_STRING (types.proto)

tb::Event event_at(int64_t step, double wall_time) {
  tb::Event e;
  e.set_step(step);
  e.set_wall_time(wall_time);
  return e;
}

}  // namespace

double precision_code(Precision p) { return static_cast<double>(static_cast<int>(p)); }

std::vector<std::pair<std::string, double>> tensorboard_scalars(const StepMetrics& m) {
  std::vector<std::pair<std::string, double>> v = {
      {"loss/D", m.loss_d},
      {"loss/G", m.loss_g},
      {"D(x)", m.d_real},
      {"D(G(z))", m.d_fake},
      {"grad_norm/D", m.grad_norm_d},
      {"grad_norm/G", m.grad_norm_g},
      {"loss_scale/D", m.scale_d},
      {"loss_scale/G", m.scale_g},
      {"skipped/D", static_cast<double>(m.skipped_d)},
      {"skipped/G", static_cast<double>(m.skipped_g)},
      {"underflow/D", m.underflow_d},
      {"underflow/G", m.underflow_g},
      {"throughput/img_per_s", m.images_per_s},
      {"time/step_ms", m.step_ms},
      {"memory/backend_MB", m.memory_mb},
      {"precision", precision_code(m.precision)},
  };
  v.emplace_back("quality/SWD", m.swd);
  v.emplace_back("quality/FD", m.fd);
  // NaN is metrics.csv's empty cell (no evaluation this step; no gradient norm on a skipped
  // step): no point at all, rather than a NaN that breaks a chart's scale.
  std::erase_if(v, [](const auto& tv) { return std::isnan(tv.second); });
  return v;
}

double TensorBoardLog::now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TensorBoardLog::TensorBoardLog(const fs::path& path, double wall_time)
    : writer_(std::make_unique<io::TfRecordWriter>(path)) {
  tb::Event e = event_at(0, wall_time);
  e.set_file_version("brain.Event:2");  // what TensorFlow's writers put first; readers check it
  writer_->write(e.SerializeAsString());
}

void TensorBoardLog::scalars(const StepMetrics& m, double wall_time) {
  tb::Event e = event_at(m.step, wall_time);
  for (const auto& [tag, value] : tensorboard_scalars(m)) {
    tb::Summary::Value* v = e.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));  // simple_value is a float in summary.proto
  }
  writer_->write(e.SerializeAsString());
}

void TensorBoardLog::text(int64_t step, const std::string& tag, const std::string& text, double wall_time) {
  tb::Event e = event_at(step, wall_time);
  tb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  // The text dashboard shows string tensors whose metadata names its plugin.
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tb::TensorProto* t = v->mutable_tensor();
  t->set_dtype(kDtString);
  t->mutable_tensor_shape();  // a scalar: no dimensions
  t->add_string_val(text);
  writer_->write(e.SerializeAsString());
}

void TensorBoardLog::image(int64_t step, const std::string& tag, const std::string& png, const io::Image8& img,
                           double wall_time) {
  tb::Event e = event_at(step, wall_time);
  tb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  tb::Summary::Image* im = v->mutable_image();
  im->set_height(img.height);
  im->set_width(img.width);
  im->set_colorspace(img.channels);
  im->set_encoded_image_string(png);
  writer_->write(e.SerializeAsString());
}

void TensorBoardLog::histogram(const HistogramRow& row, double wall_time) {
  AMPGAN_CHECK(static_cast<int>(row.counts.size()) == ew::kHistBins, "a histogram row with the wrong bin count");
  tb::Event e = event_at(row.step, wall_time);
  tb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(std::string("grad_exponent/") + row.network);
  tb::HistogramProto* h = v->mutable_histo();
  // Buckets in the order of their limits: zeros, the exponents, inf/NaN.
  std::vector<std::pair<double, double>> buckets;  // (upper limit, count)
  buckets.emplace_back(ew::kHistMinExp, row.counts[ew::kHistZeroBin]);
  for (int e2 = ew::kHistMinExp; e2 <= ew::kHistMaxExp; ++e2)
    buckets.emplace_back(e2 + 1, row.counts[e2 - ew::kHistMinExp]);
  buckets.emplace_back(ew::kHistMaxExp + 2, row.counts[ew::kHistNonFiniteBin]);
  double num = 0, sum = 0, sq = 0, lo = 0, hi = 0;
  bool any = false;
  for (const auto& [limit, count] : buckets) {
    h->add_bucket_limit(limit);
    h->add_bucket(count);
    if (count <= 0) continue;
    const double mid = limit - 0.5;  // the bucket's middle stands for its values
    if (!any) lo = limit - 1;
    hi = limit;
    any = true;
    num += count;
    sum += count * mid;
    sq += count * mid * mid;
  }
  h->set_min(lo);
  h->set_max(hi);
  h->set_num(num);
  h->set_sum(sum);
  h->set_sum_squares(sq);
  writer_->write(e.SerializeAsString());
}

std::vector<fs::path> TensorBoardLog::trim(const std::vector<fs::path>& files, int64_t step) {
  std::vector<fs::path> undecodable;
  for (const fs::path& f : files) {
    const io::TfRecords r = io::read_tfrecords(f);
    std::string kept;
    bool changed = r.valid_bytes != fs::file_size(f);
    bool bad = r.damaged;
    for (const std::string& rec : r.records) {
      tb::Event e;
      if (!e.ParseFromString(rec)) {
        bad = true;
        break;
      }
      if (e.step() > step) {
        changed = true;
        continue;
      }
      kept += io::tfrecord(rec);
    }
    if (bad)
      undecodable.push_back(f);
    else if (changed)
      io::write_file_atomic(f, kept);
  }
  return undecodable;
}

TensorBoardExport write_run_tensorboard(const RunFolder& folder, bool replace) {
  const fs::path& dir = folder.dir();
  if (!folder.exists())
    throw Error("not a run folder (it has no config.json)", dir.string(),
                "give the folder a run was trained into (the --out of ampgan train)");
  const io::RunLock lock(dir, io::this_command_line());  // refuses while a run writes the folder
  const std::vector<fs::path> existing = folder.tensorboard_files();
  if (!existing.empty() && !replace)
    throw Error("the run already has " + std::to_string(existing.size()) + " TensorBoard event file(s), e.g. " +
                    existing.front().filename().string(),
                dir.string(),
                "tensorboard --logdir shows them as they are; add --replace to delete them and write one "
                "again from the run's logs");
  const std::vector<StepMetrics> rows = folder.read_metrics();
  const std::vector<RunEvent> events = folder.read_events();
  const std::vector<HistogramRow> hists = HistogramsLog::read(folder.histograms());
  if (rows.empty())
    throw Error("metrics.csv has no rows", folder.metrics().string(),
                "a run writes a row a step: train it for a step at least (ampgan resume)");

  // Wall times: metrics.csv's clock (seconds trained), ending when the file was last written.
  std::error_code ec;
  struct stat st {};
  const double end = ::stat(folder.metrics().c_str(), &st) == 0
                         ? static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec)
                         : TensorBoardLog::now();
  const double base = end - rows.back().time_s;
  std::map<int64_t, double> time_at;
  for (const StepMetrics& m : rows) time_at[m.step] = m.time_s;
  auto wall = [&](int64_t step) {
    auto it = time_at.lower_bound(step);  // a step without a row takes the next row's time
    return base + (it == time_at.end() ? rows.back().time_s : it->second);
  };

  const std::map<int64_t, fs::path> samples = folder.sample_grids();
  std::set<int64_t> steps;
  for (const StepMetrics& m : rows) steps.insert(m.step);
  for (const HistogramRow& h : hists) steps.insert(h.step);
  for (const auto& [step, p] : samples) steps.insert(step);
  std::multimap<int64_t, const RunEvent*> notes;
  for (const RunEvent& e : events)
    if (e.type == EventType::PrecisionSwitch) {
      notes.emplace(e.step, &e);
      steps.insert(e.step);
    }
  std::multimap<int64_t, const HistogramRow*> hist_at;  // G then D, as histograms.csv has them
  for (const HistogramRow& h : hists) hist_at.emplace(h.step, &h);
  std::map<int64_t, const StepMetrics*> row_at;
  for (const StepMetrics& m : rows) row_at[m.step] = &m;  // a resumed run's later row wins (as trim keeps it)

  TensorBoardExport out;
  out.file = folder.new_tensorboard_file();
  try {
    TensorBoardLog log(out.file, base);
    for (int64_t step : steps) {
      const double w = wall(step);
      if (auto r = row_at.find(step); r != row_at.end()) {
        log.scalars(*r->second, w);
        ++out.scalar_steps;
      }
      for (auto [a, b] = notes.equal_range(step); a != b; ++a, ++out.notes)
        log.text(step, "precision/switch", a->second->message, w);
      for (auto [a, b] = hist_at.equal_range(step); a != b; ++a, ++out.histograms) log.histogram(*a->second, w);
      if (auto sp = samples.find(step); sp != samples.end()) {
        log.image(step, "samples", io::read_file(sp->second), io::read_image(sp->second), w);
        ++out.images;
      }
    }
    log.sync();
  } catch (...) {
    fs::remove(out.file, ec);  // no half file beside the old ones
    throw;
  }
  for (const fs::path& p : existing)
    if (fs::remove(p, ec)) out.replaced.push_back(p);
  return out;
}

}  // namespace ampgan
