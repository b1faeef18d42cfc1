// A run folder opened, resumed or branched (runs/): its curves, samples and histograms, its own
// generator, the precision shown, an earlier checkpoint, and a branch copied off the GUI thread.
#include <cmath>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QtTest>

#include "core/backend/elementwise.h"
#include "core/run/histograms_log.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "tests/ui/ui_test_support.h"
#include "ui/plots/histogram_plot.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/run_branch.h"
#include "ui/runs/run_controller.h"
#include "ui/settings/config_panel.h"
#include "ui/views/event_log.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"
#include "ui/window/status_progress.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestResume : public UiTestCase {
  Q_OBJECT

 private slots:
  // Open a run folder written by the engine: curves, events, samples; then resume it.
  void openAndResumeRun() {
    const QString dir = path(QStringLiteral("opened-run"));
    {
      RunConfig c = tiny(path(QStringLiteral("unused")), 20);
      c.out_dir = dir.toStdString();
      auto s = Session::create(c);
      s->run();
      s->finish("finished");
    }
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QCOMPARE(w.plots()->rows().size(), size_t{20});
    QCOMPARE(w.plots()->plot(QStringLiteral("losses"))->pointCount(QStringLiteral("loss G")), 20);
    QCOMPARE(w.samples()->count(), 2);  // steps 10 and 20
    QCOMPARE(w.samples()->currentImage().size(), QSize(274, 274));
    w.samples()->showIndex(0);
    QCOMPARE(w.samples()->currentStep(), int64_t{10});
    QVERIFY(w.eventLog()->rowCount() >= 2);
    QCOMPARE(w.configPanel()->config().steps, int64_t{20});
    QVERIFY(w.action(QStringLiteral("actionResume"))->isEnabled());

    // Resume to step 30.
    RunConfig c = w.configPanel()->config();
    c.steps = 30;
    w.configPanel()->setConfig(c);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    w.resumeRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("finished"));
    QCOMPARE(w.plots()->rows().size(), size_t{30});
    QCOMPARE(w.plots()->rows().back().step, int64_t{30});
    QCOMPARE(count_rows(dir + QStringLiteral("/metrics.csv")), 30);
  }

  // After Open run, Sample now and Export single samples use the opened run's generator (loaded
  // from its checkpoint), not the run trained before.
  void openRunSamplesItsOwnGenerator() {
    const QString b = path(QStringLiteral("open-own-b"));
    engine_run(b, tiny(path(QStringLiteral("unused")), 20));
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    // A 1-step run first: its generator makes noise.
    RunConfig a = tiny(path(QStringLiteral("runs-open-a")), 1);
    a.seed = 5;
    a.precision = Precision::FP16;  // B is FP32: the status bar must say so after opening B
    w.configPanel()->setConfig(a);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QSignalSpy exported(&w, &MainWindow::samplesExported);
    QVERIFY(w.exportSamples(path(QStringLiteral("open-own-a-singles")), 2, 7));
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, kTimeout);

    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(b);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QVERIFY(RunController::samePath(w.currentRunDir(), b));
    QVERIFY2(w.statusText().contains(QStringLiteral("FP32")) && !w.statusText().contains(QStringLiteral("FP16")) &&
                 w.statusText().contains(QStringLiteral("step 20 / 20")),
             qPrintable(w.statusText()));
    QTRY_VERIFY_WITH_TIMEOUT(w.runs()->canSample(), kTimeout);
    auto* now = w.samples()->findChild<QPushButton*>(QStringLiteral("sampleNow"));
    QTRY_VERIFY_WITH_TIMEOUT(now->isEnabled(), kTimeout);
    QCOMPARE(w.samples()->count(), 2);
    const QImage grid = sample_now(w);
    QVERIFY(!grid.isNull());
    QCOMPARE(rgb(grid), rgb(QImage(b + QStringLiteral("/samples/step_000020.png"))));
    // Export single samples: proposed inside the opened run, made by its generator.
    QCOMPARE(w.runs()->samplesExportDir(), QDir(b).filePath(QStringLiteral("exported")));
    QVERIFY(w.exportSamples(path(QStringLiteral("open-own-b-singles")), 2, 7));
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 2, kTimeout);
    const QImage from_a(path(QStringLiteral("open-own-a-singles/sample_00000.png")));
    const QImage from_b(path(QStringLiteral("open-own-b-singles/sample_00000.png")));
    QVERIFY(!from_a.isNull() && !from_b.isNull());
    QVERIFY(rgb(from_a) != rgb(from_b));
    // A run without a checkpoint has no generator: nothing is sampled from the wrong one.
    const QString c = path(QStringLiteral("open-own-c"));
    QDir().mkpath(c);
    QFile::copy(b + QStringLiteral("/metrics.csv"), c + QStringLiteral("/metrics.csv"));
    w.openRun(c);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 2, kTimeout);
    QVERIFY(!w.runs()->canSample());
    QVERIFY(!now->isEnabled());
    QVERIFY(!w.action(QStringLiteral("actionExportSamples"))->isEnabled());
  }

  // Resume trains in the precision shown, not the checkpoint's.
  void resumeUsesShownPrecision() {
    const QString dir = path(QStringLiteral("resume-prec"));
    engine_run(dir, tiny(path(QStringLiteral("unused")), 10));
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.setConfirmer([](const QString&, const QString& t) -> bool {
      qFatal("unexpected question: %s", qPrintable(t));
      return false;
    });
    w.show();
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    RunConfig c = w.configPanel()->config();
    c.steps = 20;
    w.configPanel()->setConfig(c);
    w.switchPrecision(Precision::FP16);
    QVERIFY(w.configPanel()->config().precision == Precision::FP16);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.resumeRun(dir));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const auto rows = RunFolder(dir.toStdString()).read_metrics();
    QCOMPARE(rows.size(), size_t{20});
    for (const StepMetrics& m : rows)
      QVERIFY2(m.precision == (m.step <= 10 ? Precision::FP32 : Precision::FP16), qPrintable(QString::number(m.step)));
    QCOMPARE(w.plots()->switchCount(), 1);
  }

  // Resuming from an earlier checkpoint asks first; "no" leaves the run as it was.
  void resumeFromEarlierCheckpointAsks() {
    const QString dir = path(QStringLiteral("resume-early"));
    RunConfig c = tiny(path(QStringLiteral("unused")), 30);
    c.checkpoint_every = 10;
    engine_run(dir, c);
    const QString ckpt10 = dir + QStringLiteral("/checkpoints/step_000010.safetensors");
    QVERIFY(QFile::exists(ckpt10));
    const QByteArray metrics = file_bytes(dir + QStringLiteral("/metrics.csv"));
    const QByteArray ckpt30 = file_bytes(dir + QStringLiteral("/checkpoints/step_000030.safetensors"));
    QVERIFY(!ckpt30.isEmpty());

    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    QStringList asked;
    bool answer = false;
    w.setConfirmer([&](const QString&, const QString& text) {
      asked << text;
      return answer;
    });
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QVERIFY(!w.resumeRun(dir, ckpt10));
    QCOMPARE(asked.size(), 1);
    QVERIFY2(asked[0].contains(QStringLiteral("11")) && asked[0].contains(QStringLiteral("30")), qPrintable(asked[0]));
    QTest::qWait(300);
    QVERIFY(!w.busy());
    QCOMPARE(file_bytes(dir + QStringLiteral("/metrics.csv")), metrics);
    QCOMPARE(file_bytes(dir + QStringLiteral("/checkpoints/step_000030.safetensors")), ckpt30);
    // Resuming from the newest checkpoint drops nothing: no question.
    QVERIFY(!RunController::laterHistory(dir, {}).has_value());
    // "Yes": it retrains from step 10.
    answer = true;
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.resumeRun(dir, ckpt10));
    QCOMPARE(asked.size(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(count_rows(dir + QStringLiteral("/metrics.csv")), 30);
  }

  // Resuming an opened run from an earlier checkpoint: the Samples slider holds the grids up to
  // that step and then the retrained ones, in step order, as many as samples/ holds.
  void resumeFromEarlierCheckpointDropsLaterGrids() {
    const QString dir = path(QStringLiteral("resume-early-grids"));
    RunConfig c = tiny(path(QStringLiteral("unused")), 40);
    c.checkpoint_every = 10;
    engine_run(dir, c);
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.setConfirmer([](const QString&, const QString&) { return true; });
    w.show();
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QCOMPARE(w.samples()->count(), 4);  // 10, 20, 30, 40
    QSignalSpy finished(&w, &MainWindow::runFinished);
    // As the resume starts: the grids of the dropped steps are gone from the slider.
    int at_start = -1;
    connect(&w, &MainWindow::runStarted, &w, [&] { at_start = w.samples()->count(); });
    QVERIFY(w.resumeRun(dir, dir + QStringLiteral("/checkpoints/step_000020.safetensors")));
    QTRY_VERIFY_WITH_TIMEOUT(at_start >= 0, kTimeout);
    QCOMPARE(at_start, 2);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    auto* slider = w.samples()->findChild<QSlider*>();
    QVERIFY(slider);
    QCOMPARE(w.samples()->count(), 4);
    QCOMPARE(slider->maximum(), 3);
    QCOMPARE(QDir(dir + QStringLiteral("/samples")).entryList({QStringLiteral("step_*.png")}).size(), 4);
    QList<int64_t> steps;
    for (int i = 0; i < w.samples()->count(); ++i) {
      slider->setValue(i);
      steps << w.samples()->currentStep();
    }
    QCOMPARE(steps, (QList<int64_t>{10, 20, 30, 40}));
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
    for (int bin = 0; bin < ew::kHistBins; ++bin)
      QVERIFY(std::fabs(g->fraction(bin) - file[2].counts[bin] / total) < 1e-9);
    QVERIFY(p->showHistogramStep(26));  // the nearest stored: 25
    QCOMPARE(g->step(), int64_t{25});
    // Another run (or a new one) starts empty.
    p->clear();
    QCOMPARE(p->histogramSteps(), 0);
    QVERIFY(!g->hasData());
    QVERIFY(!p->histogramSlider()->isVisibleTo(p));
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
    const bool resumed =
        w.resumeRunAsBranch(run, QDir(run).filePath(QStringLiteral("checkpoints/step_000010.safetensors")));
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
};

QTEST_MAIN(TestResume)
#include "test_resume.moc"
