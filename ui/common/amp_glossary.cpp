#include "ui/common/amp_glossary.h"

#include "core/amp/precision.h"

namespace ampgan::ui::glossary {

QString loss_scale() {
  return QStringLiteral(
      "<b>Loss scale (S)</b>: the loss is multiplied by S before the backward pass, so every "
      "gradient is S times larger. Small FP16 gradients that would round to zero (below 2<sup>-24</sup>) "
      "stay representable. The optimizer divides by S again (in FP32) before updating the weights. "
      "Dynamic scaling starts high (2<sup>16</sup>), halves S on every overflow and doubles it after a "
      "run of clean steps, so S settles just below the overflow limit.");
}

QString overflow() {
  return QStringLiteral(
      "<b>Overflow / skipped step</b>: with a loss scale that is too large, some scaled FP16 gradient "
      "exceeds 65504 (2<sup>16</sup>) and becomes inf or NaN. The step is then skipped (the weights and "
      "Adam's moments are left as they were) and the loss scale is multiplied by the backoff factor. "
      "A few skipped steps are normal and harmless; a long series means the scale has collapsed.");
}

QString underflow() {
  return QStringLiteral(
      "<b>Underflow</b>: gradient values too small for the half format. In FP16, values below "
      "2<sup>-14</sup> are subnormal (fewer significant bits) and values below 2<sup>-24</sup> become "
      "exactly zero: their information is lost. The plot shows the fraction of half gradient values "
      "that are zero or subnormal; loss scaling exists to keep this small.");
}

QString master_weights() {
  return QStringLiteral(
      "<b>Master weights</b>: the optimizer keeps an FP32 copy of every weight and updates that copy. "
      "Forward and backward use a half-precision working copy written from it. Tiny updates "
      "(lr &times; gradient) that would vanish when added to a half weight accumulate in FP32, and "
      "precision can be switched mid-run without losing anything.");
}

QString tf32() {
  return QStringLiteral(
      "<b>TF32</b>: NVIDIA tensor cores (Ampere and newer) can multiply FP32 matrices with a 10-bit "
      "mantissa (like FP16) and FP32's 8-bit exponent, accumulating in FP32. Faster than FP32, "
      "slightly less precise. On the CPU it is the same as FP32. The FP32 mode here forbids TF32, "
      "so it is a fair baseline.");
}

QString bf16_vs_fp16() {
  return QStringLiteral(
      "<b>BF16 vs FP16</b>: both use 16 bits. FP16 has 5 exponent bits (range 2<sup>-24</sup> to 65504) "
      "and 10 mantissa bits; gradients can underflow or overflow, hence loss scaling. BF16 keeps "
      "FP32's 8 exponent bits (range 2<sup>-133</sup> to 3&times;10<sup>38</sup>) with only 7 mantissa "
      "bits: no loss scaling needed, but coarser rounding.");
}

QString growth_factor() {
  return QStringLiteral(
      "<b>Growth factor</b>: after <i>growth interval</i> clean steps in a row, the "
      "loss scale is multiplied by this (PyTorch's GradScaler: 2).");
}

QString backoff_factor() {
  return QStringLiteral(
      "<b>Backoff factor</b>: on an overflow the step is skipped and the loss scale is "
      "multiplied by this (GradScaler: 0.5).");
}

QString growth_interval() {
  return QStringLiteral(
      "<b>Growth interval</b>: clean (overflow-free) steps before the loss scale grows "
      "(GradScaler: 2000). Small values probe the overflow limit often: more skipped "
      "steps, a scale closer to the limit.");
}

QString min_max_scale() {
  return QStringLiteral(
      "<b>Floor and ceiling</b>: the loss scale never leaves [floor, ceiling]. A floor "
      "stops a scale that keeps backing off from collapsing to 0 (which trains nothing).");
}

QString shared_scaler() {
  return QStringLiteral(
      "<b>Scaler per network or shared</b>: G and D each get their own loss scale by "
      "default, because their gradients differ in size. <i>Shared</i> uses one scale for "
      "both, as a single GradScaler would; an overflow in either backs it off.");
}

QString bf16_loss_scaling() {
  return QStringLiteral(
      "Use dynamic loss scaling in BF16 too. BF16's exponent range matches FP32's, so "
      "scaling is normally unnecessary and off.");
}

QString cuda_graphs() {
  return QStringLiteral(
      "Capture the whole training step once as a CUDA graph and replay it: a small "
      "GAN's step is ~100 kernel launches, and replaying saves their launch overhead. "
      "Has no effect on the CPU.");
}

QString precision_mode(int p) {
  switch (static_cast<Precision>(p)) {
    case Precision::FP32:
      return QStringLiteral("<b>FP32</b>: everything in 32-bit floats, TF32 forbidden: the fair baseline.");
    case Precision::TF32:
      return tf32();
    case Precision::FP16:
      return QStringLiteral(
          "<b>FP16 AMP</b>: convolutions and matrix products in FP16 (FP32 accumulation), "
          "batch norm, loss and reductions in FP32, FP32 master weights, dynamic loss "
          "scaling against underflow.");
    case Precision::BF16:
      return QStringLiteral(
          "<b>BF16 AMP</b>: like FP16 AMP but in bfloat16, whose FP32-sized exponent needs "
          "no loss scaling.");
  }
  return {};
}

QString exponent_histogram() {
  return QStringLiteral(
      "<b>Gradient exponents</b>: how many gradient values (as stored, i.e. still multiplied by the loss "
      "scale) have each binary exponent floor(log2|g|). Shaded: FP16's normal range (2<sup>-14</sup> to "
      "2<sup>15</sup>), its subnormal range (2<sup>-24</sup> to 2<sup>-15</sup>, reduced precision) and "
      "overflow (2<sup>16</sup> and up, becomes inf). Values left of 2<sup>-24</sup> are lost to zero in "
      "FP16. Raising the loss scale shifts the whole histogram right.");
}

QString gradient_norm() {
  return QStringLiteral(
      "<b>Gradient norm</b>: L2 norm of the unscaled gradients (g / S) of all weights of "
      "the network, on a log axis. Missing on skipped steps (their gradients held inf/NaN).");
}

QString d_outputs() {
  return QStringLiteral(
      "<b>D(x)</b>: the discriminator's mean probability that real images are real. "
      "<b>D(G(z))</b>: the same for generated images (before D's update). In a healthy "
      "GAN both hover in the middle; D(x) near 1 with D(G(z)) near 0 means D is winning.");
}

QString sample_quality() {
  return QStringLiteral(
      "<b>Sample quality</b> (lower is better), computed every N steps (Settings: Every N steps &gt; Evaluation): "
      "SWD, the sliced Wasserstein distance between generated and real image patches "
      "(&times;10<sup>3</sup>); FD, the Fréchet distance between classifier features of "
      "generated and real images (labelled datasets only).");
}

QString smoothing() {
  return QStringLiteral(
      "Exponential moving average of the curves (0 = raw values, 0.99 = very smooth). "
      "The raw values stay visible, faint.");
}

QString entry(std::string_view name) {
  struct Entry {
    std::string_view name;
    QString (*text)();
  };
  static const Entry kEntries[] = {
      {"loss_scale", loss_scale},
      {"overflow", overflow},
      {"underflow", underflow},
      {"master_weights", master_weights},
      {"tf32", tf32},
      {"bf16_vs_fp16", bf16_vs_fp16},
      {"growth_factor", growth_factor},
      {"backoff_factor", backoff_factor},
      {"growth_interval", growth_interval},
      {"min_max_scale", min_max_scale},
      {"shared_scaler", shared_scaler},
      {"bf16_loss_scaling", bf16_loss_scaling},
      {"cuda_graphs", cuda_graphs},
      {"exponent_histogram", exponent_histogram},
      {"gradient_norm", gradient_norm},
      {"d_outputs", d_outputs},
      {"sample_quality", sample_quality},
      {"smoothing", smoothing},
  };
  for (const Entry& e : kEntries)
    if (e.name == name) return e.text();
  return {};
}

QString html() {
  QString h = QStringLiteral("<h2>Mixed precision, in one page</h2>");
  for (const QString& s : {master_weights(), loss_scale(), overflow(), underflow(), bf16_vs_fp16(), tf32(),
                           growth_factor(), backoff_factor(), growth_interval(), min_max_scale(), shared_scaler(),
                           exponent_histogram(), gradient_norm(), d_outputs(), sample_quality()})
    h += QStringLiteral("<p>%1</p>").arg(s);
  return h;
}

}  // namespace ampgan::ui::glossary
