#include "ui/plots/histogram_plot.h"

#include <algorithm>
#include <cmath>

#include "core/backend/elementwise.h"
#include "ui/common/amp_glossary.h"

namespace ampgan::ui {

namespace {
// Where the two special bins sit on the exponent axis: left of the smallest and right of the
// largest exponent, with a gap.
constexpr double kZeroX = ew::kHistMinExp - 6;
constexpr double kNonFiniteX = ew::kHistMaxExp + 5;
// FP16: subnormals 2^-24..2^-15, normals 2^-14..2^15, 2^16 and up overflow (max 65504).
constexpr int kF16MinSub = -24, kF16MinNormal = -14, kF16Overflow = 16;
}  // namespace

HistogramPlot::HistogramPlot(const QString& network, const QColor& color, QWidget* parent)
    : LivePlot(network + QStringLiteral(" gradient exponents"), parent), network_(network) {
  setTitleToolTip(glossary::exponent_histogram());
  // No legend (the title says what the bars are): its row shows which step, precision and loss
  // scale the bars are from. The legend goes back to the inset layout, hidden.
  plotLayout()->take(legend);
  axisRect()->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignRight);
  legend->setVisible(false);
  QFont sf = font();
  sf.setPointSizeF(std::max(7.0, sf.pointSizeF() - 1));
  info_ = new QCPTextElement(this, tr("no histogram yet"), sf);
  info_->setTextColor(QColor(80, 80, 80));
  info_->setMargins(QMargins(2, 0, 2, 0));
  plotLayout()->addElement(1, 0, info_);
  axisRect()->setRangeDrag(Qt::Horizontal);
  axisRect()->setRangeZoom(Qt::Horizontal);
  xAxis->setLabel(QStringLiteral("log2 |g| of stored (scaled) gradients"));
  yAxis->setLabel(QStringLiteral("% of values"));

  auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
  ticker->addTick(kZeroX, QStringLiteral("0"));
  for (int e : {-56, -40, kF16MinSub, kF16MinNormal, 0, kF16Overflow}) ticker->addTick(e, QString::number(e));
  ticker->addTick(kNonFiniteX, QStringLiteral("inf"));
  xAxis->setTicker(ticker);

  // Shading behind the bars, in axis-rect height so it spans any y range.
  addRegion(ew::kHistMinExp - 0.5, kF16MinSub - 0.5, QColor(150, 150, 150, 45), QStringLiteral("→ 0"));
  addRegion(kF16MinSub - 0.5, kF16MinNormal - 0.5, QColor(240, 180, 40, 70), QStringLiteral("sub"));
  addRegion(kF16MinNormal - 0.5, kF16Overflow - 0.5, QColor(60, 170, 80, 45), QStringLiteral("normal"));
  addRegion(kF16Overflow - 0.5, ew::kHistMaxExp + 0.5, QColor(220, 60, 50, 55), QStringLiteral("→ inf"));

  bars_ = new QCPBars(xAxis, yAxis);
  bars_->setName(network + QStringLiteral(" gradients"));
  bars_->setWidth(0.9);
  bars_->setPen(Qt::NoPen);
  bars_->setBrush(color);
  zero_ = new QCPBars(xAxis, yAxis);
  zero_->setName(QStringLiteral("exact zeros"));
  zero_->setWidth(1.6);
  zero_->setPen(Qt::NoPen);
  zero_->setBrush(QColor(110, 110, 110));
  nonfinite_ = new QCPBars(xAxis, yAxis);
  nonfinite_->setName(QStringLiteral("inf/NaN"));
  nonfinite_->setWidth(1.6);
  nonfinite_->setPen(Qt::NoPen);
  nonfinite_->setBrush(QColor(210, 30, 30));

  for (QCPBars* b : {bars_, zero_, nonfinite_}) b->removeFromLegend();  // no legend: the title says it

  rescaleFollow();
  connect(this, &QCustomPlot::beforeReplot, this, &HistogramPlot::hideCrowdedLabels);
}

void HistogramPlot::addRegion(double from, double to, const QColor& fill, const QString& label) {
  auto* r = new QCPItemRect(this);
  r->topLeft->setTypeX(QCPItemPosition::ptPlotCoords);
  r->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  r->bottomRight->setTypeX(QCPItemPosition::ptPlotCoords);
  r->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  r->topLeft->setCoords(from, 0);
  r->bottomRight->setCoords(to, 1);
  r->setPen(Qt::NoPen);
  r->setBrush(fill);
  r->setLayer(QStringLiteral("background"));
  r->setClipToAxisRect(true);
  regions_.push_back(r);
  auto* t = new QCPItemText(this);
  t->position->setTypeX(QCPItemPosition::ptPlotCoords);
  t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  t->position->setCoords((from + to) / 2, 0.02);
  t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
  t->setText(label);
  QFont f = font();
  f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1.5));
  t->setFont(f);
  t->setColor(QColor(fill.rgb()).darker(170));  // opaque: the fill itself is faint
  t->setLayer(QStringLiteral("background"));
  t->setClipToAxisRect(true);
  region_labels_.push_back({t, from, to});
}

