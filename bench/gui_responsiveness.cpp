// GUI responsiveness benchmark (not a test): builds the real MainWindow and measures
//
//  1. the longest gap of the GUI event loop while training runs at full speed on the worker
//     thread: a 5 ms QTimer records the largest interval between two of its ticks (goal: under
//     50 ms; the interval itself is 5 ms, so ~5-6 ms means no stall at all); once with fresh
//     charts and once with 100,000 points of history per curve being replotted live;
//  2. replot time with 100,000 points per curve: the live plots get 100,000 rows of metrics and
//     are replotted N times each (median), plus one whole-panel refresh of all nine charts;
//  3. the cost of appending a batch of rows to the panel when it already holds 100,000.
//
//   QT_QPA_PLATFORM=offscreen build-ui/bench/gui_responsiveness [--seconds 10] [--dataset synthetic]
//       [--width 16] [--batch 16] [--points 100000] [--replots 30] [--overlays 3]
//
// --overlays N draws N more runs of --points rows over every chart (as ticking them in the Runs
// tab does) in the second watch and the replot test.
//
// Runs under Xvfb too (DISPLAY set, no QT_QPA_PLATFORM): then painting goes through X11.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPointer>
#include <QSettings>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include "ui/plots/plots_panel.h"
#include "ui/runs/runs_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/window/main_window.h"

using namespace ampgan;
using namespace ampgan::ui;

namespace {

void spin_for(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
}

template <class Pred>
bool wait_until(Pred pred, int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (!pred()) {
    if (t.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  return true;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

std::vector<StepMetrics> fake_rows(int n, int64_t first_step) {
  std::vector<StepMetrics> rows(n);
  double scale = 65536;
  for (int i = 0; i < n; ++i) {
    StepMetrics& m = rows[i];
    m.step = first_step + i;
    const double t = static_cast<double>(m.step);
    m.precision = m.step < 50000 ? Precision::FP32 : Precision::FP16;
    m.loss_d = 0.7 + 0.3 * std::sin(t * 0.001) + 0.1 * std::sin(t * 1.7);
    m.loss_g = 1.5 + 0.5 * std::cos(t * 0.0013) + 0.2 * std::sin(t * 2.3);
    m.d_real = 0.6 + 0.2 * std::sin(t * 0.01);
    m.d_fake = 0.3 + 0.2 * std::cos(t * 0.01);
    m.grad_norm_d = 1 + 0.5 * std::sin(t * 0.05);
    m.grad_norm_g = 3 + std::cos(t * 0.03);
    const bool overflow = m.step % 997 == 0;
    if (overflow)
      scale = std::max(1.0, scale / 2);
    else if (m.step % 200 == 0)
      scale = std::min(16777216.0, scale * 2);
    m.scale_d = m.scale_g = scale;
    m.skipped_d = overflow;
    m.underflow_d = 0.01 + 0.005 * std::sin(t * 0.002);
    m.underflow_g = 0.02 + 0.005 * std::cos(t * 0.002);
    m.step_ms = 5 + std::sin(t);
    m.images_per_s = 3000 + 200 * std::sin(t * 0.1);
    m.memory_mb = 40;
    m.time_s = t * 0.005;
    if (m.step % 1000 == 0) m.swd = 50 * std::exp(-t / 50000.0);
  }
  return rows;
}

// Times every event the GUI thread handles, to name the slowest (what a long gap was spent on).
class TimingApp : public QApplication {
 public:
  using QApplication::QApplication;
  bool notify(QObject* receiver, QEvent* e) override {
    if (QThread::currentThread() != thread()) return QApplication::notify(receiver, e);
    if (depth_++ > 0) {  // only the outermost event counts (it includes the nested ones)
      const bool r = QApplication::notify(receiver, e);
      --depth_;
      return r;
    }
    QElapsedTimer t;
    t.start();
    const double cpu0 = thread_cpu_ms();
    const int type = static_cast<int>(e->type());
    const QPointer<QObject> alive(receiver);  // a deferred delete ends its receiver (and the event)
    const bool r = QApplication::notify(receiver, e);
    --depth_;
    const double ms = t.nsecsElapsed() / 1e6;
    if (recording && ms >= 0.5 && since_tick.size() < 200)
      since_tick.push_back(
          alive ? QStringLiteral("%1%2 %3 %4 ms")
                      .arg(QString::fromLatin1(receiver->metaObject()->className()),
                           receiver->objectName().isEmpty() ? QString() : QLatin1Char(':') + receiver->objectName())
                      .arg(type)
                      .arg(ms, 0, 'f', 1)
                : QStringLiteral("deleted %1 %2 ms").arg(type).arg(ms, 0, 'f', 1));
    if (recording && ms > slowest_ms) {
      slowest_ms = ms;
      slowest_cpu_ms = thread_cpu_ms() - cpu0;
      slowest = alive ? QStringLiteral("%1 (%2) event %3")
                            .arg(QString::fromLatin1(receiver->metaObject()->className()), receiver->objectName())
                            .arg(type)
                      : QStringLiteral("a deleted object, event %1").arg(type);
    }
    return r;
  }
  static double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  }
  // The benchmark's tick: remembers what the GUI thread did (events of >= 0.5 ms, outermost)
  // during the longest gap so far, to name what a long gap is made of.
  void tick(double gap_ms) {
    if (gap_ms > worst_gap_ms) {
      worst_gap_ms = gap_ms;
      worst_events = since_tick;
    }
    since_tick.clear();
  }
  bool recording = false;
  double slowest_ms = 0, slowest_cpu_ms = 0;
  QString slowest;
  double worst_gap_ms = 0;
  QStringList since_tick, worst_events;

 private:
  int depth_ = 0;  // GUI thread only
};

}  // namespace

int main(int argc, char** argv) {
  TimingApp app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("AMP GAN Studio bench"));
  QApplication::setApplicationName(QStringLiteral("gui_responsiveness"));
  QCommandLineParser p;
  p.addHelpOption();
  p.addOption({QStringLiteral("seconds"), QStringLiteral("Seconds of training to watch."), QStringLiteral("S"),
               QStringLiteral("10")});
  p.addOption(
      {QStringLiteral("dataset"), QStringLiteral("Dataset."), QStringLiteral("D"), QStringLiteral("synthetic")});
  p.addOption({QStringLiteral("width"), QStringLiteral("Network width."), QStringLiteral("W"), QStringLiteral("16")});
  p.addOption({QStringLiteral("batch"), QStringLiteral("Batch size."), QStringLiteral("B"), QStringLiteral("16")});
  p.addOption({QStringLiteral("precision"), QStringLiteral("Precision."), QStringLiteral("P"), QStringLiteral("fp16")});
  p.addOption({QStringLiteral("points"), QStringLiteral("Points per curve for the replot test."), QStringLiteral("N"),
               QStringLiteral("100000")});
  p.addOption({QStringLiteral("overlays"),
               QStringLiteral("Runs of --points rows each drawn over the charts (Runs tab) "
                              "in the second watch and the replot test."),
               QStringLiteral("N"), QStringLiteral("0")});
  p.addOption({QStringLiteral("replots"), QStringLiteral("Replots per chart (median)."), QStringLiteral("N"),
               QStringLiteral("30")});
  p.process(app);
  const int seconds = p.value(QStringLiteral("seconds")).toInt();
  const int points = p.value(QStringLiteral("points")).toInt();
  const int replots = p.value(QStringLiteral("replots")).toInt();
  const int overlays = p.value(QStringLiteral("overlays")).toInt();
  auto overlay_runs = [overlays](int n) {
    std::vector<RunOverlay> out;
    for (int k = 0; k < overlays; ++k) {
      auto rows = std::make_shared<std::vector<StepMetrics>>(fake_rows(n, 1));
      for (StepMetrics& m : *rows) {
        m.loss_d *= 1 + 0.1 * (k + 1);
        m.loss_g *= 1 - 0.05 * (k + 1);
      }
      out.push_back({QStringLiteral("run %1").arg(k + 1), overlay_color(k), {rows}});
    }
    return out;
  };

  QTemporaryDir tmp;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, tmp.filePath(QStringLiteral("settings")));
  MainWindow::Options mo;
  mo.restore_settings = false;
  mo.save_settings = false;
  MainWindow w(mo);
  w.setErrorPresenter([](const UiError& e) { std::fprintf(stderr, "error: %s\n", qPrintable(e.text())); });
  w.resize(1600, 1000);
  w.show();

