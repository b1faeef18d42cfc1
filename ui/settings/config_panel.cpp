#include "ui/settings/config_panel.h"

#include <memory>

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/backend/backend.h"
#include "core/common/error.h"
#include "ui/common/amp_glossary.h"
#include "ui/common/ui_types.h"
#include "ui/settings/dataset_preview.h"
#include "ui/settings/setting_fields.h"
#include "ui/widgets/input_guards.h"

namespace ampgan::ui {

namespace {

const char* const kDatasets[][2] = {{"synthetic", "Synthetic shapes"},
                                    {"fashion-mnist", "Fashion-MNIST"},
                                    {"mnist", "MNIST"},
                                    {"folder", "Image folder or IDX file…"}};

constexpr PanelGroup kGroups[] = {PanelGroup::Data,   PanelGroup::Model,  PanelGroup::Optimiser,  PanelGroup::Precision,
                                  PanelGroup::Scaler, PanelGroup::Device, PanelGroup::Bookkeeping};

}  // namespace

ConfigPanel::ConfigPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  auto* body = new QWidget;
  auto* v = new QVBoxLayout(body);
  v->setContentsMargins(4, 4, 4, 4);
  v->setSpacing(6);
  scroll->setWidget(body);
  outer->addWidget(scroll);

  // ---- preset ----
  {
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Preset")));
    preset_ = new QComboBox;
    preset_->setObjectName(QStringLiteral("preset"));
    preset_->setToolTip(
        tr("Fill in a ready-made configuration (resources/presets.json); every field can be "
           "changed afterwards"));
    connect(preset_, &QComboBox::activated, this, [this](int i) {
      if (i > 0) applyPreset(preset_->itemText(i));
    });
    row->addWidget(preset_, 1);
    undo_button_ = new QToolButton;
    undo_button_->setObjectName(QStringLiteral("settingsUndo"));
    undo_button_->setText(tr("Undo"));
    undo_button_->setToolTip(tr("Put back the settings the last preset, model recipe or Defaults changed"));
    undo_button_->setEnabled(false);
    connect(undo_button_, &QToolButton::clicked, this, &ConfigPanel::undo);
    auto* reset = new QToolButton;
    reset->setObjectName(QStringLiteral("settingsDefaults"));
    reset->setText(tr("Defaults"));
    reset->setToolTip(
        tr("Every setting back to its default (where runs go and the device stay); Undo puts "
           "them back"));
    connect(reset, &QToolButton::clicked, this, &ConfigPanel::resetToDefaults);
    auto* save = new QToolButton;
    save->setObjectName(QStringLiteral("settingsSavePreset"));
    save->setText(tr("Save…"));
    save->setToolTip(tr("Save these settings as a preset of your own, to load them again under Preset"));
    connect(save, &QToolButton::clicked, this, &ConfigPanel::chooseAndSavePreset);
    v->addLayout(row);
    // Their own row: beside the preset box they would hold a narrow dock wider.
    auto* edits = new QHBoxLayout;
    edits->addStretch(1);
    edits->addWidget(undo_button_);
    edits->addWidget(reset);
    edits->addWidget(save);
    locked_while_running_ << undo_button_ << reset;
    v->addLayout(edits);
  }

