// The AMP terms the window uses, explained once: controls, plot titles and Help > AMP glossary
// all show these texts, so a term means the same thing everywhere.
#pragma once

#include <QString>

namespace ampgan::ui::glossary {

QString loss_scale();
QString overflow();  // overflow / skipped step
QString underflow();
QString master_weights();
QString tf32();
QString bf16_vs_fp16();
QString growth_factor();
QString backoff_factor();
QString growth_interval();
QString min_max_scale();
QString shared_scaler();
QString bf16_loss_scaling();
QString cuda_graphs();
QString precision_mode(int precision);  // ampgan::Precision as int
QString exponent_histogram();
QString gradient_norm();
QString d_outputs();
QString sample_quality();
QString smoothing();

// All of the above as one HTML page (Help > AMP glossary).
QString html();

}  // namespace ampgan::ui::glossary
