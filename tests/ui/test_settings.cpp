// The settings panel (settings/): input guards, ranges, the model choice, every row of the
// settings table through the panel, and presets.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <QWheelEvent>
#include <QtTest>

#include "core/settings/settings_table.h"
#include "tests/ui/ui_test_support.h"
#include "ui/common/amp_glossary.h"
#include "ui/plots/plots_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/views/event_log.h"
#include "ui/window/app_options.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

class TestSettings : public UiTestCase {
  Q_OBJECT

 private slots:
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
    QVERIFY2(refused.last().at(0).toString().contains(QStringLiteral("65536")),
             qPrintable(refused.last().at(0).toString()));
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
      QVERIFY2(r.to_json() == c.to_json(),
               qPrintable(key + QStringLiteral(": ") + QString::fromStdString(r.to_json().dump())));
      QCOMPARE(r.out_dir, c.out_dir);
      QCOMPARE(r.runs_root, c.runs_root);
      if (s.panel != PanelGroup::None && s.widget != PanelWidget::Custom) {
        auto* w = p.findChild<QWidget*>(QString::fromLatin1(s.object_name ? s.object_name : s.key));
        QVERIFY2(w, qPrintable(key + QStringLiteral(" has no field")));
        QVERIFY2(!w->toolTip().isEmpty(), qPrintable(key + QStringLiteral(" has no tooltip")));
        // A row naming a glossary entry shows that entry's text (a misspelt name shows none).
        if (s.glossary)
          QVERIFY2(!glossary::entry(s.glossary).isEmpty() && w->toolTip().startsWith(glossary::entry(s.glossary)),
                   qPrintable(key + QStringLiteral(": no glossary entry ") + QString::fromLatin1(s.glossary)));
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

  // A preset sets every field it names and resets the others to the defaults.
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
    QCOMPARE(r.width, 8);       // named
    QCOMPARE(r.eval_every, 0);  // named
    QCOMPARE(r.steps, int64_t{300});
    QCOMPARE(r.lr_g, d.lr_g);  // not named: the default again
    QCOMPARE(r.seed, d.seed);
    QCOMPARE(r.scaler.growth_interval, d.scaler.growth_interval);
    QVERIFY(r.loss == d.loss);
    QCOMPARE(r.runs_root, c.runs_root);  // where runs go is not part of a preset
  }

