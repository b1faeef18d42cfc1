// Follows a run folder that another process writes (ampgan train or resume, an mpirun job, a
// run on a shared disk): it polls the folder and reports what landed since the last look (new
// metrics rows, events, sample grids) and whether a writer still holds the folder. It never
// writes there. Polling rather than inotify, which does not see writes made on another host of
// a network file system; reads are capped per poll, so a long run's history loads in slices
// and the window stays responsive.
#pragma once

#include <cstdint>
#include <vector>

#include <QByteArray>
#include <QObject>
#include <QSet>
#include <QString>
#include <QTimer>

#include "core/run/histograms_log.h"
#include "core/run/run_event.h"
#include "core/settings/run_config.h"
#include "core/train/step_metrics.h"
#include "ui/common/ui_types.h"

namespace ampgan::ui {

// The complete new lines of a file that grows at its end; a file that got shorter (a resume
// from an earlier checkpoint rewrote it) starts over.
class FileTail {
 public:
  explicit FileTail(QString path = {}) : path_(std::move(path)) {}
  // Up to max_bytes more; sets *restarted when the file was rewritten since the last call.
  std::vector<QByteArray> read(qint64 max_bytes, bool* restarted, bool* more);
  void reset();

 private:
  QString path_;
  qint64 offset_ = 0;
  QByteArray partial_;
};

class RunWatcher : public QObject {
  Q_OBJECT

 public:
  explicit RunWatcher(QObject* parent = nullptr);

  void start(const QString& dir);  // the folder need not exist yet: it is waited for
  void stop();
  bool watching() const { return timer_.isActive() || !dir_.isEmpty(); }
  QString dir() const { return dir_; }
  void setIntervalMs(int ms) { timer_.setInterval(ms); }
  void pollNow();
  int64_t rowsSeen() const { return rows_seen_; }
  QString writer() const { return writer_; }  // who holds the folder now; empty: nobody

  static constexpr qint64 kMaxBytesPerPoll = 4 << 20;

 signals:
  void configRead(const ampgan::RunConfig& config);
  // replace: the rows start the run's history over (the first slice, or metrics.csv rewritten).
  void rowsArrived(const std::vector<ampgan::StepMetrics>& rows, bool replace);
  void eventsArrived(const std::vector<ampgan::RunEvent>& events);
  void samplesArrived(const std::vector<ampgan::ui::SampleShot>& shots);
  // histograms.csv rows (replace: the file was rewritten, they start over).
  void histogramsArrived(const std::vector<ampgan::HistogramRow>& rows, bool replace);
  void writerChanged(const QString& writer);  // empty: the writer ended (or never started)

 private:
  void pollMetrics();
  void pollEvents();
  void pollSamples();
  void pollHistograms();

  QString dir_;
  QTimer timer_;
  bool have_config_ = false;
  FileTail metrics_, events_, histograms_;
  std::vector<std::string> header_;
  QSet<QString> samples_seen_;
  int64_t rows_seen_ = 0;
  bool first_rows_ = true;
  QString writer_;
  bool writer_known_ = false;
};

}  // namespace ampgan::ui
