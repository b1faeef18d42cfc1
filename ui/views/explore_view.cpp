#include "ui/views/explore_view.h"

#include <algorithm>

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/widgets/image_canvas.h"
#include "ui/widgets/input_guards.h"

namespace ampgan::ui {

namespace {

// Sides big enough to judge a 32 px image, never blurred (whole-number factors): the grid's
// icons, the strip's (smaller: one row under the grid) and the player's frame.
// The grid's images are kept as floats and as icons: 256 of 128 px RGB are 50 MB and 16 MB.
constexpr size_t kMaxTabSeeds = 256;

int icon_side(int res) { return res * std::max(1, 96 / res); }
int strip_side(int res) { return res * std::max(1, 64 / res); }
int player_factor(int res) { return std::max(1, 128 / res); }

}  // namespace

ExploreView::ExploreView(QWidget* parent) : QWidget(parent) {
  buildControls();
  timer_ = new QTimer(this);
  connect(timer_, &QTimer::timeout, this, [this] {
    if (frameCount() > 0) showFrame((play_frame_ + 1) % frameCount());
  });
  setGenerator(false, QString());
}

// The seeds, the truncation and Generate / Stop.
QHBoxLayout* ExploreView::buildSeedRow(WheelGuard* guard) {
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Seeds")));
  seeds_ = new QLineEdit(QStringLiteral("0-31"));
  seeds_->setObjectName(QStringLiteral("exploreSeeds"));
  seeds_->setToolTip(
      tr("One image per seed: 0-31, 3,7,9 or 0-7,100. A seed's image is the same in any list, "
         "and the same as `ampgan sample RUN --seeds LIST` writes."));
  seeds_->setMinimumWidth(seeds_->fontMetrics().horizontalAdvance(QStringLiteral("0-31,100-107")));
  seeds_->setMaximumWidth(200);
  connect(seeds_, &QLineEdit::returnPressed, this, [this] { generate(); });
  top->addWidget(seeds_);
  truncate_ = new QCheckBox(tr("Truncation"));
  truncate_->setObjectName(QStringLiteral("exploreTruncate"));
  truncate_->setToolTip(
      tr("BigGAN's truncation trick: latent values beyond ±T are drawn again, so the images are "
         "more typical and less varied (smaller T: more so)."));
  threshold_ = new QDoubleSpinBox;
  threshold_->setObjectName(QStringLiteral("exploreThreshold"));
  threshold_->setRange(0.05, kMaxTruncation);
  threshold_->setSingleStep(0.05);
  threshold_->setValue(0.7);
  threshold_->setEnabled(false);
  guard->guard(threshold_);
  connect(truncate_, &QCheckBox::toggled, threshold_, &QWidget::setEnabled);
  top->addWidget(truncate_);
  top->addWidget(threshold_);
  generate_ = new QPushButton(tr("Generate"));
  generate_->setObjectName(QStringLiteral("exploreGenerate"));
  generate_->setToolTip(tr("Make the seeds' images with the generator now (Enter in the seeds field)"));
  connect(generate_, &QPushButton::clicked, this, [this] { generate(); });
  top->addWidget(generate_);
  stop_ = new QPushButton(tr("Stop"));
  stop_->setObjectName(QStringLiteral("exploreStop"));
  stop_->setEnabled(false);
  connect(stop_, &QPushButton::clicked, this, [this] { emit cancelRequested(); });
  top->addWidget(stop_);
  top->addStretch(1);
  return top;
}

// Follow training, the class picker, Copy seed, the export scale and Export: a second row, so that the tab fits
// the central area of a 1024 px window beside the docks.
QHBoxLayout* ExploreView::buildExportRow(WheelGuard* guard) {
  follow_ = new QCheckBox(tr("Follow training"));
  follow_->setObjectName(QStringLiteral("exploreFollow"));
  follow_->setToolTip(
      tr("While a run trains: make the grid again with each new sample grid, so the same seeds "
         "show how the generator changes"));
  auto* top2 = new QHBoxLayout;
  top2->addWidget(follow_);
  buildClassPicker(top2, guard);
  top2->addStretch(1);
  copy_seed_ = new QPushButton(tr("Copy seed"));
  copy_seed_->setObjectName(QStringLiteral("exploreCopySeed"));
  copy_seed_->setToolTip(tr("Copy the selected image's seed, for --seeds or --interpolate"));
  connect(copy_seed_, &QPushButton::clicked, this, [this] {
    const auto items = grid_list_->selectedItems();
    if (!items.isEmpty()) QApplication::clipboard()->setText(items.last()->data(Qt::UserRole).toString());
  });
  top2->addWidget(copy_seed_);
  top2->addWidget(new QLabel(tr("Scale")));
  scale_ = new QSpinBox;
  scale_->setObjectName(QStringLiteral("exploreScale"));
  scale_->setRange(1, 16);
  scale_->setValue(4);
  scale_->setSuffix(QStringLiteral("×"));
  scale_->setToolTip(tr("Exports enlarge every pixel this many times (nearest neighbour: no blur)"));
  guard->guard(scale_);
  top2->addWidget(scale_);
  export_ = new QToolButton;
  export_->setObjectName(QStringLiteral("exploreExport"));
  export_->setText(tr("Export"));
  export_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(export_);
  const QString items[] = {tr("Grid as PNG…"), tr("Selected image as PNG…"), tr("Interpolation frames as PNGs…"),
                           tr("Interpolation as video (MP4 or animated WebP)…")};
  for (int i = 0; i < 4; ++i)
    connect(menu->addAction(items[i]), &QAction::triggered, this, [this, i] { exportMenu(i); });
  export_->setMenu(menu);
  top2->addWidget(export_);
  return top2;
}

// The interpolation: its two seeds, frames and path, Interpolate / Play, the player and the strip.
QWidget* ExploreView::buildWalk(WheelGuard* guard) {
  auto* walk_row = new QHBoxLayout;
  walk_row->addWidget(new QLabel(tr("Interpolate from seed")));
  seed_a_ = new QLineEdit(QStringLiteral("0"));
  seed_a_->setObjectName(QStringLiteral("exploreSeedA"));
  seed_a_->setMaximumWidth(80);
  walk_row->addWidget(seed_a_);
  walk_row->addWidget(new QLabel(tr("to")));
  seed_b_ = new QLineEdit(QStringLiteral("1"));
  seed_b_->setObjectName(QStringLiteral("exploreSeedB"));
  seed_b_->setMaximumWidth(80);
  walk_row->addWidget(seed_b_);
  frames_ = new QSpinBox;
  frames_->setObjectName(QStringLiteral("exploreFrames"));
  frames_->setRange(2, 240);
  frames_->setValue(16);
  frames_->setSuffix(tr(" frames"));
  guard->guard(frames_);
  walk_row->addWidget(frames_);
  path_ = new QComboBox;
  path_->setObjectName(QStringLiteral("explorePath"));
  path_->addItem(tr("slerp"), static_cast<int>(LatentPath::Slerp));
  path_->addItem(tr("lerp"), static_cast<int>(LatentPath::Lerp));
  path_->setToolTip(
      tr("slerp: along the sphere, the latents as long as Gaussian latents are; lerp: a straight line, whose "
         "midway latents are shorter, and often blander"));
  guard->guard(path_);
  walk_row->addWidget(path_);
  walk_row->addStretch(1);
  auto* walk_row2 = new QHBoxLayout;
  interpolate_ = new QPushButton(tr("Interpolate"));
  interpolate_->setObjectName(QStringLiteral("exploreInterpolate"));
  connect(interpolate_, &QPushButton::clicked, this, [this] { interpolate(); });
  walk_row2->addWidget(interpolate_);
  play_ = new QPushButton(tr("Play"));
  play_->setObjectName(QStringLiteral("explorePlay"));
  play_->setCheckable(true);
  connect(play_, &QPushButton::toggled, this, &ExploreView::togglePlay);
  walk_row2->addWidget(play_);
  fps_ = new QSpinBox;
  fps_->setObjectName(QStringLiteral("exploreFps"));
  fps_->setRange(1, 60);
  fps_->setValue(8);
  fps_->setSuffix(tr(" fps"));
  guard->guard(fps_);
  connect(fps_, &QSpinBox::valueChanged, this, [this](int v) { timer_->setInterval(1000 / v); });
  walk_row2->addWidget(fps_);
  walk_row2->addStretch(1);

  strip_ = new QListWidget;
  strip_->setObjectName(QStringLiteral("exploreStrip"));
  strip_->setViewMode(QListView::IconMode);
  strip_->setFlow(QListView::LeftToRight);
  strip_->setWrapping(false);
  strip_->setMovement(QListView::Static);
  strip_->setUniformItemSizes(true);
  strip_->setSpacing(2);
  connect(strip_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && row != play_frame_) showFrame(row);
  });
  player_ = new ImageCanvas;
  player_->setObjectName(QStringLiteral("explorePlayer"));
  player_->setPlaceholder(tr("Pick two seeds and press Interpolate"));
  player_->setFixedSize(128, 128);

  auto* walk = new QWidget;
  auto* walk_layout = new QVBoxLayout(walk);
  walk_layout->setContentsMargins(0, 0, 0, 0);
  walk_layout->addLayout(walk_row);
  walk_layout->addLayout(walk_row2);
  auto* walk_views = new QHBoxLayout;
  walk_views->addWidget(player_, 0);
  walk_views->addWidget(strip_, 1);
  walk_layout->addLayout(walk_views, 1);
  return walk;
}

