// LivePlot to a file: PNG/PDF at a chosen size and DPI without the hover marker, pixmaps for
// the exports of all plots, and the context menu (reset, log axis, save, copy).
#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QMenu>
#include <QRegularExpression>
#include <QToolTip>

#include "ui/widgets/live_plot.h"
#include "ui/widgets/plot_save_dialog.h"

namespace ampgan::ui {

namespace {
// Hides the hover marker and the crosshair for the lifetime of an export.
struct HoverHidden {
  QCPAbstractItem* items[2];
  bool was[2];
  HoverHidden(QCPAbstractItem* tracer, QCPAbstractItem* cross) : items{tracer, cross} {
    for (int i = 0; i < 2; ++i) {
      was[i] = items[i] && items[i]->visible();
      if (items[i]) items[i]->setVisible(false);
    }
  }
  ~HoverHidden() {
    for (int i = 0; i < 2; ++i)
      if (items[i]) items[i]->setVisible(was[i]);
  }
};
}  // namespace

bool LivePlot::saveTo(const QString& path, int width, int height, int dpi) {
  if (follow_) rescaleFollow();
  const HoverHidden hidden(tracer_, cross_);
  if (path.endsWith(QStringLiteral(".pdf"), Qt::CaseInsensitive))
    return savePdf(path, width, height, QCP::epNoCosmetic, QStringLiteral("AMP GAN Studio"), title());
  dpi = std::clamp(dpi, 48, 1200);
  const double scale = dpi / 96.0;
  if (width <= 0 || height <= 0) return savePng(path, 0, 0, scale, -1, dpi);
  // QCustomPlot's size is in logical pixels, multiplied by scale: at 144 dpi, 1600 px is 1066.7
  // logical ones, which no whole number gives exactly. Drawn a little larger, then cut to the
  // pixels asked for (the cut is the margin's last pixel).
  const int w = static_cast<int>(std::ceil(width / scale - 1e-9)),
            h = static_cast<int>(std::ceil(height / scale - 1e-9));
  QImage img = toPixmap(w, h, scale).toImage().copy(0, 0, width, height);
  const int per_metre = static_cast<int>(std::lround(dpi / 0.0254));
  img.setDotsPerMeterX(per_metre);
  img.setDotsPerMeterY(per_metre);
  return img.save(path, "PNG");
}

void LivePlot::drawForExport(QCPPainter* painter, int width, int height) {
  if (follow_) rescaleFollow();
  const HoverHidden hidden(tracer_, cross_);
  toPainter(painter, width, height);
}

QPixmap LivePlot::exportPixmap(int width, int height, double scale) {
  if (follow_) rescaleFollow();
  const HoverHidden hidden(tracer_, cross_);
  return toPixmap(width, height, scale);
}

void LivePlot::contextMenuEvent(QContextMenuEvent* e) {
  QMenu menu(this);
  menu.addAction(tr("Reset view (follow the run)"), this, [this] {
    setFollow(true);
    refresh();
  });
  if (log_toggle_) {
    QAction* a = menu.addAction(tr("Logarithmic y axis"));
    a->setCheckable(true);
    a->setChecked(log_base_ != 0);
    connect(a, &QAction::toggled, this, [this](bool on) {
      setLogY(on ? log_toggle_base_ : 0);
      refresh();
    });
  }
  menu.addAction(tr("Maximise / restore"), this, &LivePlot::maximizeRequested);
  menu.addSeparator();
  auto save = [this](bool pdf) {
    QString name = title().toLower();
    name.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    PlotSaveDialog d(name + (pdf ? QStringLiteral(".pdf") : QStringLiteral(".png")), pdf, this);
    if (d.exec() != QDialog::Accepted) return;
    const PlotExportSize s = d.size();
    if (!saveTo(d.path(), s.width, s.height, s.dpi))
      QToolTip::showText(QCursor::pos(), tr("Could not write %1").arg(d.path()), this);
  };
  menu.addAction(tr("Save as PNG…"), this, [=] { save(false); });
  menu.addAction(tr("Save as PDF…"), this, [=] { save(true); });
  menu.addAction(tr("Copy image"), this, [this] { QApplication::clipboard()->setPixmap(toPixmap()); });
  menu.exec(e->globalPos());
}

}  // namespace ampgan::ui