  // File ▸ Load settings with the doctor's answer (doctor-config.json: only what differs from the
  // defaults): the panel takes it as a whole configuration, as a preset (no leftovers of the
  // settings before; where runs go and this machine's device kept), Undo puts them back; a file
  // that is not JSON, names an unknown key or is missing is refused with its name, and the
  // settings stay as they were. ampgan-studio --config FILE does the same at the start, the
  // options given beside it on top.
  void loadSettingsFileAppliesADoctorAnswerAndRefusesBadFiles() {
    MainWindow w(no_settings());
    QList<UiError> errors;
    w.setErrorPresenter([&](const UiError& e) { errors << e; });
    RunConfig before = w.configPanel()->config();
    before.width = 48;
    before.n_dis = 2;
    before.precision = Precision::FP32;
    before.runs_root = path(QStringLiteral("runs")).toStdString();
    w.configPanel()->setConfig(before);
    auto write = [&](const QString& name, const QByteArray& text) {
      QFile f(path(name));
      if (!f.open(QIODevice::WriteOnly)) return QString();
      f.write(text);
      return f.fileName();
    };
    const QString answer =
        write(QStringLiteral("doctor-config.json"),
              R"({"backend": "cuda", "dataset": "synthetic", "init_scale": 8192.0, "precision": "fp16", "batch": 24})");
    QVERIFY(w.action(QStringLiteral("actionLoadSettings"))->isEnabled());
    QVERIFY(w.loadSettings(answer));
    QVERIFY2(errors.isEmpty(), qPrintable(errors.value(0).text()));
    RunConfig c = w.configPanel()->config();
    QVERIFY(c.precision == Precision::FP16);
    QCOMPARE(c.scaler.init_scale, 8192.0f);
    QCOMPARE(c.batch, 24);
    QCOMPARE(c.width, w.configPanel()->defaults().width);  // not the 48 before: a whole configuration
    QCOMPARE(c.n_dis, w.configPanel()->defaults().n_dis);
    QCOMPARE(c.backend, before.backend);  // this machine's device, not the file's
    QCOMPARE(c.runs_root, before.runs_root);
    const EventLog* log = w.eventLog();
    QVERIFY(log->rowCount() > 0);
    QVERIFY2(log->rowText(log->rowCount() - 1).contains(QStringLiteral("doctor-config.json")),
             qPrintable(log->rowText(log->rowCount() - 1)));
    QVERIFY(w.configPanel()->canUndo());
    w.configPanel()->undo();
    c = w.configPanel()->config();
    QCOMPARE(c.width, 48);
    QCOMPARE(c.n_dis, 2);
    QVERIFY(c.precision == Precision::FP32);

    const QString bad_json = write(QStringLiteral("broken.json"), R"({"precision": "fp16",)");
    const QString bad_key = write(QStringLiteral("typo.json"), R"({"precision": "fp16", "widht": 32})");
    const QString bad_value = write(QStringLiteral("range.json"), R"({"batch": -3})");
    const QString missing = path(QStringLiteral("no-such.json"));
    int n = 0;
    for (const QString& f : {bad_json, bad_key, bad_value, missing}) {
      QVERIFY2(!w.loadSettings(f), qPrintable(f));
      QCOMPARE(errors.size(), ++n);
      QVERIFY2(errors.last().text().contains(QFileInfo(f).fileName()), qPrintable(errors.last().text()));
      const RunConfig now = w.configPanel()->config();
      QCOMPARE(now.width, 48);
      QVERIFY(now.precision == Precision::FP32);
    }
    QVERIFY2(errors[1].text().contains(QStringLiteral("widht")), qPrintable(errors[1].text()));

    QString err, text;
    const auto o = parse_app_options({QStringLiteral("ampgan-studio"), QStringLiteral("--config"), answer,
                                      QStringLiteral("--batch"), QStringLiteral("40")},
                                     &err, &text);
    QVERIFY2(o.has_value(), qPrintable(err));
    MainWindow w2(no_settings());
    w2.applyOptions(*o);
    c = w2.configPanel()->config();
    QVERIFY(c.precision == Precision::FP16);
    QCOMPARE(c.scaler.init_scale, 8192.0f);
    QCOMPARE(c.batch, 40);  // the option beside --config wins
    for (const QString& f : {bad_json, bad_key, missing}) {
      QVERIFY(!parse_app_options({QStringLiteral("ampgan-studio"), QStringLiteral("--config"), f}, &err, &text));
      QVERIFY2(err.contains(QStringLiteral("--config")) && err.contains(QFileInfo(f).fileName()), qPrintable(err));
    }
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

  // A preset chosen in the panel's Preset box (by keyboard, as a user would) sets the precision
  // the toolbar and Run > Switch precision show, and the one Start trains in.
  void presetPrecisionReachesToolbarAndMenu() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    auto* preset = w.configPanel()->findChild<QComboBox*>(QStringLiteral("preset"));
    auto* toolbar = w.findChild<QComboBox*>(QStringLiteral("toolbarPrecision"));
    QVERIFY(preset && toolbar);
    QCOMPARE(toolbar->currentText(), QStringLiteral("FP32"));
    QVERIFY(w.action(QStringLiteral("actionPrecision1"))->isChecked());
    const int tiny_at = preset->findText(QStringLiteral("Tiny"), Qt::MatchStartsWith);
    QVERIFY(tiny_at > 0);
    while (preset->currentIndex() < tiny_at) QTest::keyClick(preset, Qt::Key_Down);
    QVERIFY(w.configPanel()->precision() == Precision::FP16);
    QCOMPARE(toolbar->currentText(), QStringLiteral("FP16 AMP"));
    QVERIFY(w.action(QStringLiteral("actionPrecision3"))->isChecked());
    QVERIFY(!w.action(QStringLiteral("actionPrecision1"))->isChecked());
    // And back: a preset in BF16.
    const int bf16_at = preset->findText(QStringLiteral("BF16"), Qt::MatchStartsWith);
    QVERIFY(bf16_at > 0);
    while (preset->currentIndex() > bf16_at) QTest::keyClick(preset, Qt::Key_Up);
    while (preset->currentIndex() < bf16_at) QTest::keyClick(preset, Qt::Key_Down);
    QCOMPARE(toolbar->currentText(), QStringLiteral("BF16 AMP"));
    QVERIFY(w.action(QStringLiteral("actionPrecision4"))->isChecked());
  }

