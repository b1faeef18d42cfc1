#include "ui/views/compare_view.h"

#include <cmath>
#include <filesystem>

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/io/atomic_file.h"
#include "core/run/compare.h"
#include "core/run/run_folder.h"
#include "ui/common/amp_glossary.h"
#include "ui/widgets/image_canvas.h"

namespace ampgan::ui {

namespace {

const QColor kBaseline(31, 119, 180);  // FP32: solid blue
const QColor kAmp(255, 127, 14);       // AMP: dashed orange
constexpr double kEma = 0.9;
constexpr const char* kVerdictFile = "verdict.txt";  // beside compare.tsv in the comparison's folder

const int kNumColumns = static_cast<int>(compare_columns().size());  // core/run/run_summary.h

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  // Everything in a scroll area: the table and six charts need ~670 px, and a small window
  // scrolls them rather than being held wider than the screen.
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* body = new QWidget;
  scroll->setWidget(body);
  outer->addWidget(scroll);
  auto* v = new QVBoxLayout(body);
  v->setContentsMargins(4, 4, 4, 4);
  v->addLayout(makeControls());
  status_ = new QLabel(tr("Press Run comparison (Ctrl+R)."));
  status_->setStyleSheet(QStringLiteral("color: gray"));
  status_->setMinimumWidth(50);  // long messages must not widen the window
  // The verdict runs to three sentences (speed, the CPU's half support, the largest batch):
  // wrapped rather than cut at the window's edge, and selectable to copy.
  status_->setObjectName(QStringLiteral("compareStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Below the scroll area, not in it: the body may be wider than the tab (its charts' minimum
  // widths), and a wrapped verdict inside it would be cut at the viewport's edge.
  status_->setContentsMargins(4, 2, 4, 2);
  outer->addWidget(status_);

  auto* split = new QSplitter(Qt::Vertical);
  split->setObjectName(QStringLiteral("compareSplitter"));
  split->addWidget(makeTable());
  split->addWidget(makeChartsAndSamples());
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setCollapsible(0, false);
  split->setSizes({table_->minimumHeight(), 100000});  // the table as small as two rows need
  v->addWidget(split, 1);

  timer_.setInterval(100);
  connect(&timer_, &QTimer::timeout, this, [this] {
    for (LivePlot* p : plots_)
      if (p->isDirty() && p->isVisible()) p->refresh();
  });
  timer_.start();
}

// The bar above the table: the AMP mode, the steps, Largest batch, Run comparison, Copy table.
QHBoxLayout* CompareView::makeControls() {
  auto* bar = new QHBoxLayout;
  auto* intro = new QLabel(tr("Train the settings twice: <b>FP32</b> and"));
  intro->setToolTip(
      tr("Both runs use the settings on the left (same seed, same data order, same initial "
         "weights); only the precision differs. Each run gets its own folder."));
  bar->addWidget(intro);
  amp_box_ = new QComboBox;
  for (Precision p : {Precision::FP16, Precision::BF16, Precision::TF32})
    amp_box_->addItem(QString::fromLatin1(precision_label(p)), static_cast<int>(p));
  amp_box_->setToolTip(glossary::bf16_vs_fp16());
  bar->addWidget(amp_box_);
  bar->addWidget(new QLabel(tr("for")));
  steps_box_ = new QSpinBox;
  steps_box_->setRange(2, 10000000);
  steps_box_->setValue(300);
  steps_box_->setSuffix(tr(" steps"));
  steps_box_->setToolTip(tr("Steps of each of the two runs. Same seed, same data order, same settings otherwise."));
  bar->addWidget(steps_box_);
  // Off by default: the search trains at batches many times the run's, which on a CPU can take
  // longer than the comparison itself; the question it answers (how much more fits) is asked
  // on purpose.
  max_batch_box_ = new QCheckBox(tr("Largest batch"));
  max_batch_box_->setObjectName(QStringLiteral("compareMaxBatch"));
  max_batch_box_->setToolTip(
      tr("After the two runs, find the largest batch that fits the memory budget in FP32 and in "
         "the AMP mode: peak memory at the batch and twice it, a linear prediction, checked by "
         "running two steps there. The budget: on the CPU the Memory budget setting (Device), "
         "on a GPU 90% of its free memory. Stop ends it."));
  bar->addWidget(max_batch_box_);
  run_btn_ = new QPushButton(tr("Run comparison"));
  run_btn_->setToolTip(tr("Ctrl+R. Stop (Ctrl+.) ends it early; each run keeps its own folder."));
  connect(run_btn_, &QPushButton::clicked, this, [this] { emit compareRequested(ampMode(), steps()); });
  bar->addWidget(run_btn_);
  auto* copy = new QPushButton(tr("Copy table"));
  copy->setToolTip(tr("Copy the table as tab-separated text (pastes into a spreadsheet)"));
  connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(tableAsText()); });
  bar->addWidget(copy);
  bar->addStretch(1);
  return bar;
}

// The table's columns are the ones `ampgan compare` prints (compare_columns()).
QTableWidget* CompareView::makeTable() {
  table_ = new QTableWidget(0, kNumColumns);
  QStringList headers;
  for (const std::string& c : compare_columns()) headers << QString::fromStdString(c);
  table_->setHorizontalHeaderLabels(headers);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  auto header_tip = [&](const char* header, const QString& tip) {
    table_->horizontalHeaderItem(column(QString::fromUtf8(header)))->setToolTip(tip);
  };
  header_tip("Images/s (median)", tr("Median over the run, warm-up steps left out"));
  header_tip("Peak memory",
             tr("Peak of all backend memory over the run; the next columns are each category's own peak"));
  header_tip("Largest batch", tr("The largest batch within the memory budget, verified by running two steps there, and "
                                 "its ratio to FP32's (tick Largest batch)"));
  header_tip("Final loss D", tr("Mean over the last steps (a tenth of the run, at most 50)"));
  header_tip("Overflows D/G", glossary::overflow());
  // Header, two rows and the horizontal scroll bar, without a vertical one.
  table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() +
                           2 * table_->verticalHeader()->defaultSectionSize() +
                           table_->horizontalScrollBar()->sizeHint().height() + 2 * table_->frameWidth() + 4);
  table_->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  return table_;
}

