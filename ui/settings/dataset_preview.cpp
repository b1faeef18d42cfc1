#include "ui/settings/dataset_preview.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QThread>
#include <QVBoxLayout>

#include "core/common/error.h"
#include "core/data/image_set.h"
#include "core/io/image_io.h"
#include "ui/common/ui_types.h"

namespace ampgan::ui {

namespace {
constexpr int kThumbs = 6;
constexpr int kThumbSize = 28;
}  // namespace

DatasetPreview::DatasetPreview(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(2);
  strip_ = new QWidget;
  auto* h = new QHBoxLayout(strip_);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(2);
  v->addWidget(strip_);
  info_ = new QLabel;
  info_->setWordWrap(true);
  info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont f = info_->font();
  f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
  info_->setFont(f);
  v->addWidget(info_);
  debounce_.setSingleShot(true);
  debounce_.setInterval(300);
  connect(&debounce_, &QTimer::timeout, this, &DatasetPreview::start);
}

DatasetPreview::~DatasetPreview() {
  if (cancel_) cancel_->store(true);
  for (QThread* t : threads_) {
    t->wait();
    delete t;
  }
}

void DatasetPreview::request(const QString& spec, int res, int channels) {
  spec_ = spec;
  res_ = res;
  channels_ = channels;
  if (cancel_) cancel_->store(true);  // an older load is no longer wanted
  loading_ = true;
  info_->setStyleSheet(QString());
  info_->setText(tr("loading preview…"));
  debounce_.start();
}

QString DatasetPreview::info() const { return info_->text(); }

void DatasetPreview::start() {
  const quint64 gen = ++generation_;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  const auto cancel = cancel_;
  const std::string spec = spec_.toStdString();
  const int res = res_, channels = channels_;
  QPointer<DatasetPreview> self(this);
  QThread* t = QThread::create([=] {
    Result r;
    try {
      data::LoadOptions lo;
      lo.res = res;
      lo.channels = channels;
      lo.synthetic_count = kThumbs;  // a preview needs only a few of the generated shapes
      lo.cancel = cancel.get();
      const data::ImageSet set = data::load_dataset(spec, lo);
      r.ok = true;
      QString ch = set.channels == 1 ? QObject::tr("grey") : QObject::tr("colour");
      r.info = spec == "synthetic" ? QObject::tr("synthetic shapes, %1×%1 %2 (generated)").arg(set.res).arg(ch)
                                   : QObject::tr("%1: %2 images, %3×%3 %4")
                                         .arg(QString::fromStdString(set.name))
                                         .arg(set.count)
                                         .arg(set.res)
                                         .arg(ch);
      for (const std::string& w : set.warnings) r.info += QStringLiteral("\n⚠ ") + QString::fromStdString(w);
      // Images spread over the set, not just its first few.
      const int n = std::min(kThumbs, set.count);
      for (int i = 0; i < n; ++i) {
        const int idx = static_cast<int>(static_cast<long long>(i) * set.count / n);
        io::Image8 img;
        img.width = img.height = set.res;
        img.channels = set.channels;
        img.pixels.assign(set.image(idx), set.image(idx) + set.image_size());
        r.images << to_qimage(img);
      }
    } catch (const Error& e) {
      r.info = QString::fromStdString(e.what_failed());
      if (!e.subject().empty()) r.info += QStringLiteral(" (%1)").arg(QString::fromStdString(e.subject()));
      if (!e.hint().empty()) r.info += QStringLiteral(": ") + QString::fromStdString(e.hint());
    } catch (const std::exception& e) {
      r.info = QString::fromUtf8(e.what());
    }
    if (cancel->load()) return;
    QMetaObject::invokeMethod(
        qApp,
        [self, gen, r] {
          if (self) self->show(gen, r);
        },
        Qt::QueuedConnection);
  });
  threads_ << t;
  connect(t, &QThread::finished, this, [this, t] {
    threads_.removeOne(t);
    t->deleteLater();
  });
  t->start(QThread::LowPriority);
}

void DatasetPreview::show(quint64 generation, const Result& r) {
  if (generation != generation_) return;  // a newer request is on its way
  loading_ = false;
  failed_ = !r.ok;
  auto* row = static_cast<QHBoxLayout*>(strip_->layout());
  while (QLayoutItem* item = row->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  thumbs_.clear();
  for (const QImage& img : r.images) {
    auto* l = new QLabel;
    l->setPixmap(QPixmap::fromImage(img.scaled(kThumbSize, kThumbSize, Qt::KeepAspectRatio, Qt::FastTransformation)));
    l->setFixedSize(kThumbSize, kThumbSize);
    l->setToolTip(tr("%1 × %1 as training sees it").arg(img.width()));
    row->addWidget(l);
    thumbs_ << l;
  }
  row->addStretch(1);
  strip_->setVisible(!thumbs_.isEmpty());
  info_->setStyleSheet(r.ok ? QString() : QStringLiteral("color: #b00000"));
  info_->setText(r.ok ? r.info : tr("Cannot use this dataset: %1").arg(r.info));
  emit loaded(r.ok);
}

}  // namespace ampgan::ui
