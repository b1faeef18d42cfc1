#include "ui/widgets/app_icon.h"

#include <QImageReader>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QPixmap>

static void init_studio_qrc() { Q_INIT_RESOURCE(studio); }

namespace ampgan::ui {

void init_resources() {
  static bool done = false;
  if (!done) init_studio_qrc();
  done = true;
}

namespace {

// ampgan-studio.svg, shape by shape, in its 256 x 256 coordinates.
QPixmap paint_icon(int size) {
  QPixmap pm(size, size);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.scale(size / 256.0, size / 256.0);
  QLinearGradient bg(0, 12, 0, 244);
  bg.setColorAt(0, QColor(0x2d, 0x4a, 0x7a));
  bg.setColorAt(1, QColor(0x16, 0x22, 0x3d));
  p.setPen(Qt::NoPen);
  p.setBrush(bg);
  p.drawRoundedRect(QRectF(12, 12, 232, 232), 44, 44);
  const QColor tiles[4] = {QColor(0x9e, 0xca, 0xe1), QColor(0xc6, 0xdb, 0xef), QColor(0xc6, 0xdb, 0xef),
                           QColor(0x6b, 0xae, 0xd6)};
  for (int i = 0; i < 4; ++i) {
    const int column = i % 2, row = i / 2;  // a 2x2 grid of tiles
    p.setBrush(tiles[i]);
    p.drawRoundedRect(QRectF(40 + 52 * column, 40 + 52 * row, 44, 44), 6, 6);
  }
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(QColor(0xfd, 0xd0, 0xa2), 8));
  p.drawEllipse(QPointF(186, 88), 38, 38);
  QPainterPath half;
  half.moveTo(186, 50);
  half.arcTo(QRectF(148, 50, 76, 76), 90, -180);
  half.closeSubpath();
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(0xfd, 0x8d, 0x3c));
  p.drawPath(half);
  const QPointF saw[] = {{36, 214},  {76, 214},  {76, 192},  {116, 192}, {116, 170}, {156, 170},
                         {156, 148}, {176, 148}, {176, 200}, {212, 200}, {212, 178}, {222, 178}};
  p.setPen(QPen(QColor(0xfd, 0x8d, 0x3c), 10, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
  p.drawPolyline(saw, sizeof saw / sizeof saw[0]);
  p.setPen(QPen(QColor(0xef, 0x3b, 0x2c), 7, Qt::SolidLine, Qt::RoundCap));
  p.drawLine(QPointF(168, 124), QPointF(184, 140));
  p.drawLine(QPointF(184, 124), QPointF(168, 140));
  return pm;
}

}  // namespace

QIcon app_icon() {
  init_resources();
  if (QImageReader::supportedImageFormats().contains("svg")) return QIcon(QStringLiteral(":/icons/ampgan-studio.svg"));
  QIcon icon;
  for (int s : {16, 24, 32, 48, 64, 128, 256}) icon.addPixmap(paint_icon(s));
  return icon;
}

}  // namespace ampgan::ui
