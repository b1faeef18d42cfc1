#include "ui/plots/plots_panel.h"

#include <algorithm>
#include <cmath>

#include <QMenu>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/common/amp_glossary.h"

namespace ampgan::ui {

QColor color_g() { return QColor(31, 119, 180); }
QColor color_d() { return QColor(214, 39, 40); }

namespace {
QColor faint(QColor c) {
  c.setAlpha(70);
  return c;
}
}  // namespace

PlotsPanel::PlotsPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(2, 2, 2, 2);
  outer->setSpacing(2);

  auto* bar = new QHBoxLayout;
  auto* smooth_caption = new QLabel(tr("Smoothing"));
  smooth_caption->setToolTip(glossary::smoothing());
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setRange(0, 99);
  slider_->setValue(static_cast<int>(alpha_ * 100));
  slider_->setMinimumWidth(100);
  slider_->setMaximumWidth(180);
  slider_->setToolTip(glossary::smoothing());
  slider_label_ = new QLabel(QString::number(alpha_, 'f', 2));
  slider_label_->setMinimumWidth(32);
  connect(slider_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  // "Reset views" with a drop-down for the axis options: one button's width on a small screen.
  auto* reset = new QToolButton;
  reset->setObjectName(QStringLiteral("plotsViewButton"));
  reset->setText(tr("Reset views"));
  reset->setPopupMode(QToolButton::MenuButtonPopup);
  reset->setToolTip(tr("Show the whole run in every chart again (zooming or panning a chart stops it following the "
                       "run; double-click a chart to reset only that one). The arrow: x axis and crosshair."));
  connect(reset, &QToolButton::clicked, this, &PlotsPanel::resetViews);
  auto* view_menu = new QMenu(reset);
  x_time_ = view_menu->addAction(tr("x: wall time (else the step)"));
  x_time_->setObjectName(QStringLiteral("plotsWallTime"));
  x_time_->setCheckable(true);
  x_time_->setToolTip(tr("The time charts' x axis: seconds since the run (or its resume) started"));
  connect(x_time_, &QAction::toggled, this, &PlotsPanel::setWallTime);
  cross_act_ = view_menu->addAction(tr("Crosshair on every chart"));
  cross_act_->setObjectName(QStringLiteral("plotsCrosshair"));
  cross_act_->setCheckable(true);
  connect(cross_act_, &QAction::toggled, this, &PlotsPanel::setCrosshair);
  reset->setMenu(view_menu);
  auto* hint = new QLabel(tr("wheel: zoom · drag: pan · double-click: reset · right-click: more"));
  hint->setToolTip(tr("Charts: the mouse wheel zooms, dragging pans, a double-click shows the whole run again, a "
                      "double-click on a title maximises that chart (and restores the grid), right-click for a log "
                      "axis, saving as PNG/PDF or copying. Hover for values; hover a title for what it shows."));
  hint->setMinimumWidth(40);
  hint->setStyleSheet(QStringLiteral("color: gray"));
  // The gradient histograms over time: a step of the run's stored sets (hidden until two).
  hist_caption_ = new QLabel(tr("Histograms"));
  hist_slider_ = new QSlider(Qt::Horizontal);
  hist_slider_->setObjectName(QStringLiteral("histogramStep"));
  hist_slider_->setMinimumWidth(50);  // the bar must fit a 1024 px window with both docks open
  hist_slider_->setMaximumWidth(160);
  hist_slider_->setToolTip(tr("Which step the two gradient-exponent histograms show, of those the run stored "
                              "(histograms.csv in its folder, every N steps as set under Histograms); at the right "
                              "end they follow the newest"));
  hist_label_ = new QLabel;
  connect(hist_slider_, &QSlider::valueChanged, this, [this](int v) { showHistEntry(v); });
  bar->addWidget(smooth_caption);
  bar->addWidget(slider_);
  bar->addWidget(slider_label_);
  bar->addSpacing(8);
  bar->addWidget(reset);
  bar->addSpacing(8);
  bar->addWidget(hist_caption_);
  bar->addWidget(hist_slider_);
  bar->addWidget(hist_label_);
  bar->addSpacing(8);
  bar->addWidget(hint, 1);
  outer->addLayout(bar);

  // The charts sit in a scroll area: on a small screen they keep a readable height and the
  // panel scrolls, instead of squeezing nine charts into 60 px each.
  scroll_ = new QScrollArea;
  scroll_->setObjectName(QStringLiteral("plotsScroll"));
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* host = new QWidget;
  grid_ = new QGridLayout(host);
  grid_->setContentsMargins(0, 0, 0, 0);
  grid_->setSpacing(3);
  scroll_->setWidget(host);
  outer->addWidget(scroll_, 1);

  auto loss = makePlot(QStringLiteral("losses"), tr("Losses"),
                       tr("<b>Losses</b> of the discriminator (real + fake) and the generator (non-saturating). "
                          "Faint: raw; bold: smoothed."));
  addCurve(loss, tr("loss D"), color_d(), [](const StepMetrics& m) { return m.loss_d; }, true);
  addCurve(loss, tr("loss G"), color_g(), [](const StepMetrics& m) { return m.loss_g; }, true);

  auto dout = makePlot(QStringLiteral("d_outputs"), tr("D(x) and D(G(z))"), glossary::d_outputs());
  addCurve(dout, tr("D(x)"), QColor(44, 160, 44), [](const StepMetrics& m) { return m.d_real; }, true);
  addCurve(dout, tr("D(G(z))"), QColor(148, 103, 189), [](const StepMetrics& m) { return m.d_fake; }, true);

  // SWD and FD get a chart each: on two autoscaled axes of one chart their curves lay on top of
  // each other and read as one.
  auto quality = makePlot(QStringLiteral("quality"), tr("Sample quality: SWD"), glossary::sample_quality());
  swd_ = quality->addSeries(tr("SWD ×1e3"), QColor(23, 190, 207), Qt::SolidLine, 1.6);
  swd_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
  quality->setAxisLabels(tr("SWD ×1e3"));
  auto fd = makePlot(QStringLiteral("fd"), tr("Sample quality: FD"), glossary::sample_quality());
  fd_ = fd->addSeries(tr("FD"), QColor(160, 150, 20), Qt::DashLine, 1.6);
  fd_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, 6));
  fd->setAxisLabels(tr("FD"));
  setEvaluationInterval(0);

  auto scale = makePlot(QStringLiteral("loss_scale"), tr("Loss scale and overflows"),
                        glossary::loss_scale() + QStringLiteral("<br><br>") + glossary::overflow());
  scale->setLogY(2);
  scale->setLogToggleAllowed(true, 2);
  {
    QCPGraph* sd = scale->addSeries(tr("scale D"), color_d(), Qt::SolidLine, 1.6);
    sd->setLineStyle(QCPGraph::lsStepLeft);
    QCPGraph* sg = scale->addSeries(tr("scale G"), color_g(), Qt::DashLine, 1.6);
    sg->setLineStyle(QCPGraph::lsStepLeft);
    curves_.push_back({scale, sd, nullptr, [](const StepMetrics& m) { return m.scale_d; }, true});
    curves_.push_back({scale, sg, nullptr, [](const StepMetrics& m) { return m.scale_g; }, true});
    over_d_ = scale->addMarkers(tr("D overflow"), color_d().darker(140), QCPScatterStyle::ssCross, 8);
    over_g_ = scale->addMarkers(tr("G overflow"), color_g().darker(140), QCPScatterStyle::ssTriangleInverted, 7);
  }
  scale->setAxisLabels(tr("loss scale S"));
  connect(scale, &LivePlot::markerClicked, this, [this](QCPGraph* g, double key) {
    if (g == over_d_ || g == over_g_) emit overflowClicked(g == over_d_ ? QStringLiteral("D") : QStringLiteral("G"),
                                                           static_cast<qint64>(std::llround(key)));
  });

  auto norms = makePlot(QStringLiteral("grad_norms"), tr("Gradient norms"), glossary::gradient_norm());
  norms->setLogY(10);
  norms->setLogToggleAllowed(true);
  addCurve(norms, tr("|g| D"), color_d(), [](const StepMetrics& m) { return m.grad_norm_d; }, true, true);
  addCurve(norms, tr("|g| G"), color_g(), [](const StepMetrics& m) { return m.grad_norm_g; }, true, true);

  auto under = makePlot(QStringLiteral("underflow"), tr("Underflowed gradients"), glossary::underflow());
  under->setLogToggleAllowed(true);
  addCurve(under, tr("D %"), color_d(), [](const StepMetrics& m) { return 100.0 * m.underflow_d; }, false);
  addCurve(under, tr("G %"), color_g(), [](const StepMetrics& m) { return 100.0 * m.underflow_g; }, false);
  under->setAxisLabels(tr("% of gradient values"));

  hist_g_ = new HistogramPlot(QStringLiteral("G"), color_g());
  hist_d_ = new HistogramPlot(QStringLiteral("D"), color_d());
  hist_g_->setObjectName(QStringLiteral("hist_g"));
  hist_d_->setObjectName(QStringLiteral("hist_d"));
  for (HistogramPlot* h : {hist_g_, hist_d_})
    connect(h, &LivePlot::maximizeRequested, this, [this, h] { toggleMaximized(h); });

  auto perf = makePlot(QStringLiteral("throughput"), tr("Throughput and memory"),
                       tr("<b>Images/s</b>: training images per second (one D and one G update per batch). "
                          "<b>Memory</b>: what the backend has allocated after the step (weights, half "
                          "copies, gradients, Adam moments, activations, workspace)."));
  addCurve(perf, tr("images/s"), QColor(255, 127, 14), [](const StepMetrics& m) { return m.images_per_s; }, true);
  addCurve(perf, tr("memory MiB (right)"), QColor(127, 127, 127), [](const StepMetrics& m) { return m.memory_mb; },
           false, false, true);
  perf->setAxisLabels(tr("images/s"), tr("MiB"));

  // Grid order: what a loss curve does, then what AMP does, then histograms and cost.
  cells_ = {loss, dout, quality, fd, scale, norms, under, hist_g_, hist_d_, perf};
  layoutCells(3);
  updateHistSlider();

  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &PlotsPanel::onTick);
  timer_.start();
  clock_.start();
}