  // ---- 1. event-loop gaps while training ----
  RunConfig cfg = w.configPanel()->config();
  cfg.dataset = p.value(QStringLiteral("dataset")).toStdString();
  cfg.synthetic_count = 1024;
  cfg.res = 32;
  cfg.width = p.value(QStringLiteral("width")).toInt();
  cfg.batch = p.value(QStringLiteral("batch")).toInt();
  cfg.steps = 100000000;
  cfg.precision = parse_precision(p.value(QStringLiteral("precision")).toStdString());
  cfg.backend = "cpu";
  cfg.sample_every = 50;
  cfg.checkpoint_every = 0;
  cfg.hist_every = 10;
  cfg.runs_root = tmp.filePath(QStringLiteral("runs")).toStdString();
  w.configPanel()->setConfig(cfg);
  // Watches the event loop for `seconds` while training runs; with `preload`, the charts first
  // get that many points of history per curve (steps before 1), so every live replot draws them.
  auto watch = [&](int preload) -> bool {
    bool started = false;
    const auto conn = QObject::connect(&w, &MainWindow::runStarted, [&] { started = true; });
    if (!w.startTraining()) return false;
    const bool ok = wait_until([&] { return started && w.plots()->rows().size() > 20; }, 120000);
    QObject::disconnect(conn);
    if (!ok) {
      std::fprintf(stderr, "training did not start\n");
      return false;
    }
    if (preload > 0) {
      std::vector<StepMetrics> hist = fake_rows(preload, -preload);
      for (StepMetrics& m : hist) m.precision = cfg.precision;
      const auto& live = w.plots()->rows();
      hist.insert(hist.end(), live.begin(), live.end());
      w.plots()->setHistory(hist);
      if (overlays > 0) w.plots()->setOverlays(overlay_runs(preload));
    }
    std::vector<double> gaps;
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed();
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(5);
    QObject::connect(&tick, &QTimer::timeout, [&] {
      const qint64 now = clock.nsecsElapsed();
      gaps.push_back((now - last) / 1e6);
      app.tick(gaps.back());
      last = now;
    });
    const size_t rows_before = w.plots()->rows().size();
    const qint64 replots_before = w.plots()->replotCount();
    last = clock.nsecsElapsed();
    app.slowest_ms = 0;
    app.worst_gap_ms = 0;
    app.since_tick.clear();
    app.worst_events.clear();
    app.recording = true;
    tick.start();
    spin_for(seconds * 1000);
    tick.stop();
    app.recording = false;
    const size_t rows_seen = w.plots()->rows().size() - rows_before;
    const qint64 replots_done = w.plots()->replotCount() - replots_before;
    QElapsedTimer stop_clock;
    stop_clock.start();
    w.stopTraining();
    wait_until([&] { return !w.busy(); }, 120000);
    const double stop_ms = stop_clock.elapsed();
    std::printf(
        "== GUI event loop while training (%s, width %d, batch %d, %s, CPU), %d points per curve already "
        "shown%s ==\n",
        cfg.dataset.c_str(), cfg.width, cfg.batch, precision_label(cfg.precision), preload,
        preload > 0 && overlays > 0 ? qPrintable(QStringLiteral(", %1 overlaid runs of as many").arg(overlays)) : "");
    std::printf("watched %.1f s: %zu steps arrived (%.0f steps/s), %lld chart replots\n", seconds * 1.0, rows_seen,
                rows_seen / double(seconds), static_cast<long long>(replots_done));
    std::printf("5 ms timer: %zu ticks, longest gap %.1f ms, p99 %.1f ms, median %.1f ms  (goal: longest < 50 ms)\n",
                gaps.size(), gaps.empty() ? NAN : *std::max_element(gaps.begin(), gaps.end()), percentile(gaps, 0.99),
                median(gaps));
    std::printf("slowest single event: %.1f ms wall, %.1f ms on the CPU (the rest: waiting for a core), %s\n",
                app.slowest_ms, app.slowest_cpu_ms, qPrintable(app.slowest));
    std::printf("the longest gap held: %s\n", app.worst_events.isEmpty()
                                                  ? "no event of 0.5 ms or more (waiting for a core)"
                                                  : qPrintable(app.worst_events.join(QStringLiteral(", "))));
    std::printf("Stop -> idle (run finished, checkpoint written): %.0f ms\n\n", stop_ms);
    return true;
  };
  if (!watch(0) || !watch(points)) return 1;