  // DCGAN -> ResNet -> DCGAN by the wheel on the focused Model box leaves every setting as it
  // was; the recipe's fields are named in the log, Undo and Defaults work, and a wheel over an
  // unfocused box (the model, the toolbar's precision, the samples' zoom) changes nothing.
  void modelRecipeIsUndoneAndWheelSparesUnfocusedBoxes() {
    MainWindow w(no_settings());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ConfigPanel* p = w.configPanel();
    auto* model = p->findChild<QComboBox*>(QStringLiteral("model"));
    auto* toolbar = w.findChild<QComboBox*>(QStringLiteral("toolbarPrecision"));
    QVERIFY(model && toolbar);
    const RunConfig before = p->config();
    QVERIFY(before.model == ModelFamily::DCGAN);
    auto wheel = [](QWidget* wd, int dy) {
      const QPointF at(wd->width() / 2.0, wd->height() / 2.0);
      QWheelEvent e(at, wd->mapToGlobal(at), QPoint(), QPoint(0, dy), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                    false);
      QCoreApplication::sendEvent(wd, &e);
    };
    QList<QComboBox*> boxes = w.findChildren<QComboBox*>();
    QList<int> at;
    for (QComboBox* b : boxes) at << b->currentIndex();
    for (QComboBox* b : boxes)
      if (b->isVisible() && !b->hasFocus() && b->count() > 1) wheel(b, b->currentIndex() + 1 < b->count() ? -120 : 120);
    for (int i = 0; i < boxes.size(); ++i)
      QVERIFY2(boxes[i]->currentIndex() == at[i],
               qPrintable(boxes[i]->objectName() + QLatin1Char(' ') + boxes[i]->currentText()));
    // The focused box: one flick down is ResNet (its recipe), one up DCGAN again.
    w.activateWindow();
    const bool focus = QTest::qWaitForWindowActive(&w);
    auto flick = [&](int dy) {
      if (focus) {
        model->setFocus();
        QTRY_VERIFY(model->hasFocus());
        wheel(model, dy);
      } else {  // no window focus on this platform: the keyboard reaches the box all the same
        QTest::keyClick(model, dy < 0 ? Qt::Key_Down : Qt::Key_Up);
      }
    };
    auto last_log = [&w] { return w.eventLog()->rowText(w.eventLog()->rowCount() - 1); };
    flick(-120);
    QVERIFY(p->config().model == ModelFamily::ResNet);
    QVERIFY(p->config().loss == LossKind::Hinge);
    QCOMPARE(p->config().n_dis, 5);
    QVERIFY2(last_log().contains(QStringLiteral("hinge")) && last_log().contains(QStringLiteral("Undo")),
             qPrintable(last_log()));
    flick(120);
    QVERIFY(p->config().model == ModelFamily::DCGAN);
    QCOMPARE(p->config().to_json(), before.to_json());  // hinge, TTUR, beta1 0 and 5 D steps gone
    // Undo: the recipe again, then the Undo button.
    auto* undo = p->findChild<QToolButton*>(QStringLiteral("settingsUndo"));
    auto* defaults = p->findChild<QToolButton*>(QStringLiteral("settingsDefaults"));
    QVERIFY(undo && defaults && !undo->isEnabled());
    flick(-120);
    QVERIFY(undo->isEnabled());
    QTest::mouseClick(undo, Qt::LeftButton);
    QCOMPARE(p->config().to_json(), before.to_json());
    QVERIFY(p->config().model == ModelFamily::DCGAN);
    // Defaults, and Undo of it.
    auto* batch = p->findChild<QSpinBox*>(QStringLiteral("batch"));
    batch->setValue(12);
    p->setPrecision(Precision::BF16);
    QTest::mouseClick(defaults, Qt::LeftButton);
    QCOMPARE(p->config().batch, p->defaults().batch);
    QVERIFY(p->config().precision == p->defaults().precision);
    QCOMPARE(toolbar->currentText(), QString::fromLatin1(precision_label(p->defaults().precision)));
    QTest::mouseClick(undo, Qt::LeftButton);
    QCOMPARE(p->config().batch, 12);
    QVERIFY(p->config().precision == Precision::BF16);
    QCOMPARE(toolbar->currentText(), QStringLiteral("BF16 AMP"));
    QString why;
    for (QToolButton* b : {undo, defaults}) QVERIFY2(text_fits(b, &why), qPrintable(why));
  }

