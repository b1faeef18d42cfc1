#include "ui/runs/run_controller.h"

#include "core/run/run_folder.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLockFile>

namespace ampgan::ui {

RunController::RunController(QObject* parent) : QObject(parent) {}

RunController::~RunController() = default;

QString RunController::claimRunsFolder(const QString& root) {
  if (root.isEmpty() || (lock_ && samePath(root, locked_root_))) return {};
  if (!QFileInfo(root).isDir()) return {};
  auto lock = std::make_unique<QLockFile>(QDir(root).filePath(QStringLiteral(".ampgan-studio.lock")));
  lock->setStaleLockTime(0);  // held for the studio's lifetime; a crashed owner is detected by PID
  if (lock->tryLock(0)) {
    lock_ = std::move(lock);
    locked_root_ = root;
    return {};
  }
  qint64 pid = 0;
  QString host, app;
  lock->getLockInfo(&pid, &host, &app);
  return tr("another AMP GAN Studio (process %1 on %2) uses the runs folder %3: runs of both appear there")
      .arg(pid)
      .arg(host.isEmpty() ? tr("this machine") : host, root);
}

std::vector<SampleShot> RunController::storedGrids(const QString& run_dir, int64_t up_to_step) {
  std::vector<SampleShot> out;
  for (const auto& [step, path] : RunFolder(run_dir.toStdString()).sample_grids()) {  // in step order
    if (step > up_to_step) break;
    SampleShot s;
    s.step = step;
    s.path = QString::fromStdString(path.string());
    out.push_back(std::move(s));
  }
  return out;
}

bool RunController::samePath(const QString& a, const QString& b) {
  if (a.isEmpty() || b.isEmpty()) return false;
  return QDir::cleanPath(QFileInfo(a).absoluteFilePath()) == QDir::cleanPath(QFileInfo(b).absoluteFilePath());
}

void RunController::setCurrent(const QString& dir, Origin origin) {
  dir_ = dir;
  origin_ = dir.isEmpty() ? Origin::None : origin;
  resumable_ = false;
  emit currentRunChanged(dir_);
}

QString RunController::exportBase() const { return hasRun() && origin_ != Origin::Watched ? dir_ : QDir::homePath(); }

bool RunController::canSample() const { return samePath(generator_dir_, dir_); }

QString RunController::title() const {
  if (!hasRun()) return tr("AMP GAN Studio");
  // A comparison's runs are <compare folder>/fp32 and .../fp16: name both parts.
  const QFileInfo fi(dir_);
  const QString name =
      origin_ == Origin::Compared ? QFileInfo(fi.path()).fileName() + QLatin1Char('/') + fi.fileName() : fi.fileName();
  return tr("AMP GAN Studio — %1").arg(name);
}

QString RunController::gridExportPath(int64_t step) const {
  const QString name = QStringLiteral("grid_step_%1.png").arg(step, 6, 10, QChar('0'));
  return QDir(exportBase()).filePath(name);
}

QString RunController::samplesExportDir() const {
  return origin_ == Origin::Watched ? QDir::homePath()
         : hasRun()                 ? QDir(dir_).filePath(QStringLiteral("exported"))
                                    : QDir::homePath();
}

QString RunController::metricsExportPath() const {
  return QDir(exportBase()).filePath(QStringLiteral("metrics-export.csv"));
}

QString RunController::metricsFile() const {
  return hasRun() ? QDir(dir_).filePath(QString::fromLatin1(RunFolder::kMetrics)) : QString();
}

int64_t RunController::checkpointStep(const QString& checkpoint) {
  const QString base = QFileInfo(checkpoint).completeBaseName();  // step_000120
  if (!base.startsWith(QStringLiteral("step_"))) return -1;
  bool ok = false;
  const qlonglong s = base.mid(5).toLongLong(&ok);
  return ok ? s : -1;
}

namespace {

// The step of metrics.csv's last complete row, read from the file's tail only (a long run's
// file is tens of MB; this runs on the GUI thread before a resume).
int64_t last_logged_step(const QString& csv) {
  QFile f(csv);
  if (!f.open(QIODevice::ReadOnly)) return 0;
  const qint64 size = f.size();
  const qint64 from = std::max<qint64>(0, size - 8192);
  f.seek(from);
  const QList<QByteArray> lines = f.readAll().split('\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const QByteArray cell = it->split(',').value(0).trimmed();
    bool ok = false;
    const qlonglong s = cell.toLongLong(&ok);
    if (ok) return s;
  }
  return 0;
}

}  // namespace

std::optional<RunController::LaterHistory> RunController::laterHistory(const QString& run_dir,
                                                                       const QString& checkpoint) {
  const QDir ckpts(QDir(run_dir).filePath(QString::fromLatin1(RunFolder::kCheckpoints)));
  const QStringList files = ckpts.entryList({QStringLiteral("step_*.safetensors")}, QDir::Files, QDir::Name);
  int64_t from = -1;
  if (!checkpoint.isEmpty()) {
    from = checkpointStep(checkpoint);
  } else {
    for (const QString& f : files) from = std::max(from, checkpointStep(f));
  }
  if (from < 0) return std::nullopt;  // the engine reports a missing or odd checkpoint itself
  LaterHistory h;
  h.from_step = from;
  h.last_logged_step = last_logged_step(QDir(run_dir).filePath(QString::fromLatin1(RunFolder::kMetrics)));
  for (const QString& f : files) h.later_checkpoints += checkpointStep(f) > from;
  if (h.last_logged_step <= from && h.later_checkpoints == 0) return std::nullopt;
  return h;
}

QString RunController::laterHistoryQuestion(const QString& run_dir, const QString& checkpoint) {
  const auto later = laterHistory(run_dir, checkpoint);
  if (!later) return {};
  return tr("Resuming from the checkpoint of step %1 drops the metrics and events of steps %2 to %3 (they are "
            "trained again) and moves %4 later checkpoint(s) aside into checkpoints/superseded-*.\n\nContinue? "
            "(File > Resume into a branch… keeps this run as it is and continues in a new folder.)")
      .arg(later->from_step)
      .arg(later->from_step + 1)
      .arg(std::max(later->last_logged_step, later->from_step + 1))
      .arg(later->later_checkpoints);
}

}  // namespace ampgan::ui
