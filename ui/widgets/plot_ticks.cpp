// Axis tickers and the number format of the charts' tooltips and tables (declared in plot_ticks.h).
#include "ui/widgets/plot_ticks.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ampgan::ui {

QString format_value(double v, bool as_power_of_two) {
  if (std::isnan(v)) return QStringLiteral("–");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  if (as_power_of_two && v > 0) {
    const double l = std::log2(v);
    if (std::fabs(l - std::round(l)) < 1e-9) return QStringLiteral("2^%1").arg(static_cast<int>(std::round(l)));
  }
  const double a = std::fabs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e6)) return QString::number(v, 'e', 2);
  return QString::number(v, 'g', 4);
}

Log2Ticker::Log2Ticker() {
  setLogBase(2);
  setTickCount(4);  // every few powers of two, not a label per doubling
}

namespace {
QString compact(double v) {
  const double a = std::fabs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e5)) {
    const int e = static_cast<int>(std::floor(std::log10(a)));
    const double m = v / std::pow(10.0, e);
    const QString ms = std::fabs(m - std::round(m)) < 1e-6 ? QString::number(static_cast<int>(std::round(m)))
                                                           : QString::number(m, 'g', 2);
    return ms + QStringLiteral("e") + QString::number(e);
  }
  return QString::number(v, 'g', 3);
}

// Both log tickers start empty and draw nothing on a range that is not positive and increasing.
bool startLogTicks(const QCPRange& range, QVector<double>& ticks, QVector<double>* subTicks,
                   QVector<QString>* tickLabels) {
  ticks.clear();
  if (subTicks) subTicks->clear();
  if (tickLabels) tickLabels->clear();
  return range.lower > 0 && range.upper > range.lower;
}
}  // namespace

void Log2Ticker::generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks,
                          QVector<double>* subTicks, QVector<QString>* tickLabels) {
  if (!startLogTicks(range, ticks, subTicks, tickLabels)) return;
  const double lo = range.lower, hi = range.upper;
  const int e0 = static_cast<int>(std::ceil(std::log2(lo) - 1e-9)),
            e1 = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  if (e1 < e0) {
    // Narrower than one octave, no power of two inside: three plain numbers.
    for (int i = 1; i <= 3; ++i) ticks << lo + (hi - lo) * i / 4;
    if (tickLabels)
      for (double t : ticks) *tickLabels << compact(t);
    return;
  }
  const int every = std::max(1, static_cast<int>(std::ceil((e1 - e0 + 1) / static_cast<double>(tickCount()))));
  for (int e = e0; e <= e1; ++e) {
    if (e % every == 0) {
      ticks << std::exp2(e);
      if (tickLabels) *tickLabels << QStringLiteral("2^%1").arg(e);
    } else if (subTicks) {
      *subTicks << std::exp2(e);
    }
  }
  if (ticks.isEmpty()) {  // the multiples of `every` all fell outside: label the lowest power
    ticks << std::exp2(e0);
    if (tickLabels) *tickLabels << QStringLiteral("2^%1").arg(e0);
  }
}

void NiceLogTicker::generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks,
                             QVector<double>* subTicks, QVector<QString>* tickLabels) {
  if (!startLogTicks(range, ticks, subTicks, tickLabels)) return;
  const double lo = range.lower, hi = range.upper;
  const double decades = std::log10(hi / lo);
  if (decades < 0.7) {
    // Within a decade: ordinary evenly spaced ticks.
    const double raw = (hi - lo) / 4;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double r = raw / mag;
    const double step = (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
    for (double t = std::ceil(lo / step) * step; t <= hi * (1 + 1e-9); t += step) ticks << t;
  } else {
    const int every = decades > 6 ? static_cast<int>(std::ceil(decades / 6)) : 1;
    const std::vector<double> mult = decades > 2 ? std::vector<double>{1} : std::vector<double>{1, 2, 5};
    const int k0 = static_cast<int>(std::floor(std::log10(lo))), k1 = static_cast<int>(std::ceil(std::log10(hi)));
    for (int k = k0; k <= k1; ++k) {
      const double p10 = std::pow(10.0, k);
      if (k % every == 0)
        for (double m : mult)
          if (m * p10 >= lo && m * p10 <= hi) ticks << m * p10;
      if (subTicks && every == 1 && mult.size() == 1)
        for (int m = 2; m <= 9; ++m)
          if (m * p10 >= lo && m * p10 <= hi) *subTicks << m * p10;
    }
  }
  if (tickLabels)
    for (double t : ticks) *tickLabels << compact(t);
}

}  // namespace ampgan::ui
