#include "ui/views/doctor_view.h"

#include <QDesktopServices>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "core/run/doctor_report.h"

namespace ampgan::ui {

DoctorView::DoctorView(QWidget* parent) : QWidget(parent) {
  intro_ = new QLabel(
      tr("The precision doctor trains a short FP32 reference and a short probe in the panel's half precision "
         "(same seed and data); if the probe skips updates, underflows or departs from FP32, it tries remedies "
         "from the same start, cheapest first: the loss scaler's settings, FP32 for the layers where overflows "
         "start, half precision in fewer blocks, an activation clamp, nan_to_num. Each probe is a run folder."));
  intro_->setWordWrap(true);
  start_ = new QPushButton(tr("Diagnose precision"));
  start_->setObjectName(QStringLiteral("doctorStart"));
  connect(start_, &QPushButton::clicked, this, &DoctorView::diagnoseRequested);
  summary_ = new QLabel(tr("No diagnosis yet."));
  summary_->setObjectName(QStringLiteral("doctorSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  flags_ = new QLabel;
  flags_->setObjectName(QStringLiteral("doctorFlags"));
  flags_->setWordWrap(true);
  flags_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  apply_ = new QPushButton(tr("Apply the answer"));
  apply_->setObjectName(QStringLiteral("doctorApply"));
  apply_->setToolTip(tr("Put the answer's settings into the settings panel, for the next run"));
  apply_->setEnabled(false);
  connect(apply_, &QPushButton::clicked, this, [this] {
    if (!hasAnswer()) return;
    const DoctorCandidate* a = last_->result.answer_candidate();
    emit applyRequested(doctor_config_json(last_->result), QString::fromStdString(a->label));
  });
  open_ = new QPushButton(tr("Open report folder"));
  open_->setObjectName(QStringLiteral("doctorOpen"));
  open_->setToolTip(tr("doctor.md, doctor.json, doctor-config.json and the probes' run folders"));
  open_->setEnabled(false);
  connect(open_, &QPushButton::clicked, this,
          [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(last_ ? last_->dir : QString())); });

  table_ = new QTableWidget;
  table_->setObjectName(QStringLiteral("doctorTable"));
  const std::vector<std::string>& cols = doctor_table_columns();
  table_->setColumnCount(static_cast<int>(cols.size()));
  QStringList heads;
  for (const std::string& c : cols) heads << QString::fromStdString(c);
  table_->setHorizontalHeaderLabels(heads);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  const QString tips[] = {tr("probe number; * the answer"),
                          tr("what the probe changes from your settings"),
                          tr("steps trained"),
                          tr("updates skipped after the warm-up (D and G)"),
                          tr("gradient values that are zero or subnormal in half precision"),
                          tr("final loss scales of D and G"),
                          tr("relative departure of the mean losses from the FP32 reference's"),
                          tr("images a second (median, warm-up excluded)"),
                          tr("speed against the FP32 reference"),
                          tr("speed against plain AMP"),
                          tr("peak activation memory"),
                          tr("activation memory against FP32"),
                          tr("activation memory against plain AMP"),
                          tr("clean, or what is wrong")};
  for (int c = 0; c < table_->columnCount() && c < 14; ++c) table_->horizontalHeaderItem(c)->setToolTip(tips[c]);

  auto* row = new QHBoxLayout;
  row->addWidget(start_);
  row->addWidget(apply_);
  row->addWidget(open_);
  row->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro_);
  layout->addLayout(row);
  layout->addWidget(summary_);
  layout->addWidget(flags_);
  layout->addWidget(table_, 1);
}

void DoctorView::setStartEnabled(bool on, const QString& why) {
  start_->setEnabled(on);
  start_->setToolTip(on ? tr("Run the doctor on the settings in the panel") : why);
}

void DoctorView::onStarted(const RunConfig& cfg) {
  last_.reset();
  table_->setRowCount(0);
  apply_->setEnabled(false);
  open_->setEnabled(false);
  flags_->clear();
  summary_->setText(tr("Diagnosing %1 on %2 (report in %3)…")
                        .arg(QString::fromLatin1(precision_label(cfg.precision)), QString::fromStdString(cfg.dataset),
                             QDir::toNativeSeparators(QString::fromStdString(cfg.out_dir))));
}

void DoctorView::onUpdate(const DoctorUpdatePtr& u) {
  last_ = u;
  const std::vector<std::vector<std::string>> rows = doctor_table_rows(u->result);
  table_->setRowCount(static_cast<int>(rows.size()));
  for (int r = 0; r < table_->rowCount(); ++r) {
    const bool answer = r == u->result.answer;
    for (int c = 0; c < table_->columnCount() && c < static_cast<int>(rows[r].size()); ++c) {
      auto* it = new QTableWidgetItem(QString::fromStdString(rows[r][c]));
      if (c != 1 && c + 1 != table_->columnCount()) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (answer) {
        QFont f = it->font();
        f.setBold(true);
        it->setFont(f);
      }
      if (c + 1 == table_->columnCount()) it->setToolTip(it->text());
      table_->setItem(r, c, it);
    }
  }
  table_->resizeColumnsToContents();
  const QString summary = QString::fromStdString(u->result.summary);
  summary_->setText(u->done ? summary : tr("So far: %1").arg(summary.isEmpty() ? tr("probing…") : summary));
  const std::string flags = doctor_answer_flags(u->result);
  flags_->setText(
      hasAnswer()
          ? tr("Flags: %1").arg(flags.empty() ? tr("none (your settings as they are)") : QString::fromStdString(flags))
          : QString());
  apply_->setEnabled(u->done && hasAnswer());
  open_->setEnabled(!u->dir.isEmpty());
}

bool DoctorView::hasAnswer() const { return last_ && last_->result.answer_candidate() != nullptr; }

QString DoctorView::summary() const { return summary_->text(); }

}  // namespace ampgan::ui
