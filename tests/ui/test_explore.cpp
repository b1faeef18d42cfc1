// The Explore tab as a user drives it: an opened run's seeds, the same images `ampgan sample
// --seeds` makes (one core function, core/run/latent_explorer.h), two picked seeds interpolated
// and played, the exports, and a live run's grid that follows training.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include "core/backend/backend.h"
#include "core/io/opencv.h"
#include "core/run/checkpoint.h"
#include "core/run/latent_explorer.h"
#include "core/run/onnx_export.h"
#include "tests/ui/ui_test_support.h"
#include "ui/settings/config_panel.h"
#include "ui/views/explore_view.h"

using namespace ampgan;
using namespace ampgan::ui;
using namespace ampgan::ui::test;

namespace {

// What the engine alone makes of `seed` (of class `cls` for a conditional run; -1: the first
// class) with the run's newest checkpoint (as ampgan sample does).
QImage engine_image(const QString& run, uint64_t seed, float truncation, int cls = -1) {
  auto backend = create_backend("cpu");
  auto t = trainer_from_checkpoint(*backend, onnx_source_checkpoint(run.toStdString(), -1));
  const DcganSpec& m = t->config().model;
  const std::vector<int32_t> classes = cls >= 0 ? std::vector<int32_t>{cls} : std::vector<int32_t>{};
  const std::vector<float> img =
      explore_images(*t, seed_latent(seed, m.latent, truncation), 1, truncation, {}, classes);
  return to_qimage(io::to_image8(img.data(), 0, m.res, m.channels));
}

}  // namespace

class ExploreTest : public UiTestCase {
  Q_OBJECT

