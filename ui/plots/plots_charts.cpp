// PlotsPanel's parts, as its constructor builds them: the bar above the charts, the scroll area
// that holds their grid, and the charts by theme with their curves. A new chart goes here (and
// into the constructor's grid order, plots_panel.cpp).
#include <cmath>

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QSlider>
#include <QToolButton>

#include "ui/common/amp_glossary.h"
#include "ui/plots/plots_panel.h"
#include "ui/widgets/fitting_label.h"

namespace ampgan::ui {

namespace {
QColor faint(QColor c) {
  c.setAlpha(70);
  return c;
}
}  // namespace

// The bar above the charts: smoothing, Reset views with the axis options, the histograms' step
// and a hint for the mouse.
QHBoxLayout* PlotsPanel::makeToolbar() {
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
  QToolButton* reset = makeViewButton();
  auto* hint = new FittingLabel({tr("wheel: zoom · drag: pan · double-click: reset · right-click: more"),
                                 tr("wheel: zoom · drag: pan · right-click: more"), tr("right-click: more")});
  hint->setObjectName(QStringLiteral("chartsMouseHint"));
  hint->setToolTip(
      tr("Charts: the mouse wheel zooms, dragging pans, a double-click shows the whole run again, a "
         "double-click on a title maximises that chart (and restores the grid), right-click for a log "
         "axis, saving as PNG/PDF or copying. Hover for values; hover a title for what it shows."));
  hint->setStyleSheet(QStringLiteral("color: gray"));
  // The gradient histograms over time: a step of the run's stored sets (hidden until two).
  hist_caption_ = new QLabel(tr("Histograms"));
  hist_slider_ = new QSlider(Qt::Horizontal);
  hist_slider_->setObjectName(QStringLiteral("histogramStep"));
  hist_slider_->setMinimumWidth(50);  // the bar must fit a 1024 px window with both docks open
  hist_slider_->setMaximumWidth(160);
  hist_slider_->setToolTip(
      tr("Which step the two gradient-exponent histograms show, of those the run stored "
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
  return bar;
}

// "Reset views" with a drop-down for the axis options: one button's width on a small screen.
QToolButton* PlotsPanel::makeViewButton() {
  auto* reset = new QToolButton;
  reset->setObjectName(QStringLiteral("plotsViewButton"));
  reset->setText(tr("Reset views"));
  reset->setPopupMode(QToolButton::MenuButtonPopup);
  reset->setToolTip(
      tr("Show the whole run in every chart again (zooming or panning a chart stops it following the "
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
  return reset;
}

QScrollArea* PlotsPanel::makeChartArea() {
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
  return scroll_;
}

// What a loss curve does: losses, D outputs, sample quality (SWD and FD).
void PlotsPanel::addTrainingCharts() {
  auto loss = makePlot(QStringLiteral("losses"), tr("Losses"),
                       tr("<b>Losses</b> of the discriminator (real + fake) and the generator (non-saturating). "
                          "Faint: raw; bold: smoothed."));
  addCurve(
      loss, tr("loss D"), color_d(), [](const StepMetrics& m) { return m.loss_d; }, true);
  addCurve(
      loss, tr("loss G"), color_g(), [](const StepMetrics& m) { return m.loss_g; }, true);

  auto dout = makePlot(QStringLiteral("d_outputs"), tr("D(x) and D(G(z))"), glossary::d_outputs());
  addCurve(
      dout, tr("D(x)"), QColor(44, 160, 44), [](const StepMetrics& m) { return m.d_real; }, true);
  addCurve(
      dout, tr("D(G(z))"), QColor(148, 103, 189), [](const StepMetrics& m) { return m.d_fake; }, true);

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
}

// What AMP does: the loss scale with overflow markers, gradient norms, underflow, the histograms.
void PlotsPanel::addAmpCharts() {
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
    if (g == over_d_ || g == over_g_)
      emit overflowClicked(g == over_d_ ? QStringLiteral("D") : QStringLiteral("G"),
                           static_cast<qint64>(std::llround(key)));
  });

  auto norms = makePlot(QStringLiteral("grad_norms"), tr("Gradient norms"), glossary::gradient_norm());
  norms->setLogY(10);
  norms->setLogToggleAllowed(true);
  addCurve(
      norms, tr("|g| D"), color_d(), [](const StepMetrics& m) { return m.grad_norm_d; }, true, true);
  addCurve(
      norms, tr("|g| G"), color_g(), [](const StepMetrics& m) { return m.grad_norm_g; }, true, true);

  auto under = makePlot(QStringLiteral("underflow"), tr("Underflowed gradients"), glossary::underflow());
  under->setLogToggleAllowed(true);
  addCurve(
      under, tr("D %"), color_d(), [](const StepMetrics& m) { return 100.0 * m.underflow_d; }, false);
  addCurve(
      under, tr("G %"), color_g(), [](const StepMetrics& m) { return 100.0 * m.underflow_g; }, false);
  under->setAxisLabels(tr("% of gradient values"));

  hist_g_ = new HistogramPlot(QStringLiteral("G"), color_g());
  hist_d_ = new HistogramPlot(QStringLiteral("D"), color_d());
  hist_g_->setObjectName(QStringLiteral("hist_g"));
  hist_d_->setObjectName(QStringLiteral("hist_d"));
  for (HistogramPlot* h : {hist_g_, hist_d_})
    connect(h, &LivePlot::maximizeRequested, this, [this, h] { toggleMaximized(h); });
}

// What a step costs: throughput and memory.
void PlotsPanel::addCostChart() {
  auto perf = makePlot(QStringLiteral("throughput"), tr("Throughput and memory"),
                       tr("<b>Images/s</b>: training images per second (one D and one G update per batch). "
                          "<b>Memory</b>: what the backend has allocated after the step (weights, half "
                          "copies, gradients, Adam moments, activations, workspace)."));
  addCurve(
      perf, tr("images/s"), QColor(255, 127, 14), [](const StepMetrics& m) { return m.images_per_s; }, true);
  addCurve(
      perf, tr("memory MiB (right)"), QColor(127, 127, 127), [](const StepMetrics& m) { return m.memory_mb; }, false,
      false, true);
  perf->setAxisLabels(tr("images/s"), tr("MiB"));
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

}  // namespace ampgan::ui
