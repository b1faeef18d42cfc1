// A run trained through the window and its worker thread: plots, samples and a precision switch,
// pause and step, a dataset that fails to load or is cancelled, a backend that is not there, the
// first evaluation's progress, closing the window mid-run, and the exports.
#include <QAction>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QMessageBox>
#include <QSignalSpy>
#include <QToolButton>
#include <QtTest>

#include "core/common/error.h"
#include "core/run/run_folder.h"
#include "tests/ui/ui_test_support.h"
#include "ui/plots/histogram_plot.h"
#include "ui/plots/plots_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/views/event_log.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"
#include "ui/window/app_options.h"
#include "ui/window/status_progress.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestTraining : public UiTestCase {
  Q_OBJECT

 private slots:
  // Start a run: plots fill, samples and histograms appear; switch to FP16 mid-run: a marker on
  // every plot and FP16 rows from then on; stop; export grid, samples, CSV and a plot.
  void trainingShowsPlotsSamplesAndSwitch() {
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs1")), 1000000));
    QSignalSpy started(&w, &MainWindow::runStarted);
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->plot(QStringLiteral("losses"))->pointCount(QStringLiteral("loss D")) >= 20,
                             kTimeout);
    QCOMPARE(started.count(), 1);
    const QString run_dir = w.currentRunDir();
    QVERIFY(QDir(run_dir).exists());
    // Every time chart holds points (the quality chart only with evaluations).
    for (const QString& id : {QStringLiteral("losses"), QStringLiteral("d_outputs"), QStringLiteral("loss_scale"),
                              QStringLiteral("grad_norms"), QStringLiteral("underflow"), QStringLiteral("throughput")})
      QVERIFY2(w.plots()->plot(id)->pointCount(0) > 0, qPrintable(id));
    // A sample grid is shown: 8 x 8 cells of 32 px with 2 px padding = 274 px.
    QTRY_VERIFY_WITH_TIMEOUT(!w.samples()->currentImage().isNull(), kTimeout);
    QCOMPARE(w.samples()->currentImage().size(), QSize(274, 274));
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->histogram('G')->hasData() && w.plots()->histogram('D')->hasData(), kTimeout);
    QVERIFY(w.state() == TrainingWorker::State::Running);
    QVERIFY(w.statusText().contains(QStringLiteral("img/s")));

    // Switch precision mid-run.
    const size_t rows_before = w.plots()->rows().size();
    QCOMPARE(w.plots()->switchCount(), 0);
    w.switchPrecision(Precision::FP16);
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->switchCount() == 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->rows().size() > rows_before + 20, kTimeout);
    const auto& rows = w.plots()->rows();
    size_t first_fp16 = rows.size();
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].precision == Precision::FP16) {
        first_fp16 = i;
        break;
      }
    QVERIFY(first_fp16 >= rows_before - 1 && first_fp16 < rows.size());
    for (size_t i = 0; i < first_fp16; ++i) QVERIFY(rows[i].precision == Precision::FP32);
    for (size_t i = first_fp16; i < rows.size(); ++i) QVERIFY(rows[i].precision == Precision::FP16);
    // The switch is marked on every time chart; FP16 starts with the initial scale 2^16.
    for (const QString& id : w.plots()->plotIds()) QCOMPARE(w.plots()->plot(id)->verticalMarkerCount(), 1);
    QCOMPARE(rows[first_fp16].scale_d, 65536.0);
    bool logged = false;
    for (int i = 0; i < w.eventLog()->rowCount(); ++i)
      logged |= w.eventLog()->rowText(i).contains(QStringLiteral("FP16 AMP"));
    QVERIFY(logged);

    // Stop: the run is finished cleanly (checkpoint, stop event).
    QSignalSpy finished(&w, &MainWindow::runFinished);
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("stopped"));
    QVERIFY(!QDir(run_dir + QStringLiteral("/checkpoints")).entryList({QStringLiteral("*.safetensors")}).isEmpty());
    QVERIFY(shown.isEmpty());

    // Export the grid, as is and enlarged 3x (nearest neighbour).
    QVERIFY(w.exportGrid(path(QStringLiteral("grid1.png")), 1));
    QVERIFY(w.exportGrid(path(QStringLiteral("grid3.png")), 3));
    QCOMPARE(QImage(path(QStringLiteral("grid1.png"))).size(), QSize(274, 274));
    const QImage g3(path(QStringLiteral("grid3.png")));
    QCOMPARE(g3.size(), QSize(822, 822));
    const QImage g1(path(QStringLiteral("grid1.png")));
    QCOMPARE(g3.pixel(3 * 100 + 2, 3 * 50 + 1), g1.pixel(100, 50));

    // Export 5 single samples from the generator (the finished run stays loaded).
    QSignalSpy exported(&w, &MainWindow::samplesExported);
    const QString singles = path(QStringLiteral("singles"));
    QVERIFY(w.exportSamples(singles, 5, 7));
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, kTimeout);
    const QStringList files = QDir(singles).entryList({QStringLiteral("*.png")}, QDir::Files, QDir::Name);
    QCOMPARE(files.size(), 5);
    for (const QString& f : files) {
      const QImage img(QDir(singles).filePath(f));
      QVERIFY2(!img.isNull(), qPrintable(f));
      QCOMPARE(img.size(), QSize(32, 32));
    }

    // Metrics as CSV (a copy of metrics.csv once idle) and a plot as PNG and PDF.
    QVERIFY(w.exportMetricsCsv(path(QStringLiteral("m.csv"))));
    QCOMPARE(count_rows(path(QStringLiteral("m.csv"))), static_cast<int>(w.plots()->rows().size()));
    QVERIFY(w.exportPlot(QStringLiteral("loss_scale"), path(QStringLiteral("scale.png"))));
    QVERIFY(!QImage(path(QStringLiteral("scale.png"))).isNull());
    QVERIFY(w.exportPlot(QStringLiteral("losses"), path(QStringLiteral("losses.pdf"))));
    QVERIFY(QFileInfo(path(QStringLiteral("losses.pdf"))).size() > 1000);
    QVERIFY(shown.isEmpty());

    // File > Export > Timelapse: every grid on disk in one animated WebP, noted in the log.
    auto* timelapse = w.findChild<QAction*>(QStringLiteral("actionExportTimelapse"));
    QVERIFY(timelapse && timelapse->isEnabled());
    QVERIFY(w.exportTimelapse(path(QStringLiteral("t.webp"))));
    const QByteArray webp = file_bytes(path(QStringLiteral("t.webp")));
    QVERIFY(webp.startsWith("RIFF") && webp.mid(8, 4) == "WEBP");
    const int grids = QDir(run_dir + QStringLiteral("/samples")).entryList({QStringLiteral("*.png")}).size();
    QVERIFY(grids >= 2);
    const QString note = QStringLiteral("timelapse of %1 grids").arg(grids);
    QVERIFY2(w.eventLog()->rowText(w.eventLog()->rowCount() - 1).contains(note),
             qPrintable(w.eventLog()->rowText(w.eventLog()->rowCount() - 1)));
    // Where nothing can be written: the error names the file, and the window goes on.
    QVERIFY(!w.exportTimelapse(QStringLiteral("/nonexistent-folder/t.mp4")));
    QCOMPARE(shown.size(), 1);
    QVERIFY2(shown.at(0).text().contains(QStringLiteral("/nonexistent-folder/t.mp4")), qPrintable(shown.at(0).text()));
    QVERIFY(w.exportTimelapse(path(QStringLiteral("t.mp4"))));
  }

  // A run started paused with one step trains exactly one iteration; Step again, then run.
  // (Step with no run creates nothing: stepWhenIdleCreatesNoRun.)
  void pauseStepAndResume() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs2")), 1000000));
    QVERIFY(w.startTraining(true, 1));
    QTRY_VERIFY_WITH_TIMEOUT(w.state() == TrainingWorker::State::Paused && w.plots()->rows().size() == 1, kTimeout);
    QCOMPARE(w.plots()->rows().back().step, int64_t{1});
    w.stepOnce();
    QTRY_COMPARE_WITH_TIMEOUT(w.plots()->rows().size(), size_t{2}, kTimeout);
    QTest::qWait(300);
    QCOMPARE(w.plots()->rows().size(), size_t{2});  // paused: nothing more
    w.togglePause();
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->rows().size() > 10, kTimeout);
    w.togglePause();
    QTRY_VERIFY_WITH_TIMEOUT(w.state() == TrainingWorker::State::Paused, kTimeout);
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
  }

  // Step (F10) with no run does nothing: no run, no folder.
  void stepWhenIdleCreatesNoRun() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    const QString root = path(QStringLiteral("runs-idle-step"));
    w.configPanel()->setConfig(tiny(root, 100));
    QVERIFY(!w.action(QStringLiteral("actionStep"))->isEnabled());
    w.stepOnce();
    QTest::keyClick(&w, Qt::Key_F10);
    QTest::qWait(1000);
    QVERIFY(!w.busy());
    QVERIFY(w.currentRunDir().isEmpty());
    QVERIFY(!QDir(root).exists());
    QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("Start")));
  }

  // A folder with a fake PNG: the error reaches the dialog and the log, the window stays usable.
  void corruptDatasetShowsErrorAndWindowStillWorks() {
    const QString bad = path(QStringLiteral("corrupt"));
    QDir().mkpath(bad);
    QFile f(bad + QStringLiteral("/fake.png"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a PNG file");
    f.close();

    MainWindow w(no_settings());  // the default presenter: a non-blocking message box
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs3")), 1000000);
    c.dataset = bad.toStdString();
    w.configPanel()->setConfig(c);
    QVERIFY(w.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(w.errors().size(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const UiError e = w.errors().first();
    QVERIFY2(!e.what.isEmpty(), qPrintable(e.text()));
    QVERIFY2(e.text().contains(QStringLiteral("corrupt")) || e.text().contains(QStringLiteral("fake.png")),
             qPrintable(e.text()));
    auto* box = w.findChild<QMessageBox*>(QStringLiteral("errorDialog"));
    QVERIFY(box);
    QVERIFY(box->isVisible());
    QVERIFY(box->text().contains(e.what));
    bool logged = false;
    for (int i = 0; i < w.eventLog()->rowCount(); ++i)
      logged |= w.eventLog()->rowText(i).contains(QStringLiteral("error"));
    QVERIFY(logged);
    // No half-made run folder was left behind.
    QVERIFY(!QDir(path(QStringLiteral("runs3"))).exists() || QDir(path(QStringLiteral("runs3"))).isEmpty());
    box->close();

    // The same window trains a good dataset afterwards.
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs3")), 1000000));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->rows().size() >= 10, kTimeout);
    QCOMPARE(w.errors().size(), 1);
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
  }

  // Stop while the dataset loads: loading is cancelled, no error, no run folder, window usable.
  void cancelDatasetLoading() {
    if (!QFile::exists(QStringLiteral("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) &&
        qEnvironmentVariableIsEmpty("AMPGAN_FASHION_MNIST_DIR"))
      QSKIP("Fashion-MNIST is not installed (Debian: dataset-fashion-mnist)");
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-cancel")), 1000000);
    c.dataset = "fashion-mnist";
    c.res = 128;  // 60,000 images resized to 128x128: long enough to cancel midway
    c.out_dir = path(QStringLiteral("runs-cancel/never")).toStdString();
    w.configPanel()->setConfig(c);
    QSignalSpy progress(w.worker(), &TrainingWorker::loadingProgress);
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w.state() == TrainingWorker::State::Loading, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, kTimeout);  // loading is under way
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QVERIFY2(shown.isEmpty(), shown.isEmpty() ? "" : qPrintable(shown.first().text()));
    bool noted = false;
    for (int i = 0; i < w.eventLog()->rowCount(); ++i)
      noted |= w.eventLog()->rowText(i).contains(QStringLiteral("cancelled"));
    QVERIFY(noted);
    QVERIFY(!QDir(path(QStringLiteral("runs-cancel/never"))).exists());
    QVERIFY(w.plots()->rows().empty());
  }

  // --backend cuda on a machine without a usable GPU: the engine's error (as the CLI shows it),
  // no training on the CPU, no run folder.
  void cudaBackendWithoutGpuIsAnError() {
    MainWindow w(no_settings());
    if (w.configPanel()->gpuUsable()) QSKIP("a usable GPU is present");
    QString expected;
    try {
      (void)create_backend("cuda");
      QSKIP("the CUDA backend was created");
    } catch (const Error& e) {
      expected = QString::fromStdString(e.what_failed());
    }
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    const QString root = path(QStringLiteral("runs-cuda"));
    w.configPanel()->setConfig(tiny(root, 5));
    QString err, text;
    const auto o = parse_app_options(
        {QStringLiteral("ampgan-studio"), QStringLiteral("--backend"), QStringLiteral("cuda")}, &err, &text);
    QVERIFY2(o.has_value(), qPrintable(err));
    w.applyOptions(*o);
    QCOMPARE(w.configPanel()->config().backend, std::string("cuda"));
    w.startTraining();
    QTRY_COMPARE_WITH_TIMEOUT(shown.size(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(shown[0].what, expected);
    // Worded for the window: the settings panel's field, not the command line's --backend.
    QVERIFY2(!shown[0].hint.contains(QStringLiteral("--")) && !shown[0].subject.contains(QStringLiteral("--")),
             qPrintable(shown[0].text()));
    QVERIFY2(
        shown[0].hint.contains(QStringLiteral("Train on: cpu")) && shown[0].hint.contains(QStringLiteral("settings")),
        qPrintable(shown[0].hint));
    QVERIFY(w.plots()->rows().empty());
    QVERIFY(!QDir(root).exists() || QDir(root).isEmpty());
    // The window still trains once the CPU is chosen.
    RunConfig c = w.configPanel()->config();
    c.backend = "cpu";
    w.configPanel()->setConfig(c);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QCOMPARE(shown.size(), 1);
  }

  // The first evaluation trains the feature classifier: a progress bar, "evaluating" in the
  // step counter, a line in the log; Stop cancels it and the run ends cleanly.
  void evaluationShowsProgressAndCancels() {
    qputenv("AMPGAN_CACHE_DIR", path(QStringLiteral("classifier-cache")).toUtf8());  // nothing cached
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-eval")), 1000);
    c.eval_every = 3;
    c.eval_samples = 64;
    w.configPanel()->setConfig(c);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.startTraining());
    StatusProgress* sp = w.statusProgress();
    QTRY_VERIFY_WITH_TIMEOUT(sp->working() && sp->workText().contains(QStringLiteral("classifier")), kTimeout);
    QVERIFY(sp->visible());
    QVERIFY2(w.statusText().contains(QStringLiteral("evaluating")), qPrintable(w.statusText()));
    // The empty quality chart says when the first evaluation comes, not "set Evaluation".
    const QString empty = w.plots()->plot(QStringLiteral("quality"))->emptyText();
    QVERIFY2(empty.contains(QStringLiteral("step 3")), qPrintable(empty));
    QTRY_VERIFY_WITH_TIMEOUT(sp->value() > 0 && sp->maximum() > sp->value(), kTimeout);  // it moves
    auto logged = [&](const QString& text) {
      for (int i = 0; i < w.eventLog()->rowCount(); ++i)
        if (w.eventLog()->rowText(i).contains(text)) return true;
      return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(logged(QStringLiteral("feature classifier")), kTimeout);  // the engine's notice
    QTRY_VERIFY_WITH_TIMEOUT(logged(QStringLiteral("Stop or Cancel")), kTimeout);      // slow: how to end it
    w.stopTraining();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("stopped"));
    QVERIFY(!sp->working());
    QVERIFY(!sp->visible());
    QVERIFY(!w.statusText().contains(QStringLiteral("evaluating")));
    QVERIFY2(shown.isEmpty(), shown.isEmpty() ? "" : qPrintable(shown.first().text()));
    QVERIFY(logged(QStringLiteral("cancelled")));
    // The run stopped at the evaluating step: no half-trained classifier was cached (they go in
    // classifiers/; the cache folder also holds the CPU kernel choices).
    QVERIFY(QDir(path(QStringLiteral("classifier-cache/classifiers")))
                .entryList(QDir::Files | QDir::NoDotAndDotDot)
                .isEmpty());
    QCOMPARE(w.plots()->rows().back().step, int64_t{3});
  }

  // "Skip this evaluation" in the status bar ends the first evaluation (and the classifier it
  // trains) while the run goes on; the empty quality charts say it was skipped, and after a
  // resume they name the next evaluation, not the first one of the run.
  void skipEvaluationKeepsTheRunAndResumeNamesTheNext() {
    qputenv("AMPGAN_CACHE_DIR", path(QStringLiteral("classifier-cache-skip")).toUtf8());  // nothing cached
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-eval-skip")), 1000000);
    c.eval_every = 3;
    c.eval_samples = 64;
    w.configPanel()->setConfig(c);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.startTraining());
    StatusProgress* sp = w.statusProgress();
    QTRY_VERIFY_WITH_TIMEOUT(sp->working() && sp->workText().contains(QStringLiteral("classifier")), kTimeout);
    auto* skip = w.findChild<QToolButton*>(QStringLiteral("statusSkip"));
    QVERIFY(skip);
    QTRY_VERIFY_WITH_TIMEOUT(skip->isVisible() && skip->isEnabled(), kTimeout);
    QString why;
    QVERIFY2(text_fits(skip, &why), qPrintable(why));
    QTest::mouseClick(skip, Qt::LeftButton);
    // The run goes on past the skipped evaluation (step 3) and is still running.
    QTRY_VERIFY_WITH_TIMEOUT(!w.plots()->rows().empty() && w.plots()->rows().back().step >= 5, kTimeout);
    QCOMPARE(finished.count(), 0);
    QVERIFY(w.state() == TrainingWorker::State::Running || w.state() == TrainingWorker::State::Paused);
    const QString empty = w.plots()->plot(QStringLiteral("quality"))->emptyText();
    QVERIFY2(empty.contains(QStringLiteral("skipped")) && empty.contains(QStringLiteral("step 6")), qPrintable(empty));
    w.stopTraining();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const QString dir = w.currentRunDir();

    // Resume: the charts name the evaluation after the resumed step. The step and the text are
    // read as runStarted is emitted (on this thread, before any batch of the resumed run is
    // shown): read later, a fast host has trained past the next evaluation step already.
    QSignalSpy started(&w, &MainWindow::runStarted);
    int64_t from = -1;
    QString next;
    const QMetaObject::Connection at_start = connect(&w, &MainWindow::runStarted, this, [&] {
      from = w.currentStep();
      next = w.plots()->plot(QStringLiteral("fd"))->emptyText();
    });
    QVERIFY(w.resumeRun(dir));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kTimeout);
    disconnect(at_start);
    QVERIFY(from >= 5);
    QVERIFY2(next.contains(QStringLiteral("Next evaluation at step %1").arg((from / 3 + 1) * 3)), qPrintable(next));
    QVERIFY2(!next.contains(QStringLiteral("step 3\n")), qPrintable(next));
    w.stopTraining();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QVERIFY2(shown.isEmpty(), shown.isEmpty() ? "" : qPrintable(shown.first().text()));
  }

  // Closing the window while training finishes the run (metrics, samples, checkpoint) first.
  void closeWhileTrainingFinishesTheRun() {
    auto* w = new MainWindow(no_settings());
    w->setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w->show();
    RunConfig c = tiny(path(QStringLiteral("runs6")), 1000000);
    c.sample_every = 0;  // so any sample grid on disk was written by the clean finish
    w->configPanel()->setConfig(c);
    QVERIFY(w->startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w->plots()->rows().size() >= 5, kTimeout);
    const QString dir = w->currentRunDir();
    QVERIFY(!w->close());  // refused for now: the run is being finished
    QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), kTimeout);
    delete w;
    QVERIFY(!QDir(dir + QStringLiteral("/checkpoints")).entryList({QStringLiteral("*.safetensors")}).isEmpty());
    QVERIFY(!QDir(dir + QStringLiteral("/samples")).entryList({QStringLiteral("*.png")}).isEmpty());
    const auto events = RunFolder(dir.toStdString()).read_events();
    QVERIFY(!events.empty());
    QCOMPARE(QString::fromLatin1(event_type_name(events.back().type)), QStringLiteral("stop"));
    const auto rows = RunFolder(dir.toStdString()).read_metrics();
    QVERIFY(rows.size() >= 5);
  }
};

QTEST_MAIN(TestTraining)
#include "test_training.moc"
