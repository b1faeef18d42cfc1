#include "core/run/alerts.h"

#include <cmath>

namespace ampgan {

namespace {

RunEvent alert(const StepMetrics& m, const std::string& net, const std::string& kind, const std::string& what,
               const std::string& remedy) {
  RunEvent e{m.step, m.time_s, EventType::Warning, net, what + ". Remedy: " + remedy};
  e.data["alert"] = kind;
  e.data["remedy"] = remedy;
  return e;
}

std::string layer_hint(const std::string& layer) {
  return layer.empty() ? std::string()
                       : "; the overflows start in " + layer + " (layers.csv and the overflow events show it)";
}

// Per-layer precision as a remedy, naming the layer where the overflows start.
std::string fp32_hint(const std::string& layer) {
  return layer.empty() ? std::string() : "keep " + layer + " in FP32 (--fp32-layers " + layer + "); ";
}

}  // namespace

std::vector<RunEvent> AlertMonitor::observe(const StepMetrics& m, bool scaling, double min_scale,
                                            const std::vector<TensorName>& names) {
  std::vector<RunEvent> out;
  auto network = [&](Net& n, const char* net, bool skipped, double scale) {
    if (skipped) {
      ++n.streak;
      const int k = first_nonfinite_in_backward_order(names, m.tensors, net);
      if (k >= 0) n.last_layer = names[static_cast<size_t>(k)].layer;
    } else {
      n.streak = 0;
      n.streak_raised = false;
    }
    if (n.streak >= s_.skip_streak && !n.streak_raised) {
      n.streak_raised = true;
      out.push_back(alert(m, net, "skip_streak",
                          std::string(net) + " skipped " + std::to_string(n.streak) +
                              " steps in a row (inf/NaN gradients)" + layer_hint(n.last_layer),
                          "switch to bf16 (--precision bf16), which has FP32's range; " + fp32_hint(n.last_layer) +
                              "or lower the learning rate; a run that keeps skipping trains nothing"));
    }
    const bool at_floor = scaling && skipped && scale <= min_scale;
    if (at_floor && !n.floor_raised) {
      n.floor_raised = true;
      out.push_back(alert(m, net, "scale_floor",
                          std::string(net) + "'s loss scale is at its floor (" + std::to_string(min_scale) +
                              ") and its gradients still overflow" + layer_hint(n.last_layer),
                          "the gradients themselves exceed FP16's range, so scaling cannot help: use bf16, " +
                              fp32_hint(n.last_layer) + "lower the learning rate, or lower --min-scale"));
    }
    if (scale > min_scale) n.floor_raised = false;
  };
  network(d_, "D", m.skipped_d, m.scale_d);
  network(g_, "G", m.skipped_g, m.scale_g);

  const bool finite = std::isfinite(m.loss_d) && std::isfinite(m.loss_g);
  if (!finite && !loss_raised_) {
    loss_raised_ = true;
    out.push_back(alert(m, std::isfinite(m.loss_d) ? "G" : "D", "nonfinite_loss",
                        "a loss is not finite (D " + std::to_string(m.loss_d) + ", G " + std::to_string(m.loss_g) + ")",
                        "the forward pass overflowed (the overflow event names the first layer with inf/NaN): use "
                        "bf16 or fp32, keep that layer in FP32 (--fp32-layers), clamp convolution outputs "
                        "(--conv-clamp 256), or lower the learning rate"));
  }
  if (finite) loss_raised_ = false;

  if (std::isfinite(m.d_real) && std::isfinite(m.d_fake) && std::fabs(m.d_real - m.d_fake) < s_.collapse_gap)
    ++close_steps_;
  else {
    close_steps_ = 0;
    collapse_raised_ = false;
  }
  if (close_steps_ >= s_.collapse_steps && !collapse_raised_) {
    collapse_raised_ = true;
    out.push_back(alert(m, "D", "collapsed_d",
                        "D(x) and D(G(z)) have stayed within " + std::to_string(s_.collapse_gap) +
                            " of each other for " + std::to_string(close_steps_) +
                            " steps: D no longer tells real from generated images",
                        "lower G's learning rate or raise D's (--lr-g/--lr-d), and look at the samples; in fp16 "
                        "check the skip count: a D whose steps are skipped stops learning"));
  }
  return out;
}

}  // namespace ampgan
