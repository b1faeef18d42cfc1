// Qt Test suite of the studio's dashboard parts: chart defects (switch markers, SWD/FD, log
// ticks, exports), watching a run folder another process writes, and the Runs panel (overlays,
// seed groups, config diff). Offscreen; each test function is its own CTest test.
#include <algorithm>
#include <cmath>

#include <QFile>
#include <QImage>
#include <QImageReader>
#include <QAction>
#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QProcess>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "core/backend/elementwise.h"
#include "core/run/histograms_log.h"
#include "core/run/run_folder.h"
#include "core/run/run_summary.h"
#include "core/run/session.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/run_branch.h"
#include "ui/runs/run_controller.h"
#include "ui/runs/run_index.h"
#include "ui/runs/run_watcher.h"
#include "ui/runs/runs_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/views/event_log.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"
#include "ui/widgets/plot_export.h"
#include "ui/window/main_window.h"
#include "ui/window/status_progress.h"

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

constexpr int kTimeout = 90000;  // ms; a loaded 2-core CI machine is slow, not broken

MainWindow::Options no_settings() {
  MainWindow::Options o;
  o.restore_settings = false;
  o.save_settings = false;
  return o;
}

int csv_rows(const QString& csv) {
  QFile f(csv);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  return static_cast<int>(f.readAll().trimmed().split('\n').size()) - 1;  // minus the header
}

// Every file under dir with its bytes' hash: a folder left exactly as it was compares equal.
QMap<QString, QByteArray> contents_under(const QString& dir) {
  QMap<QString, QByteArray> out;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString f = it.next();
    QFile file(f);
    if (file.open(QIODevice::ReadOnly)) out.insert(f, QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha1));
  }
  return out;
}

QStringList files_under(const QString& dir) {
  QStringList out;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) out << it.next();
  out.sort();
  return out;
}

// A finished run written by the engine alone (as the CLI would).
void engine_run(const QString& dir, int64_t steps, uint64_t seed, float lr_g, int checkpoint_every = 0) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 256;
  c.res = 32;
  c.width = 8;
  c.batch = 8;
  c.steps = steps;
  c.precision = Precision::FP32;
  c.backend = "cpu";
  c.sample_every = 10;
  c.checkpoint_every = checkpoint_every;
  c.seed = seed;
  c.lr_g = lr_g;
  c.out_dir = dir.toStdString();
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
}

