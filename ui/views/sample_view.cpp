#include "ui/views/sample_view.h"

#include "ui/widgets/image_canvas.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QVBoxLayout>
#include <QWheelEvent>

namespace ampgan::ui {

namespace {
constexpr int kCachedImages = 48;  // the newest grids stay decoded in memory
}

SampleView::SampleView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  v->setSpacing(4);

  canvas_ = new ImageCanvas;
  scroll_ = new QScrollArea;
  scroll_->setWidget(canvas_);
  scroll_->setWidgetResizable(true);
  scroll_->setAlignment(Qt::AlignCenter);
  scroll_->setFrameShape(QFrame::NoFrame);
  canvas_->setToolTip(
      tr("8 × 8 samples from fixed latent vectors: each cell follows the same z through "
         "training. Ctrl+wheel zooms."));
  canvas_->on_wheel_zoom = [this](int dir) {
    const int z = zoom_ == 0 ? 1 : zoom_;
    setZoom(std::clamp(z + dir, 1, 8));
  };
  v->addWidget(scroll_, 1);

  label_ = new QLabel(tr("no samples yet"));
  label_->setObjectName(QStringLiteral("sampleCaption"));
  label_->setAlignment(Qt::AlignCenter);
  label_->setWordWrap(true);  // a narrow dock wraps the caption instead of clipping it
  v->addWidget(label_);

  slider_ = new QSlider(Qt::Horizontal);
  slider_->setRange(0, 0);
  slider_->setEnabled(false);
  slider_->setToolTip(tr("Go back to the samples of earlier steps"));
  connect(slider_, &QSlider::valueChanged, this, [this](int i) {
    if (i != current_) {
      showIndex(i);
      // Moving back in history stops following; moving to the end follows again.
      const QSignalBlocker b(follow_);
      follow_->setChecked(i == count() - 1);
    }
  });
  v->addWidget(slider_);

  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Zoom")));
  zoom_box_ = new QComboBox;
  zoom_box_->addItem(tr("Fit"), 0);
  for (int f : {1, 2, 3, 4, 6, 8}) zoom_box_->addItem(QStringLiteral("%1×").arg(f), f);
  zoom_box_->setToolTip(tr("Nearest-neighbour enlargement: every pixel becomes a block, nothing is blurred"));
  connect(zoom_box_, &QComboBox::currentIndexChanged, this, [this](int i) { setZoom(zoom_box_->itemData(i).toInt()); });
  row->addWidget(zoom_box_);
  follow_ = new QCheckBox(tr("Follow latest"));
  follow_->setChecked(true);
  follow_->setToolTip(tr("Show each new grid as it arrives"));
  connect(follow_, &QCheckBox::toggled, this, [this](bool on) {
    if (on && count() > 0) showIndex(count() - 1);
  });
  row->addWidget(follow_);
  row->addStretch(1);
  v->addLayout(row);
  // Its own row: one row of all four controls would hold the dock ~290 px wide.
  row = new QHBoxLayout;
  row->addStretch(1);
  sample_now_ = new QPushButton(tr("Sample now"));
  sample_now_->setObjectName(QStringLiteral("sampleNow"));
  sample_now_->setToolTip(
      tr("Generate the grid from the current weights, between two steps, without waiting "
         "for the next sample interval"));
  sample_now_->setEnabled(false);
  connect(sample_now_, &QPushButton::clicked, this, &SampleView::sampleNowRequested);
  row->addWidget(sample_now_);
  v->addLayout(row);
}

void SampleView::clear() {
  entries_.clear();
  current_ = -1;
  canvas_->setImage({});
  const QSignalBlocker b(slider_);
  slider_->setRange(0, 0);
  slider_->setEnabled(false);
  updateLabel();
}

