#include "ui/window/window_settings.h"

#include <QMainWindow>
#include <QSettings>
#include <QSplitter>
#include <QTabWidget>

#include <nlohmann/json.hpp>

#include "core/settings/run_config.h"

#include "ui/plots/plots_panel.h"
#include "ui/settings/config_panel.h"
#include "ui/views/compare_view.h"
#include "ui/views/sample_view.h"

namespace ampgan::ui {

bool restore_window_settings(const WindowParts& w) {
  bool restored_layout = false;
  QSettings s;
  const QString json = s.value(QStringLiteral("config/json")).toString();
  if (!json.isEmpty()) {
    try {
      RunConfig c = RunConfig::from_json(nlohmann::json::parse(json.toStdString()), "saved settings");
      c.out_dir.clear();
      const QString root = s.value(QStringLiteral("config/runs_root")).toString();
      if (!root.isEmpty()) c.runs_root = root.toStdString();
      w.config->setConfig(c);
    } catch (const std::exception&) {
      // Settings of an older version with keys that no longer exist: start from the defaults.
    }
  }
  if (s.contains(QStringLiteral("window/geometry")))
    w.window->restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  if (s.contains(QStringLiteral("window/state")))
    restored_layout = w.window->restoreState(s.value(QStringLiteral("window/state")).toByteArray());
  w.plots->setSmoothing(s.value(QStringLiteral("plots/smoothing"), 0.9).toDouble());
  w.samples->setZoom(s.value(QStringLiteral("samples/zoom"), 0).toInt());
  w.compare->setAmpMode(static_cast<Precision>(s.value(QStringLiteral("compare/amp"), int(Precision::FP16)).toInt()));
  w.compare->setSteps(s.value(QStringLiteral("compare/steps"), 300).toInt());
  w.tabs->setCurrentIndex(s.value(QStringLiteral("window/tab"), 0).toInt());
  if (auto* sp = w.compare->findChild<QSplitter*>(QStringLiteral("compareSplitter")))
    sp->restoreState(s.value(QStringLiteral("compare/splitter")).toByteArray());
  return restored_layout;
}

void save_window_settings(const WindowParts& w) {
  QSettings s;
  RunConfig c = w.config_to_save ? *w.config_to_save : w.config->config();
  c.out_dir.clear();                     // --out is for one run
  const nlohmann::json j = c.to_json();  // a run's config.json keys; the runs folder is separate
  s.setValue(QStringLiteral("config/json"), QString::fromStdString(j.dump()));
  s.setValue(QStringLiteral("config/runs_root"), QString::fromStdString(c.runs_root));
  s.setValue(QStringLiteral("window/geometry"), w.window->saveGeometry());
  s.setValue(QStringLiteral("window/state"), w.window->saveState());
  s.setValue(QStringLiteral("window/tab"), w.tabs->currentIndex());
  s.setValue(QStringLiteral("plots/smoothing"), w.plots->smoothing());
  s.setValue(QStringLiteral("samples/zoom"), w.samples->zoom());
  s.setValue(QStringLiteral("compare/amp"), static_cast<int>(w.compare->ampMode()));
  s.setValue(QStringLiteral("compare/steps"), w.compare->steps());
  if (auto* sp = w.compare->findChild<QSplitter*>(QStringLiteral("compareSplitter")))
    s.setValue(QStringLiteral("compare/splitter"), sp->saveState());
}

}  // namespace ampgan::ui
