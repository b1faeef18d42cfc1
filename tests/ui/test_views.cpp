// The AMP views (views/): the alert banner and the Layers view during overflows, the Model view
// under a per-layer policy, and the event log's grouping of overflow floods.
#include <QApplication>
#include <QComboBox>
#include <QContextMenuEvent>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QtTest>

#include "tests/ui/ui_test_support.h"
#include "ui/plots/plots_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/views/alert_banner.h"
#include "ui/views/compare_view.h"
#include "ui/views/event_log.h"
#include "ui/views/layers_view.h"
#include "ui/views/model_view.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestViews : public UiTestCase {
  Q_OBJECT

 private slots:
  // A run whose every fp16 step overflows at the floor shows an alert with a remedy above the
  // tabs, and the Layers view fills from layers.csv: one column per overflow step, one row per
  // gradient tensor, and a table for the selected step.
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

  // The Model view lists every layer with its dtype under the per-layer policy and follows a
  // policy switch made in the settings panel mid-run; clicking an overflow marker on the
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
    QVERIFY2(w.layersView()->selectedLayer().startsWith(QStringLiteral("D.")),
             qPrintable(w.layersView()->selectedLayer()));
    auto* table = w.layersView()->findChild<QTableWidget*>(QStringLiteral("layersTable"));
    QVERIFY(table && !table->selectedItems().isEmpty());
    QCOMPARE(table->selectedItems().first()->text(), w.layersView()->selectedLayer());
    if (!shots.isEmpty()) {
      QTest::qWait(300);
      w.grab().save(shots + QStringLiteral("/layers-view-marker-click.png"));
    }
  }

  // Sample now answers alike after a comparison and after Open run: the grid is shown (also when
  // the slider was elsewhere), the log says whether it is a saved grid, and the caption under it
  // is readable. With no grid to export, the advice names only what can be pressed.
  void sampleNowAnswersAfterCompareAndOpenRun() {
    MainWindow w(no_settings());
    QList<UiError> errors;
    w.setErrorPresenter([&](const UiError& e) { errors << e; });
    w.resize(1400, 900);
    w.show();
    auto* now = w.samples()->findChild<QPushButton*>(QStringLiteral("sampleNow"));
    auto* caption = w.samples()->findChild<QLabel*>(QStringLiteral("sampleCaption"));
    QVERIFY(now && caption && !now->isEnabled());
    QVERIFY(!w.exportGrid(path(QStringLiteral("no-grid.png")), 1));
    QCOMPARE(errors.size(), 1);
    QVERIFY2(!errors[0].hint.contains(QStringLiteral("Sample now")), qPrintable(errors[0].hint));
    errors.clear();

    auto last_log = [&w] { return w.eventLog()->rowText(w.eventLog()->rowCount() - 1); };
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs-sample-now")), 1000000));
    w.compareView()->setAmpMode(Precision::FP16);
    w.compareView()->setSteps(20);
    QSignalSpy done(&w, &MainWindow::comparisonDone);
    QVERIFY(w.runComparison());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy() && now->isEnabled(), kTimeout);
    QCOMPARE(w.samples()->count(), 2);  // the AMP run's grids of steps 10 and 20
    w.samples()->showIndex(0);
    int rows = w.eventLog()->rowCount();
    QVERIFY(!sample_now(w).isNull());
    QTRY_COMPARE(w.eventLog()->rowCount(), rows + 1);
    QCOMPARE(w.samples()->count(), 2);  // step 20 is on disk: the same weights, the same grid
    QCOMPARE(w.samples()->currentStep(), int64_t{20});
    QVERIFY2(
        last_log().contains(QStringLiteral("Sample now")) && last_log().contains(QStringLiteral("step_000020.png")),
        qPrintable(last_log()));
    QString why;
    QTRY_VERIFY2(text_fits(caption, &why), qPrintable(why));  // once the dock's layout has settled

    // An opened run whose newest checkpoint has no grid on disk: the grid is added, marked.
    const QString dir = path(QStringLiteral("sample-now-opened"));
    engine_run(dir, tiny(path(QStringLiteral("unused")), 20));
    QVERIFY(QFile::remove(dir + QStringLiteral("/samples/step_000020.png")));
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(dir);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(now->isEnabled(), kTimeout);
    QCOMPARE(w.samples()->count(), 1);
    rows = w.eventLog()->rowCount();
    QVERIFY(!sample_now(w).isNull());
    QTRY_COMPARE(w.eventLog()->rowCount(), rows + 1);
    QCOMPARE(w.samples()->count(), 2);
    QCOMPARE(w.samples()->currentStep(), int64_t{20});
    QVERIFY2(caption->text().contains(QStringLiteral("not saved")), qPrintable(caption->text()));
    QTRY_VERIFY2(text_fits(caption, &why), qPrintable(why));  // once the dock's layout has settled
    QVERIFY2(last_log().contains(QStringLiteral("not saved")), qPrintable(last_log()));
    // Pressed again at the same step: shown and logged, no second copy.
    QVERIFY(!sample_now(w).isNull());
    QTRY_COMPARE(w.eventLog()->rowCount(), rows + 2);
    QCOMPARE(w.samples()->count(), 2);
    QVERIFY(errors.isEmpty());
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
};

QTEST_MAIN(TestViews)
#include "test_views.moc"
