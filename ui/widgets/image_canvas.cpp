#include "ui/widgets/image_canvas.h"

#include <algorithm>
#include <cmath>

#include <QPainter>
#include <QWheelEvent>

namespace ampgan::ui {

ImageCanvas::ImageCanvas(QWidget* parent) : QWidget(parent), placeholder_(tr("Samples appear here during training")) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMinimumSize(64, 64);
}

void ImageCanvas::setImage(const QImage& img) {
  image_ = img;
  setFactor(factor_);
}

void ImageCanvas::setFactor(int factor) {
  factor_ = factor;
  if (factor_ > 0 && !image_.isNull()) {
    setFixedSize(image_.size() * factor_);
  } else {
    setMinimumSize(64, 64);
    setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX);
  }
  updateGeometry();
  update();
}

QSize ImageCanvas::sizeHint() const {
  if (image_.isNull()) return {256, 256};
  return factor_ > 0 ? image_.size() * factor_ : image_.size();
}

void ImageCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  if (image_.isNull()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(4, 4, -4, -4), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    return;
  }
  double f = factor_;
  if (factor_ <= 0) f = std::min(double(width()) / image_.width(), double(height()) / image_.height());
  const QSize s(static_cast<int>(image_.width() * f), static_cast<int>(image_.height() * f));
  const QRect target(QPoint((width() - s.width()) / 2, (height() - s.height()) / 2), s);
  const bool whole = std::fabs(f - std::round(f)) < 1e-6;
  p.setRenderHint(QPainter::SmoothPixmapTransform, !whole);
  p.drawImage(target, image_);
}

void ImageCanvas::wheelEvent(QWheelEvent* e) {
  if ((e->modifiers() & Qt::ControlModifier) && on_wheel_zoom) {
    on_wheel_zoom(e->angleDelta().y() > 0 ? 1 : -1);
    e->accept();
    return;
  }
  QWidget::wheelEvent(e);
}

}  // namespace ampgan::ui
