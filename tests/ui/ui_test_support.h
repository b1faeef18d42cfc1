// What the Qt tests of the studio share: the tiny CPU runs they train (synthetic shapes, 32x32,
// width 8, batch 8), runs written by the engine alone, file helpers, and UiTestCase, the fixture
// every test class derives from (a temporary folder and settings kept inside it). Waits are
// QTRY_* polls with generous timeouts; nothing asserts on timing.
#pragma once

#include <cstdint>
#include <vector>

#include <QByteArray>
#include <QImage>
#include <QMap>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include "core/settings/run_config.h"
#include "core/train/step_metrics.h"
#include "ui/window/main_window.h"

class QCPGraph;

namespace ampgan::ui::test {

constexpr int kTimeout = 90000;  // ms; a loaded 2-core CI machine is slow, not broken

// Each test class derives from this: path() names a file in a temporary folder of its own, and
// QSettings are read and written there, never in the user's settings.
class UiTestCase : public QObject {
  Q_OBJECT

 protected:
  QString path(const QString& name) const { return tmp_.filePath(name); }

 private slots:
  void initTestCase();

 private:
  QTemporaryDir tmp_;
};

// The tiny configuration every test trains.
RunConfig tiny(const QString& runs_root, int64_t steps);

MainWindow::Options no_settings();

QByteArray file_bytes(const QString& p);

QImage rgb(const QImage& i);

// A finished run written by the engine alone (as the CLI would), `steps` long.
void engine_run(const QString& dir, RunConfig c);
// A finished run written by the engine alone (as the CLI would).
void engine_run(const QString& dir, int64_t steps, uint64_t seed, float lr_g, int checkpoint_every = 0);

// Presses Sample now and returns the grid the worker delivered for it (it replaces a stored grid
// of the same step in the Samples dock, so the dock's count does not show it).
QImage sample_now(MainWindow& w);

// A CSV file's rows, minus the header; -1: unreadable. (Two names, as the tests call it.)
int count_rows(const QString& csv);
int csv_rows(const QString& csv);

// Synthetic rows: steps 1..n, FP32 until `switch_at`, then alternating FP16/FP32 every 2 steps
// for `switches` switches; an evaluation every 10 steps.
std::vector<StepMetrics> rows(int n, int switch_at = 0, int switches = 0);

// Every file under dir with its bytes' hash: a folder left exactly as it was compares equal.
QMap<QString, QByteArray> contents_under(const QString& dir);

QStringList files_under(const QString& dir);

// Whether a label's (or button's) text is shown in full: its width fits the widget, or for a
// word-wrapped label, its wrapped height fits. Why not, in `why`.
bool text_fits(const QWidget* w, QString* why = nullptr);

// The value a graph holds at exactly `key`; NaN if it has no point there.
double value_at(const QCPGraph* g, double key);

}  // namespace ampgan::ui::test
