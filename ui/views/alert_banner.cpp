#include "ui/views/alert_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/settings/settings_table.h"

namespace ampgan::ui {

AlertBanner::AlertBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("alertBanner"));
  setFrameShape(QFrame::StyledPanel);
  setStyleSheet(
      QStringLiteral("#alertBanner { background: #fff3cd; border: 1px solid #d39e00; }"
                     "#alertBanner QLabel { color: #5c4400; }"));
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(8, 4, 4, 4);
  auto* body = new QVBoxLayout;
  label_ = new QLabel;
  label_->setObjectName(QStringLiteral("alertText"));
  label_->setWordWrap(true);
  label_->setTextFormat(Qt::RichText);
  body->addWidget(label_);
  actions_ = new QHBoxLayout;
  actions_->addStretch(1);
  body->addLayout(actions_);
  h->addLayout(body, 1);
  prev_ = new QToolButton;
  prev_->setObjectName(QStringLiteral("alertPrevious"));
  prev_->setText(QStringLiteral("\u25c0"));
  prev_->setToolTip(tr("The previous alert"));
  connect(prev_, &QToolButton::clicked, this, [this] { showAlert(current_ - 1); });
  position_ = new QLabel;
  position_->setObjectName(QStringLiteral("alertPosition"));
  next_ = new QToolButton;
  next_->setObjectName(QStringLiteral("alertNext"));
  next_->setText(QStringLiteral("\u25b6"));
  next_->setToolTip(tr("The next alert"));
  connect(next_, &QToolButton::clicked, this, [this] { showAlert(current_ + 1); });
  auto* close = new QToolButton;
  close->setText(QStringLiteral("\u2715"));
  close->setToolTip(tr("Dismiss the alerts (they stay in the event log)"));
  connect(close, &QToolButton::clicked, this, &AlertBanner::dismiss);
  for (QWidget* w : std::initializer_list<QWidget*>{prev_, position_, next_, close}) h->addWidget(w, 0, Qt::AlignTop);
  hide();
}

bool AlertBanner::offer(const std::vector<RunEvent>& events) {
  bool any = false;
  for (const RunEvent& e : events) {
    if (e.type != EventType::Warning || !e.data.contains("alert")) continue;
    // The message ends in ". Remedy: ..."; shown as two lines, the remedy in bold.
    const QString msg = QString::fromStdString(e.message);
    const int cut = msg.indexOf(QStringLiteral(". Remedy: "));
    Alert a{e.step, e.data.value("alert", std::string()), e.network, cut >= 0 ? msg.left(cut) : msg,
            QString::fromStdString(e.data.value("remedy", std::string()))};
    std::erase_if(alerts_, [&](const Alert& o) { return o.kind == a.kind && o.network == a.network; });
    alerts_.push_back(std::move(a));
    any = true;
  }
  if (any) showAlert(count() - 1);
  return any;
}

void AlertBanner::showAlert(int index) {
  if (index < 0 || index >= count()) return;
  current_ = index;
  const Alert& a = alerts_[static_cast<size_t>(index)];
  const QString remedy = wording_ ? wording_(a.remedy) : a.remedy;
  label_->setText(tr("<b>\u26a0 Step %1: %2.</b><br>What to do: %3")
                      .arg(a.step)
                      .arg(a.what.toHtmlEscaped(), remedy.toHtmlEscaped()));
  position_->setText(tr("%1 of %2").arg(index + 1).arg(count()));
  for (QWidget* w : {static_cast<QWidget*>(prev_), static_cast<QWidget*>(position_), static_cast<QWidget*>(next_)})
    w->setVisible(count() > 1);
  prev_->setEnabled(index > 0);
  next_->setEnabled(index + 1 < count());
  // A button for each option the remedy names with a value: the remedy, one click away.
  while (actions_->count() > 1) delete actions_->takeAt(0)->widget();
  static const QRegularExpression option(QStringLiteral("--([a-z0-9-]+) ([A-Za-z0-9.,+-]*[A-Za-z0-9])"));
  int at = 0;
  for (auto it = option.globalMatch(a.remedy); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    const QString flag = m.captured(1), value = m.captured(2);
    const Setting* row = find_setting_by_flag(flag.toStdString());
    if (!row) continue;
    auto* b = new QPushButton(
        tr("Apply: %1 %2").arg(row->label ? QString::fromLatin1(row->label) : QStringLiteral("--") + flag, value));
    b->setObjectName(QStringLiteral("alertApply-%1").arg(flag));
    b->setToolTip(tr("Make this change in the settings (mid-run where it can be, else for the next run)"));
    connect(b, &QPushButton::clicked, this, [this, flag, value] { emit applyRequested(flag, value); });
    actions_->insertWidget(at++, b);
  }
  show();
}

QString AlertBanner::text() const { return isVisible() ? label_->text() : QString(); }

void AlertBanner::dismiss() {
  alerts_.clear();
  current_ = -1;
  label_->clear();
  while (actions_->count() > 1) delete actions_->takeAt(0)->widget();
  hide();
}

}  // namespace ampgan::ui