  for (PanelGroup pg : kGroups) {
    QGroupBox* g = group(pg);
    auto* f = new QFormLayout(g);
    for (const Setting* row : panel_rows(pg)) {
      if (row->widget == PanelWidget::Custom) {
        addCustom(*row, f);
        continue;
      }
      QWidget* w = make_setting_field(*row);
      if (row->type == SettingType::Bool)
        f->addRow(w);  // a check box carries its label
      else
        f->addRow(setting_text(row->label), w);
      fields_.emplace_back(row, w);
      if (!row->live) locked_while_running_ << w;
    }
    if (pg == PanelGroup::Data) {
      preview_ = new DatasetPreview;
      f->addRow(preview_);
    }
    v->addWidget(g);
  }
  connectFields();
  v->addStretch(1);
  locked_while_running_ << preset_;
  // A narrow dock puts a field under its label instead of clipping it.
  for (QFormLayout* f : body->findChildren<QFormLayout*>()) f->setRowWrapPolicy(QFormLayout::WrapLongRows);
  // Combo boxes would otherwise be as wide as their longest entry and push the dock wider.
  for (QComboBox* c : body->findChildren<QComboBox*>()) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(8);
  }
  // Each checked field knows its label, for its out-of-range message.
  for (QFormLayout* f : body->findChildren<QFormLayout*>())
    for (int r = 0; r < f->rowCount(); ++r) {
      QLayoutItem* li = f->itemAt(r, QFormLayout::LabelRole);
      QLayoutItem* fi = f->itemAt(r, QFormLayout::FieldRole);
      auto* l = li ? qobject_cast<QLabel*>(li->widget()) : nullptr;
      if (l && fi && fi->widget()) fi->widget()->setProperty("fieldName", l->text());
    }
  for (RangedSpinBox* b : body->findChildren<RangedSpinBox*>())
    connect(b, &RangedSpinBox::outOfRange, this, &ConfigPanel::inputRefused);
  for (ScientificSpinBox* b : body->findChildren<ScientificSpinBox*>())
    connect(b, &ScientificSpinBox::outOfRange, this, &ConfigPanel::inputRefused);
  // The wheel over an unfocused field scrolls the panel and changes nothing.
  wheel_guard_ = new WheelGuard(scroll, this);
  for (QAbstractSpinBox* b : body->findChildren<QAbstractSpinBox*>()) wheel_guard_->guard(b);
  for (QComboBox* c : body->findChildren<QComboBox*>()) wheel_guard_->guard(c);
  setMinimumWidth(240);
  if (!gpu_usable_) setConfig(defaults());  // the lighter start of a CPU-only machine
  datasetChanged();
}

QStringList ConfigPanel::rangeProblems() const {
  QStringList out;
  // Hidden fields (the image count of a dataset that is not synthetic) do not count.
  for (const RangedSpinBox* b : findChildren<RangedSpinBox*>())
    if (!b->isHidden() && !b->valueInRange())
      out << tr("%1: %2 is outside the allowed range %3")
                 .arg(b->property("fieldName").toString())
                 .arg(b->value())
                 .arg(b->rangeText());
  for (const ScientificSpinBox* b : findChildren<ScientificSpinBox*>())
    if (!b->isHidden() && !b->valueInRange())
      out << tr("%1: %2 is outside the allowed range %3")
                 .arg(b->property("fieldName").toString(), b->textFromValue(b->value()), b->rangeText());
  return out;
}

QGroupBox* ConfigPanel::group(PanelGroup g) {
  switch (g) {
    case PanelGroup::Data:
      return new QGroupBox(tr("Data"));
    case PanelGroup::Model:
      return new QGroupBox(tr("Model"));
    case PanelGroup::Optimiser:
      return new QGroupBox(tr("Optimiser (Adam)"));
    case PanelGroup::Precision:
      return new QGroupBox(tr("Precision"));
    case PanelGroup::Scaler: {
      auto* box = new QGroupBox(tr("Dynamic loss scaler"));
      box->setToolTip(glossary::loss_scale());
      return box;
    }
    case PanelGroup::Device:
      return new QGroupBox(tr("Device"));
    case PanelGroup::Bookkeeping:
    case PanelGroup::None:
      break;
  }
  auto* box = new QGroupBox(tr("Every N steps"));
  box->setToolTip(tr(
      "How often the run writes sample grids and checkpoints, evaluates sample quality and sends gradient histograms"));
  return box;
}

