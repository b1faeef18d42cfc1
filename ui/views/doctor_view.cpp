#include "ui/views/doctor_view.h"

#include <algorithm>

#include <QDesktopServices>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "core/run/doctor_report.h"

namespace ampgan::ui {

DoctorView::DoctorView(QWidget* parent) : QWidget(parent) {
  // The search above, the replay below, in a splitter: each gets the room when it is used.
  QWidget* search = buildSearch();
  QWidget* replay = buildReplay();
  split_ = new QSplitter(Qt::Vertical);
  split_->addWidget(search);
  split_->addWidget(replay);
  split_->setStretchFactor(0, 3);
  split_->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split_);
  // A table shows once it has rows, so that the other section has the room until then.
  table_->hide();
  replay_table_->hide();
}

// The recipe search: its introduction, Diagnose / Apply / Open, the verdict and the table.
QWidget* DoctorView::buildSearch() {
  intro_ =
      new QLabel(tr("Finds the cheapest mixed-precision recipe that trains the panel's settings cleanly, "
                    "in short probes from one start."));
  intro_->setToolTip(
      tr("A short FP32 reference and a short probe in the panel's half precision (same seed and data); if the probe "
         "skips updates, underflows or departs from FP32, remedies from the same start, cheapest first: the loss "
         "scaler's settings, FP32 for the layers where overflows start, half precision in fewer blocks, an "
         "activation clamp, nan_to_num. Each probe is a run folder."));
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

  table_->setMinimumHeight(4 * table_->fontMetrics().height() + 8);

  auto* search = new QWidget;
  auto* search_layout = new QVBoxLayout(search);
  search_layout->setContentsMargins(0, 0, 0, 0);
  search_layout->addWidget(intro_);
  search_layout->addLayout(row);
  search_layout->addWidget(summary_);
  search_layout->addWidget(flags_);
  search_layout->addWidget(table_, 1);
  search_layout->addStretch(0);  // holds the lines at the top while the table is hidden
  return search;
}

// The first-divergence replay of one step: the step, Replay, the verdict and the per-layer table.
QWidget* DoctorView::buildReplay() {
  auto* replay_title =
      new QLabel(tr("<b>Replay a step</b> of the current run in its precision and in FP32: where "
                    "does it depart? (an overflow marker's click picks its step)"));
  replay_title->setToolTip(
      tr("From the run's checkpoint before the step (or its start): the first layer whose "
         "output or gradient departs beyond its dtype's expected error or goes inf/NaN"));
  replay_title->setWordWrap(true);
  replay_step_ = new QSpinBox;
  replay_step_->setObjectName(QStringLiteral("replayStep"));
  replay_step_->setRange(1, 1000000000);
  replay_step_->setPrefix(tr("step "));
  replay_start_ = new QPushButton(tr("Replay"));
  replay_start_->setObjectName(QStringLiteral("replayStart"));
  replay_start_->setEnabled(false);
  connect(replay_start_, &QPushButton::clicked, this, [this] { emit replayRequested(replay_step_->value()); });
  replay_verdict_ = new QLabel;
  replay_verdict_->setObjectName(QStringLiteral("replayVerdict"));
  replay_verdict_->setWordWrap(true);
  replay_verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  replay_table_ = new QTableWidget(0, 6);
  replay_table_->setObjectName(QStringLiteral("replayTable"));
  replay_table_->setHorizontalHeaderLabels(
      {tr("pass"), tr("layer / tensor"), tr("type, input"), tr("half vs FP32"), tr("inf/NaN"), tr("")});
  replay_table_->horizontalHeaderItem(3)->setToolTip(
      tr("forward: relative error ||half - fp32|| / ||fp32|| of the layer's output; backward: of the gradient's "
         "largest magnitude"));
  replay_table_->verticalHeader()->hide();
  replay_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  replay_table_->horizontalHeader()->setStretchLastSection(true);
  replay_table_->setMinimumHeight(4 * replay_table_->fontMetrics().height() + 8);
  auto* replay_row = new QHBoxLayout;
  replay_row->addWidget(replay_step_);
  replay_row->addWidget(replay_start_);
  replay_row->addStretch(1);

  auto* replay = new QWidget;
  auto* replay_layout = new QVBoxLayout(replay);
  replay_layout->setContentsMargins(0, 0, 0, 0);
  replay_layout->addWidget(replay_title);
  replay_layout->addLayout(replay_row);
  replay_layout->addWidget(replay_verdict_);
  replay_layout->addWidget(replay_table_, 1);
  replay_layout->addStretch(0);
  return replay;
}