// The six overlaid charts in a grid and, beside them, the newest sample grid of each run.
QWidget* CompareView::makeChartsAndSamples() {
  auto* plots = new QWidget;
  auto* grid = new QGridLayout(plots);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(3);
  addOverlayPlot(QStringLiteral("loss_d"), tr("Loss D (smoothed)"), 0, tr("loss"));
  addOverlayPlot(QStringLiteral("loss_g"), tr("Loss G (smoothed)"), 0, tr("loss"));
  addOverlayPlot(QStringLiteral("loss_scale"), tr("Loss scale S_D and overflows"), 2, tr("S"));
  addOverlayPlot(QStringLiteral("grad_norm_g"), tr("Gradient norm G"), 10, tr("|g|"));
  addOverlayPlot(QStringLiteral("images_per_s"), tr("Images/s"), 0, tr("images/s"));
  addOverlayPlot(QStringLiteral("memory"), tr("Memory"), 0, tr("MiB"));
  plots_.value(QStringLiteral("loss_scale"))->setTitleToolTip(glossary::loss_scale());
  const QStringList order = {QStringLiteral("loss_d"),       QStringLiteral("loss_g"),
                             QStringLiteral("loss_scale"),   QStringLiteral("grad_norm_g"),
                             QStringLiteral("images_per_s"), QStringLiteral("memory")};
  for (int i = 0; i < order.size(); ++i) grid->addWidget(plots_.value(order[i]), i / 3, i % 3);
  // The newest sample grid of each run, side by side with the curves: same latents, same seed.
  auto* bottom = new QWidget;
  auto* hb = new QHBoxLayout(bottom);
  hb->setContentsMargins(0, 0, 0, 0);
  hb->addWidget(plots, 4);
  auto* sv = new QVBoxLayout;
  for (int i = 0; i < 2; ++i) {
    grid_labels_[i] = new QLabel(i == 0 ? tr("FP32 samples") : tr("AMP samples"));
    grid_labels_[i]->setAlignment(Qt::AlignCenter);
    grids_[i] = new ImageCanvas;
    grids_[i]->setPlaceholder(tr("samples of the %1 run").arg(i == 0 ? tr("FP32") : tr("AMP")));
    grids_[i]->setMinimumSize(120, 120);
    grids_[i]->setToolTip(tr("The same 64 fixed latent vectors in both runs"));
    sv->addWidget(grid_labels_[i]);
    sv->addWidget(grids_[i], 1);
  }
  hb->addLayout(sv, 1);
  return bottom;
}

