// The Doctor tab as a user drives it: Run ▸ Diagnose precision on the panel's settings, the table
// filling in probe by probe (the rows `ampgan doctor` prints), the answer applied to the panel,
// and the refusals that leave the window as it was.
#include <QAction>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include "tests/ui/ui_test_support.h"
#include "ui/settings/config_panel.h"
#include "ui/views/doctor_view.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class DoctorTest : public UiTestCase {
  Q_OBJECT

 private slots:
  // FP16 with the loss scale started at 2^24 and grown every 10 steps: plain FP16 skips about 10%
  // of its updates, on every host kind, since dynamic scaling grows the scale until it overflows
  // again (8-10% measured); so the doctor tries the scaler's settings and finds a clean one
  // (growth interval 100 here); Apply puts it into the panel.
  void doctorFindsAScalerRemedyAndApplyFillsThePanel() {
    MainWindow w(no_settings());
    QList<UiError> errors;
    w.setErrorPresenter([&](const UiError& e) { errors << e; });
    w.resize(1600, 1000);
    w.show();
    DoctorView* doc = w.doctorView();
    RunConfig c = tiny(path(QStringLiteral("runs-doctor")), 500);
    w.configPanel()->setConfig(c);  // FP32: refused, nothing starts
    QVERIFY(!w.diagnosePrecision());
    QCOMPARE(errors.size(), 1);
    QVERIFY2(errors[0].hint.contains(QStringLiteral("FP16 AMP or BF16 AMP")), qPrintable(errors[0].text()));
    QVERIFY(!w.busy());

    c.precision = Precision::FP16;
    c.scaler.init_scale = 16777216.0f;
    c.scaler.growth_interval = 10;
    w.configPanel()->setConfig(c);
    QSignalSpy done(&w, &MainWindow::doctorDone);
    w.action(QStringLiteral("actionDiagnose"))->trigger();
    QCOMPARE(w.tabs()->currentWidget(), doc);
    QVERIFY(w.busy());
    QVERIFY(!w.action(QStringLiteral("actionStart"))->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 2 * kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QCOMPARE(errors.size(), 1);

    const DoctorResult* r = doc->result();
    QVERIFY(r && doc->hasAnswer());
    QTableWidget* t = doc->table();
    QCOMPARE(t->rowCount(), static_cast<int>(r->candidates.size()));
    QVERIFY(t->rowCount() >= 3);  // the reference, plain FP16, at least one remedy
    QCOMPARE(t->item(0, 1)->text(), QStringLiteral("FP32 reference"));
    QCOMPARE(t->item(1, 1)->text(), QStringLiteral("plain FP16"));
    QVERIFY2(t->item(1, t->columnCount() - 1)->text().contains(QStringLiteral("skip rate")),
             qPrintable(t->item(1, t->columnCount() - 1)->text()));
    QCOMPARE(t->item(r->answer, 0)->text(), QStringLiteral("%1*").arg(r->answer));
    QCOMPARE(t->item(r->answer, t->columnCount() - 1)->text(), QStringLiteral("clean"));
    QCOMPARE(r->answer_candidate()->stage, std::string("scaler"));
    QVERIFY2(doc->summary().contains(QString::fromStdString(r->answer_candidate()->label)), qPrintable(doc->summary()));
    // The report is on disk, as `ampgan doctor` writes it.
    const QString dir = QString::fromStdString(r->base.out_dir);
    QVERIFY(QFile::exists(dir + QStringLiteral("/doctor.md")));
    QVERIFY(QFile::exists(dir + QStringLiteral("/doctor-config.json")));

    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/doctor-1600x1000.png"));
    w.resize(1024, 700);
    QApplication::processEvents();
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/doctor-1024x700.png"));

    auto* apply = doc->findChild<QPushButton*>(QStringLiteral("doctorApply"));
    QVERIFY(apply->isEnabled());
    apply->click();
    const RunConfig applied = w.configPanel()->config();
    const RunConfig& answer = r->answer_candidate()->config;
    QCOMPARE(applied.precision, Precision::FP16);
    QCOMPARE(applied.scaler.growth_interval, answer.scaler.growth_interval);
    QCOMPARE(applied.scaler.init_scale, answer.scaler.init_scale);
    QVERIFY(applied.scaler.growth_interval != 10 || applied.scaler.init_scale != 16777216.0f);
    QCOMPARE(applied.steps, int64_t{500});  // the user's run, not a probe's length
    QCOMPARE(applied.runs_root, c.runs_root);
  }

  // Stop during the search: it ends at once with the best answer so far, and the window is idle.
  // Width 32 makes a probe take seconds, so the stop lands in plain FP16's probe, the second.
  void doctorStopsWithTheBestSoFar() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    RunConfig c = tiny(path(QStringLiteral("runs-doctor-stop")), 500);
    c.width = 32;
    c.batch = 32;
    c.precision = Precision::FP16;
    c.scaler.init_scale = 16777216.0f;
    c.scaler.growth_interval = 10;
    w.configPanel()->setConfig(c);
    QSignalSpy done(&w, &MainWindow::doctorDone);
    QVERIFY(w.diagnosePrecision());
    // Once the reference has finished, during plain FP16's probe.
    QTRY_VERIFY_WITH_TIMEOUT(w.doctorView()->table()->rowCount() >= 1, kTimeout);
    w.stopTraining();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const DoctorResult* r = w.doctorView()->result();
    QVERIFY(r);
    QVERIFY(r->stopped);
    QVERIFY2(r->candidates.size() <= 2, "stopped in the second probe");
    QVERIFY2(w.doctorView()->summary().contains(QStringLiteral("stopped")), qPrintable(w.doctorView()->summary()));
    QVERIFY(w.action(QStringLiteral("actionStart"))->isEnabled());
  }

  // "Why did this step overflow?": a run started at scale 2^24 overflows at step 1 (D's
  // gradients, ~1e3 times the scale's headroom; the run's metrics say skipped_d = 1); clicking
  // Replay for that step (no checkpoint before it: from the run's start) names where it departs.
  void replayOfAnOverflowStepNamesWhereItDeparts() {
    RunConfig c = tiny(path(QStringLiteral("unused")), 20);
    c.precision = Precision::FP16;
    c.scaler.init_scale = 16777216.0f;
    const QString run = path(QStringLiteral("replay-run"));
    engine_run(run, c);
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.resize(1600, 1000);
    w.show();
    DoctorView* doc = w.doctorView();
    auto* replay = doc->findChild<QPushButton*>(QStringLiteral("replayStart"));
    QVERIFY(!replay->isEnabled());  // no run shown yet
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(run);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(replay->isEnabled(), kTimeout);
    QSignalSpy done(&w, &MainWindow::replayDone);
    doc->setReplayStep(1);
    replay->click();
    QCOMPARE(w.tabs()->currentWidget(), doc);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    const ReplayResult* r = doc->replayResult();
    QVERIFY(r);
    QVERIFY(r->from_start);
    QVERIFY(r->skipped_d);
    QVERIFY2(r->first_forward >= 0 || r->first_gradient >= 0, qPrintable(doc->replayVerdict()));
    QVERIFY2(doc->replayVerdict().contains(QStringLiteral("first")), qPrintable(doc->replayVerdict()));
    QCOMPARE(doc->replayTable()->rowCount(), static_cast<int>(r->forward.size() + r->gradients.size()));
    const int first =
        r->first_forward >= 0 ? r->first_forward : static_cast<int>(r->forward.size()) + r->first_gradient;
    QCOMPARE(doc->replayTable()->item(first, 5)->text(), QStringLiteral("first departure"));
    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/doctor-replay-1600x1000.png"));
    w.resize(1024, 700);
    QApplication::processEvents();
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/doctor-replay-1024x700.png"));
  }
};

QTEST_MAIN(DoctorTest)
#include "test_doctor.moc"
