#include "ui/window/status_progress.h"

#include <QProgressBar>
#include <QStatusBar>
#include <QToolButton>

#include "ui/common/ui_types.h"
#include "ui/views/event_log.h"

namespace ampgan::ui {

StatusProgress::StatusProgress(QStatusBar* bar, EventLog* log, QObject* parent) : QObject(parent), log_(log) {
  bar_ = new QProgressBar;
  bar_->setObjectName(QStringLiteral("statusProgress"));
  bar_->setMaximumWidth(220);
  bar_->setVisible(false);
  bar->addWidget(bar_);
  cancel_ = new QToolButton;
  cancel_->setObjectName(QStringLiteral("statusCancel"));
  cancel_->setText(tr("Cancel"));
  cancel_->setVisible(false);
  connect(cancel_, &QToolButton::clicked, this, &StatusProgress::cancelRequested);
  bar->addWidget(cancel_);
  skip_ = new QToolButton;
  skip_->setObjectName(QStringLiteral("statusSkip"));
  skip_->setText(tr("Skip this evaluation"));
  skip_->setToolTip(
      tr("End this evaluation without scores; training goes on, and the next evaluation comes at "
         "the next interval"));
  skip_->setVisible(false);
  connect(skip_, &QToolButton::clicked, this, [this] {
    skip_->setEnabled(false);  // once per evaluation
    emit skipRequested();
  });
  bar->addWidget(skip_);
}

void StatusProgress::show(const QString& format, int done, int total) {
  bar_->setFormat(format);
  bar_->setRange(0, std::max(total, 0));
  if (total > 0) bar_->setValue(done);
  bar_->setVisible(true);
  cancel_->setVisible(true);
  skip_->setVisible(working_ && skippable_);
}

void StatusProgress::hide() {
  bar_->setVisible(false);
  cancel_->setVisible(false);
  skip_->setVisible(false);
}

void StatusProgress::setLoading(bool on) {
  loading_ = on;
  if (on) {
    cancel_->setToolTip(tr("Stop loading the dataset; no run is created"));
    show(tr("loading %p%"), 0, 0);
  } else if (!working_) {
    hide();
  }
}

void StatusProgress::setLoadingProgress(int done, int total) {
  if (!loading_ || total <= 0) return;
  bar_->setRange(0, total);
  bar_->setValue(done);
}

void StatusProgress::setWork(const QString& what, int done, int total, int64_t step, const QString& cancel_tip,
                             bool skippable) {
  const bool end = done >= total;
  if (!working_ && !end) {
    working_ = true;
    logged_ = false;
    skippable_ = skippable;
    skip_->setEnabled(true);
    what_ = what;
    work_clock_.start();
    cancel_->setToolTip(cancel_tip.isEmpty()
                            ? tr("Cancel this work: the run stops after the step, without scores for it")
                            : cancel_tip);
  }
  if (!working_) return;
  // Only work that takes a while is worth lines in the log (an evaluation every few hundred
  // steps that takes 0.2 s is not).
  const bool slow = work_clock_.elapsed() > 1000;
  if (!end && slow && !logged_) {
    logged_ = true;
    log_->addNote(QStringLiteral("info"),
                  skippable_ ? tr("%1… (progress in the status bar; Skip this evaluation ends it and training goes "
                                  "on, Stop or Cancel ends the run)")
                                   .arg(what)
                             : tr("%1… (progress in the status bar; Stop or Cancel ends it)").arg(what),
                  step);
  }
  if (end) {
    working_ = false;
    if (slow)
      log_->addNote(QStringLiteral("info"),
                    tr("%1: done in %2").arg(what_, format_duration(work_clock_.elapsed() / 1000.0)), step);
    what_.clear();
    if (loading_)
      show(tr("loading %p%"), 0, 0);
    else
      hide();
    return;
  }
  what_ = what;
  show(QStringLiteral("%1 %p%").arg(what), done, total);
}

bool StatusProgress::visible() const { return !bar_->isHidden(); }
int StatusProgress::value() const { return bar_->value(); }
int StatusProgress::maximum() const { return bar_->maximum(); }

}  // namespace ampgan::ui
