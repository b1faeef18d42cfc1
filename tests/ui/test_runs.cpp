// Runs folders (runs/): one that another process writes, followed live; one that is rewritten;
// the Runs panel's table, overlays and seed groups; two studios on one runs folder.
#include <cmath>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QStyle>
#include <QTableWidget>
#include <QToolBar>
#include <QtTest>

#include "core/run/run_folder.h"
#include "core/run/run_summary.h"
#include "tests/ui/ui_test_support.h"
#include "ui/plots/histogram_plot.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/run_controller.h"
#include "ui/runs/run_index.h"
#include "ui/runs/run_watcher.h"
#include "ui/runs/runs_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/views/event_log.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestRuns : public UiTestCase {
  Q_OBJECT

 private slots:
  // Two studios training into one runs folder: the second one is warned (and still trains).
  void secondStudioOnOneRunsFolderIsWarned() {
    const QString root = path(QStringLiteral("runs-shared"));
    MainWindow a(no_settings()), b(no_settings());
    for (MainWindow* w : {&a, &b}) {
      w->setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
      RunConfig c = tiny(root, 3);
      // Run folders are named <date-time to the second>-<name>: distinct names, so two runs
      // started within one second do not ask for the same folder.
      c.name = w == &a ? "studio-a" : "studio-b";
      w->configPanel()->setConfig(c);
    }
    auto warned = [](MainWindow& w) {
      for (int i = 0; i < w.eventLog()->rowCount(); ++i)
        if (w.eventLog()->rowText(i).contains(QStringLiteral("another AMP GAN Studio"))) return true;
      return false;
    };
    QSignalSpy fa(&a, &MainWindow::runFinished), fb(&b, &MainWindow::runFinished);
    QVERIFY(a.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(fa.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!a.busy(), kTimeout);
    QVERIFY(!warned(a));
    QVERIFY(b.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(warned(b), kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(fb.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!b.busy(), kTimeout);
    QCOMPARE(QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 2);
    // A second run of the first studio (a second later: a new folder name): no warning.
    QTest::qWait(1100);
    QVERIFY(a.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(fa.count(), 2, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!a.busy(), kTimeout);
    QVERIFY(!warned(a));
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
    cli.setArguments({QStringLiteral("train"),
                      QStringLiteral("--dataset"),
                      QStringLiteral("synthetic"),
                      QStringLiteral("--synthetic-count"),
                      QStringLiteral("256"),
                      QStringLiteral("--width"),
                      QStringLiteral("8"),
                      QStringLiteral("--batch"),
                      QStringLiteral("8"),
                      QStringLiteral("--steps"),
                      QStringLiteral("100000"),
                      QStringLiteral("--backend"),
                      QStringLiteral("cpu"),
                      QStringLiteral("--sample-every"),
                      QStringLiteral("10"),
                      QStringLiteral("--checkpoint-every"),
                      QStringLiteral("0"),
                      QStringLiteral("--out"),
                      dir,
                      QStringLiteral("--quiet")});
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

  // Watching shows the watched run's settings, but Stop (which cannot stop another process) is
  // off and promises no checkpoint, the user's own settings are what the window saves, and
  // Stop watching shows them again.
  void watchingLeavesStopAndTheUsersSettingsAlone() {
    const QString dir = path(QStringLiteral("watched-settings"));
    engine_run(dir, tiny(path(QStringLiteral("unused")), 20));
    RunConfig mine = tiny(path(QStringLiteral("runs-mine")), 333);
    mine.width = 16;
    mine.batch = 12;
    mine.precision = Precision::BF16;
    auto watch = [&](MainWindow& w) {
      w.configPanel()->setConfig(mine);
      w.show();
      w.watcher()->setIntervalMs(100);
      w.watchRun(dir);
      QTRY_COMPARE_WITH_TIMEOUT(w.configPanel()->config().steps, int64_t{20}, kTimeout);  // the watched run's
    };
    {
      MainWindow::Options o;
      o.restore_settings = false;  // reads none, writes on close
      MainWindow w(o);
      watch(w);
      QAction* stop = w.action(QStringLiteral("actionStop"));
      QVERIFY(!stop->isEnabled());
      QVERIFY2(!stop->toolTip().contains(QStringLiteral("checkpoint")), qPrintable(stop->toolTip()));
      auto* bar = w.findChild<QToolBar*>(QStringLiteral("trainingToolbar"));
      QVERIFY(bar && bar->widgetForAction(stop) && !bar->widgetForAction(stop)->isEnabled());
      QVERIFY(w.close());
    }
    {
      MainWindow::Options o;
      o.save_settings = false;
      MainWindow w(o);  // the next start reads the user's settings, not the watched run's
      const RunConfig r = w.configPanel()->config();
      QCOMPARE(r.steps, int64_t{333});
      QCOMPARE(r.width, 16);
      QCOMPARE(r.batch, 12);
      QVERIFY(r.precision == Precision::BF16);
    }
    MainWindow w(no_settings());
    watch(w);
    w.stopWatching();
    QCOMPARE(w.configPanel()->config().steps, int64_t{333});
    QCOMPARE(w.configPanel()->config().batch, 12);
    QCOMPARE(w.findChild<QComboBox*>(QStringLiteral("toolbarPrecision"))->currentText(), QStringLiteral("BF16 AMP"));
  }

  // Three runs named as the studio names them, at 1024x700: the Run column shows each name in
  // full, and ticked, each run's legend entry names what tells it apart, is drawn in full beside
  // the chart's own entries (none covering another), in a colour far from the chart's own.
  void runsTableAndOverlayLegendsAreReadable() {
    const QString root = path(QStringLiteral("runs-named"));
    const QStringList names = {QStringLiteral("20261202-043145-synthetic-fp32"),
                               QStringLiteral("20261202-043912-synthetic-fp16"),
                               QStringLiteral("20261202-044501-synthetic-bf16")};
    const Precision precisions[] = {Precision::FP32, Precision::FP16, Precision::BF16};
    for (int i = 0; i < 3; ++i) {
      RunConfig c = tiny(path(QStringLiteral("unused")), 20);
      c.precision = precisions[i];
      engine_run(QDir(root).filePath(names[i]), c);
    }
    MainWindow w(no_settings());
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    RunsPanel* panel = w.runsPanel();
    QSignalSpy scanned(panel, &RunsPanel::scanned);
    panel->setRunsFolder(root);
    QTRY_VERIFY_WITH_TIMEOUT(scanned.count() == 1, kTimeout);
    w.tabs()->setCurrentWidget(panel);
    QTableWidget* table = panel->table();
    QCOMPARE(table->rowCount(), 3);
    QApplication::processEvents();
    const int check = table->style()->pixelMetric(QStyle::PM_IndicatorWidth);
    for (int r = 0; r < 3; ++r) {
      QTableWidgetItem* it = table->item(r, 0);
      const int need = table->fontMetrics().horizontalAdvance(it->text()) + check;
      QVERIFY2(table->columnWidth(0) >= need,
               qPrintable(QStringLiteral("%1: %2 < %3").arg(it->text()).arg(table->columnWidth(0)).arg(need)));
    }
    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/runs-table-1024x700.png"));

    for (const QString& n : names) panel->setTicked(n, true);
    QCOMPARE(w.plots()->overlayCount(), 3);
    // The settings diff of the first two is headed by what tells them apart, in full.
    auto* diff = panel->findChild<QTableWidget*>(QStringLiteral("configDiff"));
    QVERIFY(diff);
    QApplication::processEvents();
    for (int c = 1; c <= 2; ++c) {
      const QString head = diff->horizontalHeaderItem(c)->text();
      QVERIFY2(head == QStringLiteral("044501-bf16") || head == QStringLiteral("043912-fp16"), qPrintable(head));
      QVERIFY2(
          diff->horizontalHeader()->sectionSize(c) >= diff->horizontalHeader()->fontMetrics().horizontalAdvance(head),
          qPrintable(head));
    }
    w.tabs()->setCurrentWidget(w.plots());
    LivePlot* dout = w.plots()->plot(QStringLiteral("d_outputs"));
    dout->replot(QCustomPlot::rpImmediateRefresh);
    QStringList entries;
    QList<QRectF> rects;
    for (int i = 0; i < dout->legend->itemCount(); ++i) {
      auto* it = qobject_cast<QCPPlottableLegendItem*>(dout->legend->item(i));
      if (!it || !it->visible()) continue;
      const QString text = it->plottable()->name();
      entries << text;
      const QRectF rect = it->outerRect();
      const int need = QFontMetrics(dout->legend->font()).horizontalAdvance(text) + dout->legend->iconSize().width();
      QVERIFY2(rect.width() >= need, qPrintable(QStringLiteral("%1: %2 < %3").arg(text).arg(rect.width()).arg(need)));
      QVERIFY2(rect.right() <= dout->width() && rect.left() >= 0, qPrintable(text));
      for (const QRectF& o : rects) QVERIFY2(!rect.intersects(o.adjusted(1, 1, -1, -1)), qPrintable(text));
      rects << rect;
    }
    QVERIFY2(entries.contains(QStringLiteral("D(x)")) && entries.contains(QStringLiteral("D(G(z))")),
             qPrintable(entries.join(QStringLiteral(" | "))));
    for (const QString& label :
         {QStringLiteral("043145-fp32"), QStringLiteral("043912-fp16"), QStringLiteral("044501-bf16")}) {
      const QCPGraph* g = dout->series(label + QStringLiteral(" · D(x)"));
      QVERIFY2(g, qPrintable(label + QStringLiteral(" in ") + entries.join(QStringLiteral(" | "))));
      for (const char* own : {"D(x)", "D(G(z))"}) {
        const QColor a = g->pen().color(), b = dout->series(QString::fromLatin1(own))->pen().color();
        const double d = std::hypot(a.red() - b.red(), a.green() - b.green(), a.blue() - b.blue());
        QVERIFY2(d >= 80, qPrintable(QStringLiteral("%1 vs %2: %3").arg(label, QString::fromLatin1(own)).arg(d)));
      }
    }
    if (!shots.isEmpty()) {
      w.resize(1600, 1000);
      QTest::qWait(300);
      w.tabs()->setCurrentWidget(panel);
      QTest::qWait(300);
      w.grab().save(shots + QStringLiteral("/runs-table-1600x1000.png"));
      w.resize(1280, 800);
      QTest::qWait(300);
      w.grab().save(shots + QStringLiteral("/runs-table-1280x800.png"));
      w.resize(1600, 1000);
      QTest::qWait(300);
      w.tabs()->setCurrentWidget(w.plots());
      QTest::qWait(300);
      w.grab().save(shots + QStringLiteral("/overlays-1600x1000.png"));
    }
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
    QVERIFY2(keys.contains(QStringLiteral("seed")) && keys.contains(QStringLiteral("lr_g")),
             qPrintable(keys.join(',')));
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
};

QTEST_MAIN(TestRuns)
#include "test_runs.moc"
