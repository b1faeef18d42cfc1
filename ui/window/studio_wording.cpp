#include "ui/window/studio_wording.h"

#include <QRegularExpression>

#include "core/settings/settings_table.h"
#include "ui/settings/setting_fields.h"

namespace ampgan::ui {

namespace {
QString group_name(PanelGroup g) {
  switch (g) {
    case PanelGroup::Data:
      return QObject::tr("Data");
    case PanelGroup::Model:
      return QObject::tr("Model");
    case PanelGroup::Optimiser:
      return QObject::tr("Optimiser");
    case PanelGroup::Precision:
      return QObject::tr("Precision");
    case PanelGroup::Scaler:
      return QObject::tr("Dynamic loss scaler");
    case PanelGroup::Device:
      return QObject::tr("Device");
    case PanelGroup::Bookkeeping:
      return QObject::tr("Every N steps");
    case PanelGroup::None:
      break;
  }
  return {};
}
}  // namespace

QString studio_wording(const QString& cli_text) {
  QString out = cli_text;
  out.replace(QStringLiteral("run 'ampgan devices' for details"),
              QObject::tr("the status bar's device field says what this machine has"));
  // An option, with its value when one follows ("--backend cpu", "--batch 32").
  static const QRegularExpression option(QStringLiteral("--([a-z0-9-]+)(?: ([A-Za-z0-9.:+-]+))?"));
  QString result;
  qsizetype from = 0;
  for (auto it = option.globalMatch(out); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    const Setting* s = find_setting_by_flag(m.captured(1).toStdString());
    if (!s || !s->label || s->panel == PanelGroup::None) continue;  // not a field of the panel
    result += out.mid(from, m.capturedStart() - from);
    const QString value = m.captured(2);
    const QString field = setting_text(s->label);
    result += (value.isEmpty() ? QStringLiteral("“%1”").arg(field) : QStringLiteral("“%1: %2”").arg(field, value)) +
              QObject::tr(" (settings panel, %1)").arg(group_name(s->panel));
    from = m.capturedEnd();
  }
  return result + out.mid(from);
}

UiError studio_wording(UiError e) {
  e.subject = studio_wording(e.subject);
  e.hint = studio_wording(e.hint);
  return e;
}

}  // namespace ampgan::ui