double value_at(const QCPGraph* g, double key) {
  auto it = g->data()->findBegin(key, false);
  return it != g->data()->constEnd() && it->key == key ? it->value : NAN;
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

  // File > Watch run folder: a run that another process (the CLI) writes is followed live, its
  // curves grow while it trains, the training controls stay off, nothing is written into it, and
  // when the writer ends the window says so and holds every row of metrics.csv.
  void watchFollowsARunAnotherProcessWrites() {
    const QString dir = path(QStringLiteral("watched"));
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    w.watcher()->setIntervalMs(100);
    w.watchRun(dir);  // before the folder exists: the watcher waits for it
    QVERIFY(w.watching());
    QCOMPARE(w.currentRunDir(), QFileInfo(dir).absoluteFilePath());
    QProcess cli;
    cli.setProgram(QStringLiteral(AMPGAN_CLI_PATH));
    cli.setArguments({QStringLiteral("train"), QStringLiteral("--dataset"), QStringLiteral("synthetic"),
                      QStringLiteral("--synthetic-count"), QStringLiteral("256"), QStringLiteral("--width"),
                      QStringLiteral("8"), QStringLiteral("--batch"), QStringLiteral("8"), QStringLiteral("--steps"),
                      QStringLiteral("100000"), QStringLiteral("--backend"), QStringLiteral("cpu"),
                      QStringLiteral("--sample-every"), QStringLiteral("10"), QStringLiteral("--checkpoint-every"),
                      QStringLiteral("0"), QStringLiteral("--out"), dir, QStringLiteral("--quiet")});
    cli.setProcessChannelMode(QProcess::ForwardedChannels);
    cli.start();
    QVERIFY(cli.waitForStarted());
    LivePlot* losses = w.plots()->plot(QStringLiteral("losses"));
    QTRY_VERIFY_WITH_TIMEOUT(losses->pointCount(QStringLiteral("loss D")) >= 20, kTimeout);
    // Live: it keeps growing while the other process trains.
    const int seen = losses->pointCount(QStringLiteral("loss D"));
    QTRY_VERIFY_WITH_TIMEOUT(losses->pointCount(QStringLiteral("loss D")) >= seen + 20, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(w.samples()->count() >= 2, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.watcher()->writer().isEmpty(), kTimeout);
    QVERIFY2(w.statusText().contains(QStringLiteral("watching live")), qPrintable(w.statusText()));
    QCOMPARE(w.configPanel()->config().width, 8);  // the watched run's settings are shown
    // Read-only: nothing that trains or writes is offered.
    for (const char* a : {"actionStart", "actionResume", "actionCompare", "actionCheckpoint", "actionStep",
                          "actionExportSamples", "actionPrecision3"})
      QVERIFY2(!w.action(QString::fromLatin1(a))->isEnabled(), a);
    QVERIFY(!w.configPanel()->isEnabled());
    QVERIFY(w.action(QStringLiteral("actionStopWatching"))->isEnabled());
    QVERIFY(!w.startTraining());
    // The export dialogs propose places outside the watched folder.
    QVERIFY(!w.runs()->gridExportPath(1).startsWith(dir));
    QVERIFY(!w.runs()->metricsExportPath().startsWith(dir));

    cli.terminate();  // SIGTERM: the CLI stops after the step and saves
    QVERIFY(cli.waitForFinished(kTimeout));
    QTRY_VERIFY_WITH_TIMEOUT(w.watcher()->writer().isEmpty(), kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(w.statusText().contains(QStringLiteral("no writer")), kTimeout);
    const int rows_on_disk = csv_rows(QDir(dir).filePath(QStringLiteral("metrics.csv")));
    QVERIFY(rows_on_disk > seen);
    QTRY_COMPARE_WITH_TIMEOUT(static_cast<int>(w.plots()->rows().size()), rows_on_disk, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(w.eventLog()->rowCount() > 0, kTimeout);
    // The CLI's histograms.csv (every 25 steps by default) reaches the histogram charts too.
    QTRY_COMPARE_WITH_TIMEOUT(w.plots()->histogramSteps(), rows_on_disk / 25, kTimeout);
    QVERIFY(w.plots()->histogram('G')->hasData() && w.plots()->histogram('D')->hasData());
    QCOMPARE(w.plots()->histogram('G')->step(), int64_t{rows_on_disk / 25 * 25});
    // The studio wrote nothing there: the folder is what the CLI left, byte for byte.
    const QStringList before = files_under(dir);
    QTest::qWait(500);
    QCOMPARE(files_under(dir), before);
    QVERIFY(shown.isEmpty());
    w.stopWatching();
    QVERIFY(!w.watching());
    QVERIFY(w.action(QStringLiteral("actionStart"))->isEnabled());
    QVERIFY(w.configPanel()->isEnabled());
  }

  // An opened run shows the gradient histograms its folder stores (histograms.csv), over time:
  // the newest at first, any stored step on the Histograms slider.
  void openedRunShowsItsHistogramsOverTime() {
    const QString dir = path(QStringLiteral("hist-run"));
    {
      RunConfig c;
      c.dataset = "synthetic";
      c.synthetic_count = 256;
      c.res = 32;
      c.width = 8;
      c.batch = 8;
      c.steps = 30;
      c.backend = "cpu";
      c.sample_every = 0;
      c.checkpoint_every = 0;
      c.hist_every = 5;
      c.precision = Precision::FP16;
      c.out_dir = dir.toStdString();
      auto s = Session::create(c);
      s->run();
      s->finish("finished");
    }
    const std::vector<HistogramRow> file = HistogramsLog::read((dir + QStringLiteral("/histograms.csv")).toStdString());
    QCOMPARE(static_cast<int>(file.size()), 12);  // steps 5..30, G and D
    MainWindow w(no_settings());
    w.show();
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    PlotsPanel* p = w.plots();
    QCOMPARE(p->histogramSteps(), 6);
    HistogramPlot* g = p->histogram('G');
    QCOMPARE(g->step(), int64_t{30});
    QVERIFY(p->histogramSlider()->isVisibleTo(p));
    // Step 10 on the slider: both charts show the file's step-10 counts.
    p->histogramSlider()->setValue(1);
    QCOMPARE(g->step(), int64_t{10});
    QCOMPARE(p->histogram('D')->step(), int64_t{10});
    double total = 0;
    for (float n : file[2].counts) total += n;
    QCOMPARE(file[2].step, int64_t{10});
    QCOMPARE(file[2].network, 'G');
    for (int bin = 0; bin < ew::kHistBins; ++bin) QVERIFY(std::fabs(g->fraction(bin) - file[2].counts[bin] / total) < 1e-9);
    QVERIFY(p->showHistogramStep(26));  // the nearest stored: 25
    QCOMPARE(g->step(), int64_t{25});
    // Another run (or a new one) starts empty.
    p->clear();
    QCOMPARE(p->histogramSteps(), 0);
    QVERIFY(!g->hasData());
    QVERIFY(!p->histogramSlider()->isVisibleTo(p));
  }

  // A watched metrics.csv that gets shorter (a resume from an earlier checkpoint rewrote it)
  // replaces the history; a half-written last line waits for its end.
  void watchedFolderThatIsRewrittenStartsOver() {
    const QString dir = path(QStringLiteral("rewritten"));
    QVERIFY(QDir().mkpath(dir));
    const QString csv = QDir(dir).filePath(QStringLiteral("metrics.csv"));
    auto write = [&](const std::vector<StepMetrics>& rs, const QByteArray& tail, bool append) {
      QFile f(csv);
      QVERIFY(f.open(append ? QIODevice::Append : QIODevice::WriteOnly | QIODevice::Truncate));
      if (!append) {
        std::string h;
        for (const std::string& c : StepMetrics::columns()) h += (h.empty() ? "" : ",") + c;
        f.write(QByteArray::fromStdString(h + "\n"));
      }
      for (const StepMetrics& m : rs) f.write(QByteArray::fromStdString(m.csv_row() + "\n"));
      f.write(tail);
    };
    std::vector<StepMetrics> all = rows(50);
    write(std::vector<StepMetrics>(all.begin(), all.begin() + 40), {}, false);
    RunWatcher watcher;
    std::vector<StepMetrics> got;
    int replaced = 0;
    connect(&watcher, &RunWatcher::rowsArrived, this, [&](const std::vector<StepMetrics>& r, bool replace) {
      if (replace) {
        got.clear();
        ++replaced;
      }
      got.insert(got.end(), r.begin(), r.end());
    });
    watcher.start(dir);
    QCOMPARE(static_cast<int>(got.size()), 40);
    // Half a row: not shown until its end arrives.
    const std::string row41 = all[40].csv_row();
    write({}, QByteArray::fromStdString(row41.substr(0, row41.size() / 2)), true);
    watcher.pollNow();
    QCOMPARE(static_cast<int>(got.size()), 40);
    write({}, QByteArray::fromStdString(row41.substr(row41.size() / 2) + "\n"), true);
    watcher.pollNow();
    QCOMPARE(static_cast<int>(got.size()), 41);
    QCOMPARE(got.back().step, int64_t{41});
    QVERIFY(std::fabs(got.back().loss_d - all[40].loss_d) < 1e-5);
    // Rewritten shorter: the history starts over.
    write(std::vector<StepMetrics>(all.begin(), all.begin() + 20), {}, false);
    watcher.pollNow();
    QCOMPARE(replaced, 2);
    QCOMPARE(static_cast<int>(got.size()), 20);
    QCOMPARE(got.back().step, int64_t{20});
  }

  // The Runs tab: three runs in a table with their final scores; ticked, they are drawn over
  // the Live charts in a colour each; "group seeds" turns the two that differ only in the seed
  // into one mean ± sd overlay; the config diff names what differs; two runs' sample grids
  // side by side on one step slider.
  void runsPanelOverlaysThreeRunsAndGroupsTwoSeeds() {
    const QString root = path(QStringLiteral("runs-overlay"));
    engine_run(QDir(root).filePath(QStringLiteral("a-seed1")), 30, 1, 2e-4f);
    engine_run(QDir(root).filePath(QStringLiteral("b-seed2")), 30, 2, 2e-4f);
    engine_run(QDir(root).filePath(QStringLiteral("c-lr")), 30, 1, 5e-4f);
    QVERIFY(QDir().mkpath(QDir(root).filePath(QStringLiteral("not-a-run"))));

    MainWindow w(no_settings());
    w.show();
    RunsPanel* panel = w.runsPanel();
    QSignalSpy scanned(panel, &RunsPanel::scanned);
    panel->setRunsFolder(root);
    QTRY_VERIFY_WITH_TIMEOUT(scanned.count() == 1, kTimeout);
    QCOMPARE(panel->table()->rowCount(), 3);
    const std::vector<RunRecord>& runs = panel->runs();
    for (const RunRecord& r : runs) {
      const std::vector<StepMetrics> m = RunFolder(r.dir.toStdString()).read_metrics();
      QCOMPARE(r.steps, int64_t{30});
      QCOMPARE(r.loss_d, summarize(m).final_loss_d);
      QCOMPARE(r.precision, QStringLiteral("FP32"));
    }
    // Sorting by a number column sorts by value.
    panel->table()->sortItems(4, Qt::AscendingOrder);  // loss D
    QVERIFY(panel->table()->item(0, 4)->data(Qt::DisplayRole).toDouble() <=
            panel->table()->item(2, 4)->data(Qt::DisplayRole).toDouble());

    w.plots()->setSmoothing(0);  // raw values, so the group's mean is checked exactly
    for (const char* n : {"a-seed1", "b-seed2", "c-lr"}) panel->setTicked(QString::fromLatin1(n), true);
    QCOMPARE(w.plots()->overlayCount(), 3);
    LivePlot* losses = w.plots()->plot(QStringLiteral("losses"));
    QSet<QRgb> colours;
    for (const char* n : {"a-seed1", "b-seed2", "c-lr"}) {
      const QCPGraph* g = losses->series(QString::fromLatin1(n) + QStringLiteral(" · loss D"));
      QVERIFY2(g, n);
      QCOMPARE(g->data()->size(), 30);
      colours << g->pen().color().rgb();
    }
    QCOMPARE(colours.size(), 3);
    // Overlays stay when the current run's charts are cleared (a new run starts).
    w.plots()->clear();
    QCOMPARE(losses->series(QStringLiteral("c-lr · loss D"))->data()->size(), 30);

    // Group seeds: a and b differ only in the seed.
    panel->setGroupSeeds(true);
    QCOMPARE(w.plots()->overlayCount(), 2);
    const std::vector<RunOverlay> ov = panel->overlays();
    QCOMPARE(static_cast<int>(ov[0].members.size()), 2);
    QVERIFY2(ov[0].label.contains(QStringLiteral("mean ± sd")), qPrintable(ov[0].label));
    const QString name = ov[0].label + QStringLiteral(" · loss D");
    const QCPGraph* mean = losses->series(name);
    const QCPGraph* lo = losses->series(name + QStringLiteral(" −sd"));
    const QCPGraph* hi = losses->series(name + QStringLiteral(" +sd"));
    QVERIFY(mean && lo && hi);
    const auto ma = RunFolder(QDir(root).filePath(QStringLiteral("a-seed1")).toStdString()).read_metrics();
    const auto mb = RunFolder(QDir(root).filePath(QStringLiteral("b-seed2")).toStdString()).read_metrics();
    QVERIFY(ma[9].loss_d != mb[9].loss_d);  // the seeds did train differently
    const double m = (ma[9].loss_d + mb[9].loss_d) / 2;
    const double sd = std::fabs(ma[9].loss_d - mb[9].loss_d) / std::sqrt(2.0);
    QVERIFY(std::fabs(value_at(mean, 10) - m) < 1e-9);
    QVERIFY(std::fabs(value_at(hi, 10) - (m + sd)) < 1e-9);
    QVERIFY(std::fabs(value_at(lo, 10) - (m - sd)) < 1e-9);
    QVERIFY(losses->series(QStringLiteral("c-lr · loss D")));  // c is alone

    // Config diff of the first two ticked runs (newest first: c, b).
    panel->setTicked(QStringLiteral("a-seed1"), false);
    const std::vector<ConfigDifference> d = panel->tickedDiff();
    QStringList keys;
    for (const ConfigDifference& x : d) keys << x.key;
    QVERIFY2(keys.contains(QStringLiteral("seed")) && keys.contains(QStringLiteral("lr_g")), qPrintable(keys.join(',')));
    QVERIFY(!keys.contains(QStringLiteral("width")));
    const auto same = config_diff(runs[0].config, runs[0].config);
    QVERIFY(same.empty());

    // Side-by-side sample grids at one step.
    panel->setSampleStep(20);
    const QStringList t = panel->tickedNames();
    QCOMPARE(t.size(), 2);
    for (int k = 0; k < 2; ++k) {
      const QImage want(QDir(QDir(root).filePath(t[k])).filePath(QStringLiteral("samples/step_000020.png")));
      QVERIFY(!want.isNull());
      QCOMPARE(panel->sideBySide(k).convertToFormat(QImage::Format_RGB32), want.convertToFormat(QImage::Format_RGB32));
    }
    QVERIFY(panel->sideBySide(0) != panel->sideBySide(1));
  }

  // Per-chart log/linear, x = step or wall time on every chart, a linked crosshair that exports
  // leave out.
  // Overlays are thinned once when they are set, keeping each bucket's extremes, and drawn with
  // solid pens (QCustomPlot strokes dashed lines as one slow path): three runs of 100k rows
  // must not make every live replot walk 300k points.
  // The panel's replot budget per tick put two or three charts' queued replots (and a batch of
  // rows) into one event-loop pass, and a history load queued all ten at once: with three
  // 100k-point overlays such a pass held the GUI 55-65 ms. Now each replot is a pass of its own;
  // a history load still draws every chart at once after the other, and live rows keep every
  // time chart updating, none more than 20 times a second.
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
    QTRY_VERIFY_WITH_TIMEOUT(std::all_of(plots.begin(), plots.end(), [&](const LivePlot* p) { return count(p, 0) > 0; }),
                             3000);
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
      QVERIFY2(n <= live_ms / 50 + 3, qPrintable(QStringLiteral("%1: %2 replots in %3 ms").arg(id).arg(n).arg(live_ms)));
    }
  }

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
    panel.setOverlays({{QStringLiteral("big"), overlay_color(0), {big}}, {QStringLiteral("small"), overlay_color(1), {small}}});
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
        if (p->graph(i)->name().startsWith(QStringLiteral("big")) || p->graph(i)->name().startsWith(QStringLiteral("small")))
          QVERIFY2(p->graph(i)->pen().style() == Qt::SolidLine, qPrintable(p->graph(i)->name()));
    // The D(x) chart's two curves of one run stay apart by shade.
    LivePlot* dout = panel.plot(QStringLiteral("d_outputs"));
    QVERIFY(dout->series(QStringLiteral("big · D(x)"))->pen().color() !=
            dout->series(QStringLiteral("big · D(G(z))"))->pen().color());
  }

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
    for (const QString& id : panel.plotIds()) QVERIFY2(std::fabs(panel.plot(id)->crosshair() - key) < 1e-9, qPrintable(id));
    QVERIFY(losses->saveTo(path(QStringLiteral("cross.png")), 800, 500));
    QCOMPARE(rgb32(QImage(path(QStringLiteral("cross.png")))), rgb32(QImage(path(QStringLiteral("nocross.png")))));
    panel.setCrosshair(false);
    QVERIFY(std::isnan(panel.plot(QStringLiteral("fd"))->crosshair()));
  }

  // Resume into a branch: the run stays byte for byte as it was; the branch has the run's
  // history up to the checkpoint and continues from there.
  void resumeIntoABranchLeavesTheRunAsItIs() {
    const QString run = path(QStringLiteral("branching/base"));
    engine_run(run, 30, 1, 2e-4f, 10);
    const auto before = contents_under(run);
    QVERIFY(before.size() > 5);
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    int asked = 0;
    w.setConfirmer([&](const QString&, const QString&) {
      ++asked;
      return false;
    });
    w.show();
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(run);
    QTRY_VERIFY_WITH_TIMEOUT(opened.count() == 1, kTimeout);
    RunConfig c = w.configPanel()->config();
    c.steps = 40;
    w.configPanel()->setConfig(c);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    const bool resumed = w.resumeRunAsBranch(run, QDir(run).filePath(QStringLiteral("checkpoints/step_000010.safetensors")));
    QVERIFY2(resumed, shown.isEmpty() ? "no error shown" : qPrintable(shown.first().text()));
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, kTimeout);
    QVERIFY2(shown.isEmpty(), shown.isEmpty() ? "" : qPrintable(shown.first().text()));
    QCOMPARE(asked, 0);  // nothing of the run is dropped, so nothing to ask
    const QString branch = finished.first().at(0).toString();
    QCOMPARE(QFileInfo(branch).fileName(), QStringLiteral("base-branch-step10"));
    QCOMPARE(contents_under(run), before);
    const auto base_rows = RunFolder(run.toStdString()).read_metrics();
    const auto branch_rows = RunFolder(branch.toStdString()).read_metrics();
    QCOMPARE(static_cast<int>(branch_rows.size()), 40);
    for (int i = 0; i < 10; ++i) QCOMPARE(branch_rows[i].csv_row(), base_rows[i].csv_row());
    QCOMPARE(branch_rows[10].step, int64_t{11});
    QVERIFY(QFileInfo(QDir(branch).filePath(QStringLiteral("samples/step_000010.png"))).isFile());
  }

  // The quick-tour preset shows the AMP story at once: overflows (skipped steps) within the
  // first steps, the loss scale backing off from 2^24.
  // Resuming into a branch copies the run folder on a thread of its own: the window keeps
  // handling events, the status bar shows the copy's progress, Stop (or the bar's Cancel)
  // cancels it without leaving a half-made branch, and the resume follows a finished copy.
  void branchCopyIsOffTheGuiThreadWithProgressAndCancel() {
    const QString run = path(QStringLiteral("branching/big"));
    engine_run(run, 20, 1, 2e-4f, 10);
    {
      // A long run's sample grids and checkpoints add up: 96 MiB to copy (the copy never decodes).
      QFile big(QDir(run).filePath(QStringLiteral("samples/step_000001.png")));
      QVERIFY(big.open(QIODevice::WriteOnly));
      const QByteArray mib(1 << 20, 'x');
      for (int i = 0; i < 96; ++i) QCOMPARE(big.write(mib), qint64{mib.size()});
    }
    const auto before = contents_under(run);
    const QString ckpt = QDir(run).filePath(QStringLiteral("checkpoints/step_000010.safetensors"));
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(run);
    QTRY_VERIFY_WITH_TIMEOUT(opened.count() == 1, kTimeout);
    QSignalSpy done(w.branchCopy(), &BranchCopy::finished);

    // Cancelled: nothing left behind, the run as it was, the window idle again.
    QVERIFY(w.resumeRunAsBranch(run, ckpt));
    QVERIFY(w.busy());
    QVERIFY(!w.action(QStringLiteral("actionStart"))->isEnabled());
    QVERIFY(w.action(QStringLiteral("actionStop"))->isEnabled());
    w.stopTraining();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kTimeout);
    QVERIFY(done[0][3].toBool());
    QVERIFY(!QFileInfo::exists(run + QStringLiteral("-branch-step10")));
    QCOMPARE(contents_under(run), before);
    QVERIFY(!w.busy());
    QVERIFY(w.action(QStringLiteral("actionStart"))->isEnabled());
    QVERIFY(shown.isEmpty());

    // Finished: progress along the way, the GUI thread free meanwhile, then the resume.
    RunConfig c = w.configPanel()->config();
    c.steps = 22;
    w.configPanel()->setConfig(c);
    QSignalSpy progress(w.branchCopy(), &BranchCopy::progress);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    int ticks_during_copy = 0, bar_shown = 0;
    QTimer tick;
    tick.setInterval(1);
    connect(&tick, &QTimer::timeout, this, [&] {
      if (!w.branchCopy()->running()) return;
      ++ticks_during_copy;
      if (w.statusProgress()->visible()) ++bar_shown;
    });
    tick.start();
    QVERIFY(w.resumeRunAsBranch(run, ckpt));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kTimeout);
    tick.stop();
    const QString branch = done[1][0].toString();
    QVERIFY2(!branch.isEmpty() && !done[1][3].toBool(), qPrintable(done[1][2].toString()));
    QVERIFY2(progress.count() >= 50, qPrintable(QString::number(progress.count())));  // about one a MiB
    QCOMPARE(progress.last()[0].toLongLong(), progress.last()[1].toLongLong());
    QVERIFY2(ticks_during_copy >= 2, qPrintable(QString::number(ticks_during_copy)));
    QVERIFY(bar_shown >= 1);
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, kTimeout);
    QVERIFY2(shown.isEmpty(), shown.isEmpty() ? "" : qPrintable(shown.first().text()));
    QCOMPARE(finished.first().at(0).toString(), branch);
    QCOMPARE(static_cast<int>(RunFolder(branch.toStdString()).read_metrics().size()), 22);
    QCOMPARE(QFileInfo(QDir(branch).filePath(QStringLiteral("samples/step_000001.png"))).size(), qint64{96} << 20);
    QCOMPARE(contents_under(run), before);
  }

  void quickTourPresetShowsOverflowsEarly() {
    MainWindow w(no_settings());
    w.show();
    const QString tour = w.configPanel()->presetNames().filter(QStringLiteral("Quick tour")).value(0);
    QVERIFY(!tour.isEmpty());
    QVERIFY(w.configPanel()->applyPreset(tour));
    RunConfig c = w.configPanel()->config();
    QCOMPARE(c.precision, Precision::FP16);
    QCOMPARE(c.scaler.init_scale, 16777216.0f);
    c.runs_root = path(QStringLiteral("tour-runs")).toStdString();
    w.configPanel()->setConfig(c);
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->rows().size() >= 30, kTimeout);
    w.stopTraining();
    int skipped = 0;
    for (int i = 0; i < 30; ++i) skipped += w.plots()->rows()[i].skipped_d || w.plots()->rows()[i].skipped_g;
    QVERIFY2(skipped >= 3, qPrintable(QString::number(skipped)));
    QVERIFY(w.plots()->rows()[29].scale_d < 16777216.0);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
  }

 private:
  static QImage rgb32(const QImage& i) { return i.convertToFormat(QImage::Format_RGB32); }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
