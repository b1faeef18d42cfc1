// PlotsPanel's gradient histograms over time: the sets a run delivered live or stored in its
// histograms.csv, shown one step at a time on the toolbar's "Histograms" slider.
#include <algorithm>

#include <QLabel>
#include <QSlider>

#include "ui/plots/plots_panel.h"

namespace ampgan::ui {

void PlotsPanel::setHistograms(int64_t step, const std::vector<float>& g, const std::vector<float>& d) {
  HistEntry e;
  e.step = step;
  e.precision = rows_.empty() ? Precision::FP32 : rows_.back().precision;
  e.scale_g = rows_.empty() ? 1 : rows_.back().scale_g;
  e.scale_d = rows_.empty() ? 1 : rows_.back().scale_d;
  e.g = g;
  e.d = d;
  addHistEntry(std::move(e));
}

void PlotsPanel::setHistogramRows(const std::vector<HistogramRow>& rows, bool replace) {
  if (replace) {
    hists_.clear();
    hist_g_->clearHistogram();
    hist_d_->clearHistogram();
  }
  // The file holds G's row, then D's, per step; a step missing one keeps the other's counts.
  HistEntry pending;
  bool open = false;
  auto flush = [&] {
    if (open) addHistEntry(std::move(pending));
    pending = HistEntry{};
    open = false;
  };
  for (const HistogramRow& r : rows) {
    if (open && r.step != pending.step) flush();
    pending.step = r.step;
    pending.precision = r.precision;
    (r.network == 'G' ? pending.g : pending.d) = r.counts;
    (r.network == 'G' ? pending.scale_g : pending.scale_d) = r.scale;
    open = true;
  }
  flush();
  updateHistSlider();
}

void PlotsPanel::addHistEntry(HistEntry e) {
  const bool following = hists_.empty() || hist_slider_->value() >= hist_slider_->maximum();
  // Steps arrive in order; one that goes back (a resume retrains it) replaces what followed.
  while (!hists_.empty() && hists_.back().step >= e.step) hists_.pop_back();
  hists_.push_back(std::move(e));
  updateHistSlider();
  if (following) {
    const QSignalBlocker block(hist_slider_);
    hist_slider_->setValue(hist_slider_->maximum());
    showHistEntry(static_cast<int>(hists_.size()) - 1);
  }
}

void PlotsPanel::updateHistSlider() {
  const QSignalBlocker block(hist_slider_);
  const bool at_end = hist_slider_->value() >= hist_slider_->maximum();
  hist_slider_->setRange(0, std::max(0, static_cast<int>(hists_.size()) - 1));
  if (at_end) hist_slider_->setValue(hist_slider_->maximum());
  // One set is nothing to slide through.
  const bool show = hists_.size() > 1;
  hist_caption_->setVisible(show);
  hist_slider_->setVisible(show);
  hist_label_->setVisible(show);
  if (!hists_.empty() && (hist_slider_->value() != hist_slider_->maximum() || hist_g_->step() != hists_.back().step))
    showHistEntry(hist_slider_->value());
}

void PlotsPanel::showHistEntry(int index) {
  if (index < 0 || index >= static_cast<int>(hists_.size())) return;
  const HistEntry& e = hists_[index];
  if (!e.g.empty()) hist_g_->setHistogram(e.step, e.g, e.precision, e.scale_g);
  if (!e.d.empty()) hist_d_->setHistogram(e.step, e.d, e.precision, e.scale_d);
  hist_label_->setText(tr("step %1").arg(e.step));
  hist_label_->setToolTip(index + 1 == static_cast<int>(hists_.size())
                              ? tr("the newest histograms stored")
                              : tr("%1 of %2 stored").arg(index + 1).arg(hists_.size()));
}

bool PlotsPanel::showHistogramStep(int64_t step) {
  if (hists_.empty()) return false;
  const auto it =
      std::lower_bound(hists_.begin(), hists_.end(), step, [](const HistEntry& e, int64_t s) { return e.step < s; });
  int i = static_cast<int>(it - hists_.begin());
  if (i == static_cast<int>(hists_.size()) || (i > 0 && step - hists_[i - 1].step < it->step - step)) --i;
  hist_slider_->setValue(i);  // shows it (valueChanged)
  showHistEntry(i);
  return true;
}

}  // namespace ampgan::ui
