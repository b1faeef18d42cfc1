// A strip of a few images from the chosen dataset, with its size and any loader warnings, or
// the loader's error in red (a corrupt folder is visible before pressing Start). Loading runs on
// a short-lived background thread through the engine's own load_dataset, so the preview shows
// exactly what training will see (resized, grey or colour); a newer request cancels an older one.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include <QImage>
#include <QList>
#include <QString>
#include <QTimer>
#include <QWidget>

class QLabel;
class QThread;

namespace ampgan::ui {

class DatasetPreview : public QWidget {
  Q_OBJECT

 public:
  explicit DatasetPreview(QWidget* parent = nullptr);
  ~DatasetPreview() override;

  // Debounced: the load starts after the settings stop changing for a moment.
  void request(const QString& spec, int res, int channels);
  bool loading() const { return loading_; }
  QString info() const;
  bool failed() const { return failed_; }
  int thumbnailCount() const { return thumbs_.size(); }

 signals:
  void loaded(bool ok);

 private:
  struct Result {
    bool ok = false;
    QString info;
    QList<QImage> images;
  };
  void start();
  void show(quint64 generation, const Result& r);

  QString spec_;
  int res_ = 32, channels_ = 0;
  QTimer debounce_;
  quint64 generation_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QList<QThread*> threads_;
  QList<QLabel*> thumbs_;
  QWidget* strip_ = nullptr;
  QLabel* info_ = nullptr;
  bool loading_ = false, failed_ = false;
};

}  // namespace ampgan::ui