void SampleView::addShot(const SampleShot& shot) {
  // A "sample now" grid at the same step as a stored one replaces it.
  if (!entries_.empty() && entries_.back().step == shot.step && entries_.back().label == shot.label) {
    entries_.back().image = shot.image;
    if (!shot.path.isEmpty()) entries_.back().path = shot.path;
  } else {
    entries_.push_back({shot.step, shot.label, shot.path, shot.image});
  }
  trimCache();
  {
    const QSignalBlocker b(slider_);
    slider_->setRange(0, count() - 1);
    slider_->setEnabled(count() > 1);
  }
  if (follow_->isChecked() || current_ < 0)
    showIndex(count() - 1);
  else
    updateLabel();
}

QString SampleView::addRequested(const SampleShot& shot) {
  for (int i = count() - 1; i >= 0; --i) {
    const Entry& e = entries_[i];
    if (e.step == shot.step && e.label == shot.label && !e.path.isEmpty()) {
      showIndex(i);
      const QSignalBlocker b(follow_);
      follow_->setChecked(i == count() - 1);
      return e.path;
    }
  }
  addShot(shot);
  showIndex(count() - 1);  // asked for: shown even when not following the latest
  const QSignalBlocker b(follow_);
  follow_->setChecked(true);
  return {};
}

void SampleView::setShots(const std::vector<SampleShot>& shots) {
  clear();
  for (const SampleShot& s : shots) entries_.push_back({s.step, s.label, s.path, s.image});
  {
    const QSignalBlocker b(slider_);
    slider_->setRange(0, std::max(0, count() - 1));
    slider_->setEnabled(count() > 1);
  }
  follow_->setChecked(true);
  if (count() > 0) showIndex(count() - 1);
}

void SampleView::trimCache() {
  const int n = count();
  for (int i = 0; i < n - kCachedImages; ++i)
    if (i != current_ && !entries_[i].path.isEmpty()) entries_[i].image = QImage();
}

QImage SampleView::imageAt(int i) const {
  if (i < 0 || i >= count()) return {};
  Entry& e = entries_[i];
  if (e.image.isNull() && !e.path.isEmpty()) e.image = QImage(e.path);
  return e.image;
}

void SampleView::showIndex(int index) {
  if (index < 0 || index >= count()) return;
  current_ = index;
  canvas_->setImage(imageAt(index));
  canvas_->setFactor(zoom_);
  if (slider_->value() != index) {
    const QSignalBlocker b(slider_);
    slider_->setValue(index);
  }
  updateLabel();
}

QImage SampleView::currentImage() const { return imageAt(current_); }

int64_t SampleView::currentStep() const { return current_ >= 0 ? entries_[current_].step : -1; }

void SampleView::setZoom(int factor) {
  zoom_ = std::max(0, factor);
  scroll_->setWidgetResizable(zoom_ == 0);
  canvas_->setFactor(zoom_);
  const int idx = zoom_box_->findData(zoom_);
  if (idx >= 0 && idx != zoom_box_->currentIndex()) {
    const QSignalBlocker b(zoom_box_);
    zoom_box_->setCurrentIndex(idx);
  }
  emit zoomChanged(zoom_);
}

void SampleView::setSampleNowEnabled(bool on) { sample_now_->setEnabled(on); }

bool SampleView::sampleNowEnabled() const { return sample_now_->isEnabled(); }

QString SampleView::caption() const { return label_->text(); }

void SampleView::updateLabel() {
  if (current_ < 0) {
    label_->setText(tr("no samples yet"));
    return;
  }
  const QImage img = entries_[current_].image;
  QString t = tr("step %1 · grid %2 of %3").arg(entries_[current_].step).arg(current_ + 1).arg(count());
  if (entries_[current_].path.isEmpty()) t += tr(" · Sample now, not saved");
  if (!entries_[current_].label.isEmpty()) t = entries_[current_].label + QStringLiteral(" · ") + t;
  if (!img.isNull()) t += QStringLiteral(" · %1×%2 px").arg(img.width()).arg(img.height());
  label_->setText(t);
}

}  // namespace ampgan::ui
