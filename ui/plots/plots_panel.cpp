#include "ui/plots/plots_panel.h"

#include <algorithm>
#include <cmath>

#include <QAction>
#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSlider>
#include <QVBoxLayout>

namespace ampgan::ui {

QColor color_g() { return QColor(31, 119, 180); }
QColor color_d() { return QColor(214, 39, 40); }

PlotsPanel::PlotsPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(2, 2, 2, 2);
  outer->setSpacing(2);
  outer->addLayout(makeToolbar());
  outer->addWidget(makeChartArea(), 1);

  addTrainingCharts();
  addAmpCharts();
  addCostChart();

  // Grid order: what a loss curve does, then what AMP does, then histograms and cost.
  for (const char* id : {"losses", "d_outputs", "quality", "fd", "loss_scale", "grad_norms", "underflow"})
    cells_ << plot(QString::fromLatin1(id));
  cells_ << hist_g_ << hist_d_ << plot(QStringLiteral("throughput"));
  layoutCells(3);
  updateHistSlider();

  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &PlotsPanel::onTick);
  timer_.start();
  clock_.start();
}

QList<LivePlot*> PlotsPanel::allPlots() const {
  QList<LivePlot*> out;
  for (const QString& id : order_) {
    out << plots_.value(id);
    if (id == QStringLiteral("underflow")) out << hist_g_ << hist_d_;
  }
  return out;
}

void PlotsPanel::clear() {
  rows_.clear();
  for (Curve& c : curves_) {
    c.ema_state = 0;
    c.ema_n = 0;
  }
  for (LivePlot* p : allPlots()) p->clearAllData();
  hist_g_->clearHistogram();
  hist_d_->clearHistogram();
  hists_.clear();
  updateHistSlider();
  switch_count_ = 0;
}

void PlotsPanel::addSwitch(const StepMetrics& prev, const StepMetrics& now) {
  const QString label = QStringLiteral("%1 → %2").arg(precision_label(prev.precision), precision_label(now.precision));
  // Between the last step in the old mode and the first in the new.
  const double x = wall_time_ ? 0.5 * (prev.time_s + now.time_s) : now.step - 0.5;
  for (const QString& id : order_) plots_.value(id)->addVerticalMarker(x, label, QColor(60, 60, 60));
  ++switch_count_;
}

void PlotsPanel::appendRow(const StepMetrics& m) {
  if (!rows_.empty() && rows_.back().precision != m.precision) addSwitch(rows_.back(), m);
  const double x = keyOf(m);
  const double a = alpha_;
  for (Curve& c : curves_) {
    const double v = c.get(m);
    if (std::isnan(v) || std::isinf(v) || (c.positive_only && v <= 0)) continue;
    c.plot->append(c.raw, x, v);
    if (c.ema) {
      // Debiased EMA (as TensorBoard): early points are not dragged towards 0.
      c.ema_state = a * c.ema_state + (1 - a) * v;
      ++c.ema_n;
      const double debias = 1 - std::pow(a, c.ema_n);
      c.plot->append(c.ema, x, debias > 0 ? c.ema_state / debias : v);
    }
    c.plot->markDirty();
  }
  LivePlot* scale = plots_.value(QStringLiteral("loss_scale"));
  if (m.skipped_d) scale->append(over_d_, x, m.scale_d);
  if (m.skipped_g) scale->append(over_g_, x, m.scale_g);
  if (!std::isnan(m.swd)) {
    LivePlot* q = plots_.value(QStringLiteral("quality"));
    q->append(swd_, x, m.swd);
    q->markDirty();
  }
  if (!std::isnan(m.fd)) {
    LivePlot* q = plots_.value(QStringLiteral("fd"));
    q->append(fd_, x, m.fd);
    q->markDirty();
  }
  rows_.push_back(m);
}

void PlotsPanel::appendRows(const std::vector<StepMetrics>& rows) {
  for (const StepMetrics& m : rows) appendRow(m);
}

void PlotsPanel::setHistory(const std::vector<StepMetrics>& rows) {
  clear();
  appendRows(rows);
  redrawAll();
}

