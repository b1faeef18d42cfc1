// The gradient-exponent histogram of one network: how many stored gradient values fall in each
// binary exponent floor(log2|g|), with FP16's ranges shaded behind the bars (values lost to zero,
// subnormal, normal, overflow) and BF16's far wider limits marked in BF16 mode. This is where one
// sees the loss scale shift the gradients into FP16's window, or fail to.
#pragma once

#include <vector>

#include "core/amp/precision.h"
#include "ui/widgets/live_plot.h"

namespace ampgan::ui {

class HistogramPlot : public LivePlot {
  Q_OBJECT

 public:
  HistogramPlot(const QString& network, const QColor& color, QWidget* parent = nullptr);

  // counts: ew::kHistBins values (bins kHistMinExp..kHistMaxExp, zero, non-finite).
  void setHistogram(int64_t step, const std::vector<float>& counts, Precision precision, double scale);
  void clearHistogram();
  bool hasData() const { return total_ > 0; }
  int64_t step() const { return step_; }
  double fraction(int bin) const;  // of all values, 0..1
  // BF16 bars: the info row names BF16's range and FP16's bands are hidden (they are not
  // BF16's limits), rather than a banner over the bars.
  bool bf16MarksVisible() const;
  bool fp16BandsVisible() const;
  QString infoText() const;
  QFont infoFont() const;  // the info row's, to check that its lines fit

 protected:
  QString hoverText(double key) const override;
  void rescaleFollow() override;

 private:
  void addRegion(double from, double to, const QColor& fill, const QString& label);
  static int binAt(double key);
  void hideCrowdedLabels();
  struct RegionLabel {
    QCPItemText* text;
    double from, to;
  };
  std::vector<RegionLabel> region_labels_;

  QString network_;
  QCPBars* bars_ = nullptr;
  QCPBars* zero_ = nullptr;
  QCPBars* nonfinite_ = nullptr;
  std::vector<QCPItemRect*> regions_;  // FP16's bands: shown unless the bars are BF16's
  bool bf16_ = false;                  // BF16's range is in the info row, FP16's bands hidden
  QCPTextElement* info_ = nullptr;
  std::vector<float> counts_;
  double total_ = 0, max_fraction_ = 0;
  int64_t step_ = 0;
};

}  // namespace ampgan::ui
