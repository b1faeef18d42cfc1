#include "ui/widgets/plot_export.h"

#include <algorithm>

#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>

#include "ui/widgets/live_plot.h"

namespace ampgan::ui {

bool export_plots_pdf(const QList<LivePlot*>& plots, const QString& path, const PlotExportSize& size) {
  if (plots.isEmpty()) return false;
  QPdfWriter writer(path);
  writer.setCreator(QStringLiteral("AMP GAN Studio"));
  writer.setTitle(QStringLiteral("AMP GAN Studio charts"));
  // One page per chart, sized to the chart (as QCustomPlot::savePdf does), at 96 dpi.
  writer.setResolution(96);
  writer.setPageMargins(QMarginsF(0, 0, 0, 0));
  writer.setPageSize(QPageSize(QSizeF(size.width, size.height) / 96.0, QPageSize::Inch));
  QCPPainter painter;
  if (!painter.begin(&writer)) return false;
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  painter.setMode(QCPPainter::pmNonCosmetic);
  for (int i = 0; i < plots.size(); ++i) {
    if (i > 0 && !writer.newPage()) return false;
    plots[i]->drawForExport(&painter, size.width, size.height);
  }
  return painter.end();
}

bool export_plots_grid_png(const QList<LivePlot*>& plots, const QString& path, int columns,
                           const PlotExportSize& size) {
  if (plots.isEmpty() || size.width <= 0 || size.height <= 0) return false;
  columns = std::clamp(columns, 1, static_cast<int>(plots.size()));
  const int rows = (static_cast<int>(plots.size()) + columns - 1) / columns;
  const double scale = std::clamp(size.dpi, 48, 1200) / 96.0;
  QImage sheet(columns * size.width, rows * size.height, QImage::Format_RGB32);
  sheet.fill(Qt::white);
  QPainter p(&sheet);
  for (int i = 0; i < plots.size(); ++i) {
    const QPixmap pix =
        plots[i]->exportPixmap(static_cast<int>(size.width / scale), static_cast<int>(size.height / scale), scale);
    p.drawPixmap(QRect((i % columns) * size.width, (i / columns) * size.height, size.width, size.height), pix);
  }
  p.end();
  const int dpm = static_cast<int>(std::lround(std::clamp(size.dpi, 48, 1200) / 0.0254));
  sheet.setDotsPerMeterX(dpm);
  sheet.setDotsPerMeterY(dpm);
  return sheet.save(path, "PNG");
}

}  // namespace ampgan::ui
