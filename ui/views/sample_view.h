// The sample grid (8 x 8 images from fixed latents, so the same cell always shows the same
// latent), updated as training goes, with a history slider back to earlier steps and
// nearest-neighbour zoom (small images stay crisp). Older grids are kept as file paths (the
// engine writes each one to samples/step_NNNNNN.png) and read back on demand, so a long run's
// history costs no memory.
#pragma once

#include <vector>

#include <QImage>
#include <QString>
#include <QWidget>

#include "ui/common/ui_types.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QScrollArea;
class QSlider;
class QPushButton;

namespace ampgan::ui {

class ImageCanvas;

class SampleView : public QWidget {
  Q_OBJECT

 public:
  explicit SampleView(QWidget* parent = nullptr);

  void clear();
  void addShot(const SampleShot& shot);  // a new grid: shown if following the latest
  // A grid the user asked for with Sample now (no path: the engine did not write it). It is
  // always shown: when a stored grid has its step and run, the weights are the same, so that
  // entry is shown and its path returned; otherwise it is added, captioned as not saved, and
  // the result is empty.
  QString addRequested(const SampleShot& shot);
  void setShots(const std::vector<SampleShot>& shots);  // an opened run's grids (paths)
  int count() const { return static_cast<int>(entries_.size()); }
  int currentIndex() const { return current_; }
  void showIndex(int index);
  QImage currentImage() const;  // what is shown, at its own size (no zoom)
  int64_t currentStep() const;
  // 0: fit the area; else an integer factor (nearest neighbour).
  void setZoom(int factor);
  int zoom() const { return zoom_; }
  void setSampleNowEnabled(bool on);
  bool sampleNowEnabled() const;
  QString caption() const;  // the line under the grid

 signals:
  void sampleNowRequested();
  void zoomChanged(int factor);

 private:
  struct Entry {
    int64_t step = 0;
    QString label;  // which run, in a comparison
    QString path;
    QImage image;  // cached; dropped for old entries that have a path
  };
  QImage imageAt(int index) const;
  void updateLabel();
  void trimCache();

  ImageCanvas* canvas_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QSlider* slider_ = nullptr;
  QLabel* label_ = nullptr;
  QComboBox* zoom_box_ = nullptr;
  QCheckBox* follow_ = nullptr;
  QPushButton* sample_now_ = nullptr;
  mutable std::vector<Entry> entries_;
  int current_ = -1;
  int zoom_ = 0;
};

}  // namespace ampgan::ui
