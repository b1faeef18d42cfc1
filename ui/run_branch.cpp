#include "ui/run_branch.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include "ui/run_controller.h"

namespace ampgan::ui {

QString make_branch(const QString& run_dir, const QString& checkpoint, QString* error, QString* branch_checkpoint) {
  const int64_t step = RunController::checkpointStep(checkpoint);
  if (step < 0 || !QFileInfo(checkpoint).isFile()) {
    *error = QObject::tr("%1 is not a checkpoint of the form step_N.safetensors").arg(checkpoint);
    return {};
  }
  const QDir src(run_dir);
  QString dest = QStringLiteral("%1-branch-step%2").arg(QDir::cleanPath(QFileInfo(run_dir).absoluteFilePath())).arg(step);
  for (int n = 2; QFileInfo::exists(dest); ++n)
    dest = QStringLiteral("%1-branch-step%2-%3").arg(QDir::cleanPath(QFileInfo(run_dir).absoluteFilePath())).arg(step).arg(n);
  const QDir out(dest);
  bool ok = QDir().mkpath(out.filePath(QStringLiteral("checkpoints"))) && QDir().mkpath(out.filePath(QStringLiteral("samples")));
  if (ok) ok = QFile::copy(src.filePath(QStringLiteral("config.json")), out.filePath(QStringLiteral("config.json")));
  // The logs up to the checkpoint's step only: the branch has no later history to drop.
  for (const char* f : {"metrics.csv", "events.jsonl"}) {
    const QString name = QString::fromLatin1(f);
    QFile in(src.filePath(name));
    if (!ok || !in.exists()) continue;
    QFile o(out.filePath(name));
    ok = in.open(QIODevice::ReadOnly) && o.open(QIODevice::WriteOnly);
    bool header = name == QStringLiteral("metrics.csv");
    while (ok && !in.atEnd()) {
      const QByteArray line = in.readLine();
      qint64 at = -1;
      if (header) {
        header = false;
        at = 0;
      } else if (name == QStringLiteral("metrics.csv")) {
        at = line.left(line.indexOf(',')).toLongLong();
      } else {
        at = QJsonDocument::fromJson(line).object().value(QStringLiteral("step")).toInteger(0);
      }
      if (at <= step && o.write(line) != line.size()) ok = false;
    }
  }
  const QString ckpt = out.filePath(QStringLiteral("checkpoints/") + QFileInfo(checkpoint).fileName());
  if (ok) ok = QFile::copy(checkpoint, ckpt);
  const QDir samples(src.filePath(QStringLiteral("samples")));
  for (const QString& f : samples.entryList({QStringLiteral("step_*.png")}, QDir::Files, QDir::Name))
    if (ok && f.mid(5, f.size() - 9).toLongLong() <= step)
      ok = QFile::copy(samples.filePath(f), out.filePath(QStringLiteral("samples/") + f));
  if (!ok) {
    QDir(dest).removeRecursively();
    *error = QObject::tr("could not copy %1 into %2").arg(run_dir, dest);
    return {};
  }
  *branch_checkpoint = ckpt;
  return dest;
}

}  // namespace ampgan::ui
