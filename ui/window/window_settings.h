// What the window remembers between sessions (QSettings): the settings panel's configuration and
// runs folder, the window's geometry and dock layout, the tab, the smoothing, the samples' zoom
// and the comparison's mode, length and splitter.
#pragma once

#include <optional>

#include "core/settings/run_config.h"

class QMainWindow;
class QTabWidget;

namespace ampgan::ui {

class CompareView;
class ConfigPanel;
class PlotsPanel;
class SampleView;

struct WindowParts {
  QMainWindow* window;
  ConfigPanel* config;
  PlotsPanel* plots;
  SampleView* samples;
  CompareView* compare;
  QTabWidget* tabs;
  // Saved instead of what the panel shows (while watching, the panel shows the watched run's
  // settings, which are not the user's).
  std::optional<RunConfig> config_to_save = std::nullopt;
};

// Applies what was saved; true when a saved dock layout was restored.
bool restore_window_settings(const WindowParts& w);
void save_window_settings(const WindowParts& w);

}  // namespace ampgan::ui
