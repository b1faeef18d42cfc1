// A widget that paints one image enlarged without blurring: at a whole-number factor every
// pixel becomes a crisp block; "fit" fills the widget (smoothly at odd factors, where nearest
// neighbour would double some pixel rows and not others). Ctrl+wheel asks the owner to zoom.
// Used for the sample grid and the comparison's side-by-side grids.
#pragma once

#include <functional>

#include <QImage>
#include <QString>
#include <QWidget>

namespace ampgan::ui {

class ImageCanvas : public QWidget {
 public:
  explicit ImageCanvas(QWidget* parent = nullptr);
  void setImage(const QImage& img);
  const QImage& image() const { return image_; }
  void setFactor(int factor);  // 0: fit
  void setPlaceholder(const QString& text) { placeholder_ = text; }
  QSize sizeHint() const override;
  std::function<void(int)> on_wheel_zoom;  // +1 / -1

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  QImage image_;
  int factor_ = 0;
  QString placeholder_;
};

}  // namespace ampgan::ui
