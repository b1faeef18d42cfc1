// The status bar's permanent fields: what the window is doing, where training runs, the
// precision, step and target, images/s, training time and backend memory. The window tells it
// what happened (a batch, an opened run, a watched row); it formats and keeps the tooltips.
#pragma once

#include <cstdint>

#include <QObject>
#include <QString>

#include "core/amp/precision.h"
#include "core/backend/backend.h"
#include "core/train/step_metrics.h"

class QLabel;
class QStatusBar;

namespace ampgan::ui {

class StatusFields : public QObject {
  Q_OBJECT

 public:
  explicit StatusFields(QStatusBar* bar);

  void setState(const QString& text, const QString& tip = {});  // empty tip: the default one
  void setDevice(const QString& text, const QString& tip);
  void setPrecision(Precision p);
  void setElapsed(double seconds);
  void setImagesPerSecond(double ips);
  void setStep(int64_t step, int64_t total, bool evaluating);
  void clearStep();
  void setMemory(const MemoryStats& m);  // the total, and every category in the tooltip
  void setMemoryMb(double mb);
  // A finished row's fields (an opened or watched run): precision, time, img/s, memory; null
  // clears them.
  void showRow(const StepMetrics* last);
  QString text() const;  // every field, joined by " | "

 private:
  QLabel *state_ = nullptr, *device_ = nullptr, *precision_ = nullptr, *step_ = nullptr, *ips_ = nullptr,
         *elapsed_ = nullptr, *memory_ = nullptr;
};

}  // namespace ampgan::ui
