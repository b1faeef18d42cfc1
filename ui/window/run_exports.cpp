#include "ui/window/run_exports.h"

#include <algorithm>

#include <QDialog>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QStatusBar>

#include "core/common/error.h"
#include "core/io/image_io.h"
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

}  // namespace ampgan::ui
