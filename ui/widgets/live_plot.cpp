// LivePlot: series, ranges, follow mode, switch markers and layout. The mouse (hover, crosshair,
// clicks, zoom) is in live_plot_mouse.cpp, saving/exporting and the context menu in
// live_plot_export.cpp, the axis tickers in plot_ticks.cpp.
#include "ui/widgets/live_plot.h"

#include <algorithm>
#include <cmath>

namespace ampgan::ui {

void LivePlot::Range::add(double k, double v) {
  if (std::isnan(v) || std::isinf(v)) return;
  if (!has) {
    kmin = kmax = k;
    vmin = vmax = v;
    has = true;
  } else {
    kmin = std::min(kmin, k);
    kmax = std::max(kmax, k);
    vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
  }
  if (v > 0) {
    if (!has_pos) {
      pmin = pmax = v;
      has_pos = true;
    } else {
      pmin = std::min(pmin, v);
      pmax = std::max(pmax, v);
    }
  }
}

LivePlot::LivePlot(const QString& title, QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(160, 120);
  plotLayout()->insertRow(0);
  QFont tf = font();
  tf.setBold(true);
  tf.setPointSizeF(std::max(8.0, tf.pointSizeF()));
  title_ = new QCPTextElement(this, title, tf);
  title_->setMargins(QMargins(4, 3, 4, 0));
  plotLayout()->addElement(0, 0, title_);

  QFont small = font();
  small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1.5));
  for (QCPAxis* a : {xAxis, yAxis, yAxis2}) {
    a->setTickLabelFont(small);
    a->setLabelFont(small);
    a->setPadding(2);
    a->setLabelPadding(2);
  }
  xAxis->setLabel(QStringLiteral("step"));
  // The legend gets its own row under the title, one line wide: inside the chart it would hide
  // the newest data, which is exactly where one looks.
  legend->setVisible(true);
  legend->setFont(small);
  legend->setBrush(Qt::NoBrush);
  legend->setBorderPen(Qt::NoPen);
  legend->setIconSize(16, 8);
  legend->setColumnSpacing(6);
  legend->setMargins(QMargins(2, 0, 2, 0));
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plotLayout()->insertRow(1);
  axisRect()->insetLayout()->take(legend);
  plotLayout()->addElement(1, 0, legend);
  plotLayout()->setRowStretchFactor(0, 0.001);
  plotLayout()->setRowStretchFactor(1, 0.001);
  plotLayout()->setRowSpacing(0);

  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setNoAntialiasingOnDrag(true);
  setPlottingHint(QCP::phFastPolylines, true);
  setPlottingHint(QCP::phCacheLabels, true);

  tracer_ = new QCPItemTracer(this);
  tracer_->setStyle(QCPItemTracer::tsCircle);
  tracer_->setSize(7);
  tracer_->setPen(QPen(QColor(40, 40, 40)));
  tracer_->setBrush(QColor(255, 255, 255, 160));
  tracer_->setVisible(false);
  tracer_->setInterpolating(false);
  setMouseTracking(true);
}

void LivePlot::setEmptyText(const QString& text) {
  if (!empty_text_) {
    empty_text_ = new QCPItemText(this);
    empty_text_->position->setType(QCPItemPosition::ptAxisRectRatio);
    empty_text_->position->setCoords(0.5, 0.5);
    empty_text_->setPositionAlignment(Qt::AlignCenter);
    empty_text_->setColor(QColor(130, 130, 130));
    empty_text_->setTextAlignment(Qt::AlignCenter);
  }
  empty_text_->setText(text);
}

QString LivePlot::emptyText() const { return empty_text_ ? empty_text_->text() : QString(); }

QString LivePlot::title() const { return title_ ? title_->text() : QString(); }

QCPGraph* LivePlot::addSeries(const QString& name, const QColor& color, Qt::PenStyle style, double width,
                              bool right_axis, bool in_legend) {
  QCPGraph* g = addGraph(xAxis, right_axis ? yAxis2 : yAxis);
  g->setName(name);
  QPen pen(color, width, style);
  pen.setCosmetic(true);
  g->setPen(pen);
  g->setAdaptiveSampling(true);
  if (!in_legend) g->removeFromLegend();
  if (right_axis) {
    yAxis2->setVisible(true);
    yAxis2->setTickLabels(true);
  }
  ranges_.insert(g, Range{});
  fitLegend();
  return g;
}

