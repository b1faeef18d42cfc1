// The engine's messages speak to the command line ("use --backend cpu"); the studio says the
// same in its own terms: the settings panel's field for each option, by the settings table's
// rows, and the status bar instead of `ampgan devices`.
#pragma once

#include <QString>

#include "ui/common/ui_types.h"

namespace ampgan::ui {

// "--backend cpu" -> "Train on: cpu (settings panel, Device)"; other text is kept as it is.
QString studio_wording(const QString& cli_text);
UiError studio_wording(UiError e);  // its subject and hint

}  // namespace ampgan::ui
