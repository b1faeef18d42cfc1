#include "ui/runs/runs_panel.h"

#include <algorithm>
#include <map>

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSet>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/run/run_folder.h"
#include "ui/common/ui_types.h"
#include "ui/widgets/image_canvas.h"
#include "ui/widgets/live_plot.h"

namespace ampgan::ui {

QColor overlay_color(int n) {
  // Far (RGB distance 80 and more) from every live curve's colour: G's blue, D's red, D(x)'s
  // green, D(G(z))'s purple, SWD's cyan, FD's olive, images/s' orange, memory's grey.
  static const QColor palette[] = {QColor(200, 0, 160),   QColor(0, 110, 100),  QColor(30, 30, 30),
                                   QColor(250, 150, 120), QColor(20, 30, 120),  QColor(120, 0, 40),
                                   QColor(80, 40, 160),   QColor(227, 119, 194)};
  return palette[n % 8];
}

QStringList overlay_labels(const QStringList& names) {
  // Run folders are named <date>-<time>-<dataset>-<precision>: a legend of full names is mostly
  // what they share. Keep what tells them apart.
  if (names.isEmpty()) return {};
  std::vector<QStringList> parts;
  for (const QString& n : names) parts.push_back(n.split(QLatin1Char('-')));
  static const QRegularExpression date(QStringLiteral("^\\d{8}$"));
  QStringList out;
  if (names.size() == 1) {
    const QStringList& p = parts[0];
    out << (p.size() > 1 && date.match(p[0]).hasMatch() ? p.mid(1).join(QLatin1Char('-')) : names[0]);
    return out;
  }
  const qsizetype len = parts[0].size();
  const bool same_len = std::all_of(parts.begin(), parts.end(), [&](const QStringList& p) { return p.size() == len; });
  for (const QStringList& p : parts) {
    QStringList keep;
    for (qsizetype i = 0; i < p.size(); ++i) {
      const bool shared =
          same_len && std::all_of(parts.begin(), parts.end(), [&](const QStringList& o) { return o[i] == p[i]; });
      if (!shared) keep << p[i];
    }
    out << (keep.isEmpty() ? p.join(QLatin1Char('-')) : keep.join(QLatin1Char('-')));
  }
  // Different lengths, or two left alike: the full names, which are unique.
  if (!same_len || QSet<QString>(out.begin(), out.end()).size() != out.size()) return names;
  return out;
}

namespace {
enum Column {
  kName,
  kModel,
  kPrecision,
  kSteps,
  kLossD,
  kLossG,
  kSwd,
  kFd,
  kIps,
  kOverflows,
  kStarted,
  kSeed,
  kColumns
};

QTableWidgetItem* number_item(double v, bool integer = false) {
  auto* it = new QTableWidgetItem;
  if (std::isnan(v)) {
    it->setText(QStringLiteral("–"));
    it->setData(Qt::UserRole + 1, -1e300);
  } else {
    // Sorting by the number, not its text.
    it->setData(Qt::DisplayRole, integer ? QVariant(static_cast<qlonglong>(v)) : QVariant(std::round(v * 1e4) / 1e4));
  }
  it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return it;
}

std::vector<SampleShot> sample_files(const QString& run_dir) {
  std::vector<SampleShot> out;
  const QDir d(QDir(run_dir).filePath(QString::fromLatin1(RunFolder::kSamples)));
  for (const QString& f : d.entryList({QStringLiteral("step_*.png")}, QDir::Files, QDir::Name)) {
    SampleShot s;
    s.step = f.mid(5, f.size() - 9).toLongLong();
    s.path = d.filePath(f);
    out.push_back(std::move(s));
  }
  return out;
}
}  // namespace

RunsPanel::RunsPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  folder_ = new QLabel;
  folder_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // A long path must not set the window's minimum width (small screens).
  folder_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  folder_->setMinimumWidth(40);
  auto* choose = new QPushButton(tr("Folder…"));
  choose->setToolTip(tr("The runs folder this table shows"));
  connect(choose, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("Runs folder"), root_);
    if (!d.isEmpty()) setRunsFolder(d);
  });
  auto* refresh = new QPushButton(tr("Refresh"));
  refresh->setObjectName(QStringLiteral("runsRefresh"));
  connect(refresh, &QPushButton::clicked, this, &RunsPanel::rescan);
  group_ = new QCheckBox(tr("Group seeds"));
  group_->setToolTip(
      tr("Ticked runs whose settings differ only in the seed are drawn as one curve, their mean, with "
         "a band of ± one standard deviation"));
  connect(group_, &QCheckBox::toggled, this, &RunsPanel::ticksChanged);
  auto* open = new QPushButton(tr("Open"));
  open->setToolTip(tr("Open the selected run as the current run (its curves, samples and generator)"));
  connect(open, &QPushButton::clicked, this, [this] {
    const int r = table_->currentRow();
    if (r >= 0) emit openRequested(table_->item(r, kName)->data(Qt::UserRole).toString());
  });
  bar->addWidget(choose);
  bar->addWidget(folder_, 1);
  bar->addWidget(refresh);
  bar->addWidget(group_);
  bar->addWidget(open);
  outer->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical);
  table_ = new QTableWidget(0, kColumns);
  table_->setObjectName(QStringLiteral("runsTable"));
  table_->setHorizontalHeaderLabels({tr("Run"), tr("Model"), tr("Precision"), tr("Steps"), tr("loss D"), tr("loss G"),
                                     tr("SWD"), tr("FD"), tr("img/s"), tr("Overflows"), tr("Started"), tr("Seed")});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  // The run's name in full (the table scrolls sideways on a small screen rather than show
  // every row as "2026120… fashion-…").
  table_->setWordWrap(false);
  table_->setTextElideMode(Qt::ElideNone);
  table_->horizontalHeader()->setSectionResizeMode(kName, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSortingEnabled(true);
  table_->setToolTip(tr("Tick runs to draw them over the Live charts; click a header to sort"));
  connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* it) {
    if (!filling_ && it->column() == kName) ticksChanged();
  });
  split->addWidget(table_);

  auto* lower = new QSplitter(Qt::Horizontal);
  auto* diff_box = new QWidget;
  auto* dv = new QVBoxLayout(diff_box);
  dv->setContentsMargins(0, 0, 0, 0);
  diff_caption_ = new QLabel(tr("Tick two runs to see how their settings differ"));
  diff_caption_->setWordWrap(true);
  diff_caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  diff_ = new QTableWidget(0, 3);
  diff_->setObjectName(QStringLiteral("configDiff"));
  diff_->setHorizontalHeaderLabels({tr("Setting"), tr("first"), tr("second")});
  diff_->verticalHeader()->setVisible(false);
  diff_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  diff_->horizontalHeader()->setStretchLastSection(true);
  dv->addWidget(diff_caption_);
  dv->addWidget(diff_, 1);
  lower->addWidget(diff_box);

  auto* samples_box = new QWidget;
  auto* sv = new QVBoxLayout(samples_box);
  sv->setContentsMargins(0, 0, 0, 0);
  auto* pair = new QHBoxLayout;
  for (int i = 0; i < 2; ++i) {
    auto* col = new QVBoxLayout;
    sample_caption_[i] = new QLabel;
    sample_[i] = new ImageCanvas;
    sample_[i]->setPlaceholder(tr("tick a run"));
    sample_[i]->setMinimumSize(80, 80);
    sample_caption_[i]->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    col->addWidget(sample_caption_[i]);
    col->addWidget(sample_[i], 1);
    pair->addLayout(col, 1);
  }
  sv->addLayout(pair, 1);
  auto* sbar = new QHBoxLayout;
  step_slider_ = new QSlider(Qt::Horizontal);
  step_slider_->setObjectName(QStringLiteral("sideBySideStep"));
  step_label_ = new QLabel;
  connect(step_slider_, &QSlider::valueChanged, this, &RunsPanel::updateSamples);
  sbar->addWidget(new QLabel(tr("Samples at step")));
  sbar->addWidget(step_slider_, 1);
  sbar->addWidget(step_label_);
  sv->addLayout(sbar);
  lower->addWidget(samples_box);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  outer->addWidget(split, 1);
}

