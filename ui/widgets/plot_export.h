// Presentation exports of charts: one chart at a chosen pixel size and DPI, every chart as one
// multi-page PDF (a page each), or every chart in one grid PNG. What is drawn is the chart as
// exported (LivePlot::drawForExport: no hover marker), never a grab of the widget.
#pragma once

#include <QList>
#include <QString>

namespace ampgan::ui {

class LivePlot;

struct PlotExportSize {
  int width = 1600;  // pixels of one chart (PNG) or of one page (PDF, at 96 dpi)
  int height = 1000;
  int dpi = 96;  // PNG metadata and the scale of fonts and lines (96: 1:1)
};

bool export_plots_pdf(const QList<LivePlot*>& plots, const QString& path, const PlotExportSize& size);
// columns: how many charts per row; each chart gets size.width x size.height pixels.
bool export_plots_grid_png(const QList<LivePlot*>& plots, const QString& path, int columns, const PlotExportSize& size);

}  // namespace ampgan::ui