void ConfigPanel::addCustom(const Setting& s, QFormLayout* f) {
  const std::string key = s.key;
  if (key == "dataset") {
    dataset_ = new QComboBox;
    for (const auto& d : kDatasets) dataset_->addItem(tr(d[1]), QString::fromLatin1(d[0]));
    dataset_->setToolTip(
        tr("Synthetic shapes need no files; Fashion-MNIST and MNIST are read from "
           "/usr/share/datasets (Debian's dataset-fashion-mnist) or $AMPGAN_FASHION_MNIST_DIR; "
           "a folder of PNG/JPEG images is centre-cropped and resized."));
    connect(dataset_, &QComboBox::currentIndexChanged, this, &ConfigPanel::datasetChanged);
    f->addRow(setting_text(s.label), dataset_);
    folder_row_ = new QWidget;
    auto* fr = new QHBoxLayout(folder_row_);
    fr->setContentsMargins(0, 0, 0, 0);
    folder_ = new QLineEdit;
    folder_->setPlaceholderText(tr("folder of images, or an IDX file"));
    connect(folder_, &QLineEdit::editingFinished, this, &ConfigPanel::requestPreview);
    browse_ = new QToolButton;
    browse_->setText(QStringLiteral("…"));
    browse_->setToolTip(tr("Choose a folder of images"));
    connect(browse_, &QToolButton::clicked, this, &ConfigPanel::browseDataset);
    fr->addWidget(folder_, 1);
    fr->addWidget(browse_);
    f->addRow(tr("Path"), folder_row_);
    locked_while_running_ << dataset_ << folder_ << browse_;
  } else if (key == "precision") {
    precision_ = new QComboBox;
    for (Precision p : {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16}) {
      precision_->addItem(QString::fromLatin1(precision_label(p)), static_cast<int>(p));
      precision_->setItemData(precision_->count() - 1, glossary::precision_mode(static_cast<int>(p)), Qt::ToolTipRole);
    }
    precision_->setToolTip(
        glossary::master_weights() + QStringLiteral("<br><br>") + glossary::bf16_vs_fp16() +
        tr("<br><br>Can be switched while training (Ctrl+1…4): the switch is marked on every plot."));
    connect(precision_, &QComboBox::currentIndexChanged, this, [this] { emit precisionEdited(precision()); });
    precision_->setObjectName(QString::fromLatin1(s.object_name));
    f->addRow(setting_text(s.label), precision_);
  } else if (key == "backend") {  // the device list holds the backend and the GPU
    device_ = new QComboBox;
    f->addRow(setting_text(s.label), device_);
    device_note_ = new QLabel;
    device_note_->setWordWrap(true);
    device_note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    f->addRow(device_note_);
    fillDevices();
    locked_while_running_ << device_;
  } else if (key == "name") {  // after where runs go, which is the studio's own (not in config.json)
    auto* rr = new QHBoxLayout;
    runs_root_ = new QLineEdit(QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
                                   .filePath(QStringLiteral("AMP GAN Studio/runs")));
    runs_root_->setToolTip(tr("Each run gets a folder here: <date>-<dataset>-<precision>"));
    auto* rb = new QToolButton;
    rb->setText(QStringLiteral("…"));
    connect(rb, &QToolButton::clicked, this, [this] {
      const QString d = QFileDialog::getExistingDirectory(this, tr("Runs folder"), runs_root_->text());
      if (!d.isEmpty()) runs_root_->setText(d);
    });
    rr->addWidget(runs_root_, 1);
    rr->addWidget(rb);
    f->addRow(tr("Runs folder"), rr);
    name_ = new QLineEdit;
    name_->setPlaceholderText(tr("default: <dataset>-<precision>"));
    f->addRow(setting_text(s.label), name_);
    locked_while_running_ << runs_root_ << rb << name_;
  }
}

QWidget* ConfigPanel::field(const char* key) const {
  for (const auto& [s, w] : fields_)
    if (std::string(s->key) == key) return w;
  return nullptr;
}