RunsPanel::~RunsPanel() {
  if (scan_thread_) scan_thread_->wait();
}

void RunsPanel::setRunsFolder(const QString& root) {
  root_ = root;
  folder_->setText(root);
  rescan();
}

void RunsPanel::rescan() {
  if (root_.isEmpty()) return;
  if (scanning_) {
    rescan_again_ = true;
    return;
  }
  scanning_ = true;
  folder_->setText(tr("%1 (reading…)").arg(root_));
  auto result = std::make_shared<std::vector<RunRecord>>();
  const QString root = root_;
  QThread* t = QThread::create([result, root] { *result = scan_runs_folder(root); });
  scan_thread_ = t;
  connect(t, &QThread::finished, this, [this, t, result] {
    t->deleteLater();
    scanning_ = false;
    const QStringList ticked = tickedNames();
    runs_ = std::move(*result);
    fill();
    for (const QString& n : ticked) setTicked(n, true);
    folder_->setText(tr("%1 — %2 runs").arg(root_).arg(runs_.size()));
    emit scanned();
    if (rescan_again_) {
      rescan_again_ = false;
      rescan();
    }
  });
  t->start(QThread::LowPriority);
}

void RunsPanel::fill() {
  filling_ = true;
  table_->setSortingEnabled(false);
  table_->setRowCount(static_cast<int>(runs_.size()));
  for (int i = 0; i < static_cast<int>(runs_.size()); ++i) {
    const RunRecord& r = runs_[i];
    auto* name = new QTableWidgetItem(r.name);
    name->setData(Qt::UserRole, r.dir);
    name->setFlags(name->flags() | Qt::ItemIsUserCheckable);
    name->setCheckState(Qt::Unchecked);
    name->setToolTip(r.dir);
    table_->setItem(i, kName, name);
    table_->setItem(i, kModel, new QTableWidgetItem(r.model));
    table_->setItem(i, kPrecision, new QTableWidgetItem(r.precision));
    table_->setItem(i, kSteps, number_item(static_cast<double>(r.steps), true));
    table_->setItem(i, kLossD, number_item(r.loss_d));
    table_->setItem(i, kLossG, number_item(r.loss_g));
    table_->setItem(i, kSwd, number_item(r.swd));
    table_->setItem(i, kFd, number_item(r.fd));
    table_->setItem(i, kIps, number_item(r.images_per_s));
    table_->setItem(i, kOverflows, number_item(static_cast<double>(r.overflows), true));
    table_->setItem(i, kStarted, new QTableWidgetItem(r.started.toString(QStringLiteral("yyyy-MM-dd hh:mm"))));
    table_->setItem(i, kSeed, number_item(static_cast<double>(r.seed), true));
  }
  table_->setSortingEnabled(true);
  filling_ = false;
  ticksChanged();
}

