#include "ui/views/alert_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace ampgan::ui {

AlertBanner::AlertBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("alertBanner"));
  setFrameShape(QFrame::StyledPanel);
  setStyleSheet(
      QStringLiteral("#alertBanner { background: #fff3cd; border: 1px solid #d39e00; }"
                     "#alertBanner QLabel { color: #5c4400; }"));
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(8, 4, 4, 4);
  label_ = new QLabel;
  label_->setWordWrap(true);
  label_->setTextFormat(Qt::RichText);
  h->addWidget(label_, 1);
  auto* close = new QToolButton;
  close->setText(QStringLiteral("\u2715"));
  close->setToolTip(tr("Dismiss this alert (it stays in the event log)"));
  connect(close, &QToolButton::clicked, this, &AlertBanner::dismiss);
  h->addWidget(close, 0, Qt::AlignTop);
  hide();
}

bool AlertBanner::offer(const std::vector<RunEvent>& events) {
  const RunEvent* last = nullptr;
  for (const RunEvent& e : events)
    if (e.type == EventType::Warning && e.data.contains("alert")) last = &e;
  if (!last) return false;
  // The message ends in ". Remedy: ..."; shown as two lines, the remedy in bold.
  const QString msg = QString::fromStdString(last->message);
  const int cut = msg.indexOf(QStringLiteral(". Remedy: "));
  const QString what = cut >= 0 ? msg.left(cut) : msg;
  const QString remedy = QString::fromStdString(last->data.value("remedy", std::string()));
  label_->setText(tr("<b>\u26a0 Step %1: %2.</b><br>What to do: %3")
                      .arg(last->step)
                      .arg(what.toHtmlEscaped(), remedy.toHtmlEscaped()));
  show();
  return true;
}

QString AlertBanner::text() const { return isVisible() ? label_->text() : QString(); }

void AlertBanner::dismiss() {
  label_->clear();
  hide();
}

}  // namespace ampgan::ui
