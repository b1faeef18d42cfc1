// Compare: the same configuration trained twice, in FP32 and in the chosen AMP mode, from the
// same seed and data order (two Sessions in sequence on the worker, each in its own folder). The
// view overlays the two runs' curves (baseline solid blue, AMP dashed orange) and sums them up in
// a table: median images/s and the speed-up, peak memory (total and per category), final losses,
// overflows (skipped steps), SWD/FD when evaluations ran, and, when Largest batch is ticked, the
// largest batch of each within the memory budget and its ratio to FP32's.
#pragma once

#include <array>
#include <vector>

#include <QHash>
#include <QTimer>
#include <QWidget>

#include "core/amp/precision.h"
#include "core/run/run_summary.h"
#include "ui/common/ui_types.h"
#include "ui/widgets/live_plot.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ampgan::ui {

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  Precision ampMode() const;
  void setAmpMode(Precision p);
  int steps() const;
  void setSteps(int steps);
  // Largest batch ticked: after the two runs the worker finds the largest batch of both.
  bool maxBatch() const;
  void setMaxBatch(bool on);
  void setBusy(bool busy);  // a run (of any kind) is going: the button is disabled

  void begin(Precision amp);  // clears the previous comparison
  void onRunStarted(const RunStartInfo& info);
  void onRows(RunTag tag, const std::vector<StepMetrics>& rows);
  void onSample(RunTag tag, const SampleShot& shot);  // the newest grid of each run, side by side
  void onRunFinished(const RunEndInfo& info);
  void onWorkProgress(const QString& what, int done, int total);  // the largest-batch search's
  void onMaxBatch(const MaxBatchPtr& result);
  void onFinished(bool complete);

  QTableWidget* table() const { return table_; }
  int tableRows() const;
  QString statusText() const;
  QString cell(int row, const QString& column) const;  // by header text
  LivePlot* plot(const QString& id) const { return plots_.value(id); }
  const RunSummary& summary(int run) const { return summaries_[run]; }
  bool running() const { return running_; }
  QString tableAsText() const;  // tab-separated, for the clipboard and CSV, the verdict below the rows
  // The finished comparison's verdict, one sentence a line (empty before one finished); the
  // status line shows it word-wrapped and as its tooltip.
  QString verdict() const { return verdict_; }
  QLabel* statusLabel() const { return status_; }

 signals:
  void compareRequested(ampgan::Precision amp, int steps);

 private:
  struct RunData {
    QString label, dir;
    std::vector<StepMetrics> rows;
    MemoryStats memory;
    bool finished = false, ok = true;
    double ema_d = 0, ema_g = 0;
    int ema_n = 0;
  };
  // The constructor's parts, top to bottom.
  QHBoxLayout* makeControls();
  QTableWidget* makeTable();
  QWidget* makeChartsAndSamples();
  void addOverlayPlot(const QString& id, const QString& title, int log_base, const QString& ylabel);
  void updateTable();
  void setRow(int row, int i, const CompareRun& baseline);
  CompareRun compareRun(int i) const;  // the table's row of run i (0: FP32)
  int column(const QString& header) const;
  void writeSummaryFiles();  // compare.tsv and verdict.txt in the comparison's folder

  QComboBox* amp_box_ = nullptr;
  QCheckBox* max_batch_box_ = nullptr;
  QSpinBox* steps_box_ = nullptr;
  QPushButton* run_btn_ = nullptr;
  QLabel* status_ = nullptr;
  bool on_cpu_ = false;  // the comparison ran on the CPU backend (its half modes are emulated)
  QTableWidget* table_ = nullptr;
  std::array<class ImageCanvas*, 2> grids_{};
  std::array<QLabel*, 2> grid_labels_{};
  QHash<QString, LivePlot*> plots_;
  QHash<QString, std::array<QCPGraph*, 2>> graphs_;
  std::array<RunData, 2> runs_;
  std::array<RunSummary, 2> summaries_;
  MaxBatchPtr max_batch_;  // the search's result, when it ran
  Precision amp_ = Precision::FP16;
  bool running_ = false, busy_ = false;
  QString verdict_;
  QTimer timer_;
};

}  // namespace ampgan::ui
