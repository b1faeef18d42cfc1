// Qt Test suite of AMP GAN Studio's window: tiny CPU runs (synthetic shapes, 32x32, width 8,
// batch 8) driven through the same MainWindow, worker thread and engine the user gets. Waits
// are QTRY_* polls with generous timeouts; nothing asserts on timing.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QComboBox>
#include <QDockWidget>
#include <QLineEdit>
#include <QMessageBox>
#include <QStatusBar>
#include <QWheelEvent>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "core/backend/elementwise.h"
#include "core/common/error.h"
#include "core/run/compare.h"
#include "core/run/run_folder.h"
#include "core/run/session.h"
#include "core/run/settings_table.h"
#include "ui/plots/histogram_plot.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/metrics_csv.h"
#include "ui/runs/run_controller.h"
#include "ui/settings/config_panel.h"
#include "ui/views/alert_banner.h"
#include "ui/views/compare_view.h"
#include "ui/views/event_log.h"
#include "ui/views/layers_view.h"
#include "ui/views/model_view.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/input_guards.h"
#include "ui/widgets/live_plot.h"
#include "ui/window/app_options.h"
#include "ui/window/main_window.h"
#include "ui/window/status_progress.h"

using namespace ampgan;
using namespace ampgan::ui;

namespace {

constexpr int kTimeout = 90000;  // ms; a loaded 2-core CI machine is slow, not broken

// The tiny configuration every test trains.
RunConfig tiny(const QString& runs_root, int64_t steps) {
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
  c.checkpoint_every = 0;
  c.hist_every = 5;
  c.runs_root = runs_root.toStdString();
  return c;
}

MainWindow::Options no_settings() {
  MainWindow::Options o;
  o.restore_settings = false;
  o.save_settings = false;
  return o;
}

QByteArray file_bytes(const QString& p) {
  QFile f(p);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QImage rgb(const QImage& i) { return i.convertToFormat(QImage::Format_RGB888); }

// A finished run written by the engine alone (as the CLI would), `steps` long.
void engine_run(const QString& dir, RunConfig c) {
  c.out_dir = dir.toStdString();
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
}

// Presses Sample now and returns the grid the worker delivered for it (it replaces a stored grid
// of the same step in the Samples dock, so the dock's count does not show it).
QImage sample_now(MainWindow& w) {
  auto* now = w.samples()->findChild<QPushButton*>(QStringLiteral("sampleNow"));
  if (!now || !now->isEnabled()) return {};
  QSignalSpy batches(w.worker(), &TrainingWorker::batchReady);
  now->click();
  QImage got;
  const bool arrived = QTest::qWaitFor(
      [&] {
        for (const QList<QVariant>& args : batches) {
          const auto b = args.at(0).value<UiBatchPtr>();
          if (b && !b->samples.empty()) got = b->samples.back().image;
        }
        return !got.isNull();
      },
      90000);
  return arrived ? got : QImage();
}

int count_rows(const QString& csv) {
  QFile f(csv);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  return static_cast<int>(f.readAll().trimmed().split('\n').size()) - 1;  // minus the header
}

}  // namespace

class TestStudio : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString path(const QString& name) const { return tmp_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QCoreApplication::setOrganizationName(QStringLiteral("ampgan-ui-test"));
    QCoreApplication::setApplicationName(QStringLiteral("test_studio"));
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, path(QStringLiteral("settings")));
  }

  // Issue 13: a run whose every fp16 step overflows at the floor shows an alert with a remedy
  // above the tabs, and the Layers view fills from layers.csv: one column per overflow step,
  // one row per gradient tensor, and a table for the selected step.
  void layersViewAndAlertDuringOverflows() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-layers")), 40);
    c.precision = Precision::FP16;
    // 2^30 (the panel's largest) and its floor: every step of this model overflows in fp16.
    c.scaler.init_scale = c.scaler.min_scale = c.scaler.max_scale = 1073741824.0f;
    w.configPanel()->setConfig(c);
    QVERIFY(!w.alertBanner()->isVisible());
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w.alertBanner()->isVisible(), kTimeout);
    QVERIFY2(w.alertBanner()->text().contains(QStringLiteral("What to do")), qPrintable(w.alertBanner()->text()));
    QTRY_VERIFY_WITH_TIMEOUT(w.layersView()->stepCount() >= 10, kTimeout);
    QCOMPARE(w.layersView()->layerCount(), 18);  // DCGAN-32: 8 tensors in D, 10 in G
    auto* table = w.layersView()->findChild<QTableWidget*>(QStringLiteral("layersTable"));
    QVERIFY(table);
    // The worker may append a step's rows while the view reads: a partial last step fills in later.
    QTRY_COMPARE_WITH_TIMEOUT(table->rowCount(), 18, kTimeout);
    const int64_t first = 1;
    w.layersView()->selectStep(first);
    QCOMPARE(w.layersView()->selectedStep(), first);
    w.tabs()->setCurrentWidget(w.layersView());
    if (!qEnvironmentVariableIsEmpty("AMPGAN_SHOT_DIR")) {  // docs/screenshots, by hand
      QTest::qWait(500);
      w.grab().save(qEnvironmentVariable("AMPGAN_SHOT_DIR") + QStringLiteral("/layers-view-overflows.png"));
      w.tabs()->setCurrentIndex(0);
      QTest::qWait(500);
      w.grab().save(qEnvironmentVariable("AMPGAN_SHOT_DIR") + QStringLiteral("/alert-banner.png"));
    }
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    w.alertBanner()->dismiss();
    QVERIFY(!w.alertBanner()->isVisible());
  }

  // Issue 13: the Model view lists every layer with its dtype under the per-layer policy and
  // follows a policy switch made in the settings panel mid-run; clicking an overflow marker on the
  // loss-scale plot selects the layer where that overflow started in the Layers view.
  void modelViewFollowsPolicyAndMarkerSelectsLayer() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-model")), 400);
    c.precision = Precision::FP16;
    c.scaler.init_scale = c.scaler.min_scale = c.scaler.max_scale = 1073741824.0f;  // every step overflows
    c.fp32_layers = {"D.5"};
    w.configPanel()->setConfig(c);
    QVERIFY(w.startTraining());
    ModelView* mv = w.modelView();
    auto dtype_of = [mv](const QString& layer) {
      for (int r = 0; r < mv->rowCount(); ++r)
        if (mv->cell(r, 1) == layer) return mv->cell(r, 4);
      return QString();
    };
    // DCGAN-32: G.0, G.1, G.3, G.4, G.6, G.7, G.9 and D.0, D.2, D.3, D.5, D.6, D.8.
    QTRY_COMPARE_WITH_TIMEOUT(mv->rowCount(), 13, kTimeout);
    QCOMPARE(dtype_of(QStringLiteral("D.5")), QStringLiteral("f32"));
    QCOMPARE(dtype_of(QStringLiteral("D.2")), QStringLiteral("f16"));
    QCOMPARE(mv->cell(0, 5).toLongLong(), 100LL * 32 * 4 * 4);  // G.0: ConvT(100 -> 4W = 32, k4), no bias
    // The panel's FP32 layers field, edited while training: applied at the next step.
    auto* field = w.configPanel()->findChild<QLineEdit*>(QStringLiteral("fp32_layers"));
    QVERIFY(field && field->isEnabled());
    field->setText(QStringLiteral("D.2"));
    emit field->editingFinished();
    QTRY_COMPARE_WITH_TIMEOUT(dtype_of(QStringLiteral("D.2")), QStringLiteral("f32"), kTimeout);
    QCOMPARE(dtype_of(QStringLiteral("D.5")), QStringLiteral("f16"));
    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) {
      w.tabs()->setCurrentWidget(mv);
      QTest::qWait(300);
      w.grab().save(shots + QStringLiteral("/model-view.png"));
    }
    QTRY_VERIFY_WITH_TIMEOUT(w.layersView()->stepCount() >= 3, kTimeout);
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);

    // Click the first D overflow marker.
    w.tabs()->setCurrentIndex(0);
    LivePlot* scale = w.plots()->plot(QStringLiteral("loss_scale"));
    QVERIFY(scale);
    scale->replot();
    QCPGraph* over_d = nullptr;
    for (int i = 0; i < scale->graphCount(); ++i)
      if (scale->graph(i)->name() == QStringLiteral("D overflow")) over_d = scale->graph(i);
    QVERIFY(over_d && !over_d->data()->isEmpty());
    auto pt = over_d->data()->constBegin();
    // A step layers.csv holds (every overflow step is written) and the plot shows.
    scale->xAxis->setRange(pt->key - 5, pt->key + 5);
    scale->replot();
    const QPointF px = over_d->coordsToPixels(pt->key, pt->value);
    QSignalSpy clicked(w.plots(), &PlotsPanel::overflowClicked);
    QTest::mouseClick(scale, Qt::LeftButton, {}, px.toPoint());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.at(0).at(0).toString(), QStringLiteral("D"));
    QCOMPARE(clicked.at(0).at(1).toLongLong(), static_cast<qint64>(pt->key));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.layersView()));
    QCOMPARE(w.layersView()->selectedStep(), static_cast<int64_t>(pt->key));
    QVERIFY2(w.layersView()->selectedLayer().startsWith(QStringLiteral("D.")), qPrintable(w.layersView()->selectedLayer()));
    auto* table = w.layersView()->findChild<QTableWidget*>(QStringLiteral("layersTable"));
    QVERIFY(table && !table->selectedItems().isEmpty());
    QCOMPARE(table->selectedItems().first()->text(), w.layersView()->selectedLayer());
    if (!shots.isEmpty()) {
      QTest::qWait(300);
      w.grab().save(shots + QStringLiteral("/layers-view-marker-click.png"));
    }
  }

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
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->plot(QStringLiteral("losses"))->pointCount(QStringLiteral("loss D")) >= 20, kTimeout);
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
    for (int i = 0; i < w.eventLog()->rowCount(); ++i) logged |= w.eventLog()->rowText(i).contains(QStringLiteral("FP16 AMP"));
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
    for (int i = 0; i < w.eventLog()->rowCount(); ++i) logged |= w.eventLog()->rowText(i).contains(QStringLiteral("error"));
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
    for (int i = 0; i < w.eventLog()->rowCount(); ++i) noted |= w.eventLog()->rowText(i).contains(QStringLiteral("cancelled"));
    QVERIFY(noted);
    QVERIFY(!QDir(path(QStringLiteral("runs-cancel/never"))).exists());
    QVERIFY(w.plots()->rows().empty());
  }

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

  // Issue 17: Compare with Largest batch ticked and a small CPU budget: both rows get the cell,
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
    QVERIFY2(cv->statusText().contains(line + QStringLiteral(" within 16 MiB (memory budget)")), qPrintable(cv->statusText()));
    QVERIFY2(cv->statusText().contains(QStringLiteral("the speed of FP32")), qPrintable(cv->statusText()));
    int measured = 0;
    for (const QList<QVariant>& a : progress) measured += a.at(0).toString().startsWith(QStringLiteral("largest batch: "));
    QVERIFY2(measured >= 6, qPrintable(QString::number(measured)));  // two probes and a check per precision
    QVERIFY(cv->tableAsText().contains(QStringLiteral("\tLargest batch\t")));
    // The AMP run's generator still answers Sample now (its session made way for the search).
    QVERIFY(!sample_now(w).isNull());
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
    bool stopped = false;
    connect(w.worker(), &TrainingWorker::workProgress, &w, [&](const QString& what, int, int) {
      if (!stopped && what.startsWith(QStringLiteral("largest batch: "))) {
        stopped = true;
        w.stopTraining();
      }
    });
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
    QVERIFY2(cv->statusText().contains(QStringLiteral("the largest-batch search was stopped")), qPrintable(cv->statusText()));
  }

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


  // ---- one current run owns every view (issue 14) ----

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
    w.setConfirmer([](const QString&, const QString& t) -> bool { qFatal("unexpected question: %s", qPrintable(t));
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
    const auto o = parse_app_options({QStringLiteral("ampgan-studio"), QStringLiteral("--backend"), QStringLiteral("cuda")},
                                     &err, &text);
    QVERIFY2(o.has_value(), qPrintable(err));
    w.applyOptions(*o);
    QCOMPARE(w.configPanel()->config().backend, std::string("cuda"));
    w.startTraining();
    QTRY_COMPARE_WITH_TIMEOUT(shown.size(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(shown[0].what, expected);
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


  // ---- inputs (issue 14) ----

  // The wheel over a field without focus changes nothing (it scrolls the panel); with focus
  // it still works.
  void wheelDoesNotChangeUnfocusedFields() {
    ConfigPanel p;
    p.resize(300, 500);
    p.show();
    QVERIFY(QTest::qWaitForWindowExposed(&p));
    auto* prec = p.findChild<QComboBox*>(QStringLiteral("precision"));
    auto* batch = p.findChild<QSpinBox*>(QStringLiteral("batch"));
    QVERIFY(prec && batch);
    QCOMPARE(prec->focusPolicy(), Qt::StrongFocus);
    const RunConfig before = p.config();
    QSignalSpy edited(&p, &ConfigPanel::precisionEdited);
    auto wheel = [](QWidget* w) {
      const QPointF at(w->width() / 2.0, w->height() / 2.0);
      QWheelEvent e(at, w->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                    false);
      QCoreApplication::sendEvent(w, &e);
    };
    for (int i = 0; i < 3; ++i) {
      wheel(prec);
      wheel(batch);
    }
    QVERIFY(p.config().precision == before.precision);
    QCOMPARE(p.config().batch, before.batch);
    QCOMPARE(edited.count(), 0);
    // Focused, the wheel is meant: it changes the value.
    p.activateWindow();
    if (QTest::qWaitForWindowActive(&p)) {
      batch->setFocus();
      QTRY_VERIFY(batch->hasFocus());
      wheel(batch);
      QVERIFY(p.config().batch != before.batch);
    }
  }

  // Learning rates take scientific notation, as typed.
  void learningRateAcceptsScientificNotation() {
    ConfigPanel p;
    p.show();
    auto* lr = p.findChild<QDoubleSpinBox*>(QStringLiteral("lrG"));
    QVERIFY(lr);
    lr->findChild<QLineEdit*>()->selectAll();
    QTest::keyClicks(lr, QStringLiteral("5e-5"));
    QTest::keyClick(lr, Qt::Key_Return);
    QCOMPARE(p.config().lr_g, 5e-5f);
    RunConfig c = p.config();
    c.lr_d = 3.5e-6f;
    p.setConfig(c);
    QCOMPARE(p.config().lr_d, 3.5e-6f);
    QVERIFY(p.rangeProblems().isEmpty());
  }

  // A batch of 100000 is kept as typed, marked, and refused with a message: never capped.
  void outOfRangeIsRefusedNotCapped() {
    MainWindow w(no_settings());
    QList<UiError> shown;
    w.setErrorPresenter([&](const UiError& e) { shown << e; });
    w.show();
    const QString root = path(QStringLiteral("runs-range"));
    w.configPanel()->setConfig(tiny(root, 5));
    auto* batch = w.configPanel()->findChild<QSpinBox*>(QStringLiteral("batch"));
    QVERIFY(batch);
    QSignalSpy refused(w.configPanel(), &ConfigPanel::inputRefused);
    batch->findChild<QLineEdit*>()->selectAll();
    QTest::keyClicks(batch, QStringLiteral("100000"));
    QTest::keyClick(batch, Qt::Key_Return);
    QCOMPARE(w.configPanel()->config().batch, 100000);
    QVERIFY(refused.count() >= 1);
    QVERIFY2(refused.last().at(0).toString().contains(QStringLiteral("65536")), qPrintable(refused.last().at(0).toString()));
    QVERIFY(!w.startTraining());
    QCOMPARE(shown.size(), 1);
    QVERIFY2(shown[0].text().contains(QStringLiteral("100000")) && shown[0].text().contains(QStringLiteral("Batch")),
             qPrintable(shown[0].text()));
    QVERIFY(!w.busy());
    QVERIFY(!QDir(root).exists());
    // Settings from elsewhere (CLI, presets) are not capped either.
    RunConfig c = tiny(root, 5);
    c.batch = 100000;
    w.configPanel()->setConfig(c);
    QCOMPARE(w.configPanel()->config().batch, 100000);
    QCOMPARE(w.configPanel()->rangeProblems().size(), 1);
    c.batch = 8;
    w.configPanel()->setConfig(c);
    QVERIFY(w.configPanel()->rangeProblems().isEmpty());
  }

  // A preset sets every field it names and resets the others to the defaults.
  // The model is a setting like any other: chosen in the panel, it reaches the run's config with
  // its recipe (hinge, TTUR, beta1 0); a shown config keeps its own values.
  void modelChoiceReachesTheRunConfig() {
    ConfigPanel p;
    auto* model = p.findChild<QComboBox*>(QStringLiteral("model"));
    QVERIFY(model);
    QVERIFY(p.config().model == ModelFamily::DCGAN);
    model->setCurrentIndex(model->findData(QStringLiteral("resnet")));
    RunConfig c = p.config();
    QVERIFY(c.model == ModelFamily::ResNet);
    QVERIFY(c.loss == LossKind::Hinge);
    QCOMPARE(c.lr_d, 4e-4f);
    QCOMPARE(c.beta1, 0.0f);
    QCOMPARE(c.n_dis, 5);
    QCOMPARE(c.ema_decay, 0.999f);  // the whole recipe, as ampgan train --model resnet sets it
    QCOMPARE(c.ema_rampup, 10.0f);
    RunConfig shown = c;
    shown.lr_d = 3e-4f;
    shown.model = ModelFamily::DCGAN;
    p.setConfig(shown);
    shown.model = ModelFamily::ResNet;
    p.setConfig(shown);
    QCOMPARE(p.config().lr_d, 3e-4f);  // not overwritten by the recipe
    QVERIFY(p.config().model == ModelFamily::ResNet);
  }

  // Every row of the settings table through the panel: a config holding the row's example is
  // shown and read back unchanged. Rows the panel has no field for (--lr, the EMA, the world size)
  // ride along in its copy of the shown config; every other row is read from its widget.
  void settingsPanelRoundTripsEveryRow() {
    ConfigPanel p;
    RunConfig base;
    base.runs_root = path(QStringLiteral("runs-rows")).toStdString();  // the studio's own, not a row
    for (const Setting& s : settings()) {
      const QString key = QString::fromLatin1(s.key);
      RunConfig c = base;
      set_setting(c, s, setting_example(s), "test");
      if (key == QStringLiteral("gpu")) c.backend = "cuda";  // the device list holds a GPU with cuda only
      QVERIFY2(c.to_json() != base.to_json() || c.out_dir != base.out_dir, qPrintable(key));
      p.setConfig(c);
      const RunConfig r = p.config();
      QVERIFY2(r.to_json() == c.to_json(), qPrintable(key + QStringLiteral(": ") + QString::fromStdString(r.to_json().dump())));
      QCOMPARE(r.out_dir, c.out_dir);
      QCOMPARE(r.runs_root, c.runs_root);
      if (s.panel != PanelGroup::None && s.widget != PanelWidget::Custom) {
        auto* w = p.findChild<QWidget*>(QString::fromLatin1(s.object_name ? s.object_name : s.key));
        QVERIFY2(w, qPrintable(key + QStringLiteral(" has no field")));
        QVERIFY2(!w->toolTip().isEmpty(), qPrintable(key + QStringLiteral(" has no tooltip")));
      }
      p.setConfig(base);
      QVERIFY2(p.config().to_json() == base.to_json(), qPrintable(key + QStringLiteral(" stuck")));
    }
    // An edit in a generated field reaches the config, within the allowed range.
    auto* interval = p.findChild<QSpinBox*>(QStringLiteral("growth_interval"));
    QVERIFY(interval);
    interval->setValue(17);
    QCOMPARE(p.config().scaler.growth_interval, 17);
    QVERIFY(p.rangeProblems().isEmpty());
    interval->setValue(0);
    QCOMPARE(p.rangeProblems().size(), 1);
    interval->setValue(17);
    // A real field whose 0 means off says so ("0" read as a clamp to zero), and typing works
    // both ways.
    auto* clamp = p.findChild<QDoubleSpinBox*>(QStringLiteral("conv_clamp"));
    QVERIFY(clamp);
    QCOMPARE(clamp->value(), 0.0);
    QCOMPARE(clamp->text(), QStringLiteral("off"));
    clamp->selectAll();
    QTest::keyClicks(clamp, QStringLiteral("256"));
    QTest::keyClick(clamp, Qt::Key_Return);
    QCOMPARE(p.config().conv_clamp, 256.0f);
    clamp->selectAll();
    QTest::keyClicks(clamp, QStringLiteral("off"));
    QTest::keyClick(clamp, Qt::Key_Return);
    QCOMPARE(clamp->text(), QStringLiteral("off"));
    QCOMPARE(p.config().conv_clamp, 0.0f);
    QVERIFY(p.rangeProblems().isEmpty());
    // The AMP strategy's choices fit a narrow combo; the tooltip explains each.
    auto* amp = p.findChild<QComboBox*>(QStringLiteral("amp_strategy"));
    QVERIFY(amp);
    for (int i = 0; i < amp->count(); ++i) QVERIFY2(amp->itemText(i).size() <= 12, qPrintable(amp->itemText(i)));
    for (const char* word : {"Automatic", "Loss scaling", "nan_to_num", "None"})
      QVERIFY2(amp->toolTip().contains(QLatin1String(word)), word);
  }

  // ampgan-studio takes every row's option as ampgan train does: --FLAG EXAMPLE reaches the config.
  void studioOptionsCoverEveryRow() {
    const RunConfig d;
    for (const Setting& s : settings()) {
      if (!s.flag) continue;
      const nlohmann::json ex = setting_example(s);
      QStringList args = {QStringLiteral("ampgan-studio"), QStringLiteral("--") + QString::fromLatin1(s.flag)};
      if (s.meta) args << QString::fromStdString(ex.is_string() ? ex.get<std::string>() : ex.dump());
      QString err, text;
      const auto o = parse_app_options(args, &err, &text);
      QVERIFY2(o.has_value(), qPrintable(args.join(' ') + QStringLiteral(": ") + err));
      RunConfig c;
      o->applyTo(c);
      RunConfig want;
      set_setting(want, s, ex, "test");
      if (s.chosen) s.chosen(want);
      QVERIFY2(c.to_json() == want.to_json() && c.out_dir == want.out_dir, qPrintable(args.join(' ')));
      QVERIFY2(c.to_json() != d.to_json() || c.out_dir != d.out_dir, qPrintable(args.join(' ')));
    }
  }

  void presetResetsFieldsItDoesNotName() {
    ConfigPanel p;
    QVERIFY(p.loadPresets(QStringLiteral(":/presets.json")));
    const QString tiny_preset = p.presetNames().filter(QStringLiteral("Tiny")).value(0);
    QVERIFY(!tiny_preset.isEmpty());
    RunConfig c = tiny(path(QStringLiteral("runs-preset")), 77);
    c.lr_g = 1e-3f;
    c.seed = 42;
    c.width = 100;
    c.eval_every = 50;
    c.scaler.growth_interval = 17;
    c.loss = LossKind::Hinge;
    p.setConfig(c);
    QVERIFY(p.applyPreset(tiny_preset));
    const RunConfig r = p.config(), d;
    QCOMPARE(r.width, 8);          // named
    QCOMPARE(r.eval_every, 0);     // named
    QCOMPARE(r.steps, int64_t{300});
    QCOMPARE(r.lr_g, d.lr_g);      // not named: the default again
    QCOMPARE(r.seed, d.seed);
    QCOMPARE(r.scaler.growth_interval, d.scaler.growth_interval);
    QVERIFY(r.loss == d.loss);
    QCOMPARE(r.runs_root, c.runs_root);  // where runs go is not part of a preset
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


  // ---- long work shows progress (issue 14) ----

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
    // The run stopped at the evaluating step: no half-trained classifier was cached.
    QVERIFY(QDir(path(QStringLiteral("classifier-cache"))).entryList(QDir::Files | QDir::NoDotAndDotDot).isEmpty());
    QCOMPARE(w.plots()->rows().back().step, int64_t{3});
  }


  // ---- small screens (issue 14) ----

  // The window goes well below 1024 px wide, and at 1024x700 the plots stay readable (in a
  // scroll area, in fewer columns) instead of being squeezed to ~60 px.
  void smallScreenLayout() {
    MainWindow w(no_settings());
    // First opened within the screen (offscreen: 800x600), not at a fixed 1600x1000.
    const QRect avail = w.screen()->availableGeometry();
    QVERIFY2(w.width() <= std::max(avail.width(), 800) && w.height() <= std::max(avail.height(), 600),
             qPrintable(QStringLiteral("%1x%2 on %3x%4").arg(w.width()).arg(w.height()).arg(avail.width()).arg(avail.height())));
    AppOptions o;
    o.size = QSize(1024, 700);
    w.applyOptions(o);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
    QString parts;  // what holds the window wide, should this fail
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
      parts += QStringLiteral(" %1 %2").arg(d->objectName()).arg(d->minimumSizeHint().width());
    parts += QStringLiteral(" central %1 status bar %2")
                 .arg(w.centralWidget()->minimumSizeHint().width())
                 .arg(w.statusBar()->minimumSizeHint().width());
    QVERIFY2(min.width() <= 900, qPrintable(QString::number(min.width()) + parts));
    QTRY_COMPARE(w.size(), QSize(1024, 700));
    for (const QString& id : w.plots()->plotIds()) {
      LivePlot* p = w.plots()->plot(id);
      QVERIFY2(p->height() >= 150, qPrintable(QStringLiteral("%1: %2 px").arg(id).arg(p->height())));
      QVERIFY2(p->width() >= 220, qPrintable(QStringLiteral("%1: %2 px").arg(id).arg(p->width())));
    }
    // Narrower still: the window follows (no forced 1200 px).
    w.resize(880, 640);
    QTRY_COMPARE(w.width(), 880);
  }


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

  void commandLineOptions() {
    QString err, text;
    auto o = parse_app_options({QStringLiteral("ampgan-studio"), QStringLiteral("--start"), QStringLiteral("--dataset"),
                                QStringLiteral("fashion-mnist"), QStringLiteral("--width"), QStringLiteral("32"),
                                QStringLiteral("--precision"), QStringLiteral("bf16"), QStringLiteral("--steps"),
                                QStringLiteral("500"), QStringLiteral("--res"), QStringLiteral("64"),
                                QStringLiteral("--out"), QStringLiteral("/tmp/x"), QStringLiteral("--batch"),
                                QStringLiteral("16"), QStringLiteral("--backend"), QStringLiteral("cpu")},
                               &err, &text);
    QVERIFY2(o.has_value(), qPrintable(err));
    QVERIFY(o->start);
    RunConfig c;
    o->applyTo(c);
    QCOMPARE(c.dataset, std::string("fashion-mnist"));
    QCOMPARE(c.width, 32);
    QCOMPARE(c.batch, 16);
    QCOMPARE(c.res, 64);
    QCOMPARE(c.steps, int64_t{500});
    QVERIFY(c.precision == Precision::BF16);
    QCOMPARE(c.backend, std::string("cpu"));
    QCOMPARE(c.out_dir, std::string("/tmp/x"));

    struct Bad {
      QStringList args;
      QString must_mention;
    };
    const QList<Bad> bad = {
        {{QStringLiteral("--width"), QStringLiteral("abc")}, QStringLiteral("--width")},
        {{QStringLiteral("--precision"), QStringLiteral("fp8")}, QStringLiteral("fp8")},
        {{QStringLiteral("--res"), QStringLiteral("48")}, QStringLiteral("--res")},
        {{QStringLiteral("--batch"), QStringLiteral("1")}, QStringLiteral("--batch")},
        {{QStringLiteral("--backend"), QStringLiteral("tpu")}, QStringLiteral("tpu")},
        {{QStringLiteral("--lr"), QStringLiteral("-1")}, QStringLiteral("--lr")},
        {{QStringLiteral("--size"), QStringLiteral("big")}, QStringLiteral("--size")},
        {{QStringLiteral("--no-such-option")}, QStringLiteral("no-such-option")},
        {{QStringLiteral("--start"), QStringLiteral("--compare")}, QStringLiteral("--compare")},
    };
    for (const Bad& b : bad) {
      err.clear();
      QVERIFY2(!parse_app_options(QStringList{QStringLiteral("ampgan-studio")} + b.args, &err, &text).has_value(),
               qPrintable(b.args.join(' ')));
      QVERIFY2(err.contains(b.must_mention), qPrintable(err));
    }
    QVERIFY(!parse_app_options({QStringLiteral("ampgan-studio"), QStringLiteral("--help")}, &err, &text).has_value());
    QVERIFY(text.contains(QStringLiteral("--start")));
  }

  void eventLogCoalescesOverflows() {
    EventLog log;
    for (int i = 1; i <= 100; ++i) {  // a flood: every step overflows
      RunEvent o{i, 0, EventType::Overflow, i % 2 ? "D" : "G", "overflow"};
      log.addEvent(o);
      RunEvent s{i, 0, EventType::ScaleChange, i % 2 ? "D" : "G", "scale"};
      s.data["from"] = 65536.0 / (1 << ((i - 1) / 2 % 8));
      s.data["to"] = 32768.0 / (1 << ((i - 1) / 2 % 8));
      log.addEvent(s);
    }
    QCOMPARE(log.rowCount(), 1);
    QVERIFY2(log.rowText(0).contains(QStringLiteral("100 overflows (D 50, G 50)")), qPrintable(log.rowText(0)));
    QVERIFY2(log.rowText(0).contains(QStringLiteral("S_D 2^16")), qPrintable(log.rowText(0)));
    QCOMPARE(log.overflowEvents(), 100);
    log.addEvent(RunEvent{150, 0, EventType::Checkpoint, "", "checkpoint step_000150.safetensors"});
    QCOMPARE(log.rowCount(), 2);
    log.addEvent(RunEvent{160, 0, EventType::Overflow, "D", "overflow"});  // after another event: a new group
    QCOMPARE(log.rowCount(), 3);
    log.addEvent(RunEvent{160 + EventLog::kGroupWindow + 1, 0, EventType::Overflow, "D", "overflow"});  // too far apart
    QCOMPARE(log.rowCount(), 4);
    QVERIFY(log.rowText(3).contains(QStringLiteral("1 overflow in D")));
  }

  void settingsPersist() {
    RunConfig saved;
    {
      MainWindow w;  // reads and writes settings
      RunConfig c = tiny(path(QStringLiteral("runs9")), 777);
      c.width = 24;
      c.precision = Precision::BF16;
      c.scaler.growth_interval = 123;
      w.configPanel()->setConfig(c);
      w.plots()->setSmoothing(0.5);
      w.show();
      QVERIFY(w.close());
      saved = c;
    }
    MainWindow w2;
    const RunConfig r = w2.configPanel()->config();
    QCOMPARE(r.width, 24);
    QCOMPARE(r.steps, int64_t{777});
    QVERIFY(r.precision == Precision::BF16);
    QCOMPARE(r.scaler.growth_interval, 123);
    QCOMPARE(r.runs_root, saved.runs_root);
    QCOMPARE(w2.plots()->smoothing(), 0.5);
  }

  void presetsAndIcon() {
    MainWindow w(no_settings());
    QVERIFY(!w.windowIcon().isNull());
    QVERIFY2(w.configPanel()->presetNames().size() >= 5, "resources/presets.json was not loaded");
    const QString tiny_preset = w.configPanel()->presetNames().filter(QStringLiteral("Tiny")).value(0);
    QVERIFY(!tiny_preset.isEmpty());
    QVERIFY(w.configPanel()->applyPreset(tiny_preset));
    const RunConfig c = w.configPanel()->config();
    QCOMPARE(c.width, 8);
    QCOMPARE(c.batch, 8);
    QVERIFY(c.precision == Precision::FP16);
    QVERIFY(!w.configPanel()->applyPreset(QStringLiteral("no such preset")));
    // Every preset is a valid configuration.
    for (const QString& name : w.configPanel()->presetNames()) {
      QVERIFY2(w.configPanel()->applyPreset(name), qPrintable(name));
      RunConfig p = w.configPanel()->config();
      if (p.dataset.empty()) p.dataset = "synthetic";
      try {
        p.validate();
      } catch (const std::exception& e) {
        QFAIL(qPrintable(name + QStringLiteral(": ") + QString::fromUtf8(e.what())));
      }
    }
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
};

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