void PlotsPanel::redrawAll() {
  // The axes are right at once; the replots follow one chart per event-loop pass (onTick), not
  // all in one, so the window keeps reacting while a long run with overlays is drawn.
  for (LivePlot* p : allPlots()) {
    p->setFollow(true);
    p->rescaleNow();
  }
  catch_up_ = true;
  timer_.setInterval(0);
}

void PlotsPanel::setSmoothing(double alpha) {
  alpha = std::clamp(alpha, 0.0, 0.99);
  if (alpha == alpha_) return;
  alpha_ = alpha;
  slider_label_->setText(QString::number(alpha_, 'f', 2));
  if (slider_->value() != static_cast<int>(std::lround(alpha * 100))) {
    const QSignalBlocker block(slider_);
    slider_->setValue(static_cast<int>(std::lround(alpha * 100)));
  }
  rebuildSmoothed();
  if (!overlays_.empty()) drawOverlays();
  emit smoothingChanged(alpha_);
}

void PlotsPanel::rebuildSmoothed() {
  // A settings change, not the live path: rebuilding each smoothed curve whole is fine here.
  for (Curve& c : curves_) {
    if (!c.ema) continue;
    QVector<double> keys, values;
    keys.reserve(static_cast<int>(rows_.size()));
    values.reserve(static_cast<int>(rows_.size()));
    c.ema_state = 0;
    c.ema_n = 0;
    for (const StepMetrics& m : rows_) {
      const double v = c.get(m);
      if (std::isnan(v) || std::isinf(v) || (c.positive_only && v <= 0)) continue;
      c.ema_state = alpha_ * c.ema_state + (1 - alpha_) * v;
      ++c.ema_n;
      const double debias = 1 - std::pow(alpha_, c.ema_n);
      keys << keyOf(m);
      values << (debias > 0 ? c.ema_state / debias : v);
    }
    c.plot->setSeriesData(c.ema, keys, values);
    c.plot->markDirty();
  }
}

void PlotsPanel::setWallTime(bool on) {
  if (on == wall_time_) return;
  wall_time_ = on;
  if (x_time_->isChecked() != on) x_time_->setChecked(on);
  // Every series is rebuilt with the other key: a settings change, not the live path.
  // The histograms are per step, not per x: they stay as they are.
  const std::deque<StepMetrics> rows = std::move(rows_);
  rows_.clear();
  for (Curve& c : curves_) {
    c.ema_state = 0;
    c.ema_n = 0;
  }
  switch_count_ = 0;
  for (const QString& id : order_) {
    plots_.value(id)->clearAllData();
    plots_.value(id)->setKeyIsTime(on);
  }
  for (const StepMetrics& m : rows) appendRow(m);
  if (!overlays_.empty()) drawOverlays();
  resetViews();
}

void PlotsPanel::setCrosshair(bool on) {
  crosshair_ = on;
  if (cross_act_->isChecked() != on) cross_act_->setChecked(on);
  if (!on)
    for (const QString& id : order_) plots_.value(id)->setCrosshair(NAN);
}

void PlotsPanel::resetViews() {
  for (LivePlot* p : allPlots()) {
    p->setFollow(true);
    p->refresh();
  }
}

void PlotsPanel::onTick() {
  // One chart per tick, round-robin over the dirty, visible ones: each replot is an event-loop
  // pass of its own, so input, the worker's batches of rows and the other charts interleave with
  // it (several charts in one pass hold the window until all are drawn, long enough to feel with
  // large overlays). The next tick comes 3x this replot's time later, so drawing keeps to about
  // a quarter of the GUI thread, and no chart redraws more often than every min_interval_ms_
  // (20 a second). Right after a history load (catch_up_) the charts are drawn back to back,
  // still one per pass.
  const QList<LivePlot*> plots = allPlots();
  const int n = static_cast<int>(plots.size());
  const qint64 now = clock_.elapsed();
  qint64 wait = -1;  // ms until the soonest rate-limited dirty chart may redraw; -1: none dirty
  double spent = -1;
  for (int k = 0; k < n; ++k) {
    LivePlot* p = plots[(next_ + k) % n];
    // Scrolled out of view (a small screen): it stays dirty and is drawn once it shows.
    if (!p->isDirty() || !p->isVisible() || p->visibleRegion().isEmpty()) continue;
    const qint64 since = now - last_replot_.value(p, -min_interval_ms_);
    if (!catch_up_ && since < min_interval_ms_) {
      const qint64 w = min_interval_ms_ - since;
      wait = wait < 0 ? w : std::min(wait, w);
      continue;
    }
    p->refresh();
    last_replot_.insert(p, now);
    ++replots_;
    spent = std::max(0.5, p->replotTime(true));
    next_ = (next_ + k + 1) % n;
    break;
  }
  int interval;
  if (spent >= 0)
    interval = catch_up_ ? 0 : std::clamp(static_cast<int>(3 * spent), 1, 500);
  else if (wait >= 0)
    interval = static_cast<int>(wait);
  else {
    catch_up_ = false;  // everything shown is drawn
    interval = min_interval_ms_;
  }
  if (interval != timer_.interval()) timer_.setInterval(interval);
}

