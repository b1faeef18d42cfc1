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

  // Every fp16 step overflowing at the floor raises four alerts (D and G, a skip streak and the
  // scale floor): the banner says "n of 4" and steps through them, and a remedy's buttons apply
  // what it names (FP32 layers, then BF16) in the running run.
  void alertBannerStepsThroughAlertsAndAppliesRemedies() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-alerts")), 1000000);
    c.precision = Precision::FP16;
    c.scaler.init_scale = c.scaler.min_scale = c.scaler.max_scale = 1073741824.0f;
    w.configPanel()->setConfig(c);
    QVERIFY(w.startTraining());
    AlertBanner* banner = w.alertBanner();
    QTRY_VERIFY_WITH_TIMEOUT(banner->count() >= 4, kTimeout);
    auto* position = banner->findChild<QLabel*>(QStringLiteral("alertPosition"));
    QVERIFY(position && position->isVisible());
    QCOMPARE(position->text(), QStringLiteral("%1 of %1").arg(banner->count()));
    auto* prev = banner->findChild<QToolButton*>(QStringLiteral("alertPrevious"));
    auto* next = banner->findChild<QToolButton*>(QStringLiteral("alertNext"));
    QVERIFY(prev && next && prev->isEnabled() && !next->isEnabled());
    QTest::mouseClick(prev, Qt::LeftButton);
    QCOMPARE(position->text(), QStringLiteral("%1 of %2").arg(banner->count() - 1).arg(banner->count()));
    while (prev->isEnabled()) QTest::mouseClick(prev, Qt::LeftButton);
    QCOMPARE(banner->current(), 0);
    // Forward to a skip streak, whose remedy names --precision bf16 and --fp32-layers.
    QPushButton* to_bf16 = nullptr;
    for (int i = 0; i < banner->count() && !to_bf16; ++i) {
      to_bf16 = banner->findChild<QPushButton*>(QStringLiteral("alertApply-precision"));
      if (!to_bf16) QTest::mouseClick(next, Qt::LeftButton);
    }
    QVERIFY(to_bf16);
    QVERIFY2(!banner->text().contains(QStringLiteral("--")), qPrintable(banner->text()));
    QString why;
    for (QPushButton* b : banner->findChildren<QPushButton*>()) QVERIFY2(text_fits(b, &why), qPrintable(why));
    QPushButton* keep = banner->findChild<QPushButton*>(QStringLiteral("alertApply-fp32-layers"));
    QVERIFY(keep);
    QTest::mouseClick(keep, Qt::LeftButton);
    QVERIFY(!w.configPanel()->config().fp32_layers.empty());
    QTest::mouseClick(to_bf16, Qt::LeftButton);
    QCOMPARE(w.findChild<QComboBox*>(QStringLiteral("toolbarPrecision"))->currentText(), QStringLiteral("BF16 AMP"));
    QTRY_VERIFY_WITH_TIMEOUT(!w.plots()->rows().empty() && w.plots()->rows().back().precision == Precision::BF16,
                             kTimeout);
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
  }

  // Right-click on a layer in the Model tab, then in the Layers tab: "Keep … in FP32" puts it
  // into the settings panel's FP32 layers and the running model computes it in FP32.
  void rightClickKeepsALayerInFp32() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-keep-fp32")), 1000000);
    c.precision = Precision::FP16;
    c.layers_every = 2;  // rows in the Layers tab
    w.configPanel()->setConfig(c);
    QVERIFY(w.startTraining());
    ModelView* mv = w.modelView();
    QTRY_COMPARE_WITH_TIMEOUT(mv->rowCount(), 13, kTimeout);
    auto dtype_of = [mv](const QString& layer) {
      for (int r = 0; r < mv->rowCount(); ++r)
        if (mv->cell(r, 1) == layer) return mv->cell(r, 4);
      return QString();
    };
    QCOMPARE(dtype_of(QStringLiteral("D.2")), QStringLiteral("f16"));
    auto right_click_keep = [&](QTableWidget* table, const QString& layer, int column) {
      QTableWidgetItem* item = nullptr;
      for (int r = 0; r < table->rowCount() && !item; ++r)
        if (table->item(r, column)->text() == layer) item = table->item(r, column);
      QVERIFY2(item, qPrintable(layer));
      table->scrollToItem(item);
      bool clicked = false;
      QTimer::singleShot(200, &w, [&] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        QAction* keep = menu ? menu->findChild<QAction*>(QStringLiteral("keepLayerInFp32")) : nullptr;
        if (!keep) {
          if (menu) menu->close();
          return;
        }
        clicked = keep->text() == QStringLiteral("Keep %1 in FP32").arg(layer) && !keep->isChecked();
        QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(keep).center());
      });
      const QPoint at = table->visualItemRect(item).center();
      QContextMenuEvent e(QContextMenuEvent::Mouse, at, table->viewport()->mapToGlobal(at));
      QApplication::sendEvent(table->viewport(), &e);
      QVERIFY(clicked);
    };
    w.tabs()->setCurrentWidget(mv);
    right_click_keep(mv->findChild<QTableWidget*>(QStringLiteral("modelTable")), QStringLiteral("D.2"), 1);
    QTRY_COMPARE_WITH_TIMEOUT(dtype_of(QStringLiteral("D.2")), QStringLiteral("f32"), kTimeout);
    QVERIFY(w.configPanel()->config().fp32_layers == std::vector<std::string>{"D.2"});
    QTRY_VERIFY_WITH_TIMEOUT(w.layersView()->stepCount() >= 1, kTimeout);
    w.tabs()->setCurrentWidget(w.layersView());
    auto* layers = w.layersView()->findChild<QTableWidget*>(QStringLiteral("layersTable"));
    QTRY_VERIFY_WITH_TIMEOUT(layers->rowCount() >= 13, kTimeout);
    right_click_keep(layers, QStringLiteral("G.0"), 0);
    QTRY_COMPARE_WITH_TIMEOUT(dtype_of(QStringLiteral("G.0")), QStringLiteral("f32"), kTimeout);
    QVERIFY(w.configPanel()->layerInFp32(QStringLiteral("D.2")) && w.configPanel()->layerInFp32(QStringLiteral("G.0")));
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
  }

  // The run (FP16, width 8, batch 16, loss scale 2^24, growth every 10 steps): clicking a
  // D overflow marker frames the layer where it started, and that tensor's cell is marked in
  // magenta even when only part of its values are inf/NaN; no colour of the magnitude bar is
  // near that magenta, and the bar's label is shown in full.
  void layersHeatmapMarksPartlyNonFiniteTensors() {
    MainWindow w(no_settings());
    w.resize(1600, 1000);
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-heatmap")), 40);
    c.precision = Precision::FP16;
    c.batch = 16;
    c.scaler.init_scale = 16777216.0f;
    c.scaler.growth_interval = 10;
    w.configPanel()->setConfig(c);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY(w.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    w.tabs()->setCurrentIndex(0);
    LivePlot* scale = w.plots()->plot(QStringLiteral("loss_scale"));
    scale->replot();
    QCPGraph* over_d = scale->series(QStringLiteral("D overflow"));
    QVERIFY(over_d && !over_d->data()->isEmpty());
    auto* table = w.layersView()->findChild<QTableWidget*>(QStringLiteral("layersTable"));
    auto* heat = w.layersView()->findChild<QCustomPlot*>(QStringLiteral("layersHeatmap"));
    QVERIFY(table && heat);
    // Click the markers in turn (the was at step 31) until one selects a tensor that is
    // partly inf/NaN: the case a colour by the finite maximum hid.
    bool partial = false;
    QString tensor;
    for (auto pt = over_d->data()->constBegin(); pt != over_d->data()->constEnd() && !partial; ++pt) {
      w.tabs()->setCurrentIndex(0);
      scale->xAxis->setRange(pt->key - 5, pt->key + 5);
      scale->replot();
      QTest::mouseClick(scale, Qt::LeftButton, {}, over_d->coordsToPixels(pt->key, pt->value).toPoint());
      QTRY_COMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.layersView()));
      QVERIFY(!table->selectedItems().isEmpty());
      const int r = table->selectedItems().first()->row();
      const qint64 values = table->item(r, 2)->text().toLongLong(), bad = table->item(r, 5)->text().toLongLong();
      partial = bad > 0 && bad < values;
      tensor = table->item(r, 0)->text() + QLatin1Char('.') + table->item(r, 1)->text();
    }
    QVERIFY2(partial, "no overflow step with a partly inf/NaN tensor");
    heat->replot(QCustomPlot::rpImmediateRefresh);
    // The selected column (the frame) and the tensor's row (its y tick).
    QCPItemRect* frame = nullptr;
    for (int i = 0; i < heat->itemCount(); ++i)
      if (auto* r = qobject_cast<QCPItemRect*>(heat->item(i)); r && r->visible()) frame = r;
    QVERIFY(frame);
    const double col = (frame->topLeft->coords().x() + frame->bottomRight->coords().x()) / 2;
    double row = -1;
    const auto ticks = qSharedPointerCast<QCPAxisTickerText>(heat->yAxis->ticker())->ticks();
    for (auto it = ticks.constBegin(); it != ticks.constEnd(); ++it)
      if (it.value() == tensor) row = it.key();
    QVERIFY2(row >= 0, qPrintable(tensor));
    const QImage img = heat->toPixmap(heat->width(), heat->height(), 1.0).toImage();
    const QColor cell = img.pixelColor(static_cast<int>(heat->xAxis->coordToPixel(col)),
                                       static_cast<int>(heat->yAxis->coordToPixel(row)));
    QVERIFY2(cell.red() > 180 && cell.blue() > 130 && cell.green() < 140,
             qPrintable(QStringLiteral("%1 at step %2 is %3").arg(tensor).arg(col).arg(cell.name())));
    auto* bar = heat->findChild<QCPColorScale*>(QStringLiteral("layersColorScale"));
    QVERIFY(bar);
    for (int i = 0; i <= 100; ++i) {
      const QColor g = QColor::fromRgb(bar->gradient().color(i / 100.0, QCPRange(0, 1)));
      const double d = std::hypot(g.red() - 255, g.green() - 0, g.blue() - 255);
      QVERIFY2(d >= 150, qPrintable(QStringLiteral("%1 at %2").arg(g.name()).arg(i)));
    }
    const int label = QFontMetrics(bar->axis()->labelFont()).horizontalAdvance(bar->axis()->label());
    QVERIFY2(label <= bar->rect().height(),
             qPrintable(QStringLiteral("label %1 px on a %2 px bar").arg(label).arg(bar->rect().height())));
    QString why;
    QVERIFY2(text_fits(w.layersView()->findChild<QLabel*>(QStringLiteral("layersKey")), &why), qPrintable(why));
    // On a small screen too, each tensor's name has a line of its own on the y axis.
    w.resize(1024, 700);
    QTest::qWait(300);
    heat->replot(QCustomPlot::rpImmediateRefresh);
    const double rows_px = std::fabs(heat->yAxis->coordToPixel(0) - heat->yAxis->coordToPixel(1));
    QVERIFY2(rows_px >= QFontMetrics(heat->yAxis->tickLabelFont()).height(), qPrintable(QString::number(rows_px)));
    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) {
      for (const QSize size : {QSize(1600, 1000), QSize(1280, 800), QSize(1024, 700)}) {
        w.resize(size);
        QTest::qWait(400);
        heat->replot();
        w.grab().save(shots + QStringLiteral("/layers-marker-click-%1x%2.png").arg(size.width()).arg(size.height()));
      }
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

  // A healthy scaler probing its limit (an overflow every 13 steps, the scale growing between)
  // keeps a line per overflow, not one line for the whole run.
  void eventLogKeepsSparseOverflowsApart() {
    EventLog log;
    int overflows = 0;
    double scale = 65536;
    for (int step = 35; step <= 518; step += 13) {
      RunEvent o{step, 0, EventType::Overflow, "D", "overflow"};
      log.addEvent(o);
      RunEvent back{step, 0, EventType::ScaleChange, "D", "scale"};
      back.data["from"] = scale;
      back.data["to"] = scale / 2;
      log.addEvent(back);
      RunEvent grow{step + 10, 0, EventType::ScaleChange, "D", "scale"};
      grow.data["from"] = scale / 2;
      grow.data["to"] = scale;
      log.addEvent(grow);
      ++overflows;
    }
    QCOMPARE(overflows, 38);
    int overflow_lines = 0;
    for (int i = 0; i < log.rowCount(); ++i) {
      QVERIFY2(!log.rowText(i).contains(QStringLiteral("overflows")), qPrintable(log.rowText(i)));
      overflow_lines += log.rowText(i).contains(QStringLiteral("1 overflow in D"));
    }
    QCOMPARE(overflow_lines, overflows);
    QVERIFY2(log.rowText(1).contains(QStringLiteral("loss scale grew: S_D 2^15 → 2^16")), qPrintable(log.rowText(1)));
    // A scale set lower without an overflow (a switch to BF16 sets it to 1) did not "grow".
    RunEvent set{600, 0, EventType::ScaleChange, "D", "scale"};
    set.data["from"] = 1024.0;
    set.data["to"] = 1.0;
    log.addEvent(set);
    const QString last = log.rowText(log.rowCount() - 1);
    QVERIFY2(last.contains(QStringLiteral("loss scale set: S_D 2^10 → 2^0")), qPrintable(last));
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