void ConfigPanel::connectFields() {
  auto* steps = qobject_cast<QSpinBox*>(field("steps"));
  connect(steps, &QSpinBox::valueChanged, this, [this, steps](int s) {
    if (running_ && static_cast<RangedSpinBox*>(steps)->valueInRange()) emit stepsEdited(s);
  });
  auto* lr_g = static_cast<ScientificSpinBox*>(field("lr_g"));
  auto* lr_d = static_cast<ScientificSpinBox*>(field("lr_d"));
  for (QDoubleSpinBox* s : {lr_g, lr_d})
    connect(s, &QDoubleSpinBox::valueChanged, this, [this, lr_g, lr_d] {
      if (running_ && lr_g->valueInRange() && lr_d->valueInRange())
        emit learningRatesEdited(static_cast<float>(lr_g->value()), static_cast<float>(lr_d->value()));
    });
  // The layer policy may change between steps, as the precision may (Session::set_layer_policy).
  connect(qobject_cast<QLineEdit*>(field("fp32_layers")), &QLineEdit::editingFinished, this,
          [this] { emit layerPolicyEdited(layerPolicy()); });
  connect(qobject_cast<QSpinBox*>(field("half_blocks")), &QSpinBox::valueChanged, this,
          [this] { emit layerPolicyEdited(layerPolicy()); });
  connect(qobject_cast<QDoubleSpinBox*>(field("conv_clamp")), &QDoubleSpinBox::valueChanged, this,
          [this] { emit layerPolicyEdited(layerPolicy()); });
  for (const char* key : {"res", "channels"})
    connect(qobject_cast<QComboBox*>(field(key)), &QComboBox::currentIndexChanged, this, &ConfigPanel::requestPreview);
  for (const auto& [s, w] : fields_)
    if (s->chosen)
      connect(qobject_cast<QComboBox*>(w), &QComboBox::currentIndexChanged, this,
              [this, row = s] { choiceWithRecipe(row); });
}

void ConfigPanel::fillDevices() {
  device_->clear();
  device_->addItem(tr("Automatic (GPU if usable)"), QStringLiteral("auto"));
  device_->addItem(tr("CPU"), QStringLiteral("cpu"));
  std::string why;
  std::vector<GpuInfo> gpus;
  try {
    gpus = list_gpus(&why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  gpu_usable_ = false;
  auto* model = qobject_cast<QStandardItemModel*>(device_->model());
  for (const GpuInfo& g : gpus) {
    const QString label = tr("GPU %1: %2 (%3, sm_%4%5)")
                              .arg(g.index)
                              .arg(QString::fromStdString(g.name), format_bytes(static_cast<double>(g.total_memory)))
                              .arg(g.cc_major)
                              .arg(g.cc_minor);
    device_->addItem(label, QStringLiteral("cuda:%1").arg(g.index));
    if (!g.usable) {
      model->item(device_->count() - 1)->setEnabled(false);
      model->item(device_->count() - 1)
          ->setToolTip(tr("not usable by this build (compute capability 7.5 or newer "
                          "is needed)"));
    } else {
      gpu_usable_ = true;
    }
  }
  if (gpu_usable_) {
    device_note_->setText(QString());
    device_note_->setStyleSheet(QString());
  } else {
    QString reason = QString::fromStdString(why);
    if (reason.isEmpty())
      reason = cuda_backend_compiled() ? tr("no usable NVIDIA GPU was found") : tr("this build has no CUDA backend");
    device_note_->setText(tr("No usable GPU: %1. Training runs on the CPU, which is slower but shows the same "
                             "overflows, underflow and loss scaling: it rounds exactly where a GPU does. The "
                             "defaults are lighter here (width 32, batch 32, 1000 steps).")
                              .arg(reason));
    device_note_->setStyleSheet(QStringLiteral("color: #8a5a00"));
  }
  device_->setToolTip(device_note_->text());
}

QString ConfigPanel::deviceNote() const { return device_note_->text(); }

void ConfigPanel::datasetChanged() {
  const QString key = dataset_->currentData().toString();
  folder_row_->setVisible(key == QStringLiteral("folder"));
  QWidget* count = field("synthetic_count");
  count->setVisible(key == QStringLiteral("synthetic"));
  // QFormLayout keeps the label of a hidden field row: hide it with the row's widget.
  if (auto* f = qobject_cast<QFormLayout*>(folder_row_->parentWidget()->layout())) {
    if (QWidget* l = f->labelForField(folder_row_)) l->setVisible(key == QStringLiteral("folder"));
    if (QWidget* l = f->labelForField(count)) l->setVisible(key == QStringLiteral("synthetic"));
  }
  requestPreview();
}

QString ConfigPanel::datasetSpec() const {
  const QString key = dataset_->currentData().toString();
  return key == QStringLiteral("folder") ? folder_->text().trimmed() : key;
}

void ConfigPanel::requestPreview() {
  const QString spec = datasetSpec();
  if (spec.isEmpty()) return;
  preview_->request(spec, qobject_cast<QComboBox*>(field("res"))->currentData().toInt(),
                    qobject_cast<QComboBox*>(field("channels"))->currentData().toInt());
}

void ConfigPanel::browseDataset() {
  const QString d = QFileDialog::getExistingDirectory(this, tr("Folder of training images"), folder_->text());
  if (d.isEmpty()) return;
  folder_->setText(d);
  requestPreview();
}

Precision ConfigPanel::precision() const { return static_cast<Precision>(precision_->currentData().toInt()); }

LayerPolicy ConfigPanel::layerPolicy() const { return config().layer_policy(); }

void ConfigPanel::setPrecision(Precision p) {
  const QSignalBlocker b(precision_);
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(p)));
}

