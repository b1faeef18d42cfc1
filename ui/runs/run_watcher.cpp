#include "ui/runs/run_watcher.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "core/common/error.h"
#include "core/io/atomic_file.h"
#include "core/io/run_lock.h"
#include "core/run/run_folder.h"

namespace ampgan::ui {

namespace {
std::vector<std::string> split_cells(const QByteArray& line) {
  std::vector<std::string> out;
  for (const QByteArray& c : line.split(',')) out.push_back(c.toStdString());
  return out;
}
}  // namespace

std::vector<QByteArray> FileTail::read(qint64 max_bytes, bool* restarted, bool* more) {
  std::vector<QByteArray> lines;
  *restarted = false;
  *more = false;
  QFile f(path_);
  if (!f.open(QIODevice::ReadOnly)) return lines;
  const qint64 size = f.size();
  if (size < offset_) {
    reset();
    *restarted = true;
  }
  if (size == offset_ || !f.seek(offset_)) return lines;
  const QByteArray chunk = f.read(max_bytes);
  offset_ += chunk.size();
  *more = offset_ < size;
  partial_ += chunk;
  qsizetype start = 0;
  for (qsizetype nl; (nl = partial_.indexOf('\n', start)) >= 0; start = nl + 1) {
    QByteArray line = partial_.mid(start, nl - start);
    if (line.endsWith('\r')) line.chop(1);
    if (!line.isEmpty()) lines.push_back(std::move(line));
  }
  partial_.remove(0, start);  // a half-written last line waits for its end
  return lines;
}

void FileTail::reset() {
  offset_ = 0;
  partial_.clear();
}

RunWatcher::RunWatcher(QObject* parent) : QObject(parent) {
  timer_.setInterval(500);
  connect(&timer_, &QTimer::timeout, this, &RunWatcher::pollNow);
}

void RunWatcher::start(const QString& dir) {
  stop();
  dir_ = dir;
  metrics_ = FileTail(QDir(dir).filePath(QString::fromLatin1(RunFolder::kMetrics)));
  events_ = FileTail(QDir(dir).filePath(QString::fromLatin1(RunFolder::kEvents)));
  histograms_ = FileTail(QDir(dir).filePath(QString::fromLatin1(RunFolder::kHistograms)));
  timer_.start();
  pollNow();
}

void RunWatcher::stop() {
  timer_.stop();
  dir_.clear();
  have_config_ = false;
  header_.clear();
  samples_seen_.clear();
  rows_seen_ = 0;
  first_rows_ = true;
  writer_.clear();
  writer_known_ = false;
}

void RunWatcher::pollNow() {
  if (dir_.isEmpty() || !QFileInfo(dir_).isDir()) return;
  if (!have_config_) {
    const QString cfg = QDir(dir_).filePath(QString::fromLatin1(RunFolder::kConfig));
    if (QFileInfo(cfg).isFile()) {
      try {
        const RunConfig c =
            RunConfig::from_json(nlohmann::json::parse(io::read_file(cfg.toStdString())), cfg.toStdString());
        have_config_ = true;
        emit configRead(c);
      } catch (const std::exception&) {
        // Not complete yet, or not ours: looked at again next time.
      }
    }
  }
  pollMetrics();
  pollEvents();
  pollHistograms();
  pollSamples();
  const QString w = QString::fromStdString(io::run_lock_holder(dir_.toStdString()));
  if (!writer_known_ || w != writer_) {
    writer_known_ = true;
    writer_ = w;
    emit writerChanged(w);
  }
}

void RunWatcher::pollMetrics() {
  bool restarted = false, more = false;
  const std::vector<QByteArray> lines = metrics_.read(kMaxBytesPerPoll, &restarted, &more);
  if (restarted) {
    header_.clear();
    first_rows_ = true;
    rows_seen_ = 0;
  }
  std::vector<StepMetrics> rows;
  rows.reserve(lines.size());
  for (const QByteArray& line : lines) {
    const auto cells = split_cells(line);
    if (header_.empty()) {
      if (!cells.empty() && cells[0] == "step") header_ = cells;
      continue;
    }
    if (cells.size() != header_.size()) continue;
    try {
      rows.push_back(StepMetrics::from_csv_row(header_, cells));
    } catch (const Error&) {}
  }
  if (!rows.empty() || (restarted && !header_.empty())) {
    rows_seen_ += static_cast<int64_t>(rows.size());
    const bool replace = first_rows_;
    first_rows_ = false;
    emit rowsArrived(rows, replace);
  }
  if (more) QTimer::singleShot(0, this, &RunWatcher::pollNow);  // the rest of a long history
}

void RunWatcher::pollEvents() {
  bool restarted = false, more = false;
  std::vector<RunEvent> events;
  for (const QByteArray& line : events_.read(kMaxBytesPerPoll, &restarted, &more)) {
    try {
      events.push_back(RunEvent::from_json(nlohmann::json::parse(line.toStdString())));
    } catch (const std::exception&) {}
  }
  if (!events.empty()) emit eventsArrived(events);
}

void RunWatcher::pollHistograms() {
  bool restarted = false, more = false;
  std::vector<HistogramRow> rows;
  HistogramRow r;
  for (const QByteArray& line : histograms_.read(kMaxBytesPerPoll, &restarted, &more))
    if (HistogramsLog::parse(line.toStdString(), r)) rows.push_back(r);  // the header row does not parse
  if (!rows.empty() || restarted) emit histogramsArrived(rows, restarted);
}

void RunWatcher::pollSamples() {
  const QDir dir(QDir(dir_).filePath(QString::fromLatin1(RunFolder::kSamples)));
  if (!dir.exists()) return;
  std::vector<SampleShot> shots;
  // Grids are written atomically (a temporary name, then renamed), so a listed one is complete.
  for (const QString& f : dir.entryList({QStringLiteral("step_*.png")}, QDir::Files, QDir::Name)) {
    if (samples_seen_.contains(f)) continue;
    samples_seen_.insert(f);
    SampleShot s;
    s.step = f.mid(5, f.size() - 9).toLongLong();
    s.path = dir.filePath(f);
    shots.push_back(std::move(s));
  }
  if (!shots.empty()) emit samplesArrived(shots);
}

}  // namespace ampgan::ui