void ExploreView::buildControls() {
  auto* guard = new WheelGuard(nullptr, this);
  message_ = new QLabel;
  message_->setObjectName(QStringLiteral("exploreMessage"));
  message_->setWordWrap(true);

  grid_list_ = new QListWidget;
  grid_list_->setObjectName(QStringLiteral("exploreGrid"));
  grid_list_->setViewMode(QListView::IconMode);
  grid_list_->setResizeMode(QListView::Adjust);
  grid_list_->setMovement(QListView::Static);
  grid_list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  grid_list_->setUniformItemSizes(true);
  grid_list_->setSpacing(4);
  grid_list_->setToolTip(tr("Click a seed, then Ctrl+click a second one to interpolate between them"));
  connect(grid_list_, &QListWidget::itemSelectionChanged, this, &ExploreView::selectionChanged);

  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(grid_list_);
  split->addWidget(buildWalk(guard));
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);

  // In a scroll area, so that the tab never makes a small screen's window wider than it.
  auto* inner = new QWidget;
  auto* layout = new QVBoxLayout(inner);
  layout->addLayout(buildSeedRow(guard));
  layout->addLayout(buildExportRow(guard));
  layout->addWidget(message_);
  layout->addWidget(split, 1);
  auto* scroll = new QScrollArea;
  scroll->setWidget(inner);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(scroll);
}

