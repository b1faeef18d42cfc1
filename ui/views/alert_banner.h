// A banner above the main tabs with the run's alerts (core/run/alerts: warning events with data
// "alert" and "remedy"): what is wrong and what to do, one alert at a time with the others a
// click away ("2 of 4"), and a button for each setting the remedy names ("--precision bf16"),
// which the window applies. It stays until dismissed or a run starts.
#pragma once

#include <QFrame>
#include <functional>
#include <vector>

#include "core/run/run_event.h"

class QHBoxLayout;
class QLabel;
class QToolButton;

namespace ampgan::ui {

class AlertBanner : public QFrame {
  Q_OBJECT
 public:
  explicit AlertBanner(QWidget* parent = nullptr);
  // Adds the alerts among events (a newer alert of one kind and network replaces the older) and
  // shows the newest; returns whether there was one.
  bool offer(const std::vector<RunEvent>& events);
  QString text() const;
  int count() const { return static_cast<int>(alerts_.size()); }
  int current() const { return current_; }
  void showAlert(int index);
  void dismiss();  // all of them
  // How the remedy's command-line options read in the window (default: as they are).
  void setWording(std::function<QString(const QString&)> f) { wording_ = std::move(f); }

 signals:
  // A remedy's button: set the option `flag` (without "--") to `value`.
  void applyRequested(const QString& flag, const QString& value);

 private:
  struct Alert {
    int64_t step = 0;
    std::string kind, network;
    QString what, remedy;
  };
  QLabel* label_ = nullptr;
  QLabel* position_ = nullptr;
  QToolButton *prev_ = nullptr, *next_ = nullptr;
  QHBoxLayout* actions_ = nullptr;  // the current alert's buttons
  std::vector<Alert> alerts_;
  int current_ = -1;
  std::function<QString(const QString&)> wording_;
};

}  // namespace ampgan::ui
