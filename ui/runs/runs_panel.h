// The Runs tab: every run of a runs folder in a sortable table (name, model, precision, steps,
// final losses, SWD/FD, img/s, overflows, started). Ticked runs are drawn over the Live charts
// in a colour each; with "group seeds" runs that differ only in their seed become one mean ± sd
// overlay. Two ticked runs show their settings' differences and their sample grids side by side
// on one step slider. Comparison runs are ordinary rows (named <comparison>/<mode>).
// The folder is read on a background thread, so a folder of long runs never blocks the window.
#pragma once

#include <vector>

#include <QPointer>
#include <QThread>
#include <QWidget>

#include "ui/plots/plots_panel.h"
#include "ui/runs/run_index.h"

class QCheckBox;
class QLabel;
class QSlider;
class QTableWidget;

namespace ampgan::ui {

class ImageCanvas;

class RunsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit RunsPanel(QWidget* parent = nullptr);
  ~RunsPanel() override;

  void setRunsFolder(const QString& root);  // and rescans it
  QString runsFolder() const { return root_; }
  void rescan();
  bool scanning() const { return scanning_; }
  const std::vector<RunRecord>& runs() const { return runs_; }
  QTableWidget* table() const { return table_; }

  void setTicked(const QString& name, bool on);  // by run name (table order may change)
  QStringList tickedNames() const;
  void setGroupSeeds(bool on);
  std::vector<RunOverlay> overlays() const;          // what the ticks and grouping ask for
  std::vector<ConfigDifference> tickedDiff() const;  // the first two ticked runs
  void setSampleStep(int64_t step);                  // the side-by-side slider
  QImage sideBySide(int which) const;                // 0 or 1: the grid shown for the first/second ticked run

 signals:
  void overlaysChanged(const std::vector<ampgan::ui::RunOverlay>& overlays);
  void openRequested(const QString& dir);
  void scanned();

 private:
  void fill();
  void ticksChanged();
  void updateDiff();
  void updateSamples();
  int indexOf(const QString& name) const;

  QString root_;
  std::vector<RunRecord> runs_;
  QTableWidget* table_ = nullptr;
  QTableWidget* diff_ = nullptr;
  QLabel* folder_ = nullptr;
  QLabel* diff_caption_ = nullptr;
  QCheckBox* group_ = nullptr;
  QSlider* step_slider_ = nullptr;
  QLabel* step_label_ = nullptr;
  QLabel* sample_caption_[2] = {nullptr, nullptr};
  ImageCanvas* sample_[2] = {nullptr, nullptr};
  std::vector<int64_t> sample_steps_;
  bool scanning_ = false, rescan_again_ = false, filling_ = false;
  QPointer<QThread> scan_thread_;
};

// The colour of the n-th overlay (none of them close to a live curve's colour).
QColor overlay_color(int n);
// Legend labels for overlaid runs: what tells their names apart ("043145-fp16" for
// 20261202-043145-fashion-mnist-fp16 beside 20261202-044012-fashion-mnist-fp32).
QStringList overlay_labels(const QStringList& names);

}  // namespace ampgan::ui
