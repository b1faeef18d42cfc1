// The two export dialogs that need more than a file name: the sample grid (path + nearest-
// neighbour upscale factor) and single samples (folder, how many, which latent seed). The
// window's export functions take the values directly, so tests and scripts skip the dialogs.
#pragma once

#include <QDialog>

class QComboBox;
class QLineEdit;
class QSpinBox;

namespace ampgan::ui {

class ExportGridDialog : public QDialog {
  Q_OBJECT

 public:
  ExportGridDialog(const QString& path, int factor, QSize grid, QWidget* parent = nullptr);
  QString path() const;
  int factor() const;

 private:
  QLineEdit* path_ = nullptr;
  QSpinBox* factor_ = nullptr;
};

class ExportSamplesDialog : public QDialog {
  Q_OBJECT

 public:
  ExportSamplesDialog(const QString& dir, int count, quint64 seed, QWidget* parent = nullptr);
  QString dir() const;
  int count() const;
  quint64 seed() const;

 private:
  QLineEdit* dir_ = nullptr;
  QSpinBox* count_ = nullptr;
  QSpinBox* seed_ = nullptr;
};

// All charts: as one PDF (a page each), one grid PNG or a PNG each, at a size and DPI.
class ExportPlotsDialog : public QDialog {
  Q_OBJECT

 public:
  ExportPlotsDialog(const QString& folder, QWidget* parent = nullptr);
  QString path() const;
  int kind() const;  // RunExports::AllPlots
  int pixelWidth() const;
  int pixelHeight() const;
  int dpi() const;

 private:
  QString folder_;
  QLineEdit* path_ = nullptr;
  QComboBox* kind_ = nullptr;
  QSpinBox *w_ = nullptr, *h_ = nullptr, *dpi_ = nullptr;
};

}  // namespace ampgan::ui
