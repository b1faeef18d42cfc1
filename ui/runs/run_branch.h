// Resuming into a branch: the run folder stays exactly as it is, and a new folder next to it,
// <run>-branch-step<N>, gets its settings, its logs and sample grids up to checkpoint N and that
// checkpoint; resuming there retrains nothing of the original (the resume trims the copied logs
// to step N, as it would in place).
//
// The copy (checkpoints and sample grids of a large run are many MiB) runs on a thread of its
// own (BranchCopy), with progress and a cancel, so the window stays responsive.
#pragma once

#include <atomic>
#include <functional>

#include <QObject>
#include <QString>

class QThread;

namespace ampgan::ui {

// Bytes copied so far of the total; returning false cancels (the partial branch is removed).
using BranchProgress = std::function<bool(qint64 done, qint64 total)>;

// The branch folder, or empty with *error set (and nothing left behind; *error is empty when
// progress cancelled it).
QString make_branch(const QString& run_dir, const QString& checkpoint, QString* error, QString* branch_checkpoint,
                    const BranchProgress& progress = {});

class BranchCopy : public QObject {
  Q_OBJECT

 public:
  explicit BranchCopy(QObject* parent = nullptr);
  ~BranchCopy() override;  // cancels a copy in flight and waits for it

  // Starts make_branch on its own thread; false while another copy runs.
  bool start(const QString& run_dir, const QString& checkpoint);
  void cancel() { cancel_ = true; }
  bool running() const { return thread_ != nullptr; }

 signals:
  void progress(qint64 done, qint64 total);  // queued to the GUI thread, at most every ~1 MiB
  // branch empty: failed (error says why) or cancelled.
  void finished(const QString& branch, const QString& checkpoint, const QString& error, bool cancelled);

 private:
  QThread* thread_ = nullptr;
  std::atomic<bool> cancel_{false};
  QString branch_, checkpoint_, error_;  // written by the thread, read once it has finished
};

}  // namespace ampgan::ui
