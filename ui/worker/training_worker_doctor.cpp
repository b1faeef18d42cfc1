// TrainingWorker (ui/worker/training_worker.h): the precision doctor, its probes one after the
// other on the worker thread, as `ampgan doctor` runs them.
#include "ui/worker/training_worker.h"

#include <chrono>

#include "core/run/doctor_report.h"

namespace ampgan::ui {

void TrainingWorker::runDoctor(const RunConfig& cfg) {
  if (in_loop_) return;
  stop_.store(false);
  setState(State::Running);
  const QString dir = QString::fromStdString(cfg.out_dir);
  QString label = QStringLiteral("precision doctor");
  emit workProgress(label, 0, 1);
  DoctorOptions opt;
  opt.stop = &stop_;
  auto last = std::chrono::steady_clock::now();
  opt.on_start = [&](const std::string& l, int index) {
    label = QStringLiteral("doctor, probe %1: %2").arg(index).arg(QString::fromStdString(l));
    emit workProgress(label, 0, opt.probe_steps);
  };
  opt.on_steps = [&](int64_t step, int64_t steps) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(100) && step < steps) return;
    last = now;
    emit workProgress(label, static_cast<int>(step), static_cast<int>(steps));
  };
  auto send = [&](const DoctorResult& r, bool done) {
    auto u = std::make_shared<DoctorUpdate>();
    u->result = r;
    u->dir = dir;
    u->done = done;
    emit doctorUpdated(u);
  };
  opt.on_probe = [&](const DoctorResult& so_far) {
    write_doctor_report(so_far, cfg.out_dir);  // a crash later leaves the evidence so far
    send(so_far, false);
  };
  try {
    const DoctorResult r = run_precision_doctor(cfg, opt);
    write_doctor_report(r, cfg.out_dir);
    send(r, true);
  } catch (...) {
    fail(QStringLiteral("diagnosing precision"));
    DoctorResult none;
    none.base = cfg;
    none.summary = "the doctor could not run: see the error";
    send(none, true);
  }
  emit workProgress(label, 1, 1);  // the end, also when stopped
  setState(State::Idle);
}

void TrainingWorker::runReplay(const QString& dir, qint64 step) {
  if (in_loop_) return;
  setState(State::Running);
  const QString what = QStringLiteral("replaying step %1").arg(step);
  emit workProgress(what, 0, 1);
  ReplayResultPtr result;
  try {
    result = std::make_shared<const ReplayResult>(replay_step(dir.toStdString(), step));
  } catch (...) {
    fail(QStringLiteral("replaying step %1").arg(step));
  }
  emit replayed(result);
  emit workProgress(what, 1, 1);
  setState(State::Idle);
}

}  // namespace ampgan::ui
