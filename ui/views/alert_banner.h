// A banner above the main tabs that shows the latest alert (core/run/alerts: warning events
// with data "alert" and "remedy"): what is wrong and what to do, until dismissed or replaced.
#pragma once

#include <QFrame>
#include <vector>

#include "core/run/run_event.h"

class QLabel;

namespace ampgan::ui {

class AlertBanner : public QFrame {
  Q_OBJECT
 public:
  explicit AlertBanner(QWidget* parent = nullptr);
  // Shows the last alert among events (others are ignored); returns whether one was shown.
  bool offer(const std::vector<RunEvent>& events);
  QString text() const;
  void dismiss();

 private:
  QLabel* label_ = nullptr;
};

}  // namespace ampgan::ui
