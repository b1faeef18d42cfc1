// PlotsPanel's overlays: other runs (or seed groups) drawn over every time chart. Each overlay
// is computed once when the set changes (or the smoothing does), never per live step.
#include <algorithm>
#include <cmath>

#include "ui/plots_panel.h"

namespace ampgan::ui {

namespace {

struct Point {
  int64_t step;  // members are aligned by step, whatever the x axis shows
  double value;
  double time;
};

// One member's curve, smoothed like the live one when it is smoothed.
std::vector<Point> member_curve(const std::vector<StepMetrics>& rows, const std::function<double(const StepMetrics&)>& get,
                                bool positive_only, double alpha) {
  std::vector<Point> out;
  out.reserve(rows.size());
  double ema = 0;
  int n = 0;
  for (const StepMetrics& m : rows) {
    const double v = get(m);
    if (std::isnan(v) || std::isinf(v) || (positive_only && v <= 0)) continue;
    if (alpha > 0) {
      ema = alpha * ema + (1 - alpha) * v;
      ++n;
      const double debias = 1 - std::pow(alpha, n);
      out.push_back({m.step, debias > 0 ? ema / debias : v, m.time_s});
    } else {
      out.push_back({m.step, v, m.time_s});
    }
  }
  return out;
}

}  // namespace

void PlotsPanel::setOverlays(const std::vector<RunOverlay>& overlays) {
  overlays_ = overlays;
  drawOverlays();
}

void PlotsPanel::drawOverlays() {
  for (auto& [plot, g] : overlay_graphs_) plot->removeSeries(g);
  overlay_graphs_.clear();
  struct Spec {
    LivePlot* plot;
    QString name;
    std::function<double(const StepMetrics&)> get;
    bool positive_only, smoothed, right;
  };
  std::vector<Spec> specs;
  for (const Curve& c : curves_)
    specs.push_back({c.plot, (c.ema ? c.ema : c.raw)->name(), c.get, c.positive_only, c.ema != nullptr,
                     c.raw->valueAxis() == c.plot->yAxis2});
  specs.push_back({plots_.value(QStringLiteral("quality")), swd_->name(), [](const StepMetrics& m) { return m.swd; }, false,
                   false, false});
  specs.push_back({plots_.value(QStringLiteral("fd")), fd_->name(), [](const StepMetrics& m) { return m.fd; }, false, false,
                   false});
  QHash<LivePlot*, int> nth;
  for (const Spec& s : specs) {
    const int k = nth[s.plot]++;
    // Curves of one run share its colour; the pen style tells them apart (as the live ones
    // are told apart by colour).
    const Qt::PenStyle style = k == 0 ? Qt::SolidLine : k == 1 ? Qt::DashLine : Qt::DotLine;
    for (const RunOverlay& ov : overlays_) {
      if (ov.members.empty()) continue;
      std::vector<Point> all;
      for (const auto& rows : ov.members) {
        const size_t mid = all.size();
        const std::vector<Point> c = member_curve(*rows, s.get, s.positive_only, s.smoothed ? alpha_ : 0);
        all.insert(all.end(), c.begin(), c.end());
        std::inplace_merge(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(mid), all.end(),
                           [](const Point& a, const Point& b) { return a.step < b.step; });
      }
      const size_t members = ov.members.size();
      QVector<double> keys, mean, lo, hi;
      keys.reserve(static_cast<int>(all.size() / members + 1));
      for (size_t i = 0; i < all.size();) {
        size_t j = i;
        double sum = 0, time = 0;
        for (; j < all.size() && all[j].step == all[i].step; ++j) {
          sum += all[j].value;
          time += all[j].time;
        }
        if (j - i == members) {  // steps every member logged
          const double m = sum / static_cast<double>(members);
          keys << (wall_time_ ? time / static_cast<double>(members) : static_cast<double>(all[i].step));
          mean << m;
          if (members > 1) {
            double ss = 0;
            for (size_t t = i; t < j; ++t) ss += (all[t].value - m) * (all[t].value - m);
            const double sd = std::sqrt(ss / static_cast<double>(members - 1));
            lo << m - sd;
            hi << m + sd;
          }
        }
        i = j;
      }
      const QString name = ov.label + QStringLiteral(" · ") + s.name;
      QCPGraph* g = s.plot->addSeries(name, ov.color, style, 1.3, s.right, k == 0);
      if (k == 0) g->setName(name);
      s.plot->setSeriesData(g, keys, mean);
      s.plot->setKeptOnClear(g);
      overlay_graphs_.emplace_back(s.plot, g);
      if (members > 1) {
        QColor fill = ov.color;
        fill.setAlpha(45);
        QCPGraph* gl = s.plot->addSeries(name + QStringLiteral(" −sd"), fill, Qt::SolidLine, 0.5, s.right, false);
        QCPGraph* gh = s.plot->addSeries(name + QStringLiteral(" +sd"), fill, Qt::SolidLine, 0.5, s.right, false);
        s.plot->setSeriesData(gl, keys, lo);
        s.plot->setSeriesData(gh, keys, hi);
        gh->setBrush(fill);
        gh->setChannelFillGraph(gl);
        for (QCPGraph* b : {gl, gh}) {
          s.plot->setKeptOnClear(b);
          overlay_graphs_.emplace_back(s.plot, b);
        }
      }
      s.plot->markDirty();
    }
  }
  for (LivePlot* p : allPlots()) p->markDirty();
}

}  // namespace ampgan::ui
