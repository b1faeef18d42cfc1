#include "ui/window/export_dialogs.h"

#include <climits>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
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

ExportPlotsDialog::ExportPlotsDialog(const QString& folder, QWidget* parent) : QDialog(parent), folder_(folder) {
  setWindowTitle(tr("Export all plots"));
  auto* f = new QFormLayout(this);
  kind_ = new QComboBox;
  kind_->addItem(tr("One PDF, a page per chart"));
  kind_->addItem(tr("One PNG with every chart (3 per row)"));
  kind_->addItem(tr("A PNG per chart, into a folder"));
  f->addRow(tr("Format"), kind_);
  path_ = new QLineEdit(QDir(folder).filePath(QStringLiteral("plots.pdf")));
  path_->setMinimumWidth(360);
  f->addRow(tr("Save as"), path_row(path_, this, false, tr("PDF or PNG (*.pdf *.png)")));
  connect(kind_, &QComboBox::currentIndexChanged, this, [this](int k) {
    const QString name = k == 0   ? QStringLiteral("plots.pdf")
                         : k == 1 ? QStringLiteral("plots.png")
                                  : QStringLiteral("plots");
    path_->setText(QDir(QFileInfo(path_->text()).path()).filePath(name));
  });
  auto spin = [](int lo, int hi, int v, const QString& suffix) {
    auto* s = new QSpinBox;
    s->setRange(lo, hi);
    s->setValue(v);
    s->setSuffix(suffix);
    return s;
  };
  w_ = spin(200, 10000, 1600, tr(" px"));
  h_ = spin(150, 10000, 1000, tr(" px"));
  dpi_ = spin(48, 1200, 96, tr(" dpi"));
  dpi_->setToolTip(tr("Fonts and lines scale with it (96: as on screen; 192 for print at half the size)"));
  f->addRow(tr("Width of one chart"), w_);
  f->addRow(tr("Height of one chart"), h_);
  f->addRow(tr("Resolution"), dpi_);
  auto* b = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
  connect(b, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(b, &QDialogButtonBox::rejected, this, &QDialog::reject);
  f->addRow(b);
}

QString ExportPlotsDialog::path() const { return path_->text().trimmed(); }
int ExportPlotsDialog::kind() const { return kind_->currentIndex(); }
int ExportPlotsDialog::pixelWidth() const { return w_->value(); }
int ExportPlotsDialog::pixelHeight() const { return h_->value(); }
int ExportPlotsDialog::dpi() const { return dpi_->value(); }

}  // namespace ampgan::ui
