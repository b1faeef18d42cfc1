#include "ui/window/status_fields.h"

#include <QLabel>
#include <QStatusBar>
#include <QStringList>

#include "ui/common/ui_types.h"

namespace ampgan::ui {

StatusFields::StatusFields(QStatusBar* bar) : QObject(bar) {
  auto field = [bar](const QString& tip, int min_width) {
    auto* l = new QLabel;
    l->setToolTip(tip);
    l->setMinimumWidth(min_width);
    l->setContentsMargins(4, 0, 4, 0);
    bar->addPermanentWidget(l);
    return l;
  };
  // Small minimum widths (an explicit minimum overrides the text's): on a small screen the
  // fields share what there is, their tooltips tell the rest.
  state_ = field(tr("What the worker is doing"), 50);
  device_ = field(tr("Where training runs"), 60);
  precision_ = field(tr("Precision of the latest step"), 45);
  step_ = field(tr("Step / target"), 80);
  ips_ = field(tr("Training images per second (smoothed)"), 55);
  elapsed_ = field(tr("Training time of the run"), 40);
  memory_ = field(tr("Backend memory in use"), 55);
}

void StatusFields::setState(const QString& text, const QString& tip) {
  state_->setText(text);
  state_->setToolTip(tip.isEmpty() ? tr("What the worker is doing") : tip);
}

void StatusFields::setDevice(const QString& text, const QString& tip) {
  device_->setText(text);
  device_->setToolTip(tip);
}

void StatusFields::setPrecision(Precision p) { precision_->setText(QString::fromLatin1(precision_label(p))); }

void StatusFields::setElapsed(double seconds) { elapsed_->setText(format_duration(seconds)); }

void StatusFields::setImagesPerSecond(double ips) { ips_->setText(tr("%1 img/s").arg(ips, 0, 'f', ips < 100 ? 1 : 0)); }

void StatusFields::setStep(int64_t step, int64_t total, bool evaluating) {
  QString t = tr("step %1 / %2").arg(step).arg(total);
  if (evaluating) t += tr(" · evaluating");  // the counter stands still meanwhile
  step_->setText(t);
}

void StatusFields::clearStep() { step_->clear(); }

void StatusFields::setMemory(const MemoryStats& m) {
  if (m.current_total > 0) memory_->setText(format_bytes(static_cast<double>(m.current_total)));
  QString tip = tr("Backend memory now (peak):");
  for (int c = 0; c < static_cast<int>(MemCategory::Count); ++c)
    tip += QStringLiteral("\n%1: %2 (%3)")
               .arg(QString::fromLatin1(mem_category_name(static_cast<MemCategory>(c))),
                    format_bytes(static_cast<double>(m.current[c])), format_bytes(static_cast<double>(m.peak[c])));
  memory_->setToolTip(tip);
}

void StatusFields::setMemoryMb(double mb) { memory_->setText(mb > 0 ? format_bytes(mb * 1024.0 * 1024.0) : QString()); }

void StatusFields::showRow(const StepMetrics* last) {
  precision_->setText(last ? QString::fromLatin1(precision_label(last->precision)) : QString());
  elapsed_->setText(last ? format_duration(last->time_s) : QString());
  if (last)
    setImagesPerSecond(last->images_per_s);
  else
    ips_->clear();
  setMemoryMb(last ? last->memory_mb : 0);
}

QString StatusFields::text() const {
  return QStringList{state_->text(), device_->text(),  precision_->text(), step_->text(),
                     ips_->text(),   elapsed_->text(), memory_->text()}
      .join(QStringLiteral(" | "));
}

}  // namespace ampgan::ui
