// Alerts with a remedy: patterns in the step metrics that mean mixed precision (or the game)
// is failing, each raised once per episode as a "warning" event whose data holds "alert" (the
// kind) and "remedy" (what to do). The CLI prints warnings as lines, the GUI shows alerts in a
// banner above the plots.
//
// Kinds: "scale_floor" (a loss scale sits at its floor: overflows at the smallest scale allowed),
// "skip_streak" (N skipped steps in a row), "nonfinite_loss", "collapsed_d" (D(x) ~ D(G(z)) for
// many steps: D no longer tells real from generated images).
#pragma once

#include <string>
#include <vector>

#include "core/run/run_event.h"
#include "core/train/step_metrics.h"

namespace ampgan {

struct AlertSettings {
  int skip_streak = 10;      // skipped steps in a row (the run stops as diverged at 200)
  int collapse_steps = 200;  // steps with |D(x) - D(G(z))| below collapse_gap
  double collapse_gap = 0.02;
};

class AlertMonitor {
 public:
  explicit AlertMonitor(AlertSettings s = {}) : s_(s) {}
  // scaling: whether loss scaling is on (fp16, or bf16 with scaling); min_scale: the floor.
  // names: Trainer::tensor_names(), to name the layer where overflows start.
  std::vector<RunEvent> observe(const StepMetrics& m, bool scaling, double min_scale,
                                const std::vector<TensorName>& names);

 private:
  struct Net {
    int streak = 0;
    bool floor_raised = false, streak_raised = false;
    std::string last_layer;  // where the last overflow started
  };
  AlertSettings s_;
  Net d_, g_;
  bool loss_raised_ = false, collapse_raised_ = false;
  int close_steps_ = 0;
};

}  // namespace ampgan
