#include "ui/settings/setting_fields.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QLineEdit>

#include "ui/common/amp_glossary.h"
#include "ui/widgets/input_guards.h"

namespace ampgan::ui {

namespace {

bool is_combo(const Setting& s) { return !s.choices.empty() && s.widget == PanelWidget::Auto; }

int exponent_of(double v) { return v > 0 ? static_cast<int>(std::lround(std::log2(v))) : 0; }

// The field's range: the panel's own, else the row's, within what a QSpinBox holds.
std::pair<int, int> int_range(const Setting& s) {
  if (s.panel_lo != 0 || s.panel_hi != 0) return {static_cast<int>(s.panel_lo), static_cast<int>(s.panel_hi)};
  return {static_cast<int>(std::max<int64_t>(s.lo, INT_MIN)), static_cast<int>(std::min<int64_t>(s.hi, INT_MAX))};
}

std::string choice_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

QString setting_text(const char* text) { return QCoreApplication::translate("ampgan::ui::ConfigPanel", text); }

QString setting_tip(const Setting& s) {
  QString tip = s.glossary ? glossary::entry(s.glossary) : QString();
  if (s.tip) tip += (tip.isEmpty() ? QString() : QStringLiteral("<br>")) + setting_text(s.tip);
  return tip;
}

std::vector<const Setting*> panel_rows(PanelGroup g) {
  std::vector<const Setting*> rows;
  for (const Setting& s : settings())
    if (s.panel == g) rows.push_back(&s);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Setting* a, const Setting* b) { return a->panel_order < b->panel_order; });
  return rows;
}

QWidget* make_setting_field(const Setting& s) {
  QWidget* w = nullptr;
  if (s.type == SettingType::Bool) {
    w = new QCheckBox(setting_text(s.label));
  } else if (is_combo(s)) {
    auto* c = new QComboBox;
    for (const SettingChoice& ch : s.choices) c->addItem(setting_text(ch.label), QString::fromUtf8(ch.value));
    w = c;
  } else if (s.type == SettingType::Int || s.type == SettingType::Unsigned || s.widget == PanelWidget::Pow2) {
    const auto [lo, hi] = int_range(s);
    auto* b = new RangedSpinBox(lo, hi, s.zero_text ? setting_text(s.zero_text) : QString());
    if (s.widget == PanelWidget::Pow2) b->setPrefix(QStringLiteral("2^"));
    b->setKeyboardTracking(false);  // one change signal per finished edit, not per keystroke
    w = b;
  } else if (s.type == SettingType::Real) {
    auto* b = new ScientificSpinBox(s.panel_lo, s.panel_hi, s.zero_text ? setting_text(s.zero_text) : QString());
    b->setAdditiveStep(s.panel_step);  // 0: the arrows double or halve; 5e-5 can be typed
    b->setKeyboardTracking(false);
    w = b;
  } else {
    w = new QLineEdit;
  }
  w->setObjectName(QString::fromLatin1(s.object_name ? s.object_name : s.key));
  w->setToolTip(setting_tip(s));
  show_setting(w, s, RunConfig());
  return w;
}

void show_setting(QWidget* field, const Setting& s, const RunConfig& c) {
  const nlohmann::json v = s.get(c);
  if (auto* b = qobject_cast<QCheckBox*>(field)) {
    b->setChecked(v.get<bool>());
  } else if (auto* box = qobject_cast<QComboBox*>(field)) {
    box->setCurrentIndex(std::max(0, box->findData(QString::fromStdString(choice_text(v)))));
  } else if (auto* spin = qobject_cast<QSpinBox*>(field)) {
    if (s.widget == PanelWidget::Pow2)
      spin->setValue(exponent_of(v.get<double>()));
    else if (s.type == SettingType::Unsigned)
      spin->setValue(static_cast<int>(std::min<uint64_t>(v.get<uint64_t>(), INT_MAX)));
    else
      spin->setValue(static_cast<int>(std::clamp<int64_t>(v.get<int64_t>(), INT_MIN, INT_MAX)));
  } else if (auto* d = qobject_cast<QDoubleSpinBox*>(field)) {
    d->setValue(v.get<double>());
  } else if (auto* e = qobject_cast<QLineEdit*>(field)) {
    e->setText(QString::fromStdString(v.get<std::string>()));
  }
}

void read_setting(const QWidget* field, const Setting& s, RunConfig& c) {
  nlohmann::json v;
  if (auto* b = qobject_cast<const QCheckBox*>(field)) {
    v = b->isChecked();
  } else if (auto* box = qobject_cast<const QComboBox*>(field)) {
    const std::string text = box->currentData().toString().toStdString();
    v = s.type == SettingType::Int ? nlohmann::json(std::stoll(text)) : nlohmann::json(text);
  } else if (auto* spin = qobject_cast<const QSpinBox*>(field)) {
    if (s.widget == PanelWidget::Pow2)
      v = std::ldexp(1.0f, spin->value());
    else if (s.type == SettingType::Unsigned)
      v = static_cast<uint64_t>(std::max(0, spin->value()));
    else
      v = static_cast<int64_t>(spin->value());
  } else if (auto* d = qobject_cast<const QDoubleSpinBox*>(field)) {
    v = static_cast<float>(d->value());
  } else if (auto* e = qobject_cast<const QLineEdit*>(field)) {
    v = e->text().trimmed().toStdString();
  }
  s.set(c, v);  // the panel's range is checked by the field (marked) and by RunConfig::validate
}

}  // namespace ampgan::ui