QCPGraph* LivePlot::addMarkers(const QString& name, const QColor& color, QCPScatterStyle::ScatterShape shape,
                               double size, bool right_axis) {
  QCPGraph* g = addGraph(xAxis, right_axis ? yAxis2 : yAxis);
  g->setName(name);
  g->setLineStyle(QCPGraph::lsNone);
  g->setScatterStyle(QCPScatterStyle(shape, QPen(color, 1.6), QBrush(color), size));
  g->setPen(QPen(color));
  g->setAdaptiveSampling(true);
  ranges_.insert(g, Range{});
  return g;
}

void LivePlot::append(QCPGraph* g, double key, double value) {
  g->addData(key, value);
  ranges_[g].add(key, value);
}

void LivePlot::setSeriesData(QCPGraph* g, const QVector<double>& keys, const QVector<double>& values) {
  g->setData(keys, values, true);
  Range r;
  for (int i = 0; i < keys.size(); ++i) r.add(keys[i], values[i]);
  ranges_[g] = r;
}

void LivePlot::setAxisLabels(const QString& y, const QString& y2) {
  yAxis->setLabel(y);
  if (!y2.isEmpty()) yAxis2->setLabel(y2);
}

void LivePlot::setLogY(int base) {
  log_base_ = base;
  if (base == 0) {
    yAxis->setScaleType(QCPAxis::stLinear);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    yAxis->setNumberFormat(QStringLiteral("gb"));
  } else if (base == 2) {
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new Log2Ticker));
  } else {
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new NiceLogTicker));
  }
  markDirty();
}

void LivePlot::addVerticalMarker(double x, const QString& label, const QColor& color) {
  auto* line = new QCPItemStraightLine(this);
  for (QCPItemPosition* p : {line->point1, line->point2}) {
    p->setTypeX(QCPItemPosition::ptPlotCoords);
    p->setTypeY(QCPItemPosition::ptAxisRectRatio);
  }
  line->point1->setCoords(x, 0);
  line->point2->setCoords(x, 1);
  QColor faint_line = color;
  faint_line.setAlpha(110);
  line->setPen(QPen(faint_line, 1.0, Qt::DashLine));
  line->setSelectable(false);
  // The glyph sits in a strip above the data area (the axis rect's top margin), so however
  // many switches there are, no label lies over a curve; hovering it (or the line) names it.
  auto* glyph = new QCPItemText(this);
  glyph->position->setTypeX(QCPItemPosition::ptPlotCoords);
  glyph->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  glyph->position->setCoords(x, 0);
  glyph->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
  glyph->setText(QStringLiteral("▼"));
  QFont f = font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() - 3));
  glyph->setFont(f);
  glyph->setColor(color.darker(110));
  glyph->setPadding(QMargins(0, 0, 0, 0));
  glyph->setClipToAxisRect(false);
  glyph->setSelectable(false);
  if (axisRect()->minimumMargins().top() < kMarkerStrip) {
    QMargins m = axisRect()->minimumMargins();
    m.setTop(kMarkerStrip);
    axisRect()->setMinimumMargins(m);
  }
  markers_.push_back({line, glyph, label, x});
  markDirty();
}

QString LivePlot::verticalMarkerGlyph(int i) const {
  return i >= 0 && i < markers_.size() ? markers_[i].glyph->text() : QString();
}

QPointF LivePlot::verticalMarkerGlyphBottom(int i) {
  if (i < 0 || i >= markers_.size()) return {};
  return markers_[i].glyph->position->pixelPosition();
}

void LivePlot::clearVerticalMarkers() {
  for (const Marker& m : markers_) {
    removeItem(m.line);
    removeItem(m.glyph);
  }
  markers_.clear();
  markDirty();
}

void LivePlot::removeSeries(QCPGraph* g) {
  ranges_.remove(g);
  kept_.remove(g);
  removeGraph(g);
  fitLegend();
  markDirty();
}

void LivePlot::clearAllData() {
  for (int i = 0; i < graphCount(); ++i) {
    if (kept_.contains(graph(i))) continue;
    graph(i)->data()->clear();
    ranges_[graph(i)] = Range{};
  }
  clearVerticalMarkers();
  tracer_->setVisible(false);
  follow_ = true;
  markDirty();
}

void LivePlot::setFollow(bool follow) {
  follow_ = follow;
  markDirty();
}

