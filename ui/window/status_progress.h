// The status bar's progress bar and Cancel button, for work that takes a while: loading the
// dataset, and long work inside a step (training the feature classifier for the Fréchet
// distance, an evaluation), which otherwise freezes the step counter and looks like a hang.
// It also writes the start and the end of long work to the event log.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>

class QProgressBar;
class QStatusBar;
class QToolButton;

namespace ampgan::ui {

class EventLog;

class StatusProgress : public QObject {
  Q_OBJECT

 public:
  StatusProgress(QStatusBar* bar, EventLog* log, QObject* parent = nullptr);

  void setLoading(bool on);  // indeterminate until loadingProgress arrives
  void setLoadingProgress(int done, int total);
  // From TrainingWorker::workProgress; done == total ends it.
  // cancel_tip: what Cancel does (default: the run stops after the step). skippable: an
  // evaluation, which "Skip this evaluation" ends while the run goes on.
  void setWork(const QString& what, int done, int total, int64_t step, const QString& cancel_tip = {},
               bool skippable = false);
  bool working() const { return working_; }  // long work inside a step is going on
  QString workText() const { return what_; }
  bool visible() const;
  int value() const;
  int maximum() const;

 signals:
  void cancelRequested();
  void skipRequested();

 private:
  void show(const QString& format, int done, int total);
  void hide();

  QProgressBar* bar_ = nullptr;
  QToolButton* cancel_ = nullptr;
  QToolButton* skip_ = nullptr;  // shown for skippable work only
  EventLog* log_ = nullptr;
  bool loading_ = false, working_ = false, logged_ = false, skippable_ = false;
  QString what_;
  QElapsedTimer work_clock_;
};

}  // namespace ampgan::ui
