// The charts (plots/, widgets/): switch markers, SWD and FD, log ticks, the histograms, exports,
// the replot budget, overlays, and the axes' options with the linked crosshair.
#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QContextMenuEvent>
#include <QDialog>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMouseEvent>
#include <QSpinBox>
#include <QTimer>
#include <QtTest>

#include "core/backend/elementwise.h"
#include "tests/ui/ui_test_support.h"
#include "ui/plots/histogram_plot.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/runs_panel.h"
#include "ui/widgets/live_plot.h"
#include "ui/widgets/plot_export.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestPlots : public UiTestCase {
  Q_OBJECT

 private slots:
  void histogramAndLogTicks() {
    HistogramPlot h(QStringLiteral("G"), Qt::blue);
    std::vector<float> counts(ew::kHistBins, 0.0f);
    counts[-20 - ew::kHistMinExp] = 30;  // FP16 subnormal
    counts[0 - ew::kHistMinExp] = 60;
    counts[ew::kHistZeroBin] = 10;
    h.setHistogram(25, counts, Precision::BF16, 1);
    QVERIFY(h.hasData());
    QCOMPARE(h.step(), int64_t{25});
    QCOMPARE(h.fraction(ew::kHistZeroBin), 0.1);
    QCOMPARE(h.fraction(-20 - ew::kHistMinExp), 0.3);
    QVERIFY(h.bf16MarksVisible());
    h.setHistogram(30, counts, Precision::FP16, 1024);
    QVERIFY(!h.bf16MarksVisible());

    NiceLogTicker t;
    QVector<double> ticks, sub;
    QVector<QString> labels;
    t.generate(QCPRange(1e-6, 1e2), QLocale::c(), 'g', 2, ticks, &sub, &labels);
    QVERIFY(ticks.size() >= 3 && ticks.size() <= 9);
    QVERIFY(labels.contains(QStringLiteral("1e-6")) || labels.contains(QStringLiteral("1e-5")));
    t.generate(QCPRange(12, 60), QLocale::c(), 'g', 2, ticks, &sub, &labels);
    QVERIFY(ticks.size() >= 2 && ticks.size() <= 8);
    for (const QString& l : labels) QVERIFY2(!l.contains(QStringLiteral("e")), qPrintable(l));
  }

  // Each precision switch is a one-character glyph above the data area (labels would pile up
  // over the curves), and its label is hover text.
  void switchMarkersAreGlyphsAboveTheData() {
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setHistory(rows(60, 20, 3));  // switches at steps 20, 22, 24
    QCOMPARE(panel.switchCount(), 3);
    for (const QString& id : panel.plotIds()) {
      LivePlot* p = panel.plot(id);
      QCOMPARE(p->verticalMarkerCount(), 3);
      p->replot(QCustomPlot::rpImmediateRefresh);
      const int top = p->axisRect()->rect().top();
      for (int i = 0; i < 3; ++i) {
        QCOMPARE(p->verticalMarkerGlyph(i).size(), 1);                               // a glyph, not "FP32 → FP16 AMP"
        QVERIFY2(p->verticalMarkerGlyphBottom(i).y() <= top + 0.5, qPrintable(id));  // above the data
      }
      const QString hover = p->hoverTextAt(19.5);
      QVERIFY2(hover.contains(QStringLiteral("FP32 → FP16 AMP")), qPrintable(id + QStringLiteral(": ") + hover));
    }
  }

  // SWD (tens) and FD (thousands) each have their own chart: on two autoscaled axes of one chart
  // they would lie on top of each other.
  void swdAndFdHaveTheirOwnCharts() {
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    panel.setHistory(rows(100));
    LivePlot* swd = panel.plot(QStringLiteral("quality"));
    LivePlot* fd = panel.plot(QStringLiteral("fd"));
    QVERIFY(swd && fd && swd != fd);
    QCOMPARE(swd->pointCount(QStringLiteral("SWD ×1e3")), 10);
    QCOMPARE(fd->pointCount(QStringLiteral("FD")), 10);
    for (int i = 0; i < swd->graphCount(); ++i) QVERIFY(!swd->graph(i)->name().contains(QStringLiteral("FD")));
    for (int i = 0; i < fd->graphCount(); ++i) QVERIFY(!fd->graph(i)->name().contains(QStringLiteral("SWD")));
    // Each axis spans its own data.
    QVERIFY(fd->yAxis->range().upper >= 400 && fd->yAxis->range().lower < 100);
    QVERIFY(swd->yAxis->range().upper < 10);
  }

  // A narrow log2 axis has distinct labels, never one label repeated ("2^0 2^0 2^0").
  void log2TicksAreDistinct() {
    Log2Ticker t;
    for (const QCPRange r : {QCPRange(std::exp2(-0.5), std::exp2(0.5)), QCPRange(std::exp2(15.5), std::exp2(16.5)),
                             QCPRange(0.9, 1.3), QCPRange(1, std::exp2(24)), QCPRange(std::exp2(-3), std::exp2(40))}) {
      QVector<double> ticks, sub;
      QVector<QString> labels;
      t.generate(r, QLocale::c(), 'g', 2, ticks, &sub, &labels);
      QVERIFY2(!ticks.isEmpty(), qPrintable(QStringLiteral("%1..%2").arg(r.lower).arg(r.upper)));
      QCOMPARE(labels.size(), ticks.size());
      QStringList l(labels.begin(), labels.end());
      QCOMPARE(l.removeDuplicates(), 0);
      QVERIFY(ticks.size() <= 6);
      for (double x : ticks) QVERIFY(x >= r.lower * 0.999 && x <= r.upper * 1.001);
    }
    // The loss-scale chart of an FP32 run (scale 1 throughout) shows one "2^0".
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    panel.setHistory(rows(30));
    LivePlot* scale = panel.plot(QStringLiteral("loss_scale"));
    scale->replot(QCustomPlot::rpImmediateRefresh);
    const QVector<QString> shown = scale->yAxis->tickVectorLabels();
    QCOMPARE(shown.count(QStringLiteral("2^0")), 1);
  }

  // BF16 bars: BF16's range is named in the chart's info row, not in a banner over the bars, and
  // FP16's bands (not BF16's limits) are not shaded; FP16 bars get the bands back.
  void bf16HistogramNamesItsRangeAboveTheBars() {
    HistogramPlot h(QStringLiteral("D"), Qt::red);
    h.resize(600, 300);
    h.show();
    QVERIFY(QTest::qWaitForWindowExposed(&h));
    std::vector<float> counts(ew::kHistBins, 0.0f);
    counts[-30 - ew::kHistMinExp] = 50;  // below FP16's range, where the banner's corner was
    counts[0 - ew::kHistMinExp] = 50;
    h.setHistogram(10, counts, Precision::BF16, 1);
    h.replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(h.infoText().contains(QStringLiteral("2^-126")), qPrintable(h.infoText()));
    // Each line of the info row fits the chart as wide as it is in a 1024 px window (two columns
    // of ~260 px, less the margins), with a long step and a loss scale beside the mode.
    h.setHistogram(1000000, counts, Precision::BF16, 65536);
    const QFontMetrics fm(h.infoFont());
    for (const QString& line : h.infoText().split(QLatin1Char('\n')))
      QVERIFY2(fm.horizontalAdvance(line) <= 255,
               qPrintable(line + QStringLiteral(": %1 px").arg(fm.horizontalAdvance(line))));
    QVERIFY(!h.fp16BandsVisible());
    for (int i = 0; i < h.itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(h.item(i)); t && t->visible())
        QFAIL(qPrintable(QStringLiteral("text over the bars: ") + t->text()));
    h.setHistogram(11, counts, Precision::FP16, 1024);
    QVERIFY(h.fp16BandsVisible());
    QVERIFY(!h.infoText().contains(QStringLiteral("2^-126")));
  }

  // A memory curve that is flat but for float rounding (metrics.csv's 15.1075439 read back
  // beside the live 15.10754394…, as after a resume) is drawn flat, with distinct axis labels.
  void tinySpreadIsDrawnFlatWithDistinctLabels() {
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const double from_csv = 15.1075439, live = static_cast<double>(15.1075439f);
    QVERIFY(from_csv != live);
    std::vector<StepMetrics> all = rows(100);
    for (StepMetrics& m : all) m.memory_mb = m.step <= 50 ? from_csv : live;
    panel.setHistory(std::vector<StepMetrics>(all.begin(), all.begin() + 50));
    panel.appendRows(std::vector<StepMetrics>(all.begin() + 50, all.end()));
    panel.refreshNow();
    LivePlot* perf = panel.plot(QStringLiteral("throughput"));
    perf->replot(QCustomPlot::rpImmediateRefresh);
    const QVector<QString> shown = perf->yAxis2->tickVectorLabels();
    QStringList labels(shown.begin(), shown.end());
    QVERIFY2(labels.size() >= 2, qPrintable(labels.join(QLatin1Char(' '))));
    QCOMPARE(labels.removeDuplicates(), 0);
    const double jump = std::fabs(perf->yAxis2->coordToPixel(from_csv) - perf->yAxis2->coordToPixel(live));
    QVERIFY2(jump < 1, qPrintable(QString::number(jump)));
    QVERIFY(perf->yAxis2->range().contains(from_csv));
  }

  // Right-click > Save as PNG… asks for the size and DPI (as All plots does) and saves at them,
  // not at the chart's on-screen size.
  void contextMenuSaveAsPngAsksForSizeAndDpi() {
    PlotsPanel panel;
    panel.resize(950, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setHistory(rows(100));
    LivePlot* p = panel.plot(QStringLiteral("losses"));
    QVERIFY(p->width() < 1000);
    const QString file = path(QStringLiteral("menu-losses.png"));
    bool menu_seen = false, dialog_seen = false;
    QTimer::singleShot(200, &panel, [&] {
      auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
      QAction* png = nullptr;
      if (menu)
        for (QAction* a : menu->actions())
          if (a->text().startsWith(QStringLiteral("Save as PNG"))) png = a;
      if (!png) return;
      menu_seen = true;
      QTimer::singleShot(200, &panel, [&] {
        auto* d = qobject_cast<QDialog*>(QApplication::activeModalWidget());
        dialog_seen = d && d->objectName() == QStringLiteral("plotSaveDialog");
        if (!d) return;
        if (dialog_seen) {
          d->findChild<QLineEdit*>(QStringLiteral("plotSavePath"))->setText(file);
          d->findChild<QSpinBox*>(QStringLiteral("plotSaveWidth"))->setValue(1600);
          d->findChild<QSpinBox*>(QStringLiteral("plotSaveHeight"))->setValue(1000);
          d->findChild<QSpinBox*>(QStringLiteral("plotSaveDpi"))->setValue(192);
          d->accept();
        } else {
          d->reject();
        }
      });
      QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(png).center());
    });
    QTimer::singleShot(20000, &panel, [] {  // never hang the suite on a menu left open
      if (QWidget* w = QApplication::activePopupWidget()) w->close();
    });
    const QPoint at = p->axisRect()->center();
    QContextMenuEvent menu_event(QContextMenuEvent::Mouse, at, p->mapToGlobal(at));
    QApplication::sendEvent(p, &menu_event);  // returns when the menu has closed
    QTRY_VERIFY(dialog_seen || !QApplication::activeModalWidget());
    QVERIFY(menu_seen);
    QVERIFY(dialog_seen);
    const QImage img(file);
    QCOMPARE(img.size(), QSize(1600, 1000));
    QCOMPARE(qRound(img.dotsPerMeterX() * 0.0254), 192);
  }

  // A chart exported as PNG has the size asked for, not the widget's, and no hover marker in it.
  void plotExportHasChosenSizeWithoutHover() {
    PlotsPanel panel;
    panel.resize(950, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setHistory(rows(200));
    LivePlot* p = panel.plot(QStringLiteral("losses"));
    QVERIFY(p->width() < 1600);
    QVERIFY(p->saveTo(path(QStringLiteral("clean.png")), 1600, 1000));
    // Hover the chart: the tracer appears.
    const QPoint mid = p->axisRect()->center();
    QMouseEvent move(QEvent::MouseMove, QPointF(mid), p->mapToGlobal(QPointF(mid)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(p, &move);
    QVERIFY(p->hoverVisible());
    QVERIFY(p->saveTo(path(QStringLiteral("hovered.png")), 1600, 1000));
    QVERIFY(p->hoverVisible());  // the export does not change what the user sees
    const QImage clean(path(QStringLiteral("clean.png"))), hovered(path(QStringLiteral("hovered.png")));
    QCOMPARE(clean.size(), QSize(1600, 1000));
    QCOMPARE(rgb32(hovered), rgb32(clean));
    // At 192 dpi: the same pixels asked for, DPI recorded.
    QVERIFY(p->saveTo(path(QStringLiteral("print.png")), 1600, 1000, 192));
    const QImage print(path(QStringLiteral("print.png")));
    QCOMPARE(print.size(), QSize(1600, 1000));
    QCOMPARE(std::lround(print.dotsPerMeterX() * 0.0254), 192L);
    // At 144 dpi 1600 px are no whole number of logical pixels: still exactly 1600 x 1000.
    QVERIFY(p->saveTo(path(QStringLiteral("slides.png")), 1600, 1000, 144));
    const QImage slides(path(QStringLiteral("slides.png")));
    QCOMPARE(slides.size(), QSize(1600, 1000));
    QCOMPARE(std::lround(slides.dotsPerMeterX() * 0.0254), 144L);
  }

  // "All plots" as one multi-page PDF (a page per chart) and one grid PNG.
  void allPlotsAsPdfAndGridPng() {
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    panel.setHistory(rows(100, 50, 1));
    const QList<LivePlot*> plots = panel.allPlots();
    QCOMPARE(plots.size(), 10);
    PlotExportSize size;
    size.width = 400;
    size.height = 250;
    QVERIFY(export_plots_grid_png(plots, path(QStringLiteral("grid.png")), 3, size));
    const QImage grid(path(QStringLiteral("grid.png")));
    QCOMPARE(grid.size(), QSize(3 * 400, 4 * 250));
    // Every cell holds a drawn chart (not blank white).
    for (int i = 0; i < plots.size(); ++i) {
      const QImage cell = grid.copy((i % 3) * 400, (i / 3) * 250, 400, 250);
      int dark = 0;
      for (int y = 0; y < cell.height(); y += 2)
        for (int x = 0; x < cell.width(); x += 2) dark += qGray(cell.pixel(x, y)) < 200;
      QVERIFY2(dark > 200, qPrintable(plots[i]->objectName()));
    }
    QVERIFY(export_plots_pdf(plots, path(QStringLiteral("all.pdf")), size));
    QFile pdf(path(QStringLiteral("all.pdf")));
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    const QByteArray bytes = pdf.readAll();
    QVERIFY(bytes.startsWith("%PDF"));
    QCOMPARE(bytes.count("/Type /Page\n") + bytes.count("/Type /Page\r") + bytes.count("/Type /Page "), 10LL);
  }

  // Each replot is an event-loop pass of its own (several charts in one pass, with large
  // overlays, hold the GUI long enough to feel); a history load still draws every chart, one
  // after the other, and live rows keep every time chart updating, none more than 20 times a
  // second.
  void chartsReplotOnePerEventLoopPass() {
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTest::qWait(200);  // the first show's replots
    qint64 passes = 0;
    QTimer pass;  // a 0 ms timer fires once per event-loop pass
    pass.setInterval(0);
    connect(&pass, &QTimer::timeout, &panel, [&] { ++passes; });
    struct Replot {
      const LivePlot* plot;
      qint64 pass;
    };
    std::vector<Replot> seen;
    const QList<LivePlot*> plots = panel.allPlots();
    for (LivePlot* p : plots)
      connect(p, &QCustomPlot::afterReplot, &panel, [&seen, &passes, p] { seen.push_back({p, passes}); });
    auto count = [&](const LivePlot* p, size_t from) {
      return std::count_if(seen.begin() + static_cast<std::ptrdiff_t>(from), seen.end(),
                           [p](const Replot& r) { return r.plot == p; });
    };
    pass.start();
    const std::vector<StepMetrics> all = rows(4000);
    panel.setHistory(std::vector<StepMetrics>(all.begin(), all.begin() + 2000));
    // The axes follow the history at once; every chart is drawn soon after, one per pass.
    QCOMPARE(panel.plot(QStringLiteral("losses"))->xAxis->range().upper >= 2000, true);
    QTRY_VERIFY_WITH_TIMEOUT(
        std::all_of(plots.begin(), plots.end(), [&](const LivePlot* p) { return count(p, 0) > 0; }), 3000);
    // Live rows: one every 5 ms for 1.5 s.
    const size_t live_from = seen.size();
    size_t next = 2000;
    QTimer feed;
    connect(&feed, &QTimer::timeout, &panel, [&] {
      if (next < all.size()) panel.appendRows({all[next++]});
    });
    QElapsedTimer live;
    live.start();
    feed.start(5);
    QTest::qWait(1500);
    feed.stop();
    const qint64 live_ms = live.elapsed();
    QTest::qWait(100);
    pass.stop();
    QVERIFY(next > 2100);
    for (size_t i = 1; i < seen.size(); ++i)
      QVERIFY2(seen[i].pass != seen[i - 1].pass,
               qPrintable(QStringLiteral("%1 and %2 replotted in one pass")
                              .arg(seen[i - 1].plot->objectName(), seen[i].plot->objectName())));
    for (const QString& id : panel.plotIds()) {
      const auto n = count(panel.plot(id), live_from);
      QVERIFY2(n >= 5, qPrintable(QStringLiteral("%1: %2 replots").arg(id).arg(n)));
      QVERIFY2(n <= live_ms / 50 + 3,
               qPrintable(QStringLiteral("%1: %2 replots in %3 ms").arg(id).arg(n).arg(live_ms)));
    }
  }

  // Overlays are thinned once when they are set, keeping each bucket's extremes, and drawn with
  // solid pens (QCustomPlot strokes dashed lines as one slow path): three runs of 100k rows
  // must not make every live replot walk 300k points.
  void overlaysAreThinnedOnceWithSolidPens() {
    PlotsPanel panel;
    panel.resize(1200, 800);
    panel.show();
    panel.setSmoothing(0);
    panel.setHistory(rows(50));
    auto big = std::make_shared<std::vector<StepMetrics>>(rows(100000));
    (*big)[77777].loss_d = 9.5;  // one spike: thinning must keep it
    (*big)[33333].loss_d = -4.0;
    auto small = std::make_shared<std::vector<StepMetrics>>(rows(300));
    panel.setOverlays(
        {{QStringLiteral("big"), overlay_color(0), {big}}, {QStringLiteral("small"), overlay_color(1), {small}}});
    LivePlot* losses = panel.plot(QStringLiteral("losses"));
    const QCPGraph* g = losses->series(QStringLiteral("big · loss D"));
    QVERIFY(g);
    QVERIFY2(g->data()->size() <= 4000 && g->data()->size() >= 2000, qPrintable(QString::number(g->data()->size())));
    double lo = INFINITY, hi = -INFINITY;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
      lo = std::min(lo, it->value);
      hi = std::max(hi, it->value);
    }
    QCOMPARE(hi, 9.5);
    QCOMPARE(lo, -4.0);
    QCOMPARE(value_at(g, 77778), 9.5);  // at its own step
    // A short run is drawn whole, and the live run keeps every point.
    QCOMPARE(losses->series(QStringLiteral("small · loss D"))->data()->size(), 300);
    QCOMPARE(losses->pointCount(QStringLiteral("loss D (raw)")), 50);
    for (LivePlot* p : panel.allPlots())
      for (int i = 0; i < p->graphCount(); ++i)
        if (p->graph(i)->name().startsWith(QStringLiteral("big")) ||
            p->graph(i)->name().startsWith(QStringLiteral("small")))
          QVERIFY2(p->graph(i)->pen().style() == Qt::SolidLine, qPrintable(p->graph(i)->name()));
    // The D(x) chart's two curves of one run stay apart by shade.
    LivePlot* dout = panel.plot(QStringLiteral("d_outputs"));
    QVERIFY(dout->series(QStringLiteral("big · D(x)"))->pen().color() !=
            dout->series(QStringLiteral("big · D(G(z))"))->pen().color());
  }

  // The mouse hint above the charts is never cut off: the whole wording in a wide window, a
  // shorter one that fits in a 1024 px window with both docks open, the whole in its tooltip.
  void chartsMouseHintFitsEveryWindow() {
    MainWindow w(no_settings());
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* hint = w.plots()->findChild<QLabel*>(QStringLiteral("chartsMouseHint"));
    QVERIFY(hint);
    QTest::qWait(200);
    QString why;
    QVERIFY2(text_fits(hint, &why), qPrintable(why));
    QVERIFY2(hint->text().contains(QStringLiteral("double-click")), qPrintable(hint->text()));
    w.resize(1024, 700);
    QTest::qWait(300);
    QVERIFY2(!hint->text().isEmpty(), "no hint at 1024 px");
    QVERIFY2(text_fits(hint, &why), qPrintable(why));
    QVERIFY(hint->toolTip().contains(QStringLiteral("double-click")));
  }

  // Per-chart log/linear, x = step or wall time on every chart, a linked crosshair that exports
  // leave out.
  void plotAxesWallTimeLogAndCrosshair() {
    PlotsPanel panel;
    panel.resize(1200, 900);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setHistory(rows(100, 50, 1));
    for (const QString& id : panel.plotIds()) QVERIFY2(panel.plot(id)->logToggleAllowed(), qPrintable(id));
    LivePlot* losses = panel.plot(QStringLiteral("losses"));
    const QCPGraph* d = losses->series(QStringLiteral("loss D (raw)"));
    QVERIFY(d);
    QCOMPARE((d->data()->constEnd() - 1)->key, 100.0);
    panel.setWallTime(true);
    QCOMPARE(d->data()->size(), 100);
    QVERIFY(std::fabs((d->data()->constEnd() - 1)->key - 10.0) < 1e-9);  // time_s of step 100
    QCOMPARE(losses->xAxis->label(), QStringLiteral("wall time (s)"));
    QCOMPARE(losses->verticalMarkerCount(), 1);
    QVERIFY(losses->hoverTextAt(5.0).startsWith(QStringLiteral("t = 5.0 s")));
    panel.setWallTime(false);
    QCOMPARE((d->data()->constEnd() - 1)->key, 100.0);
    QCOMPARE(losses->xAxis->label(), QStringLiteral("step"));

    // Log y on a linear chart and back, from the same switch the context menu uses.
    LivePlot* dout = panel.plot(QStringLiteral("d_outputs"));
    dout->setLogY(10);
    QCOMPARE(dout->yAxis->scaleType(), QCPAxis::stLogarithmic);
    dout->setLogY(0);
    QCOMPARE(dout->yAxis->scaleType(), QCPAxis::stLinear);

    // Crosshair: hovering one chart marks that x on all.
    panel.setCrosshair(true);
    panel.refreshNow();
    losses->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(losses->saveTo(path(QStringLiteral("nocross.png")), 800, 500));
    const QPoint mid = losses->axisRect()->center();
    QMouseEvent move(QEvent::MouseMove, QPointF(mid), losses->mapToGlobal(QPointF(mid)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(losses, &move);
    const double key = losses->xAxis->pixelToCoord(mid.x());
    for (const QString& id : panel.plotIds())
      QVERIFY2(std::fabs(panel.plot(id)->crosshair() - key) < 1e-9, qPrintable(id));
    QVERIFY(losses->saveTo(path(QStringLiteral("cross.png")), 800, 500));
    QCOMPARE(rgb32(QImage(path(QStringLiteral("cross.png")))), rgb32(QImage(path(QStringLiteral("nocross.png")))));
    panel.setCrosshair(false);
    QVERIFY(std::isnan(panel.plot(QStringLiteral("fd"))->crosshair()));
  }

 private:
  static QImage rgb32(const QImage& i) { return i.convertToFormat(QImage::Format_RGB32); }
};

QTEST_MAIN(TestPlots)
#include "test_plots.moc"