void LivePlot::rescaleFollow() {
  Range keys;
  Range axis_r[2];
  for (int i = 0; i < graphCount(); ++i) {
    QCPGraph* g = graph(i);
    if (!g->visible()) continue;
    const Range& r = ranges_.value(g);
    if (!r.has) continue;
    keys.add(r.kmin, 1);
    keys.add(r.kmax, 1);
    Range& a = axis_r[g->valueAxis() == yAxis2 ? 1 : 0];
    a.add(r.kmin, r.vmin);
    a.add(r.kmax, r.vmax);
    if (r.has_pos) {
      a.add(r.kmin, r.pmin);
      a.add(r.kmax, r.pmax);
    }
  }
  if (!keys.has) return;
  const double lo = std::min(key_lower_, keys.kmin);
  const double hi = std::max(keys.kmax, lo + 1);
  xAxis->setRange(lo, hi + (hi - lo) * 0.02);
  for (int i = 0; i < 2; ++i) {
    const Range& a = axis_r[i];
    QCPAxis* ax = i == 0 ? yAxis : yAxis2;
    if (!a.has) continue;
    if (ax->scaleType() == QCPAxis::stLogarithmic) {
      if (!a.has_pos) continue;
      const double l = std::log2(a.pmin), h = std::log2(a.pmax);
      const double pad = std::max(0.5, (h - l) * 0.06);
      ax->setRange(std::exp2(l - pad), std::exp2(h + pad));
    } else {
      double l = a.vmin, h = a.vmax;
      const double span = h - l, mag = std::max(std::fabs(l), std::fabs(h));
      // A spread below 1e-4 of the values is rounding (a value read back from metrics.csv beside
      // the same value live, after a resume), not a change: drawn flat, on a span whose tick
      // labels differ, instead of as a jump across an axis of five equal labels.
      const bool flat = span <= mag * 1e-4;
      const double pad = flat ? std::max(0.5, mag * 0.1) : span * 0.06;
      if (flat) l = h = (l + h) / 2;
      ax->setRange(l - pad, h + pad);
    }
  }
}

void LivePlot::rescaleNow() {
  if (empty_text_) {
    bool any = false;
    for (int i = 0; i < graphCount() && !any; ++i) any = !graph(i)->data()->isEmpty();
    empty_text_->setVisible(!any);
  }
  if (follow_) rescaleFollow();
}

void LivePlot::refresh() {
  rescaleNow();
  dirty_ = false;
  replot(QCustomPlot::rpQueuedReplot);
}

int LivePlot::pointCount(int i) const {
  if (i < 0 || i >= graphCount()) return 0;
  return graph(i)->data()->size();
}

QCPGraph* LivePlot::series(const QString& name) const {
  for (int i = 0; i < graphCount(); ++i)
    if (graph(i)->name() == name) return graph(i);
  return nullptr;
}

int LivePlot::pointCount(const QString& name) const {
  const QCPGraph* g = series(name);
  return g ? g->data()->size() : 0;
}

void LivePlot::setKeyIsTime(bool on) {
  key_is_time_ = on;
  xAxis->setLabel(on ? tr("wall time (s)") : tr("step"));
  markDirty();
}

void LivePlot::fitLegend() {
  if (!legend->visible() || legend->layout() != plotLayout()) return;
  const QFontMetrics fm(legend->font());
  int widest = 0, items = 0;
  for (int i = 0; i < legend->itemCount(); ++i) {
    auto* it = qobject_cast<QCPPlottableLegendItem*>(legend->item(i));
    if (!it || !it->visible()) continue;
    widest = std::max(widest, fm.horizontalAdvance(it->plottable()->name()) + legend->iconSize().width() +
                                  legend->iconTextPadding() + legend->columnSpacing() + 8);
    ++items;
  }
  // As many columns as entries of the widest one fit side by side, and as many rows as that
  // takes: overlaid runs' entries then never squeeze or cover the chart's own.
  const int columns = std::max(1, (width() - 16) / std::max(1, widest));
  const int wrap = items > columns ? columns : 0;
  if (legend->wrap() != wrap) {
    legend->setWrap(wrap);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-flow the existing items
    markDirty();
  }
}

void LivePlot::resizeEvent(QResizeEvent* e) {
  fitLegend();
  QCustomPlot::resizeEvent(e);
}

void LivePlot::showEvent(QShowEvent* e) {
  QCustomPlot::showEvent(e);
  if (dirty_) refresh();  // it was hidden while data arrived
}

}  // namespace ampgan::ui