void CompareView::addOverlayPlot(const QString& id, const QString& title, int log_base, const QString& ylabel) {
  auto* p = new LivePlot(title);
  p->setObjectName(QStringLiteral("compare_") + id);
  if (log_base) p->setLogY(log_base);
  p->setAxisLabels(ylabel);
  std::array<QCPGraph*, 2> g{};
  g[0] = p->addSeries(QStringLiteral("FP32"), kBaseline, Qt::SolidLine, 1.8);
  g[1] = p->addSeries(QStringLiteral("AMP"), kAmp, Qt::DashLine, 1.8);
  if (log_base == 2) {
    for (QCPGraph* x : g) x->setLineStyle(QCPGraph::lsStepLeft);
    p->addMarkers(QStringLiteral("AMP overflow"), kAmp.darker(150), QCPScatterStyle::ssCross, 7);
  }
  plots_.insert(id, p);
  graphs_.insert(id, g);
}

Precision CompareView::ampMode() const { return static_cast<Precision>(amp_box_->currentData().toInt()); }

void CompareView::setAmpMode(Precision p) {
  const int i = amp_box_->findData(static_cast<int>(p));
  if (i >= 0) amp_box_->setCurrentIndex(i);
}

bool CompareView::maxBatch() const { return max_batch_box_->isChecked(); }
void CompareView::setMaxBatch(bool on) { max_batch_box_->setChecked(on); }

int CompareView::steps() const { return steps_box_->value(); }
void CompareView::setSteps(int steps) { steps_box_->setValue(steps); }

void CompareView::setBusy(bool busy) {
  busy_ = busy;
  run_btn_->setEnabled(!busy);
}

void CompareView::begin(Precision amp) {
  amp_ = amp;
  running_ = true;
  runs_ = {};
  summaries_ = {};
  max_batch_.reset();
  runs_[0].label = QString::fromLatin1(precision_label(Precision::FP32));
  runs_[1].label = QString::fromLatin1(precision_label(amp));
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    it.value()[0]->setName(runs_[0].label);
    it.value()[1]->setName(runs_[1].label);
  }
  for (LivePlot* p : plots_) p->clearAllData();
  table_->setRowCount(0);
  verdict_.clear();
  status_->setToolTip({});
  for (int i = 0; i < 2; ++i) {
    grids_[i]->setImage({});
    grid_labels_[i]->setText(tr("%1 samples").arg(runs_[i].label));
  }
  status_->setText(tr("starting the %1 run…").arg(runs_[0].label));
}

void CompareView::onRunStarted(const RunStartInfo& info) {
  const int i = info.tag == RunTag::CompareBaseline ? 0 : 1;
  runs_[i].dir = info.dir;
  on_cpu_ = info.backend.startsWith(QStringLiteral("CPU"));
  status_->setText(tr("run %1 of 2: %2 on %3").arg(i + 1).arg(runs_[i].label, info.backend));
}

