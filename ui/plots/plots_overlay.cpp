// PlotsPanel's overlays: other runs (or seed groups) drawn over every time chart. Each overlay
// is computed once when the set changes (or the smoothing does), never per live step, and is
// thinned then to a fixed number of points: three overlaid runs of 100k rows must not cost
// every live replot of every chart a pass over 300k points.
#include <algorithm>
#include <cmath>

#include "ui/plots/plots_panel.h"

namespace ampgan::ui {

namespace {

struct Point {
  int64_t step;  // members are aligned by step, whatever the x axis shows
  double value;
  double time;
};

// One member's curve, smoothed like the live one when it is smoothed.
std::vector<Point> member_curve(const std::vector<StepMetrics>& rows,
                                const std::function<double(const StepMetrics&)>& get, bool positive_only,
                                double alpha) {
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

// At most 2 x kOverlayBuckets points per overlay curve: a bucket's lowest and highest mean (in
// step order) keep the envelope a chart of up to ~2000 px shows, as QCustomPlot's adaptive
// sampling would draw it; zoomed in further than ~1/4 of a 100k-step run, an overlay shows
// that envelope rather than every step (the live run keeps every point).
constexpr int kOverlayBuckets = 2000;

struct Thinned {
  QVector<double> keys, mean, lo, hi;
};

Thinned thin(const Thinned& in) {
  const int n = static_cast<int>(in.keys.size());
  if (n <= 2 * kOverlayBuckets) return in;
  const bool band = !in.lo.isEmpty();
  Thinned out;
  for (QVector<double>* v : {&out.keys, &out.mean, &out.lo, &out.hi}) v->reserve(2 * kOverlayBuckets);
  auto take = [&](int i) {
    out.keys << in.keys[i];
    out.mean << in.mean[i];
    if (band) {
      out.lo << in.lo[i];
      out.hi << in.hi[i];
    }
  };
  for (int b = 0; b < kOverlayBuckets; ++b) {
    const int from = static_cast<int>(static_cast<int64_t>(n) * b / kOverlayBuckets);
    const int to = static_cast<int>(static_cast<int64_t>(n) * (b + 1) / kOverlayBuckets);
    int lo = from, hi = from;
    for (int i = from + 1; i < to; ++i) {
      if (in.mean[i] < in.mean[lo]) lo = i;
      if (in.mean[i] > in.mean[hi]) hi = i;
    }
    take(std::min(lo, hi));
    if (lo != hi) take(std::max(lo, hi));
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
  specs.push_back({plots_.value(QStringLiteral("quality")), swd_->name(), [](const StepMetrics& m) { return m.swd; },
                   false, false, false});
  specs.push_back({plots_.value(QStringLiteral("fd")), fd_->name(), [](const StepMetrics& m) { return m.fd; }, false,
                   false, false});
  QHash<LivePlot*, int> nth;
  for (const Spec& s : specs) {
    const int k = nth[s.plot]++;
    // Curves of one run share its hue; a lighter or darker shade tells them apart (as the live
    // ones are told apart by colour). Solid pens only: QCustomPlot strokes a dashed or dotted
    // line as one path, slow on overlays of many points; solid lines go its fast way, segment by
    // segment.
    for (const RunOverlay& ov : overlays_) {
      const QColor color = k == 0 ? ov.color : k == 1 ? ov.color.lighter(145) : ov.color.darker(150);
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
      Thinned full;
      QVector<double>&keys = full.keys, &mean = full.mean, &lo = full.lo, &hi = full.hi;
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
      const Thinned t = thin(full);
      const QString name = ov.label + QStringLiteral(" · ") + s.name;
      QCPGraph* g = s.plot->addSeries(name, color, Qt::SolidLine, 1.3, s.right, k == 0);
      if (k == 0) g->setName(name);
      // A noisy run zigzags over the chart's height in every pixel column; antialiasing that
      // (three runs, a dozen curves) filled most of a replot's time.
      g->setAntialiased(false);
      s.plot->setSeriesData(g, t.keys, t.mean);
      s.plot->setKeptOnClear(g);
      overlay_graphs_.emplace_back(s.plot, g);
      if (members > 1) {
        QColor fill = color;
        fill.setAlpha(45);
        QCPGraph* gl = s.plot->addSeries(name + QStringLiteral(" −sd"), fill, Qt::SolidLine, 0.5, s.right, false);
        QCPGraph* gh = s.plot->addSeries(name + QStringLiteral(" +sd"), fill, Qt::SolidLine, 0.5, s.right, false);
        s.plot->setSeriesData(gl, t.keys, t.lo);
        s.plot->setSeriesData(gh, t.keys, t.hi);
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
