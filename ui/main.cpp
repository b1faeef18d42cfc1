// ampgan-studio: the desktop application. See ui/window/main_window.h for the window and
// ui/window/app_options.h for the command line (--start and friends, for demos and screenshots).
#include <cstdio>
#include <cstring>

#include <QApplication>
#include <QTimer>

#include "ui/window/app_options.h"
#include "ui/window/main_window.h"

int main(int argc, char** argv) {
  using namespace ampgan::ui;
  // --help and --version print without a display (QApplication needs one).
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--version")) {
      QStringList args;
      for (int k = 0; k < argc; ++k) args << QString::fromLocal8Bit(argv[k]);
      QString error, text;
      parse_app_options(args, &error, &text);
      std::fputs(qPrintable(text.isEmpty() ? error + "\n" : text), text.isEmpty() ? stderr : stdout);
      return text.isEmpty() ? 2 : 0;
    }
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("AMP GAN Studio"));
  QApplication::setApplicationName(QStringLiteral("ampgan-studio"));
  QApplication::setApplicationVersion(QStringLiteral(AMPGAN_VERSION));
  // Lets Wayland compositors match the window to its desktop entry and icon.
  QGuiApplication::setDesktopFileName(QStringLiteral(AMPGAN_APP_ID));

  QString error, text;
  const std::optional<AppOptions> opts = parse_app_options(QApplication::arguments(), &error, &text);
  if (!opts) {
    if (!text.isEmpty()) {
      std::fputs(qPrintable(text), stdout);
      return 0;
    }
    std::fprintf(stderr, "ampgan-studio: %s\n", qPrintable(error));
    return 2;
  }

  MainWindow::Options mo;
  mo.restore_settings = !opts->fresh_settings;
  MainWindow window(mo);
  window.applyOptions(*opts);
  window.show();
  if (opts->start)
    QTimer::singleShot(0, &window, [&window] {
      if (!window.startTraining()) std::fprintf(stderr, "ampgan-studio: could not start: see the window\n");
    });
  if (opts->compare) QTimer::singleShot(0, &window, [&window] { window.runComparison(); });
  if (opts->doctor) QTimer::singleShot(0, &window, [&window] { window.diagnosePrecision(); });
  if (!opts->open.isEmpty()) QTimer::singleShot(0, &window, [&window, dir = opts->open] { window.openRun(dir); });
  if (!opts->watch.isEmpty()) QTimer::singleShot(0, &window, [&window, dir = opts->watch] { window.watchRun(dir); });
  return app.exec();
}