  // Without a usable GPU the studio starts lighter than 64/64/2000 (and says so), and Defaults
  // goes back to that lighter start.
  void cpuDefaultsAreLighter() {
    MainWindow w(no_settings());
    ConfigPanel* p = w.configPanel();
    if (p->gpuUsable()) QSKIP("a usable GPU: the full defaults apply");
    const RunConfig c = p->config();
    QCOMPARE(c.width, 32);
    QCOMPARE(c.batch, 32);
    QCOMPARE(c.steps, int64_t{1000});
    QVERIFY2(p->deviceNote().contains(QStringLiteral("width 32, batch 32, 1000 steps")), qPrintable(p->deviceNote()));
    p->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(128);
    QTest::mouseClick(p->findChild<QToolButton*>(QStringLiteral("settingsDefaults")), Qt::LeftButton);
    QCOMPARE(p->config().batch, 32);
  }

  // Save… stores the settings as the user's preset (named in a dialog); the next start lists it
  // under Preset, and choosing it there loads the settings back.
  void userPresetIsSavedAndLoadedBack() {
    RunConfig mine = tiny(path(QStringLiteral("runs-user-preset")), 444);
    mine.width = 16;
    mine.batch = 12;
    mine.precision = Precision::BF16;
    mine.scaler.growth_interval = 77;
    {
      MainWindow w(no_settings());
      w.show();
      w.configPanel()->setConfig(mine);
      bool named = false;
      QTimer::singleShot(200, &w, [&] {
        auto* d = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
        if (!d) return;
        named = true;
        d->setTextValue(QStringLiteral("my small bf16"));
        d->accept();
      });
      QTest::mouseClick(w.configPanel()->findChild<QToolButton*>(QStringLiteral("settingsSavePreset")), Qt::LeftButton);
      QVERIFY(named);
      QVERIFY(w.configPanel()->userPresetNames().contains(QStringLiteral("my small bf16")));
    }
    MainWindow w(no_settings());
    w.show();
    auto* preset = w.configPanel()->findChild<QComboBox*>(QStringLiteral("preset"));
    const int at = preset->findText(QStringLiteral("my small bf16"));
    QVERIFY(at > 0);
    QVERIFY(w.configPanel()->config().width != 16);
    while (preset->currentIndex() < at) QTest::keyClick(preset, Qt::Key_Down);
    const RunConfig r = w.configPanel()->config();
    QCOMPARE(r.width, 16);
    QCOMPARE(r.batch, 12);
    QCOMPARE(r.steps, int64_t{444});
    QCOMPARE(r.scaler.growth_interval, 77);
    QVERIFY(r.precision == Precision::BF16);
    QCOMPARE(w.findChild<QComboBox*>(QStringLiteral("toolbarPrecision"))->currentText(), QStringLiteral("BF16 AMP"));
    QString why;
    QVERIFY2(text_fits(w.configPanel()->findChild<QToolButton*>(QStringLiteral("settingsSavePreset")), &why),
             qPrintable(why));
  }

  // The quick-tour preset shows the AMP story at once: overflows (skipped steps) within the
  // first steps, the loss scale backing off from 2^24.
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
};

QTEST_MAIN(TestSettings)
#include "test_settings.moc"
