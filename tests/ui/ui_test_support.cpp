// The helpers' definitions; what each does is in ui_test_support.h.
#include "tests/ui/ui_test_support.h"

#include <cmath>

#include <qcustomplot.h>
#include <QAbstractButton>
#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QtTest>

#include "core/run/session.h"
#include "ui/views/sample_view.h"

namespace ampgan::ui::test {

void UiTestCase::initTestCase() {
  QVERIFY(tmp_.isValid());
  QCoreApplication::setOrganizationName(QStringLiteral("ampgan-ui-test"));
  QCoreApplication::setApplicationName(QString::fromLatin1(metaObject()->className()));
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, path(QStringLiteral("settings")));
}

RunConfig tiny(const QString& runs_root, int64_t steps) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 256;
  c.res = 32;
  c.width = 8;
  c.batch = 8;
  c.steps = steps;
  c.precision = Precision::FP32;
  c.backend = "cpu";
  c.sample_every = 10;
  c.checkpoint_every = 0;
  c.hist_every = 5;
  c.runs_root = runs_root.toStdString();
  return c;
}

MainWindow::Options no_settings() {
  MainWindow::Options o;
  o.restore_settings = false;
  o.save_settings = false;
  return o;
}

QByteArray file_bytes(const QString& p) {
  QFile f(p);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QImage rgb(const QImage& i) { return i.convertToFormat(QImage::Format_RGB888); }

void engine_run(const QString& dir, RunConfig c) {
  c.out_dir = dir.toStdString();
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
}

void engine_run(const QString& dir, int64_t steps, uint64_t seed, float lr_g, int checkpoint_every) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 256;
  c.res = 32;
  c.width = 8;
  c.batch = 8;
  c.steps = steps;
  c.precision = Precision::FP32;
  c.backend = "cpu";
  c.sample_every = 10;
  c.checkpoint_every = checkpoint_every;
  c.seed = seed;
  c.lr_g = lr_g;
  c.out_dir = dir.toStdString();
  auto s = Session::create(c);
  s->run();
  s->finish("finished");
}

QImage sample_now(MainWindow& w) {
  auto* now = w.samples()->findChild<QPushButton*>(QStringLiteral("sampleNow"));
  if (!now || !now->isEnabled()) return {};
  QSignalSpy batches(w.worker(), &TrainingWorker::batchReady);
  now->click();
  QImage got;
  const bool arrived = QTest::qWaitFor(
      [&] {
        for (const QList<QVariant>& args : batches) {
          const auto b = args.at(0).value<UiBatchPtr>();
          if (b && !b->samples.empty()) got = b->samples.back().image;
        }
        return !got.isNull();
      },
      90000);
  return arrived ? got : QImage();
}

int count_rows(const QString& csv) {
  QFile f(csv);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  return static_cast<int>(f.readAll().trimmed().split('\n').size()) - 1;  // minus the header
}

int csv_rows(const QString& csv) { return count_rows(csv); }

std::vector<StepMetrics> rows(int n, int switch_at, int switches) {
  std::vector<StepMetrics> out;
  Precision p = Precision::FP32;
  int done = 0;
  for (int s = 1; s <= n; ++s) {
    if (switch_at > 0 && s >= switch_at && done < switches && (s - switch_at) % 2 == 0) {
      p = p == Precision::FP32 ? Precision::FP16 : Precision::FP32;
      ++done;
    }
    StepMetrics m;
    m.step = s;
    m.precision = p;
    m.loss_d = 1.2 + 0.3 * std::sin(s * 0.3);
    m.loss_g = 0.8 + 0.2 * std::cos(s * 0.2);
    m.d_real = 0.6;
    m.d_fake = 0.4;
    m.grad_norm_d = 0.5 + 0.01 * s;
    m.grad_norm_g = 0.3;
    m.scale_d = m.scale_g = p == Precision::FP32 ? 1.0 : 65536.0;
    m.underflow_d = 0.01;
    m.images_per_s = 100 + s;
    m.memory_mb = 40;
    m.time_s = 0.1 * s;
    if (s % 10 == 0) {
      m.swd = 20.0 / s;   // SWD ×1e3: tens
      m.fd = 4000.0 / s;  // FD: thousands
    }
    out.push_back(m);
  }
  return out;
}

QMap<QString, QByteArray> contents_under(const QString& dir) {
  QMap<QString, QByteArray> out;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString f = it.next();
    QFile file(f);
    if (file.open(QIODevice::ReadOnly))
      out.insert(f, QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha1));
  }
  return out;
}

QStringList files_under(const QString& dir) {
  QStringList out;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) out << it.next();
  out.sort();
  return out;
}

bool text_fits(const QWidget* w, QString* why) {
  QString text;
  bool wrap = false;
  QRect box = w->contentsRect();
  if (const auto* l = qobject_cast<const QLabel*>(w)) {
    text = l->text();
    wrap = l->wordWrap();
    box = box.adjusted(l->margin(), l->margin(), -l->margin(), -l->margin());
  } else if (const auto* b = qobject_cast<const QAbstractButton*>(w)) {
    text = b->text();
    box = box.adjusted(2, 0, -2, 0);  // a button's frame
  }
  const QFontMetrics fm = w->fontMetrics();
  const QRect need = wrap ? fm.boundingRect(QRect(0, 0, box.width(), 100000), Qt::TextWordWrap, text)
                          : QRect(0, 0, fm.horizontalAdvance(text), fm.height());
  const bool ok = need.width() <= box.width() && need.height() <= box.height();
  if (why)
    *why = QStringLiteral("\"%1\" needs %2x%3 px, has %4x%5")
               .arg(text)
               .arg(need.width())
               .arg(need.height())
               .arg(box.width())
               .arg(box.height());
  return ok;
}

double value_at(const QCPGraph* g, double key) {
  auto it = g->data()->findBegin(key, false);
  return it != g->data()->constEnd() && it->key == key ? it->value : NAN;
}

}  // namespace ampgan::ui::test
