// Resuming into a branch: the run folder stays exactly as it is, and a new folder next to it,
// <run>-branch-step<N>, gets its settings, its logs and sample grids up to checkpoint N and that
// checkpoint; resuming there retrains nothing of the original (the resume trims the copied logs
// to step N, as it would in place).
#pragma once

#include <QString>

namespace ampgan::ui {

// The branch folder, or empty with *error set (and nothing left behind).
QString make_branch(const QString& run_dir, const QString& checkpoint, QString* error, QString* branch_checkpoint);

}  // namespace ampgan::ui