void DoctorView::setReplayRun(const QString& dir, bool can_start, const QString& why) {
  replay_run_ = dir;
  replay_start_->setEnabled(!dir.isEmpty() && can_start);
  replay_start_->setToolTip(dir.isEmpty() ? tr("Start a run or open one first")
                            : can_start   ? tr("Replay this step of %1").arg(QDir::toNativeSeparators(dir))
                                          : why);
}

void DoctorView::setReplayStep(qint64 step) {
  replay_step_->setValue(static_cast<int>(std::min<qint64>(step, 1000000000)));
}

qint64 DoctorView::replayStep() const { return replay_step_->value(); }

QString DoctorView::replayVerdict() const { return replay_verdict_->text(); }

void DoctorView::onReplayStarted(qint64 step) {
  replay_.reset();
  replay_table_->setRowCount(0);
  replay_table_->hide();
  replay_verdict_->setText(tr("Replaying step %1…").arg(step));
}

void DoctorView::onReplayed(const ReplayResultPtr& r) {
  replay_ = r;
  if (!r) {
    replay_verdict_->setText(tr("The replay could not run: see the error."));
    return;
  }
  const QString from =
      r->from_start ? tr("from the run's initialisation") : tr("from checkpoint step %1").arg(r->checkpoint_step);
  replay_verdict_->setText(
      tr("Step %1, %2, %3 against FP32: %4")
          .arg(r->step)
          .arg(from, QString::fromLatin1(precision_name(r->precision)), QString::fromStdString(r->verdict)));
  const int rows = static_cast<int>(r->forward.size() + r->gradients.size());
  replay_table_->setRowCount(rows);
  replay_table_->setVisible(rows > 0);
  // With no search shown, the replay's table takes the room.
  if (table_->isHidden()) split_->setSizes({split_->height() / 4, split_->height() * 3 / 4});
  auto put = [this](int row, int col, const QString& text, bool bold) {
    auto* it = new QTableWidgetItem(text);
    if (col == 3 || col == 4) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (bold) {
      QFont f = it->font();
      f.setBold(true);
      it->setFont(f);
    }
    replay_table_->setItem(row, col, it);
  };
  int row = 0;
  for (size_t i = 0; i < r->forward.size(); ++i, ++row) {
    const ReplayActivation& a = r->forward[i];
    const bool first = static_cast<int>(i) == r->first_forward;
    put(row, 0, tr("forward"), first);
    put(row, 1, QString::fromStdString(a.layer), first);
    put(row, 2, QStringLiteral("%1, %2").arg(QString::fromStdString(a.type), QString::fromStdString(a.input)), first);
    put(row, 3, QString::number(a.rel_error, 'g', 3), first);
    put(row, 4, QString::number(a.nonfinite), first);
    put(row, 5, first ? tr("first departure") : a.departs ? tr("departs") : QString(), first);
  }
  for (size_t i = 0; i < r->gradients.size(); ++i, ++row) {
    const ReplayGradient& g = r->gradients[i];
    const bool first = static_cast<int>(i) == r->first_gradient;
    put(row, 0, tr("backward"), first);
    put(row, 1, QString::fromStdString(g.name), first);
    put(row, 2, tr("max |g| %1 vs %2").arg(g.max_half, 0, 'g', 4).arg(g.max_fp32, 0, 'g', 4), first);
    put(row, 3, QString::number(g.rel_error, 'g', 3), first);
    put(row, 4, QString::number(g.nonfinite), first);
    put(row, 5, first ? tr("first departure") : g.departs ? tr("departs") : QString(), first);
  }
  replay_table_->resizeColumnsToContents();
  const int focus = r->first_forward >= 0
                        ? r->first_forward
                        : (r->first_gradient >= 0 ? static_cast<int>(r->forward.size()) + r->first_gradient : -1);
  if (focus >= 0) {
    replay_table_->selectRow(focus);
    replay_table_->scrollToItem(replay_table_->item(focus, 0), QAbstractItemView::PositionAtCenter);
  }
}

void DoctorView::setStartEnabled(bool on, const QString& why) {
  start_->setEnabled(on);
  start_->setToolTip(on ? tr("Run the doctor on the settings in the panel") : why);
}

void DoctorView::onStarted(const RunConfig& cfg) {
  last_.reset();
  table_->setRowCount(0);
  table_->hide();
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
  table_->setVisible(!rows.empty());
  if (replay_table_->isHidden()) split_->setSizes({split_->height() * 3 / 4, split_->height() / 4});
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