  // ---- 2. replot time with `points` points per curve ----
  PlotsPanel* panel = w.plots();
  panel->setHistory(fake_rows(points, 1));
  if (overlays > 0) panel->setOverlays(overlay_runs(points));
  QCoreApplication::processEvents();
  std::printf("== Replot with %d points per curve (median of %d) ==\n", points, replots);
  double panel_total = 0;
  for (LivePlot* plot : panel->allPlots()) {
    std::vector<double> t;
    for (int i = 0; i < replots; ++i) {
      QElapsedTimer e;
      e.start();
      plot->replot(QCustomPlot::rpImmediateRefresh);
      t.push_back(e.nsecsElapsed() / 1e6);
    }
    int max_points = 0;
    for (int g = 0; g < plot->graphCount(); ++g) max_points = std::max(max_points, plot->pointCount(g));
    std::printf("  %-40s %2d curves, %6d points max: %6.2f ms\n", qPrintable(plot->title().left(40)),
                plot->graphCount(), max_points, median(t));
    panel_total += median(t);
  }
  std::vector<double> whole;
  for (int i = 0; i < std::max(5, replots / 3); ++i) {
    for (LivePlot* plot : panel->allPlots()) plot->markDirty();
    QElapsedTimer e;
    e.start();
    for (LivePlot* plot : panel->allPlots()) {
      plot->setFollow(true);
      plot->refresh();
    }
    QCoreApplication::processEvents();  // the queued replots happen here
    whole.push_back(e.nsecsElapsed() / 1e6);
  }
  std::printf("  sum of the charts: %.1f ms; whole panel refresh (follow + queued replot): median %.1f ms\n",
              panel_total, median(whole));

  // ---- 3. appending a batch to full charts ----
  std::vector<double> app_t;
  int64_t next = points + 1;
  for (int i = 0; i < 20; ++i) {
    const auto rows = fake_rows(20, next);
    next += 20;
    QElapsedTimer e;
    e.start();
    panel->appendRows(rows);
    app_t.push_back(e.nsecsElapsed() / 1e6);
  }
  std::printf("\n== Appending a batch of 20 rows to charts holding %d points: median %.3f ms ==\n", points,
              median(app_t));
  w.close();
  return 0;
}
