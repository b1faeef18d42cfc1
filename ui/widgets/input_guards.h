// Input controls that do not change a setting behind the user's back:
// - WheelGuard: the mouse wheel over a spin box or combo box that does not have the keyboard
//   focus scrolls the panel instead of changing the value (precision flipped from FP32 to BF16
//   while scrolling the settings, unnoticed).
// - RangedSpinBox / ScientificSpinBox: accept any number typed (5e-5 for a learning rate) and
//   keep it as typed; a value outside the allowed range is marked and reported, never capped.
//   The arrows and the wheel stay inside the range.
#pragma once

#include <QDoubleSpinBox>
#include <QObject>
#include <QSpinBox>

class QAbstractScrollArea;

namespace ampgan::ui {

class WheelGuard : public QObject {
  Q_OBJECT

 public:
  // scroll: where unwanted wheel events go instead (the panel's scroll area), may be null.
  explicit WheelGuard(QAbstractScrollArea* scroll, QObject* parent = nullptr);
  // Sets Qt::StrongFocus (a wheel no longer focuses the control) and installs the filter.
  void guard(QWidget* w);

 protected:
  bool eventFilter(QObject* obj, QEvent* e) override;

 private:
  QAbstractScrollArea* scroll_;
};

// Shared by the two spin boxes: the allowed range and the out-of-range mark.
class RangeCheck {
 public:
  void setAllowed(double lo, double hi) {
    lo_ = lo;
    hi_ = hi;
  }
  double allowedMin() const { return lo_; }
  double allowedMax() const { return hi_; }
  bool inRange(double v) const { return v >= lo_ && v <= hi_; }

 protected:
  void mark(QWidget* w, bool bad, const QString& text);

 private:
  double lo_ = 0, hi_ = 0;
  QString tip_;  // the tooltip before the mark
  bool marked_ = false;
};

class RangedSpinBox : public QSpinBox, public RangeCheck {
  Q_OBJECT

 public:
  // special: text shown at `lo` ("never"); with it, values below lo cannot be typed.
  RangedSpinBox(int lo, int hi, const QString& special = {}, QWidget* parent = nullptr);
  void stepBy(int steps) override;
  bool valueInRange() const { return inRange(value()); }
  QString rangeText() const;  // "2 … 65536"

 signals:
  void outOfRange(const QString& message);

 protected:
  StepEnabled stepEnabled() const override;

 private:
  void check();
};

class ScientificSpinBox : public QDoubleSpinBox, public RangeCheck {
  Q_OBJECT

 public:
  // special: text shown at `lo` ("off"); with it, values below lo cannot be typed.
  ScientificSpinBox(double lo, double hi, const QString& special = {}, QWidget* parent = nullptr);
  // > 0: the arrows add this; 0 (default): they double or halve the value (learning rates).
  void setAdditiveStep(double step) { additive_ = step; }
  QString textFromValue(double v) const override;
  double valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& pos) const override;
  void fixup(QString& text) const override;
  void stepBy(int steps) override;
  bool valueInRange() const { return inRange(value()); }
  QString rangeText() const;

 signals:
  void outOfRange(const QString& message);

 protected:
  StepEnabled stepEnabled() const override;

 private:
  void check();
  double additive_ = 0;
};

}  // namespace ampgan::ui
