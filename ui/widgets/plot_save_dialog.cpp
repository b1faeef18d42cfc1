#include "ui/widgets/plot_save_dialog.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QSpinBox>
#include <QToolButton>

namespace ampgan::ui {

namespace {
// What was chosen last in this session: a second chart is usually saved alike.
struct Last {
  QString folder = QDir::homePath();
  PlotExportSize size;
};
Last& last() {
  static Last l;
  return l;
}

QSpinBox* spin(int lo, int hi, int v, const QString& suffix, const char* name) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setValue(v);
  s->setSuffix(suffix);
  s->setObjectName(QString::fromLatin1(name));
  return s;
}
}  // namespace

PlotSaveDialog::PlotSaveDialog(const QString& name, bool pdf, QWidget* parent) : QDialog(parent), pdf_(pdf) {
  setObjectName(QStringLiteral("plotSaveDialog"));
  setWindowTitle(pdf ? tr("Save chart as PDF") : tr("Save chart as PNG"));
  auto* f = new QFormLayout(this);
  path_ = new QLineEdit(QDir(last().folder).filePath(name));
  path_->setObjectName(QStringLiteral("plotSavePath"));
  path_->setMinimumWidth(360);
  auto* row = new QHBoxLayout;
  auto* browse = new QToolButton;
  browse->setText(QStringLiteral("…"));
  connect(browse, &QToolButton::clicked, this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, windowTitle(), path_->text(),
                                                   pdf_ ? tr("PDF documents (*.pdf)") : tr("PNG images (*.png)"));
    if (!p.isEmpty()) path_->setText(p);
  });
  row->addWidget(path_, 1);
  row->addWidget(browse);
  f->addRow(tr("File"), row);
  const PlotExportSize& s = last().size;
  w_ = spin(200, 10000, s.width, tr(" px"), "plotSaveWidth");
  h_ = spin(150, 10000, s.height, tr(" px"), "plotSaveHeight");
  f->addRow(tr("Width"), w_);
  f->addRow(tr("Height"), h_);
  if (!pdf) {  // a PDF is vector: no resolution to choose
    dpi_ = spin(48, 1200, s.dpi, tr(" dpi"), "plotSaveDpi");
    dpi_->setToolTip(tr("Fonts and lines scale with it (96: as on screen; 192 for print at half the size)"));
    f->addRow(tr("Resolution"), dpi_);
  }
  auto* b = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
  connect(b, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(b, &QDialogButtonBox::rejected, this, &QDialog::reject);
  f->addRow(b);
}

QString PlotSaveDialog::path() const { return path_->text().trimmed(); }

PlotExportSize PlotSaveDialog::size() const {
  PlotExportSize s;
  s.width = w_->value();
  s.height = h_->value();
  s.dpi = dpi_ ? dpi_->value() : last().size.dpi;
  return s;
}

void PlotSaveDialog::accept() {
  if (path().isEmpty()) return;
  last().folder = QFileInfo(path()).absolutePath();
  last().size = size();
  QDialog::accept();
}

}  // namespace ampgan::ui
