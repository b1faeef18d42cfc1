// The Layers view: a layers x steps heatmap of log2 max |g| (the unscaled gradient's
// largest magnitude per parameter tensor) against FP16's range, from the run folder's layers.csv,
// and a table of every tensor at the selected step. Cells where the gradient held inf/NaN are
// covered in magenta, the more opaque the larger their share, and listed as such in the table.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "core/run/layers_log.h"
#include "core/train/step_metrics.h"

class QCustomPlot;
class QCPColorMap;
class QCPItemRect;
class QTableWidget;
class QLabel;

namespace ampgan::ui {

class LayersView : public QWidget {
  Q_OBJECT
 public:
  explicit LayersView(QWidget* parent = nullptr);
  // The run whose layers.csv to show (empty: none); reads it at once.
  void setRunDir(const QString& dir);
  // New steps of the current run: reads the rows layers.csv gained when one of them was written
  // there (overflow steps, and steps on the layers_every interval).
  void onRows(const std::vector<StepMetrics>& rows, int layers_every);
  void reload();  // reads the whole file again
  void selectStep(int64_t step);
  // An overflow of `network` ("D", "G") at `step`: selects that step and the layer where its
  // non-finite values started (the first tensor in backward order holding inf/NaN, as the
  // overflow event names it), in the table and on the heatmap. False when layers.csv has no
  // non-finite tensor of that network at that step.
  bool selectOverflow(const QString& network, int64_t step);
  QString selectedLayer() const { return selected_layer_; }
  int64_t selectedStep() const { return selected_; }
  int stepCount() const { return static_cast<int>(steps_.size()); }
  int layerCount() const { return static_cast<int>(names_.size()); }

 signals:
  // Right-click on a tensor's row: the window offers to keep its layer in FP32.
  void layerMenuRequested(const QString& layer, const QPoint& global_pos);

 private:
  void readNewRows();
  void rebuild();
  void fillTable();

  QString dir_;
  QCustomPlot* plot_ = nullptr;
  QCPColorMap* map_ = nullptr;        // log2 of each tensor's largest finite magnitude
  QCPColorMap* nonfinite_ = nullptr;  // over it: each tensor's share of inf/NaN values
  QTableWidget* table_ = nullptr;
  QLabel* caption_ = nullptr;
  std::vector<LayerRow> rows_;
  uint64_t offset_ = 0;            // bytes of layers.csv already in rows_
  std::vector<int64_t> steps_;     // columns
  std::vector<TensorName> names_;  // rows of the heatmap, in file order (D's, then G's)
  int64_t selected_ = -1;
  QString selected_layer_;
  QCPItemRect* highlight_ = nullptr;  // the selected layer's rows on the heatmap
};

}  // namespace ampgan::ui
