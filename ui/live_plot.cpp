#include "ui/live_plot.h"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QFileDialog>
#include <QMenu>
#include <QToolTip>

namespace ampgan::ui {

QString format_value(double v, bool as_power_of_two) {
  if (std::isnan(v)) return QStringLiteral("–");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  if (as_power_of_two && v > 0) {
    const double l = std::log2(v);
    if (std::fabs(l - std::round(l)) < 1e-9) return QStringLiteral("2^%1").arg(static_cast<int>(std::round(l)));
  }
  const double a = std::fabs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e6)) return QString::number(v, 'e', 2);
  return QString::number(v, 'g', 4);
}

Log2Ticker::Log2Ticker() {
  setLogBase(2);
  setTickCount(4);  // every few powers of two, not a label per doubling
}

namespace {
QString compact(double v) {
  const double a = std::fabs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e5)) {
    const int e = static_cast<int>(std::floor(std::log10(a)));
    const double m = v / std::pow(10.0, e);
    const QString ms = std::fabs(m - std::round(m)) < 1e-6 ? QString::number(static_cast<int>(std::round(m)))
                                                           : QString::number(m, 'g', 2);
    return ms + QStringLiteral("e") + QString::number(e);
  }
  return QString::number(v, 'g', 3);
}
}  // namespace

void Log2Ticker::generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks,
                          QVector<double>* subTicks, QVector<QString>* tickLabels) {
  ticks.clear();
  if (subTicks) subTicks->clear();
  if (tickLabels) tickLabels->clear();
  const double lo = range.lower, hi = range.upper;
  if (!(lo > 0) || !(hi > lo)) return;
  const int e0 = static_cast<int>(std::ceil(std::log2(lo) - 1e-9)), e1 = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  if (e1 < e0) {
    // Narrower than one octave, no power of two inside: three plain numbers.
    for (int i = 1; i <= 3; ++i) ticks << lo + (hi - lo) * i / 4;
    if (tickLabels)
      for (double t : ticks) *tickLabels << compact(t);
    return;
  }
  const int every = std::max(1, static_cast<int>(std::ceil((e1 - e0 + 1) / static_cast<double>(tickCount()))));
  for (int e = e0; e <= e1; ++e) {
    if (e % every == 0) {
      ticks << std::exp2(e);
      if (tickLabels) *tickLabels << QStringLiteral("2^%1").arg(e);
    } else if (subTicks) {
      *subTicks << std::exp2(e);
    }
  }
  if (ticks.isEmpty()) {  // the multiples of `every` all fell outside: label the lowest power
    ticks << std::exp2(e0);
    if (tickLabels) *tickLabels << QStringLiteral("2^%1").arg(e0);
  }
}

