#include "ui/runs/run_branch.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QThread>

#include "core/run/run_folder.h"
#include "ui/runs/run_controller.h"

namespace ampgan::ui {

namespace {

// The logs, each cut after the checkpoint's step: the branch has no later history to drop.
// Their rows start with the step (CSV) or carry it ("step" in each JSON line).
const std::vector<const char*> kLogs = RunFolder::log_names();

struct Copier {
  const BranchProgress& progress;
  qint64 done = 0, total = 0, reported = -1;
  bool cancelled = false;

  bool tick(qint64 bytes) {
    done += bytes;
    if (progress && (done - reported >= (1 << 20) || done == total || reported < 0)) {
      reported = done;
      if (!progress(done, total)) cancelled = true;
    }
    return !cancelled;
  }
  // In 1 MiB blocks, so a cancel takes effect within one.
  bool copyFile(const QString& from, const QString& to) {
    QFile in(from), out(to);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly)) return false;
    while (!in.atEnd()) {
      const QByteArray block = in.read(1 << 20);
      if (block.isEmpty() && in.error() != QFileDevice::NoError) return false;
      if (out.write(block) != block.size()) return false;
      if (!tick(block.size())) return false;
    }
    return out.flush();
  }
  bool copyLog(const QString& from, const QString& to, int64_t step) {
    QFile in(from), out(to);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly)) return false;
    const bool json = from.endsWith(QStringLiteral(".jsonl"));
    bool header = !json;
    while (!in.atEnd()) {
      const QByteArray line = in.readLine();
      qint64 at = 0;
      if (header)
        header = false;
      else if (json)
        at = QJsonDocument::fromJson(line).object().value(QStringLiteral("step")).toInteger(0);
      else
        at = line.left(line.indexOf(',')).toLongLong();
      if (at <= step && out.write(line) != line.size()) return false;
      if (!tick(line.size())) return false;
    }
    return true;
  }
};

}  // namespace

QString make_branch(const QString& run_dir, const QString& checkpoint, QString* error, QString* branch_checkpoint,
                    const BranchProgress& progress) {
  error->clear();
  const int64_t step = RunController::checkpointStep(checkpoint);
  if (step < 0 || !QFileInfo(checkpoint).isFile()) {
    *error = QObject::tr("%1 is not a checkpoint of the form step_N.safetensors").arg(checkpoint);
    return {};
  }
  const QDir src(run_dir);
  QString dest =
      QStringLiteral("%1-branch-step%2").arg(QDir::cleanPath(QFileInfo(run_dir).absoluteFilePath())).arg(step);
  for (int n = 2; QFileInfo::exists(dest); ++n)
    dest = QStringLiteral("%1-branch-step%2-%3")
               .arg(QDir::cleanPath(QFileInfo(run_dir).absoluteFilePath()))
               .arg(step)
               .arg(n);
  const QDir out(dest);
  const QDir samples(src.filePath(QString::fromLatin1(RunFolder::kSamples)));
  QStringList grids;
  for (const QString& f : samples.entryList({QStringLiteral("step_*.png")}, QDir::Files, QDir::Name))
    if (f.mid(5, f.size() - 9).toLongLong() <= step) grids << f;

  Copier c{progress};
  c.total = QFileInfo(src.filePath(QString::fromLatin1(RunFolder::kConfig))).size() + QFileInfo(checkpoint).size();
  for (const char* f : kLogs) c.total += QFileInfo(src.filePath(QString::fromLatin1(f))).size();
  for (const QString& f : grids) c.total += QFileInfo(samples.filePath(f)).size();
  const std::vector<std::filesystem::path> events = RunFolder(run_dir.toStdString()).tensorboard_files();
  for (const std::filesystem::path& f : events) c.total += QFileInfo(QString::fromStdString(f.string())).size();

  bool ok = c.tick(0) && QDir().mkpath(out.filePath(QString::fromLatin1(RunFolder::kCheckpoints))) &&
            QDir().mkpath(out.filePath(QString::fromLatin1(RunFolder::kSamples)));
  if (ok)
    ok = c.copyFile(src.filePath(QString::fromLatin1(RunFolder::kConfig)),
                    out.filePath(QString::fromLatin1(RunFolder::kConfig)));
  for (const char* f : kLogs) {
    const QString name = QString::fromLatin1(f);
    if (ok && QFileInfo::exists(src.filePath(name))) ok = c.copyLog(src.filePath(name), out.filePath(name), step);
  }
  // The event files whole: the branch's resume trims them to its checkpoint, so TensorBoard shows
  // the branch's history from step 1.
  for (const std::filesystem::path& f : events) {
    const QString name = QString::fromStdString(f.filename().string());
    if (ok) ok = c.copyFile(QString::fromStdString(f.string()), out.filePath(name));
  }
  const QString ckpt = out.filePath(QStringLiteral("checkpoints/") + QFileInfo(checkpoint).fileName());
  if (ok) ok = c.copyFile(checkpoint, ckpt);
  for (const QString& f : grids)
    if (ok) ok = c.copyFile(samples.filePath(f), out.filePath(QStringLiteral("samples/") + f));
  if (!ok) {
    QDir(dest).removeRecursively();
    if (!c.cancelled) *error = QObject::tr("could not copy %1 into %2").arg(run_dir, dest);
    return {};
  }
  *branch_checkpoint = ckpt;
  return dest;
}

BranchCopy::BranchCopy(QObject* parent) : QObject(parent) {}

BranchCopy::~BranchCopy() {
  if (!thread_) return;
  cancel_ = true;
  thread_->wait();
  delete thread_;
}

bool BranchCopy::start(const QString& run_dir, const QString& checkpoint) {
  if (thread_) return false;
  cancel_ = false;
  branch_.clear();
  checkpoint_.clear();
  error_.clear();
  thread_ = QThread::create([this, run_dir, checkpoint] {
    // progress is emitted from this thread: queued to the receivers in the GUI thread.
    branch_ = make_branch(run_dir, checkpoint, &error_, &checkpoint_, [this](qint64 done, qint64 total) {
      emit progress(done, total);
      return !cancel_.load();
    });
  });
  thread_->setObjectName(QStringLiteral("branch copy"));
  connect(thread_, &QThread::finished, this, [this] {
    thread_->deleteLater();
    thread_ = nullptr;
    const bool cancelled = branch_.isEmpty() && error_.isEmpty();
    emit finished(branch_, checkpoint_, error_, cancelled);
  });
  thread_->start();
  return true;
}

}  // namespace ampgan::ui