void CompareView::onRows(RunTag tag, const std::vector<StepMetrics>& rows) {
  if (tag == RunTag::Main) return;
  const int i = tag == RunTag::CompareBaseline ? 0 : 1;
  RunData& r = runs_[i];
  auto add = [&](const QString& id, double x, double y, bool positive) {
    if (std::isnan(y) || std::isinf(y) || (positive && y <= 0)) return;
    plots_.value(id)->append(graphs_.value(id)[i], x, y);
    plots_.value(id)->markDirty();
  };
  for (const StepMetrics& m : rows) {
    const double x = static_cast<double>(m.step);
    r.ema_d = kEma * r.ema_d + (1 - kEma) * m.loss_d;
    r.ema_g = kEma * r.ema_g + (1 - kEma) * m.loss_g;
    ++r.ema_n;
    const double debias = 1 - std::pow(kEma, r.ema_n);
    add(QStringLiteral("loss_d"), x, r.ema_d / debias, false);
    add(QStringLiteral("loss_g"), x, r.ema_g / debias, false);
    add(QStringLiteral("loss_scale"), x, m.scale_d, true);
    add(QStringLiteral("grad_norm_g"), x, m.grad_norm_g, true);
    add(QStringLiteral("images_per_s"), x, m.images_per_s, true);
    add(QStringLiteral("memory"), x, m.memory_mb, false);
    if (i == 1 && (m.skipped_d || m.skipped_g)) {
      LivePlot* p = plots_.value(QStringLiteral("loss_scale"));
      p->append(p->graph(2), x, m.skipped_d ? m.scale_d : m.scale_g);
    }
    r.rows.push_back(m);
  }
  if (!rows.empty()) status_->setText(tr("run %1 of 2 (%2): step %3").arg(i + 1).arg(r.label).arg(rows.back().step));
}

void CompareView::onSample(RunTag tag, const SampleShot& shot) {
  if (tag == RunTag::Main || shot.image.isNull()) return;
  const int i = tag == RunTag::CompareBaseline ? 0 : 1;
  grids_[i]->setImage(shot.image);
  grid_labels_[i]->setText(tr("%1 samples · step %2").arg(runs_[i].label).arg(shot.step));
}

void CompareView::onRunFinished(const RunEndInfo& info) {
  if (info.tag == RunTag::Main) return;
  const int i = info.tag == RunTag::CompareBaseline ? 0 : 1;
  runs_[i].finished = true;
  runs_[i].ok = info.ok && info.reason == QStringLiteral("finished");
  runs_[i].memory = info.memory;
  if (runs_[i].dir.isEmpty()) runs_[i].dir = info.dir;
  summaries_[i] = summarize(runs_[i].rows);
  updateTable();
}

void CompareView::onWorkProgress(const QString& what, int done, int total) {
  if (!running_ || !what.startsWith(QStringLiteral("largest batch")) || done >= total) return;
  status_->setText(tr("%1 (%2 of %3 measurements; Stop ends it)").arg(what).arg(done).arg(total));
}

void CompareView::onMaxBatch(const MaxBatchPtr& result) {
  max_batch_ = result;
  updateTable();
}

void CompareView::onFinished(bool complete) {
  running_ = false;
  const bool both = runs_[0].finished && runs_[1].finished && runs_[0].ok && runs_[1].ok;
  QStringList parts;
  if (both)
    for (const QString& p : QString::fromStdString(compare_verdict(compareRun(0), compareRun(1), amp_, on_cpu_))
                                .split(QStringLiteral(" · "), Qt::SkipEmptyParts))
      parts << p;
  // The largest batch's verdict names its budget; a stopped search says so.
  if (max_batch_)
    if (const std::string fits = compare_max_batch_verdict(*max_batch_, amp_); !fits.empty())
      parts << QString::fromStdString(fits);
  verdict_ = parts.join(QLatin1Char('\n'));
  if (!verdict_.isEmpty())
    status_->setText((complete ? tr("done: %1") : tr("stopped: %1")).arg(verdict_));
  else
    status_->setText(complete ? tr("done") : tr("stopped before both runs finished"));
  status_->setToolTip(verdict_);
  writeSummaryFiles();
}

// What `ampgan compare` leaves in the comparison's folder (<root>/compare.tsv), plus the verdict,
// so that a comparison run in the studio can be read without it.
void CompareView::writeSummaryFiles() {
  if (runs_[0].dir.isEmpty() || table_->rowCount() == 0) return;
  const std::filesystem::path root = std::filesystem::path(runs_[0].dir.toStdString()).parent_path();
  std::vector<CompareRun> runs;
  for (int i = 0; i < 2; ++i)
    if (runs_[i].finished) runs.push_back(compareRun(i));
  try {
    io::write_file_atomic(root / RunFolder::kCompareTable, compare_table_text(runs, true));
    if (!verdict_.isEmpty()) io::write_file_atomic(root / kVerdictFile, verdict_.toStdString() + "\n");
  } catch (const std::exception& e) {
    // The runs are on disk whatever happens here; only the summary is missing, and the line says so.
    status_->setText(status_->text() + QLatin1Char('\n') +
                     tr("(the summary was not written: %1)").arg(QString::fromUtf8(e.what())));
  }
}