void NiceLogTicker::generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks,
                             QVector<double>* subTicks, QVector<QString>* tickLabels) {
  ticks.clear();
  if (subTicks) subTicks->clear();
  if (tickLabels) tickLabels->clear();
  const double lo = range.lower, hi = range.upper;
  if (!(lo > 0) || !(hi > lo)) return;
  const double decades = std::log10(hi / lo);
  if (decades < 0.7) {
    // Within a decade: ordinary evenly spaced ticks.
    const double raw = (hi - lo) / 4;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double r = raw / mag;
    const double step = (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
    for (double t = std::ceil(lo / step) * step; t <= hi * (1 + 1e-9); t += step) ticks << t;
  } else {
    const int every = decades > 6 ? static_cast<int>(std::ceil(decades / 6)) : 1;
    const std::vector<double> mult = decades > 2 ? std::vector<double>{1} : std::vector<double>{1, 2, 5};
    const int k0 = static_cast<int>(std::floor(std::log10(lo))), k1 = static_cast<int>(std::ceil(std::log10(hi)));
    for (int k = k0; k <= k1; ++k) {
      const double p10 = std::pow(10.0, k);
      if (k % every == 0)
        for (double m : mult)
          if (m * p10 >= lo && m * p10 <= hi) ticks << m * p10;
      if (subTicks && every == 1 && mult.size() == 1)
        for (int m = 2; m <= 9; ++m)
          if (m * p10 >= lo && m * p10 <= hi) *subTicks << m * p10;
    }
  }
  if (tickLabels)
    for (double t : ticks) *tickLabels << compact(t);
}

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
  fitLegend();
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

QString LivePlot::markerTextNear(double key, double tolerance) const {
  QStringList out;
  for (const Marker& m : markers_)
    if (std::fabs(m.x - key) <= tolerance) out << m.label;
  return out.join(QStringLiteral("\n"));
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
      const double span = h - l;
      const double pad = span > 0 ? span * 0.06 : std::max(0.5, std::fabs(h) * 0.1);
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

namespace {
// Hides the hover marker and the crosshair for the lifetime of an export.
struct HoverHidden {
  QCPAbstractItem* items[2];
  bool was[2];
  HoverHidden(QCPAbstractItem* tracer, QCPAbstractItem* cross) : items{tracer, cross} {
    for (int i = 0; i < 2; ++i) {
      was[i] = items[i] && items[i]->visible();
      if (items[i]) items[i]->setVisible(false);
    }
  }
  ~HoverHidden() {
    for (int i = 0; i < 2; ++i)
      if (items[i]) items[i]->setVisible(was[i]);
  }
};
}  // namespace

bool LivePlot::saveTo(const QString& path, int width, int height, int dpi) {
  if (follow_) rescaleFollow();
  const HoverHidden hidden(tracer_, cross_);
  if (path.endsWith(QStringLiteral(".pdf"), Qt::CaseInsensitive))
    return savePdf(path, width, height, QCP::epNoCosmetic, QStringLiteral("AMP GAN Studio"), title());
  dpi = std::clamp(dpi, 48, 1200);
  const double scale = dpi / 96.0;
  if (width <= 0 || height <= 0) return savePng(path, 0, 0, scale, -1, dpi);
  // QCustomPlot's size is in logical pixels, multiplied by scale: at 144 dpi, 1600 px is 1066.7
  // logical ones, which no whole number gives exactly. Drawn a little larger, then cut to the
  // pixels asked for (the cut is the margin's last pixel).
  const int w = static_cast<int>(std::ceil(width / scale - 1e-9)), h = static_cast<int>(std::ceil(height / scale - 1e-9));
  QImage img = toPixmap(w, h, scale).toImage().copy(0, 0, width, height);
  const int per_metre = static_cast<int>(std::lround(dpi / 0.0254));
  img.setDotsPerMeterX(per_metre);
  img.setDotsPerMeterY(per_metre);
  return img.save(path, "PNG");
}

void LivePlot::drawForExport(QCPPainter* painter, int width, int height) {
  if (follow_) rescaleFollow();
  const HoverHidden hidden(tracer_, cross_);
  toPainter(painter, width, height);
}

QPixmap LivePlot::exportPixmap(int width, int height, double scale) {
  if (follow_) rescaleFollow();
  const HoverHidden hidden(tracer_, cross_);
  return toPixmap(width, height, scale);
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

bool LivePlot::overTitle(const QPoint& p) const { return title_ && title_->outerRect().contains(p); }

QString LivePlot::hoverText(double key) const {
  QString text;
  double step = NAN;
  const double px = std::fabs(xAxis->pixelToCoord(4) - xAxis->pixelToCoord(0));  // 4 pixels in steps
  for (int i = 0; i < graphCount(); ++i) {
    const QCPGraph* g = graph(i);
    if (!g->visible() || g->data()->isEmpty()) continue;
    auto data = g->data();
    auto it = data->findBegin(key, false);
    if (it == data->constEnd()) --it;
    if (it != data->constBegin()) {
      auto prev = it - 1;
      if (std::fabs(prev->key - key) < std::fabs(it->key - key)) it = prev;
    }
    const bool points_only = g->lineStyle() == QCPGraph::lsNone;
    if (points_only && std::fabs(it->key - key) > px) continue;  // markers: only when on one
    if (std::isnan(step)) step = it->key;
    const bool pow2 = g->valueAxis()->scaleType() == QCPAxis::stLogarithmic && log_base_ == 2;
    text += QStringLiteral("\n%1: %2").arg(g->name(), format_value(it->value, pow2));
    if (points_only && !key_is_time_) text += QStringLiteral(" (step %1)").arg(static_cast<qint64>(it->key));
  }
  const QString marks = markerTextNear(key, px);
  if (text.isEmpty()) return marks;
  QString head = key_is_time_ ? QStringLiteral("t = %1 s").arg(step, 0, 'f', 1)
                              : QStringLiteral("step %1").arg(static_cast<qint64>(step));
  if (!marks.isEmpty()) head += QStringLiteral("\n") + marks;
  return head + text;
}

void LivePlot::mouseMoveEvent(QMouseEvent* e) {
  QCustomPlot::mouseMoveEvent(e);
  if (e->buttons() & Qt::LeftButton) {
    follow_ = false;  // the user is panning
    QToolTip::hideText();
    return;
  }
  const QPoint pos = e->position().toPoint();
  if (overTitle(pos) && !title_tip_.isEmpty()) {
    tracer_->setVisible(false);
    QToolTip::showText(e->globalPosition().toPoint(), title_tip_, this);
    return;
  }
  if (!axisRect()->rect().contains(pos)) {
    // The marker strip above the data: a glyph names its switch.
    const QRect ar = axisRect()->rect();
    if (!markers_.isEmpty() && pos.y() < ar.top() && pos.y() >= ar.top() - kMarkerStrip - 2 && pos.x() >= ar.left() &&
        pos.x() <= ar.right()) {
      const double key = xAxis->pixelToCoord(pos.x());
      const double px = std::fabs(xAxis->pixelToCoord(6) - xAxis->pixelToCoord(0));
      const QString marks = markerTextNear(key, px);
      if (!marks.isEmpty()) {
        QToolTip::showText(e->globalPosition().toPoint() + QPoint(10, 10), marks, this);
        return;
      }
    }
    if (tracer_->visible()) {
      tracer_->setVisible(false);
      replot(rpQueuedReplot);
    }
    QToolTip::hideText();
    return;
  }
  const double key = xAxis->pixelToCoord(pos.x());
  emit hovered(key);
  const QString text = hoverText(key);
  if (text.isEmpty()) {
    QToolTip::hideText();
    return;
  }
  QToolTip::showText(e->globalPosition().toPoint() + QPoint(14, 10), text, this);
  // Tracer on the first line series that has data at this position.
  for (int i = 0; i < graphCount(); ++i) {
    QCPGraph* g = graph(i);
    if (g->visible() && !g->data()->isEmpty() && g->lineStyle() != QCPGraph::lsNone) {
      tracer_->setGraph(g);
      tracer_->setGraphKey(key);
      tracer_->setVisible(true);
      replot(rpQueuedReplot);
      break;
    }
  }
}

void LivePlot::mousePressEvent(QMouseEvent* e) {
  QCustomPlot::mousePressEvent(e);
  if (e->button() != Qt::LeftButton) return;
  // The nearest marker point within 6 pixels (issue 13: an overflow marker selects its layer).
  const QPointF pos = e->position();
  QCPGraph* best = nullptr;
  double best_d = 6.0, best_key = 0;
  for (int i = 0; i < graphCount(); ++i) {
    QCPGraph* g = graph(i);
    if (!g->visible() || g->lineStyle() != QCPGraph::lsNone || g->data()->isEmpty()) continue;
    const double k0 = g->keyAxis()->pixelToCoord(pos.x() - best_d), k1 = g->keyAxis()->pixelToCoord(pos.x() + best_d);
    for (auto it = g->data()->findBegin(std::min(k0, k1)); it != g->data()->constEnd() && it->key <= std::max(k0, k1); ++it) {
      const QPointF p = g->coordsToPixels(it->key, it->value);
      const double d = std::hypot(p.x() - pos.x(), p.y() - pos.y());
      if (d < best_d) best = g, best_d = d, best_key = it->key;  // ties: the series added first
    }
  }
  if (best) emit markerClicked(best, best_key);
}

void LivePlot::mouseDoubleClickEvent(QMouseEvent* e) {
  QCustomPlot::mouseDoubleClickEvent(e);
  if (overTitle(e->position().toPoint())) {
    emit maximizeRequested();
    return;
  }
  setFollow(true);
  refresh();
}

void LivePlot::wheelEvent(QWheelEvent* e) {
  follow_ = false;  // the user is zooming
  QCustomPlot::wheelEvent(e);
}

void LivePlot::setKeyIsTime(bool on) {
  key_is_time_ = on;
  xAxis->setLabel(on ? tr("wall time (s)") : tr("step"));
  markDirty();
}

void LivePlot::setCrosshair(double key) {
  if (std::isnan(key) && !cross_) return;
  if (!cross_) {
    cross_ = new QCPItemStraightLine(this);
    for (QCPItemPosition* p : {cross_->point1, cross_->point2}) {
      p->setTypeX(QCPItemPosition::ptPlotCoords);
      p->setTypeY(QCPItemPosition::ptAxisRectRatio);
    }
    cross_->setPen(QPen(QColor(90, 90, 90, 150), 1.0, Qt::SolidLine));
    cross_->setSelectable(false);
  }
  cross_key_ = key;
  cross_->setVisible(!std::isnan(key));
  if (!std::isnan(key)) {
    cross_->point1->setCoords(key, 0);
    cross_->point2->setCoords(key, 1);
  }
  if (isVisible()) replot(rpQueuedReplot);
}

void LivePlot::leaveEvent(QEvent* e) {
  QCustomPlot::leaveEvent(e);
  emit hovered(NAN);
  if (tracer_->visible()) {
    tracer_->setVisible(false);
    replot(rpQueuedReplot);
  }
}

void LivePlot::fitLegend() {
  if (!legend->visible() || legend->layout() != plotLayout()) return;
  const QFontMetrics fm(legend->font());
  int total = 0, items = 0;
  for (int i = 0; i < legend->itemCount(); ++i) {
    auto* it = qobject_cast<QCPPlottableLegendItem*>(legend->item(i));
    if (!it || !it->visible()) continue;
    total += fm.horizontalAdvance(it->plottable()->name()) + legend->iconSize().width() + legend->iconTextPadding() +
             legend->columnSpacing() + 8;
    ++items;
  }
  const int wrap = total > width() - 16 && items > 1 ? (items + 1) / 2 : 0;
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

void LivePlot::contextMenuEvent(QContextMenuEvent* e) {
  QMenu menu(this);
  menu.addAction(tr("Reset view (follow the run)"), this, [this] {
    setFollow(true);
    refresh();
  });
  if (log_toggle_) {
    QAction* a = menu.addAction(tr("Logarithmic y axis"));
    a->setCheckable(true);
    a->setChecked(log_base_ != 0);
    connect(a, &QAction::toggled, this, [this](bool on) {
      setLogY(on ? log_toggle_base_ : 0);
      refresh();
    });
  }
  menu.addAction(tr("Maximise / restore"), this, &LivePlot::maximizeRequested);
  menu.addSeparator();
  auto save = [this](const QString& filter, const QString& ext) {
    QString name = title().toLower();
    name.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    const QString path = QFileDialog::getSaveFileName(this, tr("Save plot"), name + ext, filter);
    if (!path.isEmpty() && !saveTo(path))
      QToolTip::showText(QCursor::pos(), tr("Could not write %1").arg(path), this);
  };
  menu.addAction(tr("Save as PNG…"), this, [=] { save(tr("PNG images (*.png)"), QStringLiteral(".png")); });
  menu.addAction(tr("Save as PDF…"), this, [=] { save(tr("PDF documents (*.pdf)"), QStringLiteral(".pdf")); });
  menu.addAction(tr("Copy image"), this, [this] { QApplication::clipboard()->setPixmap(toPixmap()); });
  menu.exec(e->globalPos());
}

}  // namespace ampgan::ui
