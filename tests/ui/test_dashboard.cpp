// Qt Test suite of the studio's dashboard parts: chart defects (switch markers, SWD/FD, log
// ticks, exports), watching a run folder another process writes, and the Runs panel (overlays,
// seed groups, config diff). Offscreen; each test function is its own CTest test.
#include <cmath>

#include <QFile>
#include <QImage>
#include <QImageReader>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "core/train/session.h"
#include "ui/live_plot.h"
#include "ui/plot_export.h"
#include "ui/plots_panel.h"

using namespace ampgan;
using namespace ampgan::ui;

namespace {

// Synthetic rows: steps 1..n, FP32 until `switch_at`, then alternating FP16/FP32 every 2 steps
// for `switches` switches; an evaluation every 10 steps.
std::vector<StepMetrics> rows(int n, int switch_at = 0, int switches = 0) {
  std::vector<StepMetrics> out;
  Precision p = Precision::FP32;
  int done = 0;
  for (int s = 1; s <= n; ++s) {
    if (switch_at > 0 && s >= switch_at && done < switches && (s - switch_at) % 2 == 0) {
      p = p == Precision::FP32 ? Precision::FP16 : Precision::FP32;
      ++done;
    }
    StepMetrics m;
    m.step = s;
    m.precision = p;
    m.loss_d = 1.2 + 0.3 * std::sin(s * 0.3);
    m.loss_g = 0.8 + 0.2 * std::cos(s * 0.2);
    m.d_real = 0.6;
    m.d_fake = 0.4;
    m.grad_norm_d = 0.5 + 0.01 * s;
    m.grad_norm_g = 0.3;
    m.scale_d = m.scale_g = p == Precision::FP32 ? 1.0 : 65536.0;
    m.underflow_d = 0.01;
    m.images_per_s = 100 + s;
    m.memory_mb = 40;
    m.time_s = 0.1 * s;
    if (s % 10 == 0) {
      m.swd = 20.0 / s;    // SWD ×1e3: tens
      m.fd = 4000.0 / s;  // FD: thousands
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace

class TestDashboard : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString path(const QString& name) const { return tmp_.filePath(name); }

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  // Switch labels piled up over the data: now each switch is a one-character glyph above the
  // data area, and its label is hover text.
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
        QCOMPARE(p->verticalMarkerGlyph(i).size(), 1);  // a glyph, not "FP32 → FP16 AMP"
        QVERIFY2(p->verticalMarkerGlyphBottom(i).y() <= top + 0.5, qPrintable(id));  // above the data
      }
      const QString hover = p->hoverTextAt(19.5);
      QVERIFY2(hover.contains(QStringLiteral("FP32 → FP16 AMP")), qPrintable(id + QStringLiteral(": ") + hover));
    }
  }

  // SWD (tens) and FD (thousands) on two autoscaled axes of one chart lay on top of each other:
  // now each has its own chart.
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

  // A narrow log2 axis repeated one label ("2^0 2^0 2^0").
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

  // A chart exported as PNG was the widget's size (317×222) with the hover marker in it.
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

 private:
  static QImage rgb32(const QImage& i) { return i.convertToFormat(QImage::Format_RGB32); }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
