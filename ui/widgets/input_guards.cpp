#include "ui/widgets/input_guards.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include <QAbstractScrollArea>
#include <QCoreApplication>
#include <QEvent>
#include <QLineEdit>
#include <QRegularExpression>
#include <QWheelEvent>

namespace ampgan::ui {

// ---- WheelGuard --------------------------------------------------------------------------------

WheelGuard::WheelGuard(QAbstractScrollArea* scroll, QObject* parent) : QObject(parent), scroll_(scroll) {}

void WheelGuard::guard(QWidget* w) {
  w->setFocusPolicy(Qt::StrongFocus);
  w->installEventFilter(this);
}

bool WheelGuard::eventFilter(QObject* obj, QEvent* e) {
  if (e->type() != QEvent::Wheel) return false;
  auto* w = qobject_cast<QWidget*>(obj);
  if (!w || w->hasFocus()) return false;  // a focused control: the user means it
  // Scroll the panel as if the control were not there.
  if (scroll_ && scroll_->viewport()) QCoreApplication::sendEvent(scroll_->viewport(), e);
  return true;
}

// ---- RangeCheck --------------------------------------------------------------------------------

void RangeCheck::mark(QWidget* w, bool bad, const QString& text) {
  if (bad == marked_) {
    if (bad) w->setToolTip(text);
    return;
  }
  if (bad) {
    tip_ = w->toolTip();
    w->setStyleSheet(QStringLiteral("background-color: #ffd6d6"));
    w->setToolTip(text);
  } else {
    w->setStyleSheet(QString());
    w->setToolTip(tip_);
  }
  marked_ = bad;
}

namespace {
QString field_name(const QWidget* w) {
  const QString n = w->property("fieldName").toString();
  return n.isEmpty() ? QCoreApplication::translate("ampgan::ui", "This field") : n;
}
}  // namespace

// ---- RangedSpinBox -------------------------------------------------------------------------------

RangedSpinBox::RangedSpinBox(int lo, int hi, const QString& special, QWidget* parent) : QSpinBox(parent) {
  setAllowed(lo, hi);
  // The widget's own range is wide so that a typed value stays as typed (QSpinBox would refuse
  // the keystroke or clamp it silently); the allowed range is checked separately.
  setRange(special.isEmpty() ? -999999999 : lo, INT_MAX);
  if (!special.isEmpty()) setSpecialValueText(special);
  connect(this, &QSpinBox::valueChanged, this, [this] { check(); });
}

QString RangedSpinBox::rangeText() const {
  return QStringLiteral("%1 … %2").arg(static_cast<qlonglong>(allowedMin())).arg(static_cast<qlonglong>(allowedMax()));
}

void RangedSpinBox::stepBy(int steps) {
  const long long v = static_cast<long long>(value()) + static_cast<long long>(steps) * singleStep();
  setValue(static_cast<int>(
      std::clamp<long long>(v, static_cast<long long>(allowedMin()), static_cast<long long>(allowedMax()))));
  selectAll();
}

QAbstractSpinBox::StepEnabled RangedSpinBox::stepEnabled() const {
  StepEnabled s = StepNone;
  if (value() < allowedMax()) s |= StepUpEnabled;
  if (value() > allowedMin()) s |= StepDownEnabled;
  return s;
}

void RangedSpinBox::check() {
  const bool bad = !valueInRange();
  const QString msg = QCoreApplication::translate("ampgan::ui", "%1: %2 is outside the allowed range %3")
                          .arg(field_name(this))
                          .arg(value())
                          .arg(rangeText());
  mark(this, bad, msg);
  if (bad) emit outOfRange(msg);
}

// ---- ScientificSpinBox ---------------------------------------------------------------------------

ScientificSpinBox::ScientificSpinBox(double lo, double hi, const QString& special, QWidget* parent)
    : QDoubleSpinBox(parent) {
  setAllowed(lo, hi);
  setDecimals(15);  // QDoubleSpinBox rounds values to its decimals: keep 5e-5 exact enough
  // Wide, as RangedSpinBox's; with a special text the minimum is lo (Qt shows it at the minimum).
  setRange(special.isEmpty() ? -1e9 : lo, 1e9);
  if (!special.isEmpty()) setSpecialValueText(special);
  setSingleStep(0);  // the arrows scale the value (stepBy), a fixed step makes no sense here
  connect(this, &QDoubleSpinBox::valueChanged, this, [this] { check(); });
}

QString ScientificSpinBox::textFromValue(double v) const { return QString::number(v, 'g', 6); }

double ScientificSpinBox::valueFromText(const QString& text) const {
  if (!specialValueText().isEmpty() && text.trimmed() == specialValueText()) return minimum();
  return QString(text).remove(prefix()).remove(suffix()).trimmed().toDouble();
}

QValidator::State ScientificSpinBox::validate(QString& text, int& /*pos*/) const {
  const QString t = QString(text).remove(prefix()).remove(suffix()).trimmed();
  // "off" as shown, or on the way to it.
  if (!specialValueText().isEmpty() && !t.isEmpty() && specialValueText().startsWith(t))
    return t == specialValueText() ? QValidator::Acceptable : QValidator::Intermediate;
  bool ok = false;
  t.toDouble(&ok);
  if (ok) return QValidator::Acceptable;
  // Prefixes of a number on the way to one: "", "-", "5e", "5e-", "1.".
  static const QRegularExpression partial(QStringLiteral(R"(^[+-]?(\d+\.?\d*|\.\d*)?([eE][+-]?)?$)"));
  return partial.match(t).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
}

void ScientificSpinBox::fixup(QString& text) const { text = textFromValue(value()); }

void ScientificSpinBox::stepBy(int steps) {
  // Learning rates are tuned by factors, not by 1e-5: one step doubles or halves them.
  double v = additive_ > 0 ? value() + steps * additive_ : value() * std::pow(2.0, steps);
  if (additive_ <= 0 && !(v > 0)) v = allowedMin();
  setValue(std::clamp(v, allowedMin(), allowedMax()));
  selectAll();
}

QAbstractSpinBox::StepEnabled ScientificSpinBox::stepEnabled() const {
  StepEnabled s = StepNone;
  if (value() < allowedMax()) s |= StepUpEnabled;
  if (value() > allowedMin()) s |= StepDownEnabled;
  return s;
}

QString ScientificSpinBox::rangeText() const {
  return QStringLiteral("%1 … %2").arg(textFromValue(allowedMin()), textFromValue(allowedMax()));
}

void ScientificSpinBox::check() {
  const bool bad = !valueInRange();
  const QString msg = QCoreApplication::translate("ampgan::ui", "%1: %2 is outside the allowed range %3")
                          .arg(field_name(this), textFromValue(value()), rangeText());
  mark(this, bad, msg);
  if (bad) emit outOfRange(msg);
}

}  // namespace ampgan::ui