 private slots:
  void exploreAnOpenedRunAsTheCliDoes() {
    const QString run = path(QStringLiteral("explore-run"));
    engine_run(run, tiny(path(QStringLiteral("unused")), 30));
    MainWindow w(no_settings());
    QList<UiError> errors;
    w.setErrorPresenter([&](const UiError& e) { errors << e; });
    w.resize(1600, 1000);
    w.show();
    ExploreView* ex = w.exploreView();
    w.tabs()->setCurrentWidget(ex);
    auto* generate = ex->findChild<QPushButton*>(QStringLiteral("exploreGenerate"));
    QVERIFY(!generate->isEnabled());
    QVERIFY2(ex->message().contains(QStringLiteral("Open run")), qPrintable(ex->message()));
    QVERIFY(!ex->generate());  // no generator: refused, said in the message line

    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(run);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QCOMPARE(w.tabs()->currentWidget(), ex);  // an opened run's seeds, not its charts, when exploring
    // With a generator and nothing shown the tab makes the default seeds' images by itself, and
    // plays the walk from seed 0 to seed 1.
    QTRY_VERIFY_WITH_TIMEOUT(ex->seedCount() == 32 && ex->frameCount() == 16 && !ex->busy(), kTimeout);
    auto* play = ex->findChild<QPushButton*>(QStringLiteral("explorePlay"));
    QVERIFY(play->isChecked());
    QCOMPARE(rgb(ex->frameImage(15)), rgb(ex->seedImage(1)));
    play->click();  // paused
    QVERIFY(!play->isChecked());
    // A refused seed list names the problem and asks for nothing.
    ex->setSeedsText(QStringLiteral("5-1"));
    QVERIFY(!ex->generate());
    QVERIFY2(ex->message().contains(QStringLiteral("backwards")), qPrintable(ex->message()));
    QVERIFY(!ex->busy());

    ex->setSeedsText(QStringLiteral("0-999"));  // more than the tab holds
    QVERIFY(!ex->generate());
    QVERIFY2(ex->message().contains(QStringLiteral("at most 256")), qPrintable(ex->message()));
    ex->setSeedsText(QStringLiteral("0-11"));
    ex->setTruncation(0.7);
    QVERIFY(ex->generate());
    QTRY_VERIFY_WITH_TIMEOUT(!ex->busy(), kTimeout);
    QCOMPARE(ex->seedCount(), 12);
    QCOMPARE(ex->seedAt(3), uint64_t{3});
    QVERIFY2(ex->message().contains(QStringLiteral("step 30")) && ex->message().contains(QStringLiteral("0.7")),
             qPrintable(ex->message()));
    // Pixel for pixel what the engine (and so `ampgan sample RUN --seeds 3 --truncation 0.7`) makes.
    QCOMPARE(rgb(ex->seedImage(3)), rgb(engine_image(run, 3, 0.7f)));
    QVERIFY(rgb(ex->seedImage(3)) != rgb(ex->seedImage(4)));

    // Click seed 2, Ctrl+click seed 5: the interpolation's ends; its end frames are their images.
    auto* grid = ex->findChild<QListWidget*>(QStringLiteral("exploreGrid"));
    grid->item(2)->setSelected(true);
    grid->item(5)->setSelected(true);
    QCOMPARE(ex->findChild<QLineEdit*>(QStringLiteral("exploreSeedA"))->text(), QStringLiteral("2"));
    QCOMPARE(ex->findChild<QLineEdit*>(QStringLiteral("exploreSeedB"))->text(), QStringLiteral("5"));
    QVERIFY(ex->interpolate());
    QTRY_VERIFY_WITH_TIMEOUT(!ex->busy(), kTimeout);
    QCOMPARE(ex->frameCount(), 16);
    QCOMPARE(rgb(ex->frameImage(0)), rgb(ex->seedImage(2)));
    QCOMPARE(rgb(ex->frameImage(15)), rgb(ex->seedImage(5)));
    QVERIFY(rgb(ex->frameImage(7)) != rgb(ex->seedImage(5)));
    QVERIFY(play->isEnabled() && !play->isChecked());
    const int before = ex->playingFrame();
    play->click();
    QTRY_VERIFY_WITH_TIMEOUT(ex->playingFrame() != before, 5000);
    play->click();

    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");  // docs/screenshots, by hand
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/explore-1600x1000.png"));
    w.resize(1024, 700);
    QApplication::processEvents();
    for (QWidget* c : ex->findChildren<QWidget*>()) {
      QString why;
      if ((qobject_cast<QLabel*>(c) || qobject_cast<QAbstractButton*>(c)) && c->isVisible())
        QVERIFY2(text_fits(c, &why), qPrintable(why));
    }
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/explore-1024x700.png"));

    // Exports at 3x: the grid (8 columns), the selected image, the frames, the video.
    QVERIFY(ex->exportGrid(path(QStringLiteral("x/grid.png")), 3));
    const QImage g(path(QStringLiteral("x/grid.png")));
    QCOMPARE(g.size(), QSize((8 * 34 + 2) * 3, (2 * 34 + 2) * 3));
    QVERIFY(ex->exportSelected(path(QStringLiteral("x/one.png")), 3));
    QCOMPARE(QImage(path(QStringLiteral("x/one.png"))).size(), QSize(96, 96));
    QVERIFY(ex->exportFrames(path(QStringLiteral("x/frames")), 1));
    QCOMPARE(QDir(path(QStringLiteral("x/frames"))).entryList({QStringLiteral("frame_*.png")}).size(), 16);
    QCOMPARE(rgb(QImage(path(QStringLiteral("x/frames/frame_00015.png")))), rgb(ex->seedImage(5)));
    const QByteArray first = file_bytes(path(QStringLiteral("x/frames/frame_00000.png")));
    QVERIFY(!ex->exportFrames(path(QStringLiteral("x/frames")), 2));  // frames there: refused, nothing written
    QVERIFY2(ex->message().contains(QStringLiteral("frame_00000.png")), qPrintable(ex->message()));
    QCOMPARE(file_bytes(path(QStringLiteral("x/frames/frame_00000.png"))), first);
    QVERIFY(ex->exportVideo(path(QStringLiteral("x/walk.mp4")), 8, 8));
    cv::VideoCapture v(path(QStringLiteral("x/walk.mp4")).toStdString());
    QVERIFY(v.isOpened());
    int frames = 0;
    cv::Mat f;
    while (v.read(f)) {
      QCOMPARE(f.cols, 256);
      ++frames;
    }
    QCOMPARE(frames, 16);
    QVERIFY(!ex->exportVideo(path(QStringLiteral("x/walk.gif")), 8, 8));
    QVERIFY2(ex->message().contains(QStringLiteral("walk.gif")), qPrintable(ex->message()));
    QVERIFY(!QFileInfo::exists(path(QStringLiteral("x/walk.gif"))));
    QCOMPARE(errors.size(), 1);  // the refused video, shown as an error too
  }