void ExploreView::setGenerator(bool available, const QString& run) {
  const bool other_run = run != run_;
  available_ = available;
  if (available) run_ = run;
  if (available && other_run) {  // another run's images would be mistaken for this one's
    grid_.reset();
    walk_.reset();
    grid_list_->clear();
    strip_->clear();
    play_->setChecked(false);
    player_->setImage(QImage());
    play_frame_ = -1;
  }
  if (!available && pending_) onProgress(pending_, -1, 0);
  if (available && isVisible()) QTimer::singleShot(0, this, &ExploreView::generateIfEmpty);
  if (!available && !grid_)
    showMessage(tr("Start a run, or open one with File ▸ Open run, to explore its generator."));
  else if (available && !grid_)
    showMessage(tr("Press Generate to see the seeds' images (%1).").arg(QDir::toNativeSeparators(run)));
  updateEnabled();
}

void ExploreView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  generateIfEmpty();
}

void ExploreView::generateIfEmpty() {
  // The first look also plays a walk (seed 0 to 1), so that what the tab does is seen at once.
  if (available_ && !grid_ && !pending_ && generate()) auto_walk_ = !walk_;
}

void ExploreView::setSeedsText(const QString& text) { seeds_->setText(text); }

void ExploreView::setTruncation(double t) {
  truncate_->setChecked(t > 0);
  if (t > 0) threshold_->setValue(t);
}

void ExploreView::setInterpolation(uint64_t a, uint64_t b, int frames, LatentPath path) {
  seed_a_->setText(QString::number(a));
  seed_b_->setText(QString::number(b));
  frames_->setValue(frames);
  path_->setCurrentIndex(path_->findData(static_cast<int>(path)));
}

