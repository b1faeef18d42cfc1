// The AMP terms the window uses, explained once: controls, plot titles and Help > AMP glossary
// all show these texts, so a term means the same thing everywhere.
#pragma once

#include <string_view>

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

// The entry named like its function above ("loss_scale"), as a settings row's `glossary` names
// it; an empty string for a name that is not an entry.
QString entry(std::string_view name);

// All of the above as one HTML page (Help > AMP glossary).
QString html();

}  // namespace ampgan::ui::glossary