int RunsPanel::indexOf(const QString& name) const {
  for (int i = 0; i < static_cast<int>(runs_.size()); ++i)
    if (runs_[i].name == name) return i;
  return -1;
}

void RunsPanel::setTicked(const QString& name, bool on) {
  for (int r = 0; r < table_->rowCount(); ++r)
    if (QTableWidgetItem* it = table_->item(r, kName); it && it->text() == name)
      it->setCheckState(on ? Qt::Checked : Qt::Unchecked);
}

QStringList RunsPanel::tickedNames() const {
  // In run order (newest first), whatever the table's sorting.
  QStringList out;
  QSet<QString> ticked;
  for (int r = 0; r < table_->rowCount(); ++r)
    if (QTableWidgetItem* it = table_->item(r, kName); it && it->checkState() == Qt::Checked) ticked << it->text();
  for (const RunRecord& run : runs_)
    if (ticked.contains(run.name)) out << run.name;
  return out;
}

void RunsPanel::setGroupSeeds(bool on) { group_->setChecked(on); }

std::vector<RunOverlay> RunsPanel::overlays() const {
  std::vector<int> ticked;
  const QStringList names = tickedNames();
  for (const QString& n : names) ticked.push_back(indexOf(n));
  const QStringList labels = overlay_labels(names);
  auto label = [&](int run) { return labels.value(static_cast<int>(names.indexOf(runs_[run].name))); };
  std::vector<RunOverlay> out;
  std::vector<bool> used(runs_.size(), false);
  if (group_->isChecked()) {
    std::vector<RunRecord> chosen;
    chosen.reserve(ticked.size());
    for (int i : ticked) chosen.push_back(runs_[i]);
    for (const std::vector<int>& g : seed_groups(chosen)) {
      RunOverlay ov;
      QStringList seeds;
      for (int k : g) {
        ov.members.push_back(chosen[k].rows);
        used[ticked[k]] = true;
        seeds << QString::number(chosen[k].seed);
      }
      ov.label = tr("%1 (seeds %2, mean ± sd)").arg(label(ticked[g.front()]), seeds.join(QLatin1Char(',')));
      out.push_back(std::move(ov));
    }
  }
  for (int i : ticked)
    if (!used[i]) out.push_back({label(i), QColor(), {runs_[i].rows}});
  for (int n = 0; n < static_cast<int>(out.size()); ++n) out[n].color = overlay_color(n);
  return out;
}

