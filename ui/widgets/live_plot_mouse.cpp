// LivePlot and the mouse: the hover tooltip and tracer, the linked crosshair, a click on a
// marker point, panning/zooming (which stop following the run), double-click to reset or maximise.
#include <algorithm>
#include <cmath>

#include <QMouseEvent>
#include <QToolTip>

#include "ui/widgets/live_plot.h"

namespace ampgan::ui {

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
  QString marks = markerTextNear(key, px);
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
  // The nearest marker point within 6 pixels (an overflow marker selects the layer where it started).
  const QPointF pos = e->position();
  QCPGraph* best = nullptr;
  double best_d = 6.0, best_key = 0;
  for (int i = 0; i < graphCount(); ++i) {
    QCPGraph* g = graph(i);
    if (!g->visible() || g->lineStyle() != QCPGraph::lsNone || g->data()->isEmpty()) continue;
    const double k0 = g->keyAxis()->pixelToCoord(pos.x() - best_d), k1 = g->keyAxis()->pixelToCoord(pos.x() + best_d);
    for (auto it = g->data()->findBegin(std::min(k0, k1)); it != g->data()->constEnd() && it->key <= std::max(k0, k1);
         ++it) {
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

QString LivePlot::markerTextNear(double key, double tolerance) const {
  QStringList out;
  for (const Marker& m : markers_)
    if (std::fabs(m.x - key) <= tolerance) out << m.label;
  return out.join(QStringLiteral("\n"));
}

}  // namespace ampgan::ui
