// The dialog behind a chart's "Save as PNG…" and "Save as PDF…": the file, the size in pixels
// and, for a PNG, the DPI (as File > Export > All plots offers), so one chart can be saved for
// slides or print instead of at its on-screen size. The last choice is proposed next time.
#pragma once

#include <QDialog>

#include "ui/widgets/plot_export.h"

class QLineEdit;
class QSpinBox;

namespace ampgan::ui {

class PlotSaveDialog : public QDialog {
  Q_OBJECT

 public:
  // name: the file name proposed (e.g. "losses.png"), in the folder saved into last.
  PlotSaveDialog(const QString& name, bool pdf, QWidget* parent = nullptr);
  QString path() const;
  PlotExportSize size() const;
  void accept() override;  // remembers the folder and size for the next one

 private:
  bool pdf_ = false;
  QLineEdit* path_ = nullptr;
  QSpinBox *w_ = nullptr, *h_ = nullptr, *dpi_ = nullptr;
};

}  // namespace ampgan::ui
