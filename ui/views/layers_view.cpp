#include "ui/views/layers_view.h"

#include <qcustomplot.h>
#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/common/error.h"
#include "core/run/run_folder.h"

namespace ampgan::ui {

namespace {
// The colour range: FP16's, in log2 (smallest subnormal 2^-24, largest finite ~2^16). Zero
// gradients sit below it.
constexpr double kLow = -24, kHigh = 16, kZero = -25;
const QColor kNonFiniteColor(255, 0, 255);

// Dark grey to blue, teal, green and yellow: no pink or purple anywhere on the bar, so no
// magnitude can be mistaken for the inf/NaN magenta drawn over it.
QCPColorGradient magnitude_gradient() {
  QCPColorGradient g;
  g.setColorStopAt(0.0, QColor(30, 30, 30));
  g.setColorStopAt(0.25, QColor(40, 60, 150));
  g.setColorStopAt(0.5, QColor(30, 150, 160));
  g.setColorStopAt(0.75, QColor(120, 200, 70));
  g.setColorStopAt(1.0, QColor(250, 230, 50));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  return g;
}

// How opaque the magenta over a tensor with inf/NaN is: clearly marked at any share, nearly solid
// when all of its values are inf/NaN.
unsigned char nonfinite_alpha(double share) { return static_cast<unsigned char>(150 + std::lround(105 * share)); }
}  // namespace

LayersView::LayersView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("layersView"));
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  caption_ =
      new QLabel(tr("No layers.csv yet: per-layer gradient statistics appear every "
                    "'layers every' steps and on every overflow."));
  caption_->setWordWrap(true);
  v->addWidget(caption_);
  auto* split = new QSplitter(Qt::Vertical);
  plot_ = new QCustomPlot;
  plot_->setObjectName(QStringLiteral("layersHeatmap"));
  plot_->setMinimumHeight(200);
  map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  auto* scale = new QCPColorScale(plot_);
  plot_->plotLayout()->addElement(0, 1, scale);
  scale->setType(QCPAxis::atRight);
  scale->setObjectName(QStringLiteral("layersColorScale"));
  scale->axis()->setLabel(tr("log2 max |g / S|"));  // short: it runs along the bar; the caption says more
  map_->setColorScale(scale);
  map_->setGradient(magnitude_gradient());
  map_->setDataRange(QCPRange(kZero, kHigh));
  map_->setInterpolate(false);
  // Over it, each tensor's share of inf/NaN values in magenta: a tensor with a few inf/NaN
  // values beside large finite ones is marked, not coloured by its finite maximum alone.
  nonfinite_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  QCPColorGradient solid;
  solid.setColorStopAt(0.0, kNonFiniteColor);
  solid.setColorStopAt(1.0, kNonFiniteColor);
  nonfinite_->setGradient(solid);
  nonfinite_->setDataRange(QCPRange(0, 1));
  nonfinite_->setInterpolate(false);
  auto* key =
      new QLabel(tr("Magenta over a cell: inf/NaN in that tensor's gradient, the more opaque the larger "
                    "their share. The colours under it: log2 of the largest finite |g / S|, on FP16's range "
                    "2^-24 … 2^16 (dark: zero)."));
  key->setObjectName(QStringLiteral("layersKey"));
  key->setWordWrap(true);
  v->addWidget(key);
  plot_->xAxis->setLabel(tr("step (columns: steps written to layers.csv; click one)"));
  split->addWidget(plot_);
  table_ = new QTableWidget(0, 7);
  table_->setObjectName(QStringLiteral("layersTable"));
  table_->setHorizontalHeaderLabels(
      {tr("Layer"), tr("Tensor"), tr("Values"), tr("max |g / S|"), tr("log2"), tr("inf/NaN"), tr("underflow")});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(table_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
    if (const QTableWidgetItem* it = table_->itemAt(at))
      if (const QTableWidgetItem* layer = table_->item(it->row(), 0))
        emit layerMenuRequested(layer->text(), table_->viewport()->mapToGlobal(at));
  });
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  v->addWidget(split, 1);
  connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    if (steps_.empty()) return;
    const double x = plot_->xAxis->pixelToCoord(e->position().x());
    const int col = std::clamp(static_cast<int>(std::lround(x)), 0, static_cast<int>(steps_.size()) - 1);
    selectStep(steps_[static_cast<size_t>(col)]);
  });
}