void PlotsPanel::refreshNow() {
  for (LivePlot* p : allPlots()) {
    if (!p->isVisible()) continue;
    p->refresh();
    ++replots_;
  }
}

void PlotsPanel::setEvaluationInterval(int every, int64_t after, bool skipped) {
  // "Set Evaluation under Settings" would mislead a run that evaluates but has not yet.
  QString text = tr("No evaluation yet: set\nEvery N steps > Evaluation\nunder Settings");
  if (every > 0) {
    const int64_t next = (std::max<int64_t>(after, 0) / every + 1) * every;
    const QString classifier =
        tr("(the first one on a dataset also trains\nthe feature classifier: see the status bar)");
    if (skipped)
      text = tr("Evaluation at step %1 skipped\nnext one at step %2").arg(next).arg(next + every);
    else if (after > 0)
      text = tr("Next evaluation at step %1\n%2").arg(next).arg(classifier);
    else
      text = tr("First evaluation at step %1\n%2").arg(next).arg(classifier);
  }
  for (const char* id : {"quality", "fd"}) plots_.value(QString::fromLatin1(id))->setEmptyText(text);
}

void PlotsPanel::toggleMaximized(LivePlot* p) {
  const bool restore = maximized_ == p;
  maximized_ = restore ? nullptr : p;
  for (LivePlot* q : allPlots()) q->setVisible(restore || q == p);
  layoutCells(columns_);
}

void PlotsPanel::layoutCells(int columns) {
  columns_ = std::clamp(columns, 1, 3);
  for (QWidget* c : cells_) grid_->removeWidget(c);
  for (int i = 0; i < cells_.size(); ++i) {
    // The last cell of an incomplete row takes the rest of it (no hole at the bottom right).
    const bool last = i == cells_.size() - 1;
    const int span = last ? columns_ - i % columns_ : 1;
    grid_->addWidget(cells_[i], i / columns_, i % columns_, 1, span);
  }
  const int rows = (static_cast<int>(cells_.size()) + columns_ - 1) / columns_;
  int max_row = -1, max_col = -1;
  if (maximized_) {
    const int i = static_cast<int>(cells_.indexOf(maximized_));
    max_row = i / columns_;
    max_col = i % columns_;
  }
  // Empty rows and columns would keep their stretch (and a maximised chart fills the view:
  // no minimum heights then).
  for (int r = 0; r < static_cast<int>(cells_.size()); ++r) {
    const bool used = r < rows && (!maximized_ || r == max_row);
    grid_->setRowStretch(r, used ? 1 : 0);
    grid_->setRowMinimumHeight(r, used && !maximized_ ? kCellMinHeight : 0);
  }
  for (int c = 0; c < 3; ++c) grid_->setColumnStretch(c, c < columns_ && (!maximized_ || c == max_col) ? 1 : 0);
}

void PlotsPanel::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  // As many columns as fit at a readable width: 3 on a large screen, 2 or 1 on a small one.
  const int w = scroll_->viewport()->width();
  const int columns = std::clamp(w / kCellMinWidth, 1, 3);
  if (columns != columns_) layoutCells(columns);
}

}  // namespace ampgan::ui
