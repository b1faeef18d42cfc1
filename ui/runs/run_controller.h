// The one current run: the run every view of the window refers to (Live plots, title, Samples
// dock, status bar, exports, Sample now). Training, a comparison (each of its runs in turn),
// Open run and Resume all switch it here, so no view can keep showing an older run.
//
// It also answers the questions the window asks about the current run's folder: the default
// export paths, and what resuming from a checkpoint would throw away.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <QObject>
#include <QString>

#include "ui/common/ui_types.h"

class QLockFile;

namespace ampgan::ui {

class RunController : public QObject {
  Q_OBJECT

 public:
  enum class Origin { None, Trained, Compared, Opened, Watched };  // Watched: read-only

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  // Marks the runs folder as used by this studio (a lock file in it). Returns a warning when
  // another studio instance already uses it (two windows writing runs side by side get
  // confusing fast); empty when all is well. Writing is not prevented: each run has its folder.
  QString claimRunsFolder(const QString& root);

  void setCurrent(const QString& dir, Origin origin);  // emits currentRunChanged
  QString dir() const { return dir_; }
  Origin origin() const { return origin_; }
  bool hasRun() const { return !dir_.isEmpty(); }
  void setResumable(bool on) { resumable_ = on; }
  bool resumable() const { return resumable_ && hasRun(); }

  // Whose generator the worker can sample (a session's or an opened run's checkpoint); Sample
  // now and Export single samples are offered only when it is the current run's.
  void setGeneratorDir(const QString& dir) { generator_dir_ = dir; }
  bool canSample() const;

  QString title() const;  // the window title for the current run
  // Defaults the export dialogs propose: inside the current run's folder (home without a run,
  // and for a watched run, whose folder belongs to another process).
  QString gridExportPath(int64_t step) const;
  QString samplesExportDir() const;
  QString metricsExportPath() const;
  QString metricsFile() const;  // the run's own metrics.csv ("" without a run)

  // What resuming `run_dir` from `checkpoint` (empty: the newest) would drop: metrics rows and
  // checkpoints after the checkpoint's step. nullopt when nothing would be lost.
  struct LaterHistory {
    int64_t from_step = 0;         // the checkpoint's step
    int64_t last_logged_step = 0;  // metrics.csv's last step
    int later_checkpoints = 0;
  };
  static std::optional<LaterHistory> laterHistory(const QString& run_dir, const QString& checkpoint);
  // The question to ask before such a resume; empty when nothing would be lost.
  static QString laterHistoryQuestion(const QString& run_dir, const QString& checkpoint);
  // The sample grids in run_dir's samples/ up to `up_to_step`, oldest first (as paths, read on
  // demand). Grids after it on disk belong to a history a resume dropped.
  static std::vector<SampleShot> storedGrids(const QString& run_dir, int64_t up_to_step);
  static int64_t checkpointStep(const QString& checkpoint);  // step_NNNNNN.safetensors -> N; -1
  static bool samePath(const QString& a, const QString& b);

 signals:
  void currentRunChanged(const QString& dir);

 private:
  QString exportBase() const;

  QString dir_;
  QString generator_dir_;
  Origin origin_ = Origin::None;
  bool resumable_ = false;
  std::unique_ptr<QLockFile> lock_;
  QString locked_root_;
};

}  // namespace ampgan::ui
