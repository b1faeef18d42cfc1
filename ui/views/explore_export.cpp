// ExploreView's exports: the grid, the selected image, the interpolation's frames and its video,
// each enlarged by whole-number factors (no blur), into the run's exported/ by default.
#include <cstdio>
#include <filesystem>

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QListWidget>
#include <QMessageBox>
#include <QSpinBox>

#include "core/io/animation_writer.h"
#include "core/io/atomic_file.h"
#include "ui/views/explore_view.h"

namespace ampgan::ui {

namespace fs = std::filesystem;

namespace {

QString frame_name(int i) { return QString::asprintf("frame_%05d.png", i); }

io::Image8 scaled(io::Image8 img, int scale) { return scale > 1 ? io::upscale_nearest(img, scale) : img; }

// The folder of an export file, made if missing (the dialog proposes the run's exported/).
std::string export_path(const QString& file) {
  const fs::path p = file.toStdString();
  if (p.has_parent_path()) io::ensure_writable_dir(p.parent_path());
  return p.string();
}

}  // namespace

bool ExploreView::exportError(const Error& e, const QString& during) {
  showMessage(QString::fromStdString(e.what()), true);
  emit failed(UiError::of(e, during));
  return false;
}

bool ExploreView::exportGrid(const QString& file, int scale) {
  if (!grid_) return false;
  try {
    const int cols = std::min(grid_->n, 8);
    io::write_png(export_path(file),
                  scaled(io::make_grid(grid_->images.data(), grid_->n, grid_->res, grid_->channels, cols), scale));
  } catch (const Error& e) {
    return exportError(e, tr("exporting the grid"));
  }
  showMessage(tr("Grid of %1 seeds written to %2").arg(grid_->n).arg(QDir::toNativeSeparators(file)));
  return true;
}

bool ExploreView::exportSelected(const QString& file, int scale) {
  const auto items = grid_list_->selectedItems();
  if (!grid_ || items.isEmpty()) {
    showMessage(tr("Select an image in the grid first"), true);
    return false;
  }
  const int i = grid_list_->row(items.last());
  try {
    io::write_png(export_path(file), scaled(grid_->image8(i), scale));
  } catch (const Error& e) {
    return exportError(e, tr("exporting an image"));
  }
  showMessage(
      tr("Seed %1 written to %2 (%3 px)").arg(seedAt(i)).arg(QDir::toNativeSeparators(file)).arg(grid_->res * scale));
  return true;
}

bool ExploreView::exportFrames(const QString& dir, int scale, bool replace) {
  if (!walk_) return false;
  // Checked before any is written, so that a refusal leaves the folder as it was.
  if (!replace)
    for (int i = 0; i < walk_->n; ++i)
      if (QFileInfo::exists(QDir(dir).filePath(frame_name(i)))) {
        showMessage(tr("%1 already holds %2: choose another folder, or agree to replace the frames")
                        .arg(QDir::toNativeSeparators(dir), frame_name(i)),
                    true);
        return false;
      }
  try {
    io::ensure_writable_dir(dir.toStdString());
    for (int i = 0; i < walk_->n; ++i)
      io::write_png((fs::path(dir.toStdString()) / frame_name(i).toStdString()), scaled(walk_->image8(i), scale));
  } catch (const Error& e) {
    return exportError(e, tr("exporting the frames"));
  }
  showMessage(tr("%1 frames written to %2").arg(walk_->n).arg(QDir::toNativeSeparators(dir)));
  return true;
}

bool ExploreView::exportVideo(const QString& file, int scale, double fps) {
  if (!walk_) return false;
  try {
    io::animation_format(file.toStdString());  // .mp4 or .webp, else a clear refusal
    const int side = walk_->res * scale;       // even, as H.264 needs: resolutions are 32, 64 or 128
    io::AnimationWriter w(export_path(file), side, side, fps);
    for (int i = 0; i < walk_->n; ++i) w.add(scaled(walk_->image8(i), scale));
    w.finish();
    showMessage(tr("%1 frames written to %2 (%3, %4 px, %5 fps)")
                    .arg(walk_->n)
                    .arg(QDir::toNativeSeparators(file), QString::fromStdString(w.encoder()))
                    .arg(side)
                    .arg(fps));
  } catch (const Error& e) {
    return exportError(e, tr("exporting the video"));
  }
  return true;
}

void ExploreView::exportMenu(int which) {
  const QString base = run_.isEmpty() ? QDir::homePath() : QDir(run_).filePath(QStringLiteral("exported"));
  const int scale = scale_->value();
  if (which == 0) {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export the grid"), base + QStringLiteral("/seeds.png"),
                                                   tr("PNG images (*.png)"));
    if (!f.isEmpty()) exportGrid(f, scale);
  } else if (which == 1) {
    const auto items = grid_list_->selectedItems();
    const QString name = items.isEmpty()
                             ? QStringLiteral("seed.png")
                             : QStringLiteral("seed_%1.png").arg(items.last()->data(Qt::UserRole).toString());
    const QString f = QFileDialog::getSaveFileName(this, tr("Export the selected image"),
                                                   base + QLatin1Char('/') + name, tr("PNG images (*.png)"));
    if (!f.isEmpty()) exportSelected(f, scale);
  } else if (which == 2) {
    if (!walk_) {
      showMessage(tr("Interpolate first: there are no frames yet"), true);
      return;
    }
    const QString d = QFileDialog::getExistingDirectory(this, tr("Folder for the frames"), base);
    if (d.isEmpty()) return;
    if (!exportFrames(d, scale) && QFileInfo::exists(QDir(d).filePath(frame_name(0))) &&
        QMessageBox::question(this, tr("Replace frames?"), tr("%1 holds frames already. Replace them?").arg(d)) ==
            QMessageBox::Yes)
      exportFrames(d, scale, true);
  } else {
    if (!walk_) {
      showMessage(tr("Interpolate first: there are no frames yet"), true);
      return;
    }
    const QString f =
        QFileDialog::getSaveFileName(this, tr("Export the interpolation"), base + QStringLiteral("/walk.mp4"),
                                     tr("MP4 video (*.mp4);;Animated WebP, shown by browsers (*.webp)"));
    // A 32 px frame is a stamp on screen: at least 256 px unless the scale asks for more.
    if (!f.isEmpty()) exportVideo(f, std::max(scale, std::max(1, 256 / walk_->res)), fps_->value());
  }
}

}  // namespace ampgan::ui