float ExploreView::truncation() const {
  return truncate_->isChecked() ? static_cast<float>(threshold_->value()) : 0.0f;
}

QString ExploreView::message() const { return message_->text(); }

void ExploreView::showMessage(const QString& text, bool error) {
  message_->setText(text);
  message_->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
}

bool ExploreView::generate() {
  ExploreRequest r;
  try {
    r.seeds = parse_seed_list(seeds_->text().trimmed().toStdString(), "seeds");
  } catch (const Error& e) {
    showMessage(QString::fromStdString(e.what()), true);
    return false;
  }
  if (r.seeds.size() > kMaxTabSeeds) {
    showMessage(tr("The tab shows at most %1 seeds at a time (%2 asked); ampgan sample --seeds takes up to %3")
                    .arg(kMaxTabSeeds)
                    .arg(r.seeds.size())
                    .arg(kMaxSeeds),
                true);
    return false;
  }
  r.truncation = truncation();
  r.class_choice = classChoice();
  last_grid_request_ = r;
  return request(r);
}

std::optional<uint64_t> ExploreView::seedField(QLineEdit* field, const QString& what) {
  try {
    const std::vector<uint64_t> s = parse_seed_list(field->text().trimmed().toStdString(), what.toStdString());
    if (s.size() == 1) return s[0];
    showMessage(tr("%1 is one seed, e.g. 7").arg(what), true);
  } catch (const Error& e) {
    showMessage(QString::fromStdString(e.what()), true);
  }
  return std::nullopt;
}

bool ExploreView::interpolate() {
  const auto a = seedField(seed_a_, tr("the first seed"));
  if (!a) return false;
  const auto b = seedField(seed_b_, tr("the second seed"));
  if (!b) return false;
  ExploreRequest r;
  r.interpolate = true;
  r.a = *a;
  r.b = *b;
  r.frames = frames_->value();
  r.path = static_cast<LatentPath>(path_->currentData().toInt());
  r.truncation = truncation();
  r.class_choice = walkClass();
  return request(r);
}

bool ExploreView::request(ExploreRequest r) {
  if (!available_) {
    showMessage(tr("No generator yet: start a run, or open one with File ▸ Open run."), true);
    return false;
  }
  r.id = ++next_id_;
  pending_ = r.id;
  showMessage(r.interpolate ? tr("Making %1 frames…").arg(r.frames) : tr("Making %1 images…").arg(r.seeds.size()));
  updateEnabled();
  emit exploreRequested(r);
  return true;
}

void ExploreView::onProgress(int id, int done, int total) {
  if (id != pending_) return;
  if (done < 0) {
    pending_ = 0;
    showMessage(tr("Stopped; the images shown are the last ones made."));
  } else if (done < total) {
    showMessage(tr("Making image %1 of %2…").arg(done + 1).arg(total));
  }
  updateEnabled();
}

void ExploreView::onResult(const ExploreResultPtr& r) {
  if (r->request.id != pending_) return;  // superseded
  pending_ = 0;
  const QString from = tr("step %1%2 of %3")
                           .arg(r->step)
                           .arg(r->ema ? tr(", EMA generator") : QString())
                           .arg(QFileInfo(r->run).fileName());
  const QString cut =
      (r->request.truncation > 0 ? tr(", truncation %1").arg(r->request.truncation) : QString()) + classText(*r);
  if (r->request.interpolate) {
    walk_ = r;
    fillList(strip_, *r, false);
    showFrame(0);
    if (auto_play_) play_->setChecked(true);
    auto_play_ = false;
    showMessage(tr("%1 frames from seed %2 to seed %3 (%4%5), %6")
                    .arg(r->n)
                    .arg(r->request.a)
                    .arg(r->request.b)
                    .arg(QString::fromLatin1(latent_path_name(r->request.path)), cut, from));
  } else {
    grid_ = r;
    fillList(grid_list_, *r, true);
    showMessage(tr("%1 seeds%2, %3. Click one, Ctrl+click another, then Interpolate.")
                    .arg(r->request.seeds.size())
                    .arg(cut, from));
    if (auto_walk_ && !walk_) {
      auto_walk_ = false;
      auto_play_ = interpolate();
      if (auto_play_) return;  // interpolate() has set the message and the buttons
    }
  }
  updateEnabled();
}

