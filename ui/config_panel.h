// Every setting of a run (RunConfig) as controls, grouped as a person thinks about them: data,
// model, optimiser, precision, loss scaler, device, bookkeeping. Each AMP term carries a tooltip
// from the glossary. While a run is going, only what the engine can change between steps stays
// editable (precision, learning rates, the step target); edits of those are signalled so the
// window can forward them to the worker.
#pragma once

#include <QMap>
#include <QString>
#include <QWidget>

#include "core/run/run_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace ampgan::ui {

class DatasetPreview;
class RangedSpinBox;
class ScientificSpinBox;
class WheelGuard;

class ConfigPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ConfigPanel(QWidget* parent = nullptr);

  RunConfig config() const;
  void setConfig(const RunConfig& cfg);  // no edit signals
  void setRunning(bool running);
  Precision precision() const;
  void setPrecision(Precision p);         // no edit signal
  // --out of the command line: the next run goes exactly there (once).
  void setOutDir(const QString& dir) { out_dir_ = dir; }
  void clearOutDir() { out_dir_.clear(); }

  // Presets: a JSON object of name -> RunConfig keys (resources/presets.json).
  bool loadPresets(const QString& path);
  QStringList presetNames() const { return presets_.keys(); }
  bool applyPreset(const QString& name);

  // Fields holding a value outside their allowed range, as messages ("Batch: 100000 is outside
  // the allowed range 2 … 65536"); empty when all are fine. Start refuses such settings.
  QStringList rangeProblems() const;

  DatasetPreview* preview() const { return preview_; }
  QString deviceNote() const;
  bool gpuUsable() const { return gpu_usable_; }

 signals:
  void precisionEdited(ampgan::Precision p);
  // FP32 layers, half blocks or the activation clamp edited (switchable mid-run like the precision).
  void layerPolicyEdited(const ampgan::LayerPolicy& policy);
  void learningRatesEdited(float lr_g, float lr_d);
  void stepsEdited(qint64 steps);
  void inputRefused(const QString& message);  // a field was set outside its range

 private:
  QGroupBox* group(const QString& title);
  void fillDevices();
  void datasetChanged();
  void requestPreview();
  void browseDataset();
  QString datasetSpec() const;

  QComboBox* preset_ = nullptr;
  QComboBox* dataset_ = nullptr;
  QLineEdit* folder_ = nullptr;
  QToolButton* browse_ = nullptr;
  QWidget* folder_row_ = nullptr;
  QSpinBox* synthetic_count_ = nullptr;
  QLabel* synthetic_label_ = nullptr;
  QComboBox* channels_ = nullptr;
  DatasetPreview* preview_ = nullptr;
  QComboBox* res_ = nullptr;
  QSpinBox* width_ = nullptr;
  QSpinBox* batch_ = nullptr;
  RangedSpinBox* steps_ = nullptr;
  QComboBox* loss_ = nullptr;
  QComboBox* model_ = nullptr;
  ScientificSpinBox* lr_g_ = nullptr;
  ScientificSpinBox* lr_d_ = nullptr;
  QDoubleSpinBox* beta1_ = nullptr;
  QDoubleSpinBox* beta2_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* n_dis_ = nullptr;
  QComboBox* precision_ = nullptr;
  QCheckBox* bf16_scaling_ = nullptr;
  QCheckBox* graphs_ = nullptr;
  QComboBox* amp_strategy_ = nullptr;
  QLineEdit* fp32_layers_ = nullptr;
  QSpinBox* half_blocks_ = nullptr;     // -1: every block
  QDoubleSpinBox* conv_clamp_ = nullptr;  // 0: off
  LayerPolicy layerPolicy() const;
  QSpinBox* init_scale_ = nullptr;  // exponents of 2
  QDoubleSpinBox* growth_ = nullptr;
  QDoubleSpinBox* backoff_ = nullptr;
  QSpinBox* interval_ = nullptr;
  QSpinBox* min_scale_ = nullptr;
  QSpinBox* max_scale_ = nullptr;
  QComboBox* scaler_mode_ = nullptr;
  QGroupBox* scaler_group_ = nullptr;
  QComboBox* device_ = nullptr;
  QLabel* device_note_ = nullptr;
  QSpinBox* sample_every_ = nullptr;
  QSpinBox* checkpoint_every_ = nullptr;
  QSpinBox* keep_checkpoints_ = nullptr;
  QSpinBox* eval_every_ = nullptr;
  QSpinBox* eval_samples_ = nullptr;
  QSpinBox* hist_every_ = nullptr;
  QSpinBox* layers_every_ = nullptr;
  QLineEdit* runs_root_ = nullptr;
  QLineEdit* name_ = nullptr;
  QList<QWidget*> locked_while_running_;
  WheelGuard* wheel_guard_ = nullptr;
  QMap<QString, nlohmann::json> presets_;
  QString out_dir_;
  bool gpu_usable_ = false;
  bool running_ = false;
  RunConfig hidden_;  // settings without a control (kept from setConfig)
};

}  // namespace ampgan::ui
