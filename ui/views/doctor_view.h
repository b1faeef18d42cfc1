// The Doctor tab: the precision doctor's search (core/run/precision_doctor.h) on the settings in
// the panel, as `ampgan doctor` runs it: its table of candidates filling in probe by probe (the
// same rows as the terminal's and doctor.md's), the answer and why, and Apply, which puts the
// answer's settings into the panel for the next run. Run ▸ Diagnose precision starts it; Stop
// ends it with the best answer so far. Below it, the first-divergence replay
// (core/run/precision_replay.h) of one step of the current run: "why did this step overflow?",
// also reached by clicking an overflow marker of the Live charts.
#pragma once

#include <QString>
#include <QWidget>

#include "ui/common/ui_types.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;

namespace ampgan::ui {

class DoctorView : public QWidget {
  Q_OBJECT

 public:
  explicit DoctorView(QWidget* parent = nullptr);

  void onStarted(const RunConfig& cfg);  // the search began on cfg (its report folder out_dir)
  void onUpdate(const DoctorUpdatePtr& u);
  void setStartEnabled(bool on, const QString& why);  // the tab's own Diagnose button
  // The run whose steps Replay recomputes (empty: none) and whether it can start now.
  void setReplayRun(const QString& dir, bool can_start, const QString& why);
  void setReplayStep(qint64 step);
  qint64 replayStep() const;
  void onReplayStarted(qint64 step);
  void onReplayed(const ReplayResultPtr& r);  // null: it failed
  const ReplayResult* replayResult() const { return replay_.get(); }
  QTableWidget* replayTable() const { return replay_table_; }
  QString replayVerdict() const;

  bool hasAnswer() const;
  const DoctorResult* result() const { return last_ ? &last_->result : nullptr; }
  QString summary() const;
  QTableWidget* table() const { return table_; }

 signals:
  void diagnoseRequested();
  // The answer's settings (as doctor-config.json holds them) for the settings panel.
  void applyRequested(const nlohmann::json& settings, const QString& label);
  void replayRequested(qint64 step);

 private:
  QWidget* buildSearch();
  QWidget* buildReplay();
  DoctorUpdatePtr last_;
  QLabel* intro_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* flags_ = nullptr;
  QTableWidget* table_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* apply_ = nullptr;
  QPushButton* open_ = nullptr;
  QSplitter* split_ = nullptr;
  ReplayResultPtr replay_;
  QString replay_run_;
  QSpinBox* replay_step_ = nullptr;
  QPushButton* replay_start_ = nullptr;
  QLabel* replay_verdict_ = nullptr;
  QTableWidget* replay_table_ = nullptr;
};

}  // namespace ampgan::ui