void HistogramPlot::hideCrowdedLabels() {
  // A range label shows only when its range is wide enough on screen (zooming in reveals it).
  const QFontMetrics fm(region_labels_.empty() ? font() : region_labels_.front().text->font());
  for (const RegionLabel& r : region_labels_) {
    const double px = std::fabs(xAxis->coordToPixel(r.to) - xAxis->coordToPixel(r.from));
    r.text->setVisible(!bf16_ && px >= fm.horizontalAdvance(r.text->text()) + 4);
  }
}

void HistogramPlot::setHistogram(int64_t step, const std::vector<float>& counts, Precision precision, double scale) {
  if (static_cast<int>(counts.size()) != ew::kHistBins) return;
  counts_ = counts;
  step_ = step;
  total_ = 0;
  for (float c : counts) total_ += c;
  const double norm = total_ > 0 ? 100.0 / total_ : 0;
  QVector<double> keys, values;
  keys.reserve(ew::kHistZeroBin);
  values.reserve(ew::kHistZeroBin);
  max_fraction_ = 0;
  for (int i = 0; i < ew::kHistZeroBin; ++i) {
    keys << ew::kHistMinExp + i;
    values << counts[i] * norm;
    max_fraction_ = std::max(max_fraction_, values.back());
  }
  bars_->setData(keys, values, true);
  zero_->setData({kZeroX}, {counts[ew::kHistZeroBin] * norm}, true);
  nonfinite_->setData({kNonFiniteX}, {counts[ew::kHistNonFiniteBin] * norm}, true);
  max_fraction_ = std::max({max_fraction_, counts[ew::kHistZeroBin] * norm, counts[ew::kHistNonFiniteBin] * norm});
  bf16_ = precision == Precision::BF16;
  for (QCPItemRect* r : regions_) r->setVisible(!bf16_);
  QString t = QStringLiteral("step %1 · %2").arg(step).arg(QString::fromLatin1(precision_label(precision)));
  if (is_mixed(precision) && scale != 1) t += QStringLiteral(" · S = %1").arg(format_value(scale, true));
  // BF16 has FP32's exponent range: its limits lie beyond both ends of this axis. On a line of
  // its own: after the step and the mode it was cut off in a chart a third of 1600 px wide.
  if (bf16_) t += tr("\nBF16 range 2^-126 … 2^127: off the axis");
  info_->setText(t);
  markDirty();
}

void HistogramPlot::clearHistogram() {
  counts_.clear();
  total_ = max_fraction_ = 0;
  bars_->data()->clear();
  zero_->data()->clear();
  nonfinite_->data()->clear();
  bf16_ = false;
  for (QCPItemRect* r : regions_) r->setVisible(true);
  info_->setText(tr("no histogram yet"));
  markDirty();
}

bool HistogramPlot::bf16MarksVisible() const { return bf16_ && info_->text().contains(QStringLiteral("2^-126")); }

bool HistogramPlot::fp16BandsVisible() const {
  return std::all_of(regions_.begin(), regions_.end(), [](const QCPItemRect* r) { return r->visible(); });
}

QString HistogramPlot::infoText() const { return info_->text(); }
QFont HistogramPlot::infoFont() const { return info_->font(); }

double HistogramPlot::fraction(int bin) const {
  if (total_ <= 0 || bin < 0 || bin >= static_cast<int>(counts_.size())) return 0;
  return counts_[bin] / total_;
}

int HistogramPlot::binAt(double key) {
  if (std::fabs(key - kZeroX) <= 0.8) return ew::kHistZeroBin;
  if (std::fabs(key - kNonFiniteX) <= 0.8) return ew::kHistNonFiniteBin;
  const int e = static_cast<int>(std::lround(key));
  if (e < ew::kHistMinExp || e > ew::kHistMaxExp) return -1;
  return e - ew::kHistMinExp;
}

QString HistogramPlot::hoverText(double key) const {
  const int bin = binAt(key);
  if (bin < 0) return {};
  QString range;
  if (bin == ew::kHistZeroBin) {
    range = QStringLiteral("exactly zero");
  } else if (bin == ew::kHistNonFiniteBin) {
    range = QStringLiteral("inf or NaN (overflow)");
  } else {
    const int e = bin + ew::kHistMinExp;
    const QString where = e < kF16MinSub      ? QStringLiteral("below FP16's range: becomes 0 in FP16")
                          : e < kF16MinNormal ? QStringLiteral("FP16 subnormal: reduced precision")
                          : e < kF16Overflow  ? QStringLiteral("FP16 normal range")
                                              : QStringLiteral("FP16 overflow: becomes inf");
    range = QStringLiteral("2^%1 ≤ |g| < 2^%2\n%3").arg(e).arg(e + 1).arg(where);
  }
  if (total_ <= 0) return range;
  return QStringLiteral("%1\n%2% of %3 values (%4)")
      .arg(range)
      .arg(100.0 * fraction(bin), 0, 'f', 2)
      .arg(static_cast<qint64>(total_))
      .arg(static_cast<qint64>(counts_[bin]));
}

void HistogramPlot::rescaleFollow() {
  xAxis->setRange(kZeroX - 1.5, kNonFiniteX + 1.5);
  yAxis->setRange(0, std::max(1.0, max_fraction_ * 1.25));
}

}  // namespace ampgan::ui
