#include "ui/common/ui_types.h"

#include "core/amp/loss_scaler.h"

#include <cmath>
#include <cstring>

namespace ampgan::ui {

UiError UiError::of(const Error& e, const QString& during) {
  UiError u;
  u.during = during;
  u.what = QString::fromStdString(e.what_failed());
  u.subject = QString::fromStdString(e.subject());
  u.hint = QString::fromStdString(e.hint());
  return u;
}

QString UiError::text() const {
  QString t = what;
  if (!subject.isEmpty()) t += QStringLiteral("\n(%1)").arg(subject);
  if (!hint.isEmpty()) t += QStringLiteral("\n\nWhat to do: %1").arg(hint);
  return t;
}

QImage to_qimage(const io::Image8& img) {
  if (img.width <= 0 || img.height <= 0 || img.pixels.empty()) return {};
  const QImage::Format f = img.channels == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888;
  QImage out(img.width, img.height, f);
  const int row = img.width * img.channels;
  for (int y = 0; y < img.height; ++y)
    std::memcpy(out.scanLine(y), img.pixels.data() + static_cast<size_t>(y) * row, row);
  return out;
}

io::Image8 from_qimage(const QImage& src) {
  io::Image8 out;
  if (src.isNull()) return out;
  const bool grey = src.format() == QImage::Format_Grayscale8 || src.isGrayscale();
  const QImage img = src.convertToFormat(grey ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
  out.width = img.width();
  out.height = img.height();
  out.channels = grey ? 1 : 3;
  const int row = out.width * out.channels;
  out.pixels.resize(static_cast<size_t>(row) * out.height);
  for (int y = 0; y < out.height; ++y)
    std::memcpy(out.pixels.data() + static_cast<size_t>(y) * row, img.constScanLine(y), row);
  return out;
}

QString format_scale(double s) { return QString::fromStdString(scale_label(s)); }

QString format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  const int t = static_cast<int>(s);
  if (t < 60) return QStringLiteral("%1s").arg(t);
  if (t < 3600) return QStringLiteral("%1m%2s").arg(t / 60).arg(t % 60, 2, 10, QChar('0'));
  return QStringLiteral("%1h%2m").arg(t / 3600).arg(t % 3600 / 60, 2, 10, QChar('0'));
}

QString format_bytes(double b) {
  if (b < 1024) return QStringLiteral("%1 B").arg(b, 0, 'f', 0);
  if (b < 1024.0 * 1024) return QStringLiteral("%1 KiB").arg(b / 1024, 0, 'f', 1);
  if (b < 1024.0 * 1024 * 1024) return QStringLiteral("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 1);
  return QStringLiteral("%1 GiB").arg(b / (1024.0 * 1024 * 1024), 0, 'f', 2);
}

void register_meta_types() {
  qRegisterMetaType<UiBatchPtr>();
  qRegisterMetaType<RunStartInfo>();
  qRegisterMetaType<RunEndInfo>();
  qRegisterMetaType<UiError>();
  qRegisterMetaType<SampleShot>();
  qRegisterMetaType<ModelDescription>();
  qRegisterMetaType<std::shared_ptr<const OpenedRun>>();
  qRegisterMetaType<MaxBatchPtr>();
  qRegisterMetaType<ExploreResultPtr>();
  qRegisterMetaType<DoctorUpdatePtr>();
  qRegisterMetaType<ReplayResultPtr>();
}

}  // namespace ampgan::ui
