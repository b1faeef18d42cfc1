// The window as a program (window/): small screens, the command line (every settings row among
// its options), settings kept from one session to the next, and File > Export generator > ONNX.
#include <onnx/onnx_pb.h>

#include <algorithm>

#include <QDialog>
#include <QDockWidget>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include "core/settings/settings_table.h"
#include "tests/ui/ui_test_support.h"
#include "ui/plots/plots_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/widgets/live_plot.h"
#include "ui/window/app_options.h"
#include "ui/window/run_exports.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestWindow : public UiTestCase {
  Q_OBJECT

 private slots:
  // The window goes well below 1024 px wide, and at 1024x700 the plots stay readable (in a
  // scroll area, in fewer columns) instead of being squeezed to ~60 px.
  void smallScreenLayout() {
    MainWindow w(no_settings());
    // First opened within the screen (offscreen: 800x600), not at a fixed 1600x1000.
    const QRect avail = w.screen()->availableGeometry();
    QVERIFY2(
        w.width() <= std::max(avail.width(), 800) && w.height() <= std::max(avail.height(), 600),
        qPrintable(
            QStringLiteral("%1x%2 on %3x%4").arg(w.width()).arg(w.height()).arg(avail.width()).arg(avail.height())));
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

  void commandLineOptions() {
    QString err, text;
    auto o = parse_app_options(
        {QStringLiteral("ampgan-studio"), QStringLiteral("--start"), QStringLiteral("--dataset"),
         QStringLiteral("fashion-mnist"), QStringLiteral("--width"), QStringLiteral("32"),
         QStringLiteral("--precision"), QStringLiteral("bf16"), QStringLiteral("--steps"), QStringLiteral("500"),
         QStringLiteral("--res"), QStringLiteral("64"), QStringLiteral("--out"), QStringLiteral("/tmp/x"),
         QStringLiteral("--batch"), QStringLiteral("16"), QStringLiteral("--backend"), QStringLiteral("cpu")},
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

  // Help > Keyboard shortcuts lists every action that has a key (read from the actions), each
  // shown in full.
  void helpListsTheKeyboardShortcuts() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    QAction* open_list = nullptr;
    for (QAction* m : w.menuBar()->actions())
      if (m->text().remove(QLatin1Char('&')) == QStringLiteral("Help"))
        for (QAction* a : m->menu()->actions())
          if (a->text().remove(QLatin1Char('&')) == QStringLiteral("Keyboard shortcuts")) open_list = a;
    QVERIFY(open_list);
    open_list->trigger();
    QDialog* d = nullptr;
    QTRY_VERIFY((d = w.findChild<QDialog*>(QStringLiteral("shortcutsDialog"))) && d->isVisible());
    auto* table = d->findChild<QTableWidget*>(QStringLiteral("shortcutsTable"));
    QVERIFY(table);
    QMap<QString, QString> keys;
    for (int r = 0; r < table->rowCount(); ++r) {
      keys.insert(table->item(r, 0)->text(), table->item(r, 1)->text());
      for (int c = 0; c < 2; ++c)
        QVERIFY2(table->columnWidth(c) >= table->fontMetrics().horizontalAdvance(table->item(r, c)->text()),
                 qPrintable(table->item(r, c)->text()));
    }
    const auto native = [](const QKeySequence& k) { return k.toString(QKeySequence::NativeText); };
    QCOMPARE(keys.value(QStringLiteral("Start")), native(QKeySequence(Qt::CTRL | Qt::Key_Return)));
    QCOMPARE(keys.value(QStringLiteral("Pause")), native(QKeySequence(Qt::Key_Space)));
    QCOMPARE(keys.value(QStringLiteral("Switch precision to FP16 AMP")), native(QKeySequence(Qt::CTRL | Qt::Key_3)));
    QCOMPARE(keys.value(QStringLiteral("AMP glossary")), native(QKeySequence(QKeySequence::HelpContents)));
    int with_keys = 0;
    for (QAction* a : w.findChildren<QAction*>())
      if (!a->shortcut().isEmpty() && !a->text().isEmpty()) ++with_keys;
    QVERIFY2(table->rowCount() >= with_keys - 2, qPrintable(QString::number(table->rowCount())));  // dock toggles
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

  // File > Export generator > ONNX…'s engine call, off the GUI thread: the finished run's newest
  // checkpoint becomes a model protobuf reads back (opset 17, input z); an unwritable path
  // comes back as one error dialog and no file.
  void exportsTheGeneratorAsOnnx() {
    MainWindow w(no_settings());
    QStringList errors;
    w.setErrorPresenter([&](const UiError& e) { errors << e.text(); });
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs-onnx")), 3));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join(QStringLiteral("; "))));

    QSignalSpy done(w.exports(), &RunExports::onnxExported);
    const QString out = path(QStringLiteral("g.onnx"));
    QVERIFY(w.exports()->exportOnnx(out));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kTimeout);
    QCOMPARE(done.at(0).at(1).toString(), QString());
    onnx::ModelProto m;
    QVERIFY(m.ParseFromString(file_bytes(out).toStdString()));
    QCOMPARE(m.opset_import(0).version(), 17);
    QCOMPARE(m.graph().input(0).name(), std::string("z"));
    QVERIFY(errors.isEmpty());

    const QString bad = path(QStringLiteral("missing/g.onnx"));
    QVERIFY(w.exports()->exportOnnx(bad));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kTimeout);
    QVERIFY(!done.at(1).at(1).toString().isEmpty());
    QCOMPARE(errors.size(), 1);
    QVERIFY2(errors[0].contains(bad), qPrintable(errors[0]));
    QVERIFY(!QFile::exists(bad));
  }
};

QTEST_MAIN(TestWindow)
#include "test_window.moc"