void LayersView::setRunDir(const QString& dir) {
  dir_ = dir;
  selected_ = -1;
  selected_layer_.clear();
  if (highlight_) highlight_->setVisible(false);
  reload();
}

void LayersView::onRows(const std::vector<StepMetrics>& rows, int layers_every) {
  for (const StepMetrics& m : rows)
    if (m.skipped_d || m.skipped_g || (layers_every > 0 && m.step % layers_every == 0)) {
      readNewRows();
      return;
    }
}

void LayersView::reload() {
  rows_.clear();
  offset_ = 0;
  readNewRows();
}

// Only the rows written since the last read are parsed: the file grows by one row per tensor at
// every logged step, and re-reading all of it on the GUI thread would get slower as a run goes on.
void LayersView::readNewRows() {
  if (!dir_.isEmpty()) {
    try {
      offset_ = LayersLog::read_more(QDir(dir_).filePath(QString::fromLatin1(RunFolder::kLayers)).toStdString(),
                                     offset_, rows_);
    } catch (const Error& e) {
      caption_->setText(tr("layers.csv could not be read: %1").arg(QString::fromUtf8(e.what())));
    }
  }
  rebuild();
}

void LayersView::rebuild() {
  steps_.clear();
  names_.clear();
  std::map<std::string, int> index;  // "layer.tensor" -> heatmap row
  for (const LayerRow& r : rows_) {
    if (steps_.empty() || steps_.back() != r.step) steps_.push_back(r.step);
    const std::string key = r.name.layer + "." + r.name.tensor;
    if (!index.count(key)) {
      index[key] = static_cast<int>(names_.size());
      names_.push_back(r.name);
    }
  }
  const int nx = static_cast<int>(steps_.size()), ny = static_cast<int>(names_.size());
  for (QCPColorMap* m : {map_, nonfinite_}) {
    m->data()->setSize(std::max(nx, 1), std::max(ny, 1));
    m->data()->setRange(QCPRange(0, std::max(nx - 1, 0)), QCPRange(0, std::max(ny - 1, 0)));
  }
  map_->data()->fill(kZero);
  nonfinite_->data()->fill(0);
  nonfinite_->data()->fillAlpha(0);
  int col = -1;
  int64_t last = -1;
  int overflows = 0;
  for (const LayerRow& r : rows_) {
    if (r.step != last) {
      ++col;
      last = r.step;
    }
    // Heatmap rows from the top: D's first tensor at the top.
    const int row = ny - 1 - index[r.name.layer + "." + r.name.tensor];
    const double v =
        r.stat.max_abs > 0 ? std::clamp(std::log2(static_cast<double>(r.stat.max_abs)), kLow, kHigh) : kZero;
    map_->data()->setCell(col, row, v);
    if (r.stat.nonfinite > 0) {
      const double share =
          r.name.numel > 0 ? std::min(1.0, static_cast<double>(r.stat.nonfinite) / static_cast<double>(r.name.numel))
                           : 1.0;
      nonfinite_->data()->setCell(col, row, share);
      nonfinite_->data()->setAlpha(col, row, nonfinite_alpha(share));
      ++overflows;
    }
  }
  auto yt = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < ny; ++i)
    yt->addTick(ny - 1 - i, QString::fromStdString(names_[static_cast<size_t>(i)].layer + "." +
                                                   names_[static_cast<size_t>(i)].tensor));
  plot_->yAxis->setTicker(yt);
  auto xt = QSharedPointer<QCPAxisTickerText>::create();
  const int every = std::max(1, nx / 12);
  for (int i = 0; i < nx; i += every) xt->addTick(i, QString::number(steps_[static_cast<size_t>(i)]));
  plot_->xAxis->setTicker(xt);
  plot_->xAxis->setRange(-0.5, std::max(nx, 1) - 0.5);
  plot_->yAxis->setRange(-0.5, std::max(ny, 1) - 0.5);
  // A line of height per tensor, so that no two tensors' names overlap on a small screen.
  const int line = QFontMetrics(plot_->yAxis->tickLabelFont()).height();
  plot_->setMinimumHeight(std::clamp(ny * line + 70, 200, 600));
  if (nx > 0)
    caption_->setText(tr("%1 steps in layers.csv, %2 tensors; %3 tensor-steps held inf/NaN (magenta).")
                          .arg(nx)
                          .arg(ny)
                          .arg(overflows));
  plot_->replot(QCustomPlot::rpQueuedReplot);
  if (selected_ < 0 || std::find(steps_.begin(), steps_.end(), selected_) == steps_.end())
    selected_ = steps_.empty() ? -1 : steps_.back();
  fillTable();
}

