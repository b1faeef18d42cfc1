// Compare (views/compare_view): FP32 and an AMP mode trained from one seed, the table and its
// largest-batch search, the comparison as the current run, and the summary numbers of the table.
#include <atomic>
#include <cmath>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QtTest>

#include "core/run/compare.h"
#include "core/run/run_folder.h"
#include "core/run/run_summary.h"
#include "tests/ui/ui_test_support.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/run_controller.h"
#include "ui/settings/config_panel.h"
#include "ui/views/compare_view.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestCompare : public UiTestCase {
  Q_OBJECT

 private slots:
  // Compare: FP32 then FP16 from the same seed; a table with two rows and overlaid curves.
  void compareProducesTableWithTwoRows() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs4")), 1000000));
    w.compareView()->setAmpMode(Precision::FP16);
    w.compareView()->setSteps(30);
    QSignalSpy done(&w, &MainWindow::comparisonDone);
    QVERIFY(w.runComparison());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    CompareView* cv = w.compareView();
    QCOMPARE(cv->tableRows(), 2);
    QCOMPARE(cv->cell(0, QStringLiteral("Run")), QStringLiteral("FP32"));
    QCOMPARE(cv->cell(1, QStringLiteral("Run")), QStringLiteral("FP16 AMP"));
    // On the CPU the verdict says whether this CPU computes FP16 faster at all (it does not).
    QVERIFY2(cv->statusText().contains(QStringLiteral("fp16 on this CPU: emulated")), qPrintable(cv->statusText()));
    QCOMPARE(cv->cell(0, QStringLiteral("Steps")), QStringLiteral("30"));
    QCOMPARE(cv->cell(1, QStringLiteral("Steps")), QStringLiteral("30"));
    QVERIFY(cv->cell(1, QStringLiteral("Speed-up")).endsWith(QStringLiteral("×")));
    QVERIFY(cv->cell(0, QStringLiteral("Peak memory")).contains(QStringLiteral("MiB")));
    QCOMPARE(cv->summary(0).skipped_d + cv->summary(0).skipped_g, 0);  // FP32 never overflows
    QVERIFY(cv->summary(1).skipped_d + cv->summary(1).skipped_g > 0);  // FP16 at 2^16 does, early
    QCOMPARE(cv->cell(1, QStringLiteral("Overflows D/G")),
             QStringLiteral("%1 / %2").arg(cv->summary(1).skipped_d).arg(cv->summary(1).skipped_g));
    LivePlot* p = cv->plot(QStringLiteral("loss_d"));
    QCOMPARE(p->pointCount(0), 30);
    QCOMPARE(p->pointCount(1), 30);
    // Same seed and data: the first step's D(x) agrees closely between the two runs' logs.
    const QString f32 = cv->cell(0, QStringLiteral("Folder")), f16 = cv->cell(1, QStringLiteral("Folder"));
    QVERIFY(QFile::exists(f32 + QStringLiteral("/metrics.csv")) && QFile::exists(f16 + QStringLiteral("/metrics.csv")));
    QVERIFY(f32 != f16);
    const auto a = RunFolder(f32.toStdString()).read_metrics(), b = RunFolder(f16.toStdString()).read_metrics();
    QCOMPARE(a.size(), size_t{30});
    QCOMPARE(b.size(), size_t{30});
    QVERIFY(std::fabs(a[0].d_real - b[0].d_real) < 0.02);
  }

  // Compare with Largest batch ticked and a small CPU budget: both rows get the cell,
  // equal to the core search on the same settings, progress reaches the view and the status bar,
  // and the verdict names the budget and the ratio.
  void compareShowsTheLargestBatch() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-maxbatch")), 1000000);
    c.channels = 1;
    c.width = 4;
    c.batch = 4;
    c.memory_budget_mib = 16;
    w.configPanel()->setConfig(c);
    QCOMPARE(w.configPanel()->config().memory_budget_mib, 16);
    CompareView* cv = w.compareView();
    cv->setAmpMode(Precision::FP16);
    cv->setSteps(4);
    cv->setMaxBatch(true);
    QSignalSpy progress(w.worker(), &TrainingWorker::workProgress);
    QSignalSpy done(&w, &MainWindow::comparisonDone);
    QVERIFY(w.runComparison());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(cv->tableRows(), 2);
    RunConfig base = w.configPanel()->config();
    const MaxBatchResult r = compare_max_batch(base, Precision::FP16, 1, nullptr, nullptr);
    QVERIFY(r.fits(Precision::FP32) >= 2);
    QVERIFY(r.fits(Precision::FP16) > r.fits(Precision::FP32));
    QCOMPARE(cv->cell(0, QStringLiteral("Largest batch")), QStringLiteral("%1 (1.00×)").arg(r.fits(Precision::FP32)));
    QCOMPARE(cv->cell(1, QStringLiteral("Largest batch")),
             QStringLiteral("%1 (%2×)").arg(r.fits(Precision::FP16)).arg(r.ratio(Precision::FP16), 0, 'f', 2));
    const QString line = QString::fromStdString(max_batch_ratio_line(r, Precision::FP16));
    QVERIFY2(cv->statusText().contains(line + QStringLiteral(" within 16 MiB (memory budget)")),
             qPrintable(cv->statusText()));
    QVERIFY2(cv->statusText().contains(QStringLiteral("the speed of FP32")), qPrintable(cv->statusText()));
    int measured = 0;
    for (const QList<QVariant>& a : progress)
      measured += a.at(0).toString().startsWith(QStringLiteral("largest batch: "));
    QVERIFY2(measured >= 6, qPrintable(QString::number(measured)));  // two probes and a check per precision
    QVERIFY(cv->tableAsText().contains(QStringLiteral("\tLargest batch\t")));
    // The AMP run's generator still answers Sample now (its session made way for the search).
    QVERIFY(!sample_now(w).isNull());
    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) {
      w.tabs()->setCurrentWidget(cv);
      for (const QSize& size : {QSize(1600, 1000), QSize(1280, 800), QSize(1024, 700)}) {
        w.resize(size);
        QTest::qWait(200);
        w.grab().save(shots + QStringLiteral("/compare-largest-batch-%1x%2.png").arg(size.width()).arg(size.height()));
      }
    }
  }

  // The search stops at Stop (the two runs' rows stay; the cells say nothing was found), and a
  // budget below the setting's range is refused before anything trains.
  void compareLargestBatchStopsAndRefusesBadBudget() {
    MainWindow w(no_settings());
    QList<UiError> errors;
    w.setErrorPresenter([&](const UiError& e) { errors << e; });
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-maxbatch-stop")), 1000000);
    c.channels = 1;
    c.width = 4;
    c.batch = 4;
    c.memory_budget_mib = 8;
    w.configPanel()->setConfig(c);
    CompareView* cv = w.compareView();
    cv->setSteps(4);
    cv->setMaxBatch(true);
    QVERIFY(!w.runComparison());
    QVERIFY(!errors.isEmpty());
    QVERIFY2(errors.back().text().contains(QStringLiteral("Memory budget (MiB): 8 is outside the allowed range")),
             qPrintable(errors.back().text()));
    QVERIFY(!QDir(path(QStringLiteral("runs-maxbatch-stop"))).exists());
    errors.clear();

    c.memory_budget_mib = 4096;
    w.configPanel()->setConfig(c);
    // Stop as the first measurement reports, in the worker's thread (a direct connection): a
    // queued Stop could arrive after a fast host had finished the FP32 search.
    std::atomic<bool> stopped{false};
    connect(
        w.worker(), &TrainingWorker::workProgress, w.worker(),
        [&](const QString& what, int, int) {
          if (!stopped && what.startsWith(QStringLiteral("largest batch: "))) {
            stopped = true;
            w.worker()->requestStop();
          }
        },
        Qt::DirectConnection);
    QSignalSpy done(&w, &MainWindow::comparisonDone);
    QVERIFY(w.runComparison());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QVERIFY(stopped);
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.value(0).text()));
    QCOMPARE(cv->tableRows(), 2);
    QCOMPARE(cv->cell(0, QStringLiteral("Largest batch")), QStringLiteral("–"));
    QCOMPARE(cv->cell(1, QStringLiteral("Largest batch")), QStringLiteral("–"));
    QVERIFY2(cv->statusText().contains(QStringLiteral("the largest-batch search was stopped")),
             qPrintable(cv->statusText()));
  }

  // The verdict (speed, this CPU's half support, the largest batch) is read in full: wrapped in
  // the status line at 1600 and at 1024 px, not clipped by the scroll area, its tooltip, the last
  // lines of Copy table, and verdict.txt beside compare.tsv in the comparison's folder.
  void compareVerdictIsReadableCopiedAndWritten() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.resize(1600, 1000);
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-verdict")), 1000000);
    c.channels = 1;
    c.width = 4;
    c.batch = 4;
    c.memory_budget_mib = 16;
    w.configPanel()->setConfig(c);
    CompareView* cv = w.compareView();
    cv->setAmpMode(Precision::FP16);
    cv->setSteps(4);
    cv->setMaxBatch(true);
    QSignalSpy done(&w, &MainWindow::comparisonDone);
    QVERIFY(w.runComparison());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const QString verdict = cv->verdict();
    const QStringList sentences = verdict.split(QLatin1Char('\n'));
    QCOMPARE(sentences.size(), 3);  // speed, fp16 on this CPU, the largest batch
    QVERIFY2(sentences[0].contains(QStringLiteral("the speed of FP32")), qPrintable(verdict));
    QVERIFY2(sentences[1].contains(QStringLiteral("fp16 on this CPU: ")), qPrintable(verdict));
    QVERIFY2(sentences[2].contains(QStringLiteral("within 16 MiB (memory budget)")), qPrintable(verdict));
    QLabel* label = cv->statusLabel();
    QCOMPARE(label->toolTip(), verdict);
    for (const QSize size : {QSize(1600, 1000), QSize(1024, 700)}) {
      w.resize(size);
      QTRY_COMPARE(w.size(), size);
      QTRY_VERIFY(label->height() >= label->heightForWidth(label->width()));  // every wrapped line shown
      QVERIFY(label->wordWrap());
      // Nothing to the right of the window's edge or under the scroll area's frame.
      QCOMPARE(label->visibleRegion().boundingRect(), label->rect());
      const QFontMetrics fm(label->font());
      for (const QString& word : label->text().split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts))
        QVERIFY2(fm.horizontalAdvance(word) <= label->contentsRect().width(), qPrintable(word));
    }
    const QStringList copied = cv->tableAsText().trimmed().split(QLatin1Char('\n'));
    QCOMPARE(copied.mid(copied.size() - 3), sentences);
    const QString root = QFileInfo(cv->cell(0, QStringLiteral("Folder"))).absolutePath();
    QCOMPARE(QString::fromUtf8(file_bytes(root + QStringLiteral("/verdict.txt"))).trimmed(), verdict);
    QCOMPARE(count_rows(root + QStringLiteral("/compare.tsv")), 2);
  }

  // After Compare, the Live plots, title, Samples dock, exports and Sample now all refer to the
  // comparison's (AMP) run, not to the run trained before it.
  void compareBecomesTheCurrentRun() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs-cmpcur")), 12));
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const QString old = w.currentRunDir();
    QVERIFY(w.windowTitle().contains(QFileInfo(old).fileName()));

    w.compareView()->setAmpMode(Precision::FP16);
    w.compareView()->setSteps(20);
    QSignalSpy done(&w, &MainWindow::comparisonDone);
    QVERIFY(w.runComparison());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const QString amp = w.compareView()->cell(1, QStringLiteral("Folder"));
    QVERIFY(QFile::exists(amp + QStringLiteral("/metrics.csv")));
    QVERIFY2(RunController::samePath(w.currentRunDir(), amp), qPrintable(w.currentRunDir()));
    QVERIFY2(!w.windowTitle().contains(QFileInfo(old).fileName()), qPrintable(w.windowTitle()));
    QVERIFY2(w.windowTitle().contains(QFileInfo(QFileInfo(amp).path()).fileName()), qPrintable(w.windowTitle()));
    // Live plots: the AMP run's 20 FP16 rows, not the earlier run's 12 FP32 ones.
    QCOMPARE(w.plots()->rows().size(), size_t{20});
    for (const StepMetrics& m : w.plots()->rows()) QVERIFY(m.precision == Precision::FP16);
    // Samples dock: the AMP run's grids only; the one shown is its last file.
    QCOMPARE(w.samples()->count(), 2);
    QCOMPARE(w.samples()->currentStep(), int64_t{20});
    const QImage last(amp + QStringLiteral("/samples/step_000020.png"));
    QVERIFY(!last.isNull());
    QCOMPARE(rgb(w.samples()->currentImage()), rgb(last));
    // Ctrl+E proposes the AMP run's folder and writes the grid shown (the AMP run's).
    const QString proposed = w.runs()->gridExportPath(w.samples()->currentStep());
    QCOMPARE(proposed, QDir(amp).filePath(QStringLiteral("grid_step_000020.png")));
    QVERIFY(w.exportGrid(proposed, 1));
    QCOMPARE(rgb(QImage(proposed)), rgb(last));
    // Metrics as CSV: the AMP run's own file.
    QVERIFY(w.exportMetricsCsv(path(QStringLiteral("cmpcur.csv"))));
    QCOMPARE(file_bytes(path(QStringLiteral("cmpcur.csv"))), file_bytes(amp + QStringLiteral("/metrics.csv")));
    // Sample now: the AMP run's generator makes the AMP run's grid.
    const QImage now = sample_now(w);
    QVERIFY(!now.isNull());
    QCOMPARE(rgb(now), rgb(last));
  }

  void runSummary() {
    std::vector<StepMetrics> rows(100);
    for (int i = 0; i < 100; ++i) {
      rows[i].step = i + 1;
      rows[i].images_per_s = i < 5 ? 10 : 1000 + i;  // slow warm-up steps are left out
      rows[i].loss_d = i < 90 ? 5 : 1;
      rows[i].loss_g = 2;
      rows[i].skipped_d = i % 10 == 0;
      rows[i].skipped_g = i == 3;
    }
    rows[49].swd = 12.5;
    const RunSummary s = summarize(rows, 50);
    QCOMPARE(s.steps, int64_t{100});
    QCOMPARE(s.last_n, 10);  // a tenth of the run
    QCOMPARE(s.final_loss_d, 1.0);
    QCOMPARE(s.final_loss_g, 2.0);
    QCOMPARE(s.skipped_d, 10);
    QCOMPARE(s.skipped_g, 1);
    QCOMPARE(s.swd, 12.5);
    QVERIFY(std::isnan(s.fd));
    QVERIFY(s.median_images_per_s > 1000 && s.median_images_per_s < 1100);
    QCOMPARE(median({3, 1, 2}), 2.0);
    QCOMPARE(median({4, 1, 2, 3}), 2.5);
  }
};

QTEST_MAIN(TestCompare)
#include "test_compare.moc"
