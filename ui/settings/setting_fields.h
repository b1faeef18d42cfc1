// The settings panel's fields, made from the rows of the settings table
// (core/settings/settings_table.h): a control per row by its type, range and choices, with the input
// guards of ui/widgets/input_guards.h (a typed 5e-5 is kept, a value out of range is marked and
// reported, never capped), shown from a RunConfig and read back into one.
#pragma once

#include <vector>

#include <QString>

#include "core/settings/run_config.h"
#include "core/settings/settings_table.h"

class QWidget;

namespace ampgan::ui {

// A row's text (label, tooltip, a choice's label), translated in the panel's context.
QString setting_text(const char* text);
// The glossary's explanation where it has one (the AMP terms), else the row's tooltip.
QString setting_tip(const Setting& s);

// The rows the panel shows in group g, in the panel's order.
std::vector<const Setting*> panel_rows(PanelGroup g);

// A control for row s (PanelWidget::Auto or Pow2), named s.object_name (else the key), showing
// the default: a spin box (Int, Unsigned; exponents of 2 for Pow2), a scientific spin box (Real),
// a check box carrying its label (Bool), a combo box (a row with choices), a line edit (Text).
QWidget* make_setting_field(const Setting& s);
void show_setting(QWidget* field, const Setting& s, const RunConfig& c);
void read_setting(const QWidget* field, const Setting& s, RunConfig& c);

}  // namespace ampgan::ui