std::vector<ConfigDifference> RunsPanel::tickedDiff() const {
  const QStringList t = tickedNames();
  if (t.size() < 2) return {};
  return config_diff(runs_[indexOf(t[0])].config, runs_[indexOf(t[1])].config);
}

void RunsPanel::ticksChanged() {
  updateDiff();
  // The slider covers the sample steps of the first two ticked runs.
  const QStringList t = tickedNames();
  std::vector<int64_t> steps;
  for (int k = 0; k < std::min<int>(2, static_cast<int>(t.size())); ++k)
    for (const SampleShot& s : sample_files(runs_[indexOf(t[k])].dir)) steps.push_back(s.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  sample_steps_ = steps;
  {
    const QSignalBlocker b(step_slider_);
    step_slider_->setRange(0, std::max(0, static_cast<int>(steps.size()) - 1));
    step_slider_->setValue(step_slider_->maximum());
  }
  updateSamples();
  emit overlaysChanged(overlays());
}

void RunsPanel::updateDiff() {
  const QStringList t = tickedNames();
  const std::vector<ConfigDifference> d = tickedDiff();
  diff_->setRowCount(static_cast<int>(d.size()));
  for (int i = 0; i < static_cast<int>(d.size()); ++i) {
    diff_->setItem(i, 0, new QTableWidgetItem(d[i].key));
    diff_->setItem(i, 1, new QTableWidgetItem(d[i].a));
    diff_->setItem(i, 2, new QTableWidgetItem(d[i].b));
  }
  if (t.size() >= 2) {
    // Headed by what tells the two apart (as the overlays' legends are), the full names as tooltips.
    const QStringList short_names = overlay_labels({t[0], t[1]});
    diff_->setHorizontalHeaderLabels({tr("Setting"), short_names[0], short_names[1]});
    for (int c = 1; c <= 2; ++c) diff_->horizontalHeaderItem(c)->setToolTip(t[c - 1]);
    diff_caption_->setText(d.empty() ? tr("%1 and %2 have the same settings").arg(t[0], t[1])
                                     : tr("%1 settings differ").arg(d.size()));
  } else {
    diff_->setHorizontalHeaderLabels({tr("Setting"), tr("first"), tr("second")});
    diff_caption_->setText(tr("Tick two runs to see how their settings differ"));
  }
}

void RunsPanel::setSampleStep(int64_t step) {
  const auto it = std::lower_bound(sample_steps_.begin(), sample_steps_.end(), step);
  step_slider_->setValue(static_cast<int>(
      std::min<std::ptrdiff_t>(it - sample_steps_.begin(), static_cast<std::ptrdiff_t>(sample_steps_.size()) - 1)));
}

void RunsPanel::updateSamples() {
  const QStringList t = tickedNames();
  const int64_t step =
      sample_steps_.empty() ? 0 : sample_steps_[std::clamp<size_t>(step_slider_->value(), 0, sample_steps_.size() - 1)];
  step_label_->setText(sample_steps_.empty() ? QString() : QString::number(step));
  for (int k = 0; k < 2; ++k) {
    QImage img;
    QString caption;
    if (k < t.size()) {
      // The newest grid at or before the slider's step.
      const std::vector<SampleShot> shots = sample_files(runs_[indexOf(t[k])].dir);
      const SampleShot* best = nullptr;
      for (const SampleShot& s : shots)
        if (s.step <= step) best = &s;
      if (best) img.load(best->path);
      caption = best ? tr("%1 · step %2").arg(t[k]).arg(best->step) : tr("%1 · no grid yet").arg(t[k]);
    }
    sample_[k]->setImage(img);
    sample_caption_[k]->setText(caption);
  }
}

QImage RunsPanel::sideBySide(int which) const { return which >= 0 && which < 2 ? sample_[which]->image() : QImage(); }

}  // namespace ampgan::ui