int CompareView::column(const QString& header) const {
  for (int c = 0; c < table_->columnCount(); ++c)
    if (table_->horizontalHeaderItem(c) && table_->horizontalHeaderItem(c)->text() == header) return c;
  return -1;
}

int CompareView::tableRows() const { return table_->rowCount(); }
QString CompareView::statusText() const { return status_->text(); }

QString CompareView::cell(int row, const QString& header) const {
  const int c = column(header);
  const QTableWidgetItem* it = c >= 0 ? table_->item(row, c) : nullptr;
  return it ? it->text() : QString();
}

void CompareView::setRow(int row, int i, const CompareRun& baseline) {
  const RunData& r = runs_[i];
  const RunSummary& s = summaries_[i];
  // The cells are the run layer's, so `ampgan compare` prints the same table.
  const std::vector<std::string> cells = compare_cells(compareRun(i), baseline, row == 0);
  for (int col = 0; col < kNumColumns; ++col) {
    auto* it = new QTableWidgetItem(QString::fromStdString(cells[col]));
    if (col > 0 && col != kNumColumns - 1) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(row, col, it);
  }
  auto tip = [&](const char* header, const QString& text) {
    table_->item(row, column(QString::fromUtf8(header)))->setToolTip(text);
  };
  tip("Final loss D", tr("mean of the last %1 steps").arg(s.last_n));
  tip("Final loss G", tr("mean of the last %1 steps").arg(s.last_n));
  if (std::isnan(s.swd)) tip("SWD", tr("no evaluation ran: set an eval interval"));
  if (std::isnan(s.fd)) tip("FD", tr("no evaluation ran, or the dataset has no labels"));
  if (const MaxBatchRow* m = max_batch_ ? max_batch_->row(i == 0 ? Precision::FP32 : amp_) : nullptr)
    tip("Largest batch", m->problem.empty()
                             ? tr("verified: two steps at batch %1 peaked at %2 MiB of %3 MiB (%4); predicted %5")
                                   .arg(m->fits)
                                   .arg(memory_mib(m->verified.mem.peak_total), 0, 'f', 1)
                                   .arg(max_batch_->budget / 1048576.0, 0, 'f', 0)
                                   .arg(QString::fromStdString(max_batch_->budget_from))
                                   .arg(m->predicted)
                             : QString::fromStdString(m->problem));
  else
    tip("Largest batch", tr("not searched: tick Largest batch"));
  tip("Folder", r.dir);
}

CompareRun CompareView::compareRun(int i) const {
  const RunData& r = runs_[i];
  CompareRun c;
  c.label = r.label.toStdString();
  c.ok = r.ok;
  c.summary = summaries_[i];
  c.memory = r.memory;
  c.dir = r.dir.toStdString();
  if (max_batch_) set_max_batch(c, i == 0 ? Precision::FP32 : amp_, *max_batch_);
  return c;
}

void CompareView::updateTable() {
  int rows = 0;
  for (const RunData& r : runs_) rows += r.finished;
  table_->setRowCount(rows);
  int row = 0;
  for (int i = 0; i < 2; ++i)
    if (runs_[i].finished) setRow(row++, i, compareRun(0));
}

QString CompareView::tableAsText() const {
  QStringList lines;
  QStringList h;
  for (int c = 0; c < table_->columnCount(); ++c) h << table_->horizontalHeaderItem(c)->text();
  lines << h.join(QLatin1Char('\t'));
  for (int r = 0; r < table_->rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < table_->columnCount(); ++c)
      cells << (table_->item(r, c) ? table_->item(r, c)->text() : QString());
    lines << cells.join(QLatin1Char('\t'));
  }
  // The verdict below the rows, one sentence a line in the first column.
  if (!verdict_.isEmpty()) lines << QString() << verdict_;
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace ampgan::ui