void ExploreView::onTrainingProgressed() {
  if (follow_->isChecked() && available_ && !pending_ && last_grid_request_) request(*last_grid_request_);
}

void ExploreView::fillList(QListWidget* list, const ExploreResult& r, bool seeds) {
  // Selection survives a refresh of the same seeds (Follow training): by seed and class.
  QList<QPair<qulonglong, int>> selected;
  for (const QListWidgetItem* it : list->selectedItems())
    selected.push_back({it->data(Qt::UserRole).toULongLong(), it->data(Qt::UserRole + 1).toInt()});
  list->clear();
  const int side = seeds ? icon_side(r.res) : strip_side(r.res);
  list->setIconSize(QSize(side, side));
  if (seeds) layoutClassRows(r, side);
  const QSize icon = list->iconSize();
  for (int i = 0; i < r.n; ++i) {
    const QImage img = to_qimage(r.image8(i)).scaled(icon, Qt::IgnoreAspectRatio, Qt::FastTransformation);
    const qulonglong seed = seeds ? r.request.seeds[static_cast<size_t>(i) % r.request.seeds.size()] : 0;
    const int cls = r.classes.empty() ? -1 : r.classes[static_cast<size_t>(i)];
    const QString of_class = cls >= 0 ? QStringLiteral(" · ") + className(cls, false) : QString();
    auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(img)),
                                     seeds ? QString::number(seed) + of_class : QString::number(i + 1));
    item->setData(Qt::UserRole, seeds ? QVariant::fromValue(seed) : QVariant(i));
    item->setData(Qt::UserRole + 1, cls);
    item->setToolTip(seeds ? tr("seed %1").arg(seed) + of_class : tr("frame %1 of %2").arg(i + 1).arg(r.n));
    list->addItem(item);
    if (seeds && selected.contains(QPair<qulonglong, int>{seed, cls})) item->setSelected(true);
  }
  if (!seeds) {
    // One row of frames beside the player, which shows the frame at twice the size or more.
    list->setFixedHeight(side + list->fontMetrics().height() * 2 + 24);
    player_->setFactor(player_factor(r.res));
  }
}

void ExploreView::selectionChanged() {
  // The first two seeds picked become the interpolation's ends.
  const auto items = grid_list_->selectedItems();
  if (items.size() >= 1) seed_a_->setText(items[0]->data(Qt::UserRole).toString());
  if (items.size() >= 2) seed_b_->setText(items[1]->data(Qt::UserRole).toString());
  updateEnabled();
}

void ExploreView::showFrame(int i) {
  if (!walk_ || i < 0 || i >= walk_->n) return;
  play_frame_ = i;
  player_->setImage(to_qimage(walk_->image8(i)));
  if (strip_->currentRow() != i) strip_->setCurrentRow(i);
}

void ExploreView::togglePlay(bool on) {
  play_->setText(on ? tr("Pause") : tr("Play"));
  if (on && frameCount() > 0) {
    timer_->start(1000 / fps_->value());
  } else {
    timer_->stop();
  }
}

void ExploreView::updateEnabled() {
  const bool idle = pending_ == 0;
  generate_->setEnabled(available_ && idle);
  interpolate_->setEnabled(available_ && idle);
  stop_->setEnabled(!idle);
  copy_seed_->setEnabled(!grid_list_->selectedItems().isEmpty());
  play_->setEnabled(walk_ != nullptr);
  if (!walk_ && play_->isChecked()) play_->setChecked(false);
  export_->setEnabled(grid_ != nullptr || walk_ != nullptr);
}

int ExploreView::seedCount() const { return grid_ ? grid_->n : 0; }
uint64_t ExploreView::seedAt(int i) const {
  return grid_->request.seeds.at(static_cast<size_t>(i) % grid_->request.seeds.size());
}
QImage ExploreView::seedImage(int i) const { return grid_ ? to_qimage(grid_->image8(i)) : QImage(); }
int ExploreView::frameCount() const { return walk_ ? walk_->n : 0; }
QImage ExploreView::frameImage(int i) const { return walk_ ? to_qimage(walk_->image8(i)) : QImage(); }

}  // namespace ampgan::ui