void LayersView::selectStep(int64_t step) {
  selected_ = step;
  fillTable();
}

bool LayersView::selectOverflow(const QString& network, int64_t step) {
  std::vector<TensorName> names;
  std::vector<TensorGradStat> stats;
  for (const LayerRow& r : rows_)
    if (r.step == step) {
      names.push_back(r.name);
      stats.push_back(r.stat);
    }
  const int k = first_nonfinite_in_backward_order(names, stats, network.toStdString());
  if (k < 0) return false;
  selected_ = step;
  selected_layer_ = QString::fromStdString(names[static_cast<size_t>(k)].layer);
  fillTable();
  // The table row of that tensor, and a frame around the layer's rows of the heatmap.
  for (int i = 0; i < table_->rowCount(); ++i)
    if (table_->item(i, 0)->text() == selected_layer_ &&
        table_->item(i, 1)->text() == QString::fromStdString(names[static_cast<size_t>(k)].tensor)) {
      table_->selectRow(i);
      table_->scrollToItem(table_->item(i, 0));
    }
  const int ny = static_cast<int>(names_.size());
  double lo = 1e9, hi = -1e9;
  for (int i = 0; i < ny; ++i)
    if (QString::fromStdString(names_[static_cast<size_t>(i)].layer) == selected_layer_) {
      lo = std::min(lo, double(ny - 1 - i));
      hi = std::max(hi, double(ny - 1 - i));
    }
  const auto col = std::find(steps_.begin(), steps_.end(), step) - steps_.begin();
  if (!highlight_) {
    highlight_ = new QCPItemRect(plot_);
    highlight_->setPen(QPen(QColor(0, 200, 255), 2));
    highlight_->setBrush(Qt::NoBrush);
  }
  highlight_->topLeft->setCoords(col - 0.5, hi + 0.5);
  highlight_->bottomRight->setCoords(col + 0.5, lo - 0.5);
  highlight_->setVisible(true);
  plot_->replot(QCustomPlot::rpQueuedReplot);
  return true;
}

void LayersView::fillTable() {
  table_->setRowCount(0);
  int first_bad = -1;
  for (const LayerRow& r : rows_) {
    if (r.step != selected_) continue;
    const int i = table_->rowCount();
    table_->insertRow(i);
    const double l2 = log2_or_neg_inf(r.stat.max_abs);
    const QStringList cells = {QString::fromStdString(r.name.layer),
                               QString::fromStdString(r.name.tensor),
                               QString::number(r.name.numel),
                               QString::number(r.stat.max_abs, 'g', 4),
                               std::isfinite(l2) ? QString::number(l2, 'f', 1) : QStringLiteral("-"),
                               QString::number(r.stat.nonfinite),
                               QString::number(100.0 * r.stat.underflow, 'f', 1) + "%"};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (r.stat.nonfinite > 0) item->setBackground(QColor(255, 200, 255));
      table_->setItem(i, c, item);
    }
    if (r.stat.nonfinite > 0) first_bad = i;  // the last one listed is the first in backward order
  }
  if (first_bad >= 0) table_->selectRow(first_bad);
}

}  // namespace ampgan::ui
