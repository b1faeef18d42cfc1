#include "ui/window/run_exports.h"

#include <algorithm>
#include <atomic>

#include <QDialog>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QProgressDialog>
#include <QStatusBar>
#include <QThread>
#include <QTimer>

#include "core/common/error.h"
#include "core/io/image_io.h"
#include "core/run/onnx_export.h"
#include "core/run/run_folder.h"
#include "core/run/timelapse.h"
#include "ui/plots/plots_panel.h"
#include "ui/runs/metrics_csv.h"
#include "ui/runs/run_controller.h"
#include "ui/views/compare_view.h"
#include "ui/views/event_log.h"
#include "ui/views/sample_view.h"
#include "ui/widgets/live_plot.h"
#include "ui/window/export_dialogs.h"

namespace ampgan::ui {

RunExports::RunExports(Parts parts, QObject* parent) : QObject(parent), p_(std::move(parts)) {}

RunExports::~RunExports() {
  if (onnx_thread_.joinable()) onnx_thread_.join();
}

bool RunExports::exportGrid(const QString& path, int factor) {
  const QImage img = p_.samples->currentImage();
  if (img.isNull()) {
    // Advise Sample now only where the button can be pressed (a generator of the current run).
    p_.report(tr("exporting the sample grid"), tr("there is no sample grid yet"),
              p_.samples->sampleNowEnabled()
                  ? tr("press Sample now under the Samples dock, or train until the first samples appear")
                  : tr("start a run and train until the first samples appear (Samples every), or open a run "
                       "that has samples"));
    return false;
  }
  try {
    io::Image8 out = from_qimage(img);
    if (factor > 1) out = io::upscale_nearest(out, factor);
    io::write_png(path.toStdString(), out);
  } catch (const Error& e) {
    p_.report(tr("exporting the sample grid"), QString::fromStdString(e.what_failed() + " (" + e.subject() + ")"),
              QString::fromStdString(e.hint()));
    return false;
  }
  const int64_t step = p_.samples->currentStep();
  p_.log->addNote(QStringLiteral("export"), tr("sample grid of step %1 written to %2").arg(step).arg(path), step);
  p_.status->showMessage(tr("Grid written to %1").arg(path), 5000);
  return true;
}

bool RunExports::exportMetricsCsv(const QString& path) {
  const QString src = p_.runs->metricsFile();
  // While idle the current run's own file is complete and final: copy it. Otherwise (or
  // without a folder) write what the plots hold (the same run), in the same format.
  if (!p_.busy() && p_.runs->hasRun() && QFile::exists(src)) {
    if (QFileInfo(path).absoluteFilePath() != QFileInfo(src).absoluteFilePath()) {
      QFile::remove(path);
      if (!QFile::copy(src, path)) {
        p_.report(tr("exporting metrics"), tr("could not write %1").arg(path), tr("choose a writable location"));
        return false;
      }
    }
  } else {
    const auto& rows = p_.plots->rows();
    const QString err = write_metrics_csv(path, std::vector<StepMetrics>(rows.begin(), rows.end()));
    if (!err.isEmpty()) {
      p_.report(tr("exporting metrics"), err, tr("choose a writable location"));
      return false;
    }
  }
  p_.log->addNote(QStringLiteral("export"), tr("metrics written to %1").arg(path));
  return true;
}

bool RunExports::exportPlot(const QString& id, const QString& path, const PlotExportSize& size) {
  LivePlot* p = p_.plots->plot(id);
  if (!p && id == QStringLiteral("hist_g")) p = p_.plots->histogram('G');
  if (!p && id == QStringLiteral("hist_d")) p = p_.plots->histogram('D');
  if (!p) p = p_.compare->plot(id);
  if (!p || !p->saveTo(path, size.width, size.height, size.dpi)) {
    p_.report(tr("exporting a plot"), tr("could not write %1").arg(path),
              tr("use a .png or .pdf name in a writable folder"));
    return false;
  }
  return true;
}

void RunExports::chooseAndExportGrid() {
  const QImage img = p_.samples->currentImage();
  if (img.isNull()) {
    exportGrid({}, 1);  // reports that there is nothing to export
    return;
  }
  ExportGridDialog d(p_.runs->gridExportPath(p_.samples->currentStep()), 4, img.size(), p_.dialog_parent);
  if (d.exec() == QDialog::Accepted && !d.path().isEmpty()) exportGrid(d.path(), d.factor());
}

void RunExports::chooseAndExportCsv() {
  const QString path = QFileDialog::getSaveFileName(p_.dialog_parent, tr("Export metrics"),
                                                    p_.runs->metricsExportPath(), tr("CSV files (*.csv)"));
  if (!path.isEmpty()) exportMetricsCsv(path);
}

int RunExports::exportAllPlots(const QString& path, AllPlots kind, const PlotExportSize& size) {
  const QList<LivePlot*> plots = p_.plots->allPlots();
  int n = 0;
  if (kind == AllPlots::Pngs) {
    QDir().mkpath(path);
    for (LivePlot* p : plots)
      n += p->saveTo(QDir(path).filePath(p->objectName() + QStringLiteral(".png")), size.width, size.height, size.dpi);
  } else {
    const bool ok =
        kind == AllPlots::Pdf ? export_plots_pdf(plots, path, size) : export_plots_grid_png(plots, path, 3, size);
    n = ok ? static_cast<int>(plots.size()) : 0;
  }
  if (n == 0) {
    p_.report(tr("exporting the plots"), tr("could not write %1").arg(path), tr("choose a writable place"));
    return 0;
  }
  p_.log->addNote(QStringLiteral("export"), tr("%1 plots written to %2").arg(n).arg(path));
  p_.status->showMessage(tr("%1 plots written to %2").arg(n).arg(path), 5000);
  return n;
}

void RunExports::chooseAndExportPlots() {
  ExportPlotsDialog d(p_.runs->hasRun() ? p_.runs->dir() : QDir::homePath(), p_.dialog_parent);
  if (d.exec() != QDialog::Accepted || d.path().isEmpty()) return;
  PlotExportSize size;
  size.width = d.pixelWidth();
  size.height = d.pixelHeight();
  size.dpi = d.dpi();
  exportAllPlots(d.path(), static_cast<AllPlots>(d.kind()), size);
}

bool RunExports::exportTimelapse(const QString& path) {
  const QString during = tr("exporting the timelapse");
  if (!p_.runs->hasRun()) {
    p_.report(during, tr("there is no run"), tr("train, or open a run folder (File > Open run)"));
    return false;
  }
  const RunFolder run(p_.runs->dir().toStdString());
  std::atomic<bool> stop{false};
  std::atomic<int> done{0}, total{0};
  TimelapseResult result;
  QString what, subject, hint;
  bool stopped = false;
  QThread* worker = QThread::create([&] {
    try {
      result = write_timelapse(run, path.toStdString(), {}, [&](int d, int n) {
        done = d;
        total = n;
        return !stop.load();
      });
    } catch (const Cancelled&) {
      stopped = true;
    } catch (const Error& e) {
      what = QString::fromStdString(e.what_failed());
      subject = QString::fromStdString(e.subject());
      hint = QString::fromStdString(e.hint());
    } catch (const std::exception& e) {
      what = QString::fromLocal8Bit(e.what());
    }
  });
  worker->setObjectName(QStringLiteral("timelapse export"));
  QProgressDialog progress(tr("Writing %1…").arg(QFileInfo(path).fileName()), tr("Stop"), 0, 0, p_.dialog_parent);
  progress.setObjectName(QStringLiteral("timelapseProgress"));
  progress.setWindowModality(Qt::WindowModal);
  progress.setMinimumDuration(300);
  connect(&progress, &QProgressDialog::canceled, &progress, [&] { stop = true; });
  QTimer poll;
  connect(&poll, &QTimer::timeout, &progress, [&] {
    progress.setMaximum(total.load());
    progress.setValue(done.load());
  });
  QEventLoop loop;  // the window stays responsive, its input held by the modal dialog
  connect(worker, &QThread::finished, &loop, &QEventLoop::quit);
  poll.start(100);
  worker->start(QThread::LowPriority);
  loop.exec();
  worker->wait();
  delete worker;
  if (stopped) {
    p_.status->showMessage(tr("Timelapse stopped; %1 was not written").arg(path), 5000);
    return false;
  }
  if (!what.isEmpty()) {
    p_.report(during, subject.isEmpty() ? what : tr("%1 (%2)").arg(what, subject), hint);
    return false;
  }
  const QString note = tr("timelapse of %1 grids written to %2 (%3 s, %4)")
                           .arg(result.grids)
                           .arg(path)
                           .arg(result.seconds, 0, 'f', 1)
                           .arg(QString::fromStdString(result.encoder));
  p_.log->addNote(QStringLiteral("export"), note);
  p_.status->showMessage(note, 5000);
  return true;
}

void RunExports::chooseAndExportTimelapse() {
  const QString start =
      p_.runs->hasRun() ? QDir(p_.runs->dir()).filePath(QStringLiteral("timelapse.mp4")) : QDir::homePath();
  const QString path = QFileDialog::getSaveFileName(p_.dialog_parent, tr("Export timelapse"), start,
                                                    tr("MP4 video (*.mp4);;Animated WebP (*.webp)"));
  if (!path.isEmpty()) exportTimelapse(path);
}

bool RunExports::exportOnnx(const QString& path) {
  if (!p_.runs->hasRun()) {
    p_.report(tr("exporting the generator"), tr("there is no run yet"),
              tr("train or open a run first: the export reads its newest checkpoint"));
    return false;
  }
  if (onnx_running_) {
    p_.report(tr("exporting the generator"), tr("an ONNX export is still being written"),
              tr("wait for it to finish (the status bar says when)"));
    return false;
  }
  if (onnx_thread_.joinable()) onnx_thread_.join();
  const std::filesystem::path run = p_.runs->dir().toStdString(), out = path.toStdString();
  onnx_running_ = true;
  p_.status->showMessage(tr("Writing %1…").arg(path));
  // Loading a large checkpoint and writing the model take seconds: off the GUI thread. The
  // destructor joins the thread, so `this` outlives the queued call back.
  onnx_thread_ = std::thread([this, run, out, path] {
    QString what, hint, summary;
    try {
      OnnxExportOptions o;
      o.ema = RunFolder(run).read_config().ema_decay > 0.0f;  // the generator the samples show
      const OnnxExportResult r = export_onnx(run, -1, out, o);
      summary = tr("%1 generator of step %2 (opset %3, %4 nodes)")
                    .arg(o.ema ? tr("EMA") : tr("trained"))
                    .arg(r.step)
                    .arg(r.opset)
                    .arg(r.nodes);
    } catch (const Error& e) {
      what = QString::fromStdString(e.what_failed() + (e.subject().empty() ? "" : " (" + e.subject() + ")"));
      hint = QString::fromStdString(e.hint());
    } catch (const std::exception& e) {
      what = QString::fromUtf8(e.what());
    }
    QMetaObject::invokeMethod(
        this, [this, path, what, hint, summary] { onnxDone(path, what, hint, summary); }, Qt::QueuedConnection);
  });
  return true;
}

void RunExports::onnxDone(const QString& path, const QString& what, const QString& hint, const QString& summary) {
  onnx_running_ = false;
  if (!what.isEmpty()) {
    p_.status->clearMessage();
    p_.report(tr("exporting the generator as ONNX"), what, hint);
  } else {
    p_.log->addNote(QStringLiteral("export"), tr("%1 written to %2").arg(summary, path));
    p_.status->showMessage(tr("ONNX model written to %1").arg(path), 5000);
  }
  emit onnxExported(path, what);
}

void RunExports::chooseAndExportOnnx() {
  if (!p_.runs->hasRun()) {
    exportOnnx({});  // reports that there is nothing to export
    return;
  }
  const QString path = QFileDialog::getSaveFileName(p_.dialog_parent, tr("Export generator as ONNX"),
                                                    QDir(p_.runs->dir()).filePath(QStringLiteral("generator.onnx")),
                                                    tr("ONNX models (*.onnx)"));
  if (!path.isEmpty()) exportOnnx(path);
}

}  // namespace ampgan::ui