LivePlot* PlotsPanel::makePlot(const QString& id, const QString& title, const QString& tooltip) {
  auto* p = new LivePlot(title);
  p->setTitleToolTip(tooltip);
  p->setLogToggleAllowed(true);  // every time chart: log or linear y from its context menu
  connect(p, &LivePlot::hovered, this, [this](double key) {
    if (!crosshair_) return;
    for (const QString& id : order_) plots_.value(id)->setCrosshair(key);
  });
  p->setObjectName(id);
  plots_.insert(id, p);
  order_ << id;
  connect(p, &LivePlot::maximizeRequested, this, [this, p] { toggleMaximized(p); });
  return p;
}

void PlotsPanel::addCurve(LivePlot* p, const QString& name, const QColor& c,
                          std::function<double(const StepMetrics&)> get, bool smoothed, bool positive_only,
                          bool right_axis) {
  Curve cv{p, nullptr, nullptr, std::move(get), positive_only};
  if (smoothed) {
    cv.raw = p->addSeries(name + tr(" (raw)"), faint(c), Qt::SolidLine, 1.0, right_axis, false);
    cv.raw->setAntialiased(false);  // faint and noisy: antialiasing it costs much and shows little
    cv.ema = p->addSeries(name, c, Qt::SolidLine, 1.8, right_axis);
  } else {
    cv.raw = p->addSeries(name, c, Qt::SolidLine, 1.6, right_axis);
  }
  curves_.push_back(std::move(cv));
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
  if (spent >= 0) interval = catch_up_ ? 0 : std::clamp(static_cast<int>(3 * spent), 1, 500);
  else if (wait >= 0) interval = static_cast<int>(wait);
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

void PlotsPanel::setEvaluationInterval(int every) {
  // "Set Evaluation under Settings" would mislead a run that evaluates but has not yet.
  for (const char* id : {"quality", "fd"})
    plots_.value(QString::fromLatin1(id))
      ->setEmptyText(every > 0 ? tr("First evaluation at step %1\n(the first one on a dataset also trains\nthe "
                                    "feature classifier: see the status bar)")
                                     .arg(every)
                               : tr("No evaluation yet: set\nEvery N steps > Evaluation\nunder Settings"));
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
