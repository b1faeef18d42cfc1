// Every setting of a run (RunConfig) as controls, grouped as a person thinks about them: data,
// model, optimiser, precision, loss scaler, device, bookkeeping. The fields are made from the
// settings table's rows (group, label, type, range; ui/settings/setting_fields.h); the dataset
// picker, the precision mode and the device list are built here. Each AMP term carries a tooltip
// from the glossary. While a run is going, only what the engine can change between steps stays
// editable (precision, learning rates, the step target); edits of those are signalled so the
// window can forward them to the worker.
#pragma once

#include <QMap>
#include <QString>
#include <QWidget>

#include <utility>
#include <vector>

#include "core/settings/run_config.h"
#include "core/settings/settings_table.h"

class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QToolButton;

namespace ampgan::ui {

class DatasetPreview;
class WheelGuard;

class ConfigPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ConfigPanel(QWidget* parent = nullptr);

  RunConfig config() const;
  void setConfig(const RunConfig& cfg);  // no edit signals
  void setRunning(bool running);
  Precision precision() const;
  LayerPolicy layerPolicy() const;               // the policy shown: FP32 layers, half blocks, activation clamp
  bool layerInFp32(const QString& layer) const;  // named in FP32 layers
  // Adds the layer to FP32 layers (or takes it out) as if typed there: layerPolicyEdited follows.
  void setLayerInFp32(const QString& layer, bool on);
  void setPrecision(Precision p);  // no edit signal
  // --out of the command line: the next run goes exactly there (once).
  void setOutDir(const QString& dir) { out_dir_ = dir; }
  void clearOutDir() { out_dir_.clear(); }

  // Presets: a JSON object of name -> RunConfig keys (resources/presets.json).
  bool loadPresets(const QString& path);
  QStringList presetNames() const { return presets_.keys(); }
  bool applyPreset(const QString& name);
  // A settings file (JSON with config.json's keys: a run's config.json, the doctor's
  // doctor-config.json, a preset) as a whole configuration, as a preset is applied, but for the
  // device, which stays this machine's (the file may come from another); undoable. Throws Error
  // naming the file: unreadable, not JSON, or a key or value the table refuses.
  void loadSettingsFile(const QString& path);
  void applySettingsFile(nlohmann::json j, const std::string& file);

  // What a new configuration starts from: RunConfig's defaults, lighter without a usable GPU
  // (width 32, batch 32, 1000 steps: a DCGAN of width 64, batch 64 takes minutes per hundred
  // steps on a laptop's CPU). Presets fill in from it, Defaults resets to it.
  RunConfig defaults() const;
  // The current settings as a preset of the user's (kept in the user's settings, listed after
  // the ready-made ones); false: no name, or a ready-made preset's name.
  bool savePreset(const QString& name);
  QStringList userPresetNames() const { return user_presets_; }

  // Undo: what was changed for the user (a model's recipe, a preset, Defaults) is put back, one
  // change at a time. Choosing the previous model again undoes its recipe too.
  bool canUndo() const { return !undo_.empty(); }
  void undo();
  // Every setting back to its default, but where runs go and the device (as a preset keeps them).
  void resetToDefaults();

  // Fields holding a value outside their allowed range, as messages ("Batch: 100000 is outside
  // the allowed range 2 … 65536"); empty when all are fine. Start refuses such settings.
  QStringList rangeProblems() const;

  DatasetPreview* preview() const { return preview_; }
  QString deviceNote() const;
  bool gpuUsable() const { return gpu_usable_; }

 signals:
  void precisionEdited(ampgan::Precision p);
  // FP32 layers, half blocks or the activation clamp edited (switchable mid-run like the precision).
  void layerPolicyEdited(const ampgan::LayerPolicy& policy);  // FP32 layers, half blocks, clamp
  void learningRatesEdited(float lr_g, float lr_d);
  void stepsEdited(qint64 steps);
  void inputRefused(const QString& message);  // a field was set outside its range
  void notice(const QString& message);        // what a change did besides itself (a recipe's fields)

 private:
  void applySettingsJson(nlohmann::json j, const std::string& what, const QString& undo_label);
  QGroupBox* group(PanelGroup g);
  void addCustom(const Setting& s, QFormLayout* f);  // the rows marked PanelWidget::Custom
  void connectFields();
  QWidget* field(const char* key) const;  // the control of a row with PanelWidget::Auto or Pow2
  void fillDevices();
  void datasetChanged();
  void requestPreview();
  void browseDataset();
  QString datasetSpec() const;
  RunConfig configExcept(const Setting* skip) const;  // config(), that row as last shown
  void remember(const QString& what, const RunConfig& before);
  void showChanged(const RunConfig& c);  // setConfig, and the precision controls follow
  void choiceWithRecipe(const Setting* row);

  struct UndoStep {
    RunConfig config;  // the settings before
    QString what;      // a row's key, "preset" or "defaults"
  };
  std::vector<UndoStep> undo_;
  QToolButton* undo_button_ = nullptr;

  QComboBox* preset_ = nullptr;
  // The custom parts: the dataset picker, the precision mode, the device list, the runs folder.
  QComboBox* dataset_ = nullptr;
  QLineEdit* folder_ = nullptr;
  QToolButton* browse_ = nullptr;
  QWidget* folder_row_ = nullptr;
  DatasetPreview* preview_ = nullptr;
  QComboBox* precision_ = nullptr;
  QComboBox* device_ = nullptr;
  QLabel* device_note_ = nullptr;
  QLineEdit* runs_root_ = nullptr;
  QLineEdit* name_ = nullptr;
  // Every other row of the settings table the panel shows, made by ui/settings/setting_fields.h.
  std::vector<std::pair<const Setting*, QWidget*>> fields_;
  QList<QWidget*> locked_while_running_;
  WheelGuard* wheel_guard_ = nullptr;
  void fillPresetBox();
  void chooseAndSavePreset();
  QMap<QString, nlohmann::json> presets_;  // ready-made and the user's
  QStringList user_presets_;               // the user's, by name
  QString out_dir_;
  bool gpu_usable_ = false;
  bool running_ = false;
  RunConfig hidden_;  // settings without a control (kept from setConfig)
};

}  // namespace ampgan::ui
