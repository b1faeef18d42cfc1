// The live charts of one run, in a grid of up to 3 columns: losses, D outputs, sample quality
// (SWD and FD, a chart each); loss scale with overflow markers, gradient norms, underflow; the G
// and D gradient-exponent histograms and throughput/memory. Rows arrive in batches (TrainingWorker); the panel appends
// them to every chart (addData), marks precision switches on every time chart, and replots dirty, visible charts from
// one timer, one chart per event-loop pass, each at most 20 times a second, whatever the step rate.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <QElapsedTimer>
#include <QHash>
#include <QTimer>
#include <QWidget>

#include "core/run/histograms_log.h"
#include "core/train/step_metrics.h"
#include "ui/plots/histogram_plot.h"
#include "ui/widgets/live_plot.h"

class QAction;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QScrollArea;
class QSlider;
class QToolButton;

namespace ampgan::ui {

// A run drawn over the current run's charts (ticked in the Runs panel), in its own colour on
// every time chart. Several members: a seed group, drawn as their mean with a ± 1 sd band over
// the steps all members logged.
struct RunOverlay {
  QString label;
  QColor color;
  std::vector<std::shared_ptr<const std::vector<StepMetrics>>> members;
};

class PlotsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PlotsPanel(QWidget* parent = nullptr);

  void clear();
  // What the empty quality chart says: where the next evaluation will be after step `after`
  // (every 0: none set); skipped: the evaluation at the next interval after `after` was skipped.
  void setEvaluationInterval(int every, int64_t after = 0, bool skipped = false);
  void appendRows(const std::vector<StepMetrics>& rows);
  void setHistory(const std::vector<StepMetrics>& rows);  // replaces everything (opened/resumed run)
  // Gradient histograms over time (plots_histograms.cpp): every set the run delivered or its
  // histograms.csv holds, one step at a time on the "Histograms" slider (at its right end it
  // follows the newest). setHistograms: the live run's newest (precision and scale from the
  // last row); setHistogramRows: a run folder's file (replace: start over). clear() empties it.
  void setHistograms(int64_t step, const std::vector<float>& g, const std::vector<float>& d);
  void setHistogramRows(const std::vector<HistogramRow>& rows, bool replace);
  int histogramSteps() const { return static_cast<int>(hists_.size()); }
  // Shows the stored set nearest to step (the slider moves there); false: none stored.
  bool showHistogramStep(int64_t step);
  QSlider* histogramSlider() const { return hist_slider_; }
  // Replaces the overlays (plots_overlay.cpp); they stay through clear() and new runs.
  void setOverlays(const std::vector<RunOverlay>& overlays);
  int overlayCount() const { return static_cast<int>(overlays_.size()); }

  // 0 (raw) .. 0.99 (very smooth); recomputes the smoothed curves.
  void setSmoothing(double alpha);
  double smoothing() const { return alpha_; }
  void setReplotIntervalMs(int ms) {
    min_interval_ms_ = ms;
    timer_.setInterval(ms);
  }
  void resetViews();
  // x = wall time (each row's time_s) instead of the step, on every time chart and overlay.
  void setWallTime(bool on);
  bool wallTime() const { return wall_time_; }
  // Hovering one chart draws a vertical line at that x on all of them.
  void setCrosshair(bool on);
  bool crosshair() const { return crosshair_; }

  // Charts by id: losses, d_outputs, quality (SWD), fd, loss_scale, grad_norms, underflow,
  // throughput.
  LivePlot* plot(const QString& id) const { return plots_.value(id); }
  HistogramPlot* histogram(char network) const { return network == 'G' ? hist_g_ : hist_d_; }
  QList<LivePlot*> allPlots() const;  // including the histograms, in grid order
  QStringList plotIds() const { return order_; }
  // A deque: appending to a long run never copies its whole history on the GUI thread (as a
  // vector's reallocation would, in one go).
  const std::deque<StepMetrics>& rows() const { return rows_; }
  int switchCount() const { return switch_count_; }
  // Number of refresh() calls so far (the benchmark and tests read it).
  qint64 replotCount() const { return replots_; }
  void refreshNow();  // replot every dirty, visible chart at once

