#include "ui/export_dialogs.h"

#include <climits>

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QToolButton>

namespace ampgan::ui {

namespace {
QWidget* path_row(QLineEdit* edit, QWidget* parent, bool folder, const QString& filter) {
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  auto* b = new QToolButton;
  b->setText(QStringLiteral("…"));
  QObject::connect(b, &QToolButton::clicked, parent, [=] {
    const QString p = folder ? QFileDialog::getExistingDirectory(parent, QObject::tr("Folder"), edit->text())
                             : QFileDialog::getSaveFileName(parent, QObject::tr("Save as"), edit->text(), filter);
    if (!p.isEmpty()) edit->setText(p);
  });
  h->addWidget(edit, 1);
  h->addWidget(b);
  return w;
}
}  // namespace

ExportGridDialog::ExportGridDialog(const QString& path, int factor, QSize grid, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Export sample grid"));
  auto* f = new QFormLayout(this);
  path_ = new QLineEdit(path);
  path_->setMinimumWidth(360);
  f->addRow(tr("PNG file"), path_row(path_, this, false, tr("PNG images (*.png)")));
  factor_ = new QSpinBox;
  factor_->setRange(1, 16);
  factor_->setValue(factor);
  factor_->setSuffix(QStringLiteral("×"));
  factor_->setToolTip(tr("Nearest-neighbour enlargement: each pixel becomes a block (crisp, not blurred)"));
  auto* size = new QLabel;
  auto update = [this, size, grid] {
    size->setText(tr("%1 × %2 px").arg(grid.width() * factor_->value()).arg(grid.height() * factor_->value()));
  };
  connect(factor_, &QSpinBox::valueChanged, this, update);
  update();
  auto* row = new QHBoxLayout;
  row->addWidget(factor_);
  row->addWidget(size, 1);
  f->addRow(tr("Upscale"), row);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  f->addRow(buttons);
}

QString ExportGridDialog::path() const { return path_->text().trimmed(); }
int ExportGridDialog::factor() const { return factor_->value(); }

ExportSamplesDialog::ExportSamplesDialog(const QString& dir, int count, quint64 seed, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Export single samples"));
  auto* f = new QFormLayout(this);
  f->addRow(new QLabel(tr("Generates images from the current generator, one PNG each (sample_00000.png, …).")));
  dir_ = new QLineEdit(dir);
  dir_->setMinimumWidth(360);
  f->addRow(tr("Folder"), path_row(dir_, this, true, {}));
  count_ = new QSpinBox;
  count_->setRange(1, 100000);
  count_->setValue(count);
  f->addRow(tr("Images"), count_);
  seed_ = new QSpinBox;
  seed_->setRange(0, INT_MAX);
  seed_->setValue(static_cast<int>(seed));
  seed_->setToolTip(tr("Seed of the latent vectors: the same seed gives the same images from the same weights"));
  f->addRow(tr("Latent seed"), seed_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  f->addRow(buttons);
}

QString ExportSamplesDialog::dir() const { return dir_->text().trimmed(); }
int ExportSamplesDialog::count() const { return count_->value(); }
quint64 ExportSamplesDialog::seed() const { return static_cast<quint64>(seed_->value()); }

}  // namespace ampgan::ui