RunConfig ConfigPanel::config() const { return configExcept(nullptr); }

RunConfig ConfigPanel::configExcept(const Setting* skip) const {
  RunConfig c = hidden_;
  c.dataset = datasetSpec().toStdString();
  for (const auto& [s, w] : fields_)
    if (s != skip) read_setting(w, *s, c);
  c.precision = precision();
  // Items hold "auto", "cpu" or "cuda:N" (GPU N).
  const QString dev = device_->currentData().toString();
  c.backend = dev.section(':', 0, 0).toStdString();
  c.gpu = dev.startsWith(QStringLiteral("cuda:")) ? dev.section(':', 1).toInt() : 0;
  c.runs_root = runs_root_->text().trimmed().toStdString();
  c.name = name_->text().trimmed().toStdString();
  c.out_dir = out_dir_.toStdString();
  return c;
}

void ConfigPanel::setConfig(const RunConfig& c) {
  hidden_ = c;
  // Programmatic changes are not user edits: no live-change signals, no recipe applied over a
  // shown config. (The other fields keep their signals: their out-of-range marks follow.)
  std::vector<std::unique_ptr<QSignalBlocker>> quiet;
  for (const auto& [s, w] : fields_)
    if (s->live || s->chosen) quiet.push_back(std::make_unique<QSignalBlocker>(w));
  const QSignalBlocker b4(precision_);
  const QString spec = QString::fromStdString(c.dataset);
  int di = dataset_->findData(spec);
  if (di < 0) {
    di = dataset_->findData(QStringLiteral("folder"));
    folder_->setText(spec);
  }
  {
    const QSignalBlocker b(dataset_);
    dataset_->setCurrentIndex(di);
  }
  for (const auto& [s, w] : fields_) show_setting(w, *s, c);
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(c.precision)));
  const QString dev_key =
      c.backend == "cuda" ? QStringLiteral("cuda:%1").arg(c.gpu) : QString::fromStdString(c.backend);
  int dev = device_->findData(dev_key);
  if (dev < 0 && c.backend == "cuda") {
    // A GPU asked for (--backend cuda, a saved setting) that is not here: keep the request, so
    // Start fails with the engine's own message as the CLI does, instead of quietly training
    // on the CPU under "auto".
    device_->addItem(tr("GPU %1 (not available here)").arg(c.gpu), dev_key);
    dev = device_->count() - 1;
  }
  device_->setCurrentIndex(dev >= 0 ? dev : 0);
  if (!c.runs_root.empty() && c.runs_root != "runs") runs_root_->setText(QString::fromStdString(c.runs_root));
  name_->setText(QString::fromStdString(c.name));
  out_dir_ = QString::fromStdString(c.out_dir);
  datasetChanged();
}

void ConfigPanel::setRunning(bool running) {
  running_ = running;
  for (QWidget* w : locked_while_running_) w->setEnabled(!running);
}

}  // namespace ampgan::ui