 signals:
  void smoothingChanged(double alpha);
  // An overflow marker was clicked: network "D" or "G", the step.
  void overflowClicked(const QString& network, qint64 step);

 private:
  struct Curve {
    LivePlot* plot;
    QCPGraph* raw;
    QCPGraph* ema;  // null: not smoothed
    std::function<double(const StepMetrics&)> get;
    bool positive_only;
    double ema_state = 0;
    int ema_n = 0;
  };
  // The constructor's parts (plots_charts.cpp), in the order it calls them: the bar above the
  // charts, the scroll area holding their grid, then the charts by theme.
  QHBoxLayout* makeToolbar();
  QToolButton* makeViewButton();
  QScrollArea* makeChartArea();
  void addTrainingCharts();
  void addAmpCharts();
  void addCostChart();
  LivePlot* makePlot(const QString& id, const QString& title, const QString& tooltip);
  void addCurve(LivePlot* p, const QString& name, const QColor& c, std::function<double(const StepMetrics&)> get,
                bool smoothed, bool positive_only = false, bool right_axis = false);
  void appendRow(const StepMetrics& m);
  void addSwitch(const StepMetrics& prev, const StepMetrics& now);
  void rebuildSmoothed();
  void drawOverlays();
  struct HistEntry {
    int64_t step = 0;
    Precision precision = Precision::FP32;
    double scale_g = 1, scale_d = 1;
    std::vector<float> g, d;
  };
  void addHistEntry(HistEntry e);
  void showHistEntry(int index);
  void updateHistSlider();
  double keyOf(const StepMetrics& m) const { return wall_time_ ? m.time_s : static_cast<double>(m.step); }
  void onTick();
  void redrawAll();  // every chart follows the run again and is redrawn, one per pass
  void toggleMaximized(LivePlot* p);
  void layoutCells(int columns);  // the charts in a grid of 1-3 columns

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  static constexpr int kCellMinWidth = 250, kCellMinHeight = 170;  // readable charts

  QGridLayout* grid_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QList<QWidget*> cells_;
  int columns_ = 3;
  QSlider* slider_ = nullptr;
  QLabel* slider_label_ = nullptr;
  QHash<QString, LivePlot*> plots_;
  QStringList order_;
  HistogramPlot* hist_g_ = nullptr;
  HistogramPlot* hist_d_ = nullptr;
  QCPGraph *over_d_ = nullptr, *over_g_ = nullptr, *swd_ = nullptr, *fd_ = nullptr;
  std::vector<Curve> curves_;
  std::vector<RunOverlay> overlays_;
  std::vector<std::pair<LivePlot*, QCPGraph*>> overlay_graphs_;
  std::deque<StepMetrics> rows_;
  std::vector<HistEntry> hists_;  // by step
  QSlider* hist_slider_ = nullptr;
  QLabel* hist_caption_ = nullptr;
  QLabel* hist_label_ = nullptr;
  double alpha_ = 0.9;
  bool wall_time_ = false, crosshair_ = false;
  QAction* x_time_ = nullptr;
  QAction* cross_act_ = nullptr;
  int switch_count_ = 0;
  qint64 replots_ = 0;
  LivePlot* maximized_ = nullptr;
  int min_interval_ms_ = 50;
  int next_ = 0;                                // where the next tick's round-robin starts
  bool catch_up_ = false;                       // drawing every chart after a history load, back to back
  QHash<const LivePlot*, qint64> last_replot_;  // clock_ ms of each chart's last refresh
  QElapsedTimer clock_;
  QTimer timer_;
};

// Curve colours shared by the panels: G blue, D red.
QColor color_g();
QColor color_d();

}  // namespace ampgan::ui