  // A conditional run: the class picker appears with the run's classes; every class gives the
  // seeds again a row per class, one class gives every image that class, and each image is the
  // engine's image of its seed and class.
  void exploreAConditionalRunByClass() {
    const QString run = path(QStringLiteral("conditional-run"));
    RunConfig c = tiny(path(QStringLiteral("unused")), 20);
    c.conditional = true;  // the synthetic shapes are labelled by shape
    engine_run(run, c);
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.resize(1600, 1000);
    w.show();
    ExploreView* ex = w.exploreView();
    w.tabs()->setCurrentWidget(ex);
    auto* picker = ex->findChild<QComboBox*>(QStringLiteral("exploreClass"));
    QVERIFY(!picker->isVisible());  // no conditional generator yet
    QSignalSpy opened(&w, &MainWindow::runOpened);
    w.openRun(run);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(ex->seedCount() == 32 && !ex->busy(), kTimeout);
    QVERIFY(picker->isVisible());
    const int classes = picker->count() - 2;  // "In turn", "Every class", then each class
    QVERIFY(classes >= 2);
    QCOMPARE(ex->classAt(1), 1 % classes);  // in turn by default
    ex->setSeedsText(QStringLiteral("0-5"));
    ex->setClassChoice(ExploreRequest::kEveryClass);
    QVERIFY(ex->generate());
    QTRY_VERIFY_WITH_TIMEOUT(!ex->busy(), kTimeout);
    QCOMPARE(ex->seedCount(), 6 * classes);
    QCOMPARE(ex->seedAt(6 + 2), uint64_t{2});
    QCOMPARE(ex->classAt(6 + 2), 1);
    QCOMPARE(rgb(ex->seedImage(6 + 2)), rgb(engine_image(run, 2, 0, 1)));
    QVERIFY(rgb(ex->seedImage(2)) != rgb(ex->seedImage(6 + 2)));  // seed 2 of class 0 and of class 1
    auto* grid = ex->findChild<QListWidget*>(QStringLiteral("exploreGrid"));
    QCOMPARE(grid->visualItemRect(grid->item(6)).top(), grid->visualItemRect(grid->item(7)).top());
    QVERIFY(grid->visualItemRect(grid->item(6)).top() > grid->visualItemRect(grid->item(5)).top());  // a row per class
    const QString shots = qEnvironmentVariable("AMPGAN_SHOT_DIR");
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/explore-classes-1600x1000.png"));
    ex->setClassChoice(1);
    QVERIFY(ex->generate());
    QTRY_VERIFY_WITH_TIMEOUT(!ex->busy(), kTimeout);
    QCOMPARE(ex->seedCount(), 6);
    for (int i = 0; i < 6; ++i) QCOMPARE(ex->classAt(i), 1);
    QCOMPARE(rgb(ex->seedImage(2)), rgb(engine_image(run, 2, 0, 1)));
    QVERIFY2(ex->message().contains(QStringLiteral("class 1")), qPrintable(ex->message()));
    // A walk keeps the chosen class: its end frames are that class's images of its seeds.
    ex->setInterpolation(2, 4, 5, LatentPath::Slerp);
    QVERIFY(ex->interpolate());
    QTRY_VERIFY_WITH_TIMEOUT(!ex->busy(), kTimeout);
    QCOMPARE(rgb(ex->frameImage(0)), rgb(ex->seedImage(2)));
    QCOMPARE(rgb(ex->frameImage(4)), rgb(ex->seedImage(4)));
    w.resize(1024, 700);
    QApplication::processEvents();
    if (!shots.isEmpty()) w.grab().save(shots + QStringLiteral("/explore-classes-1024x700.png"));
  }

  void exploreFollowsTrainingLive() {
    MainWindow w(no_settings());
    w.setErrorPresenter([](const UiError& e) { QFAIL(qPrintable(e.text())); });
    w.show();
    ExploreView* ex = w.exploreView();
    w.configPanel()->setConfig(tiny(path(QStringLiteral("runs-explore-live")), 1000000));
    QVERIFY(w.startTraining());
    w.tabs()->setCurrentWidget(ex);
    auto* generate = ex->findChild<QPushButton*>(QStringLiteral("exploreGenerate"));
    QTRY_VERIFY_WITH_TIMEOUT(generate->isEnabled(), kTimeout);  // the default seeds' images, made on showing
    ex->setSeedsText(QStringLiteral("0-3"));
    ex->findChild<QCheckBox*>(QStringLiteral("exploreFollow"))->setChecked(true);
    QVERIFY(ex->generate());
    QTRY_VERIFY_WITH_TIMEOUT(ex->seedCount() == 4, kTimeout);
    const QImage first = rgb(ex->seedImage(0));
    const QString first_message = ex->message();
    // The next sample grids ask again: the same seed, later weights.
    QTRY_VERIFY_WITH_TIMEOUT(ex->message() != first_message && !ex->busy(), kTimeout);
    QCOMPARE(ex->seedCount(), 4);
    QVERIFY(rgb(ex->seedImage(0)) != first);
    w.stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), kTimeout);
  }
};

QTEST_MAIN(ExploreTest)
#include "test_explore.moc"
