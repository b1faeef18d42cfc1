// The Explore tab: what the current generator (the running run's, between steps, or an opened
// run's; the EMA generator where the run keeps one) makes of chosen seeds, as `ampgan sample
// --seeds/--truncation/--interpolate` makes them (core/run/latent_explorer.h, so a seed's image
// here is the CLI's, pixel for pixel). A grid of seeds; truncation; two picked seeds interpolated
// (lerp or slerp) into a strip of frames that plays; copy a seed; export the grid, one image at a
// chosen scale, the frames as PNGs, or the walk as MP4 or animated WebP.
#pragma once

#include <cstdint>
#include <optional>

#include <QString>
#include <QStringList>
#include <QWidget>

#include "ui/common/ui_types.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSlider;
class QSpinBox;
class QTimer;
class QToolButton;

namespace ampgan::ui {

class ImageCanvas;
class WheelGuard;

class ExploreView : public QWidget {
  Q_OBJECT

 public:
  explicit ExploreView(QWidget* parent = nullptr);

  // Whether a generator can be asked, and whose (a run folder); a new run clears the images.
  void setGenerator(bool available, const QString& run);
  void onResult(const ExploreResultPtr& r);
  void onProgress(int id, int done, int total);  // done < 0: stopped or failed
  // A new sample grid of the running run: with "Follow training" ticked, the last request is
  // asked again, so the images follow the weights.
  void onTrainingProgressed();

  // The controls, as a user sets them (also for the tests).
  void setSeedsText(const QString& text);
  void setTruncation(double t);  // 0: off
  void setInterpolation(uint64_t a, uint64_t b, int frames, LatentPath path);
  // A class-conditional generator's classes (0: none, the picker hidden) and their names.
  void setClasses(int classes, const QStringList& names);
  // ExploreRequest::kClassesInTurn, kEveryClass, or a class.
  void setClassChoice(int choice);
  // Ask for the grid / the frames; false (the reason in message()) when the fields are refused
  // or there is no generator. The grid holds at most 256 seeds.
  bool generate();
  bool interpolate();
  bool busy() const { return pending_ != 0; }
  QString message() const;

  int seedCount() const;
  uint64_t seedAt(int i) const;
  int classAt(int i) const;       // -1: an unconditional generator's
  QImage seedImage(int i) const;  // at its own size
  int frameCount() const;
  QImage frameImage(int i) const;
  int playingFrame() const { return play_frame_; }

  // Exports at `scale` (nearest neighbour); false with the error shown (and sent as failed())
  // when nothing could be written. A refusal writes nothing.
  bool exportGrid(const QString& file, int scale);
  bool exportSelected(const QString& file, int scale);
  bool exportFrames(const QString& dir, int scale, bool replace = false);
  bool exportVideo(const QString& file, int scale, double fps);

 protected:
  // Shown with a generator and nothing made yet: the seeds' images at once, no button to find.
  void showEvent(QShowEvent* e) override;

 signals:
  void exploreRequested(const ampgan::ui::ExploreRequest& r);
  void cancelRequested();
  void failed(const ampgan::ui::UiError& e);

 private:
  void buildControls();
  void buildClassPicker(QHBoxLayout* row, WheelGuard* guard);  // explore_classes.cpp
  int classChoice() const;
  int walkClass() const;
  QString className(int c, bool numbered = true) const;  // "7 Sneaker" (numbered) or "Sneaker"; else "class 7"
  QString classText(const ExploreResult& r) const;
  void layoutClassRows(const ExploreResult& r, int side);
  QHBoxLayout* buildSeedRow(WheelGuard* guard);
  QHBoxLayout* buildExportRow(WheelGuard* guard);
  QWidget* buildWalk(WheelGuard* guard);
  void generateIfEmpty();
  bool request(ExploreRequest r);  // false: no generator (said in the message line)
  void showMessage(const QString& text, bool error = false);
  void fillList(QListWidget* list, const ExploreResult& r, bool seeds);
  void selectionChanged();
  void showFrame(int i);
  void togglePlay(bool on);
  void updateEnabled();
  void exportMenu(int which);
  float truncation() const;
  std::optional<uint64_t> seedField(QLineEdit* field, const QString& what);
  bool exportError(const Error& e, const QString& during);

  bool available_ = false;
  QString run_;
  int next_id_ = 0, pending_ = 0;
  ExploreResultPtr grid_, walk_;
  std::optional<ExploreRequest> last_grid_request_;
  int play_frame_ = -1;
  bool auto_walk_ = false, auto_play_ = false;  // the first look: a walk from seed 0 to 1, playing

  int classes_ = 0;
  QStringList class_names_;
  QLabel* class_label_ = nullptr;
  QComboBox* class_ = nullptr;
  QLineEdit* seeds_ = nullptr;
  QCheckBox* truncate_ = nullptr;
  QDoubleSpinBox* threshold_ = nullptr;
  QPushButton* generate_ = nullptr;
  QPushButton* stop_ = nullptr;
  QPushButton* copy_seed_ = nullptr;
  QToolButton* export_ = nullptr;
  QSpinBox* scale_ = nullptr;
  QCheckBox* follow_ = nullptr;
  QLabel* message_ = nullptr;
  QListWidget* grid_list_ = nullptr;
  QLineEdit* seed_a_ = nullptr;
  QLineEdit* seed_b_ = nullptr;
  QSpinBox* frames_ = nullptr;
  QComboBox* path_ = nullptr;
  QPushButton* interpolate_ = nullptr;
  QPushButton* play_ = nullptr;
  QSpinBox* fps_ = nullptr;
  QListWidget* strip_ = nullptr;
  ImageCanvas* player_ = nullptr;
  QTimer* timer_ = nullptr;
};

}  // namespace ampgan::ui
