// ampgan-studio's command line (QCommandLineParser): --start and the run settings it takes, plus
// a few demo/screenshot helpers. Parsing is separate from main() so tests can check that bad
// values produce a clear message instead of a crash.
#pragma once

#include <optional>

#include <QSize>
#include <QString>
#include <QStringList>

#include "core/amp/precision.h"
#include "core/settings/run_config.h"

namespace ampgan::ui {

struct AppOptions {
  bool start = false;    // start training at once
  bool compare = false;  // start a comparison at once (FP32 vs --compare-amp)
  bool doctor = false;   // run the precision doctor at once (on the settings given)
  Precision compare_amp = Precision::FP16;
  // Settings given on the command line, one option per row of the settings table (as for
  // ampgan train), applied over the saved ones: JSON key -> value, checked while parsing.
  nlohmann::json settings = nlohmann::json::object();
  // --config FILE: a settings file (config.json's keys), applied as a whole configuration before
  // the settings above; read and checked while parsing.
  QString config_file;
  nlohmann::json config_json;
  std::optional<int> init_scale_exp;  // --init-scale-exp K: the initial loss scale 2^K
  // Demo helpers: switch precision once at a step; take a screenshot; window size; quit.
  std::optional<int64_t> switch_at;
  std::optional<Precision> switch_to;
  QString screenshot;           // grab the window into this PNG ...
  int64_t screenshot_step = 0;  // ... once training reached this step (or the comparison finished)
  bool quit_after_screenshot = false;
  QSize size;                   // initial window size (empty: saved geometry)
  QString tab;                  // "live", "compare" or "runs": the tab shown first
  bool fresh_settings = false;  // ignore saved settings (demos, screenshots)
  QString watch;                // follow this run folder (another process writes it), read-only
  QString open;                 // open this run folder (File > Open run)
  QString runs;                 // show this runs folder in the Runs tab
  QStringList overlay;          // runs of that folder drawn over the Live charts
  bool group_seeds = false;     // ... with seed groups as mean ± sd

  // Applies the run settings to cfg in the table's order, with --model's recipe (validate() is
  // the caller's business).
  void applyTo(RunConfig& cfg) const;
  // The value given for setting `key`, or nullptr.
  const nlohmann::json* given(const char* key) const;
};

// Parses argv. On failure returns nullopt and sets *error to a message for the user (naming the
// option and what is accepted); on --help/--version, sets *exit_text and returns nullopt.
std::optional<AppOptions> parse_app_options(const QStringList& args, QString* error, QString* exit_text);

}  // namespace ampgan::ui
