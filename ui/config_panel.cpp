#include "ui/config_panel.h"

#include <climits>
#include <cmath>

#include <QCheckBox>
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
#include "ui/amp_glossary.h"
#include "ui/dataset_preview.h"
#include "ui/input_guards.h"
#include "ui/ui_types.h"

namespace ampgan::ui {

namespace {

RangedSpinBox* spin(int lo, int hi, int value, const QString& tip = {}, const QString& special = {}) {
  auto* s = new RangedSpinBox(lo, hi, special);
  s->setValue(value);
  s->setToolTip(tip);
  s->setKeyboardTracking(false);  // one change signal per finished edit, not per keystroke
  return s;
}

ScientificSpinBox* dspin(double lo, double hi, double value, double step, const QString& tip = {}) {
  auto* s = new ScientificSpinBox(lo, hi);
  s->setAdditiveStep(step);
  s->setValue(value);
  s->setToolTip(tip);
  s->setKeyboardTracking(false);
  return s;
}

int exponent_of(double v) { return v > 0 ? static_cast<int>(std::lround(std::log2(v))) : 0; }

const char* const kDatasets[][2] = {{"synthetic", "Synthetic shapes"},
                                    {"fashion-mnist", "Fashion-MNIST"},
                                    {"mnist", "MNIST"},
                                    {"folder", "Image folder or IDX file…"}};

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
    preset_->setToolTip(tr("Fill in a ready-made configuration (resources/presets.json); every field can be "
                           "changed afterwards"));
    connect(preset_, &QComboBox::activated, this, [this](int i) {
      if (i > 0) applyPreset(preset_->itemText(i));
    });
    row->addWidget(preset_, 1);
    v->addLayout(row);
  }

  // ---- data ----
  {
    QGroupBox* g = group(tr("Data"));
    auto* f = new QFormLayout(g);
    dataset_ = new QComboBox;
    for (const auto& d : kDatasets) dataset_->addItem(tr(d[1]), QString::fromLatin1(d[0]));
    dataset_->setToolTip(tr("Synthetic shapes need no files; Fashion-MNIST and MNIST are read from "
                            "/usr/share/datasets (Debian's dataset-fashion-mnist) or $AMPGAN_FASHION_MNIST_DIR; "
                            "a folder of PNG/JPEG images is centre-cropped and resized."));
    connect(dataset_, &QComboBox::currentIndexChanged, this, &ConfigPanel::datasetChanged);
    f->addRow(tr("Dataset"), dataset_);
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
    synthetic_count_ = spin(2, 1000000, 10000, tr("How many synthetic images to generate"));
    synthetic_label_ = new QLabel(tr("Images"));
    f->addRow(synthetic_label_, synthetic_count_);
    channels_ = new QComboBox;
    channels_->addItem(tr("As the dataset"), 0);
    channels_->addItem(tr("Grey (1)"), 1);
    channels_->addItem(tr("Colour (3)"), 3);
    channels_->setToolTip(tr("Image channels; by default the dataset's own (1 for MNIST-like files, 3 for colour "
                             "folders)"));
    connect(channels_, &QComboBox::currentIndexChanged, this, &ConfigPanel::requestPreview);
    f->addRow(tr("Channels"), channels_);
    preview_ = new DatasetPreview;
    f->addRow(preview_);
    v->addWidget(g);
    locked_while_running_ << dataset_ << folder_ << browse_ << synthetic_count_ << channels_;
  }

  // ---- model ----
  {
    QGroupBox* g = group(tr("Model"));
    auto* f = new QFormLayout(g);
    model_ = new QComboBox;
    model_->setObjectName(QStringLiteral("model"));
    model_->addItem(tr("DCGAN"), QString::fromLatin1(model_family_name(ModelFamily::DCGAN)));
    model_->addItem(tr("ResNet (SNGAN/BigGAN)"), QString::fromLatin1(model_family_name(ModelFamily::ResNet)));
    model_->setToolTip(tr("DCGAN: transposed convolutions, batch norm. ResNet: residual blocks, spectral norm on "
                          "every discriminator weight (its sigma stays FP32 in every precision); choosing it sets "
                          "SNGAN's recipe: hinge loss, LR G 1e-4, LR D 4e-4, beta1 0, 5 D steps per G step."));
    f->addRow(tr("Model"), model_);
    res_ = new QComboBox;
    for (int r : {32, 64, 128}) res_->addItem(QStringLiteral("%1 × %1").arg(r), r);
    res_->setToolTip(tr("Image resolution. The DCGAN doubles 4×4 up to this size."));
    connect(res_, &QComboBox::currentIndexChanged, this, &ConfigPanel::requestPreview);
    f->addRow(tr("Resolution"), res_);
    width_ = spin(1, 1024, 64, tr("Network width (DCGAN's ngf/ndf). Compute grows with its square; 16-32 trains "
                                  "quickly on a CPU."));
    f->addRow(tr("Width"), width_);
    batch_ = spin(2, 65536, 64, tr("Images per step. At least 2 (batch norm)."));
    batch_->setObjectName(QStringLiteral("batch"));
    f->addRow(tr("Batch"), batch_);
    steps_ = spin(1, INT_MAX, 2000, tr("Training steps (one D and one G update each). Can be changed while "
                                       "training."));
    connect(steps_, &QSpinBox::valueChanged, this, [this](int s) {
      if (running_ && steps_->valueInRange()) emit stepsEdited(s);
    });
    f->addRow(tr("Steps"), steps_);
    loss_ = new QComboBox;
    loss_->addItem(tr("BCE with logits (DCGAN)"), QStringLiteral("bce"));
    loss_->addItem(tr("Hinge"), QStringLiteral("hinge"));
    loss_->setToolTip(tr("GAN loss; computed in FP32 in every precision mode"));
    f->addRow(tr("Loss"), loss_);
    v->addWidget(g);
    locked_while_running_ << model_ << res_ << width_ << batch_ << loss_;
  }

  // ---- optimiser ----
  {
    QGroupBox* g = group(tr("Optimiser (Adam)"));
    auto* f = new QFormLayout(g);
    // Step 0: the arrows double or halve; 5e-5 can be typed.
    lr_g_ = dspin(1e-6, 1, 2e-4, 0, tr("Generator learning rate (e.g. 2e-4); can be changed while training"));
    lr_d_ = dspin(1e-6, 1, 2e-4, 0, tr("Discriminator learning rate (e.g. 2e-4); can be changed while training"));
    for (QDoubleSpinBox* s : {lr_g_, lr_d_})
      connect(s, &QDoubleSpinBox::valueChanged, this, [this] {
        if (running_ && lr_g_->valueInRange() && lr_d_->valueInRange())
          emit learningRatesEdited(static_cast<float>(lr_g_->value()), static_cast<float>(lr_d_->value()));
      });
    lr_g_->setObjectName(QStringLiteral("lrG"));
    lr_d_->setObjectName(QStringLiteral("lrD"));
    f->addRow(tr("LR G"), lr_g_);
    f->addRow(tr("LR D"), lr_d_);
    beta1_ = dspin(0, 0.9999, 0.5, 0.05, tr("Adam β1 (DCGAN: 0.5)"));
    beta2_ = dspin(0, 0.9999, 0.999, 0.001, tr("Adam β2"));
    f->addRow(tr("β1"), beta1_);
    f->addRow(tr("β2"), beta2_);
    seed_ = spin(0, INT_MAX, 0, tr("Seed of the initial weights, the data order and the latents. The same seed "
                                   "gives the same run (bit-identical on the CPU)."));
    f->addRow(tr("Seed"), seed_);
    n_dis_ = spin(1, 100, 1, tr("Discriminator updates per generator update, each on its own real batch "
                                "(DCGAN: 1, SNGAN: 5)"));
    n_dis_->setObjectName(QStringLiteral("nDis"));
    f->addRow(tr("D steps per G step"), n_dis_);
    v->addWidget(g);
    locked_while_running_ << beta1_ << beta2_ << seed_ << n_dis_;
    // Picking the ResNet applies SNGAN's recipe, as `ampgan train --model resnet` does; the
    // fields stay editable afterwards.
    connect(model_, &QComboBox::currentIndexChanged, this, [this] {
      if (model_->currentData().toString() != QLatin1String(model_family_name(ModelFamily::ResNet))) return;
      loss_->setCurrentIndex(loss_->findData(QString::fromLatin1(loss_name(LossKind::Hinge))));
      lr_g_->setValue(1e-4);
      lr_d_->setValue(4e-4);
      beta1_->setValue(0.0);
      n_dis_->setValue(5);
    });
  }

  // ---- precision ----
  {
    QGroupBox* g = group(tr("Precision"));
    auto* f = new QFormLayout(g);
    precision_ = new QComboBox;
    for (Precision p : {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16}) {
      precision_->addItem(QString::fromLatin1(precision_label(p)), static_cast<int>(p));
      precision_->setItemData(precision_->count() - 1, glossary::precision_mode(static_cast<int>(p)), Qt::ToolTipRole);
    }
    precision_->setToolTip(glossary::master_weights() + QStringLiteral("<br><br>") + glossary::bf16_vs_fp16() +
                           tr("<br><br>Can be switched while training (Ctrl+1…4): the switch is marked on every plot."));
    connect(precision_, &QComboBox::currentIndexChanged, this, [this] { emit precisionEdited(precision()); });
    precision_->setObjectName(QStringLiteral("precision"));
    f->addRow(tr("Mode"), precision_);
    bf16_scaling_ = new QCheckBox(tr("Loss scaling in BF16 too"));
    bf16_scaling_->setToolTip(glossary::bf16_loss_scaling());
    f->addRow(bf16_scaling_);
    graphs_ = new QCheckBox(tr("CUDA graphs"));
    graphs_->setChecked(true);
    graphs_->setToolTip(glossary::cuda_graphs());
    f->addRow(graphs_);
    amp_strategy_ = new QComboBox;
    amp_strategy_->setObjectName(QStringLiteral("amp_strategy"));
    for (AmpStrategy a : {AmpStrategy::Auto, AmpStrategy::Scale, AmpStrategy::NanToNum, AmpStrategy::None})
      amp_strategy_->addItem(QString::fromLatin1(amp_strategy_name(a)), static_cast<int>(a));
    amp_strategy_->setToolTip(tr("How half-precision gradients are guarded: auto (FP16 scales, BF16 does not), "
                                 "scale (dynamic loss scaling), nan_to_num (StyleGAN2-ADA: no scaling, NaN → 0, "
                                 "±inf → ±1e5, no step is skipped) or none."));
    f->addRow(tr("AMP strategy"), amp_strategy_);
    fp32_layers_ = new QLineEdit;
    fp32_layers_->setObjectName(QStringLiteral("fp32_layers"));
    fp32_layers_->setPlaceholderText(tr("none, e.g. D.2,D.3"));
    fp32_layers_->setToolTip(tr("Layers kept in FP32 in FP16/BF16 runs, comma-separated, named as in the Layers "
                                "and Model views. Can be changed while training."));
    f->addRow(tr("FP32 layers"), fp32_layers_);
    half_blocks_ = spin(-1, 1024, -1, tr("Half precision only in each network's N highest-resolution blocks, the "
                                         "rest in FP32 (StyleGAN2-ADA uses 4). Can be changed while training."),
                        tr("all"));
    half_blocks_->setObjectName(QStringLiteral("half_blocks"));
    f->addRow(tr("Half blocks"), half_blocks_);
    conv_clamp_ = dspin(0, 65504, 0, 16, tr("Clamp the outputs of half-precision convolutions to ±C "
                                            "(StyleGAN2-ADA: 256); 0 = off. Can be changed while training."));
    conv_clamp_->setObjectName(QStringLiteral("conv_clamp"));
    conv_clamp_->setSpecialValueText(tr("off"));
    f->addRow(tr("Activation clamp"), conv_clamp_);
    connect(fp32_layers_, &QLineEdit::editingFinished, this, [this] { emit layerPolicyEdited(layerPolicy()); });
    connect(half_blocks_, &QSpinBox::valueChanged, this, [this] { emit layerPolicyEdited(layerPolicy()); });
    connect(conv_clamp_, &QDoubleSpinBox::valueChanged, this, [this] { emit layerPolicyEdited(layerPolicy()); });
    v->addWidget(g);
    locked_while_running_ << bf16_scaling_ << graphs_ << amp_strategy_;
  }

  // ---- loss scaler ----
  {
    scaler_group_ = group(tr("Dynamic loss scaler"));
    scaler_group_->setToolTip(glossary::loss_scale());
    auto* f = new QFormLayout(scaler_group_);
    init_scale_ = spin(-24, 30, 16, glossary::loss_scale());
    init_scale_->setPrefix(QStringLiteral("2^"));
    f->addRow(tr("Initial scale"), init_scale_);
    growth_ = dspin(1.01, 1024, 2, 0.5, glossary::growth_factor());
    f->addRow(tr("Growth factor"), growth_);
    backoff_ = dspin(0.01, 0.99, 0.5, 0.05, glossary::backoff_factor());
    f->addRow(tr("Backoff factor"), backoff_);
    interval_ = spin(1, 10000000, 2000, glossary::growth_interval());
    f->addRow(tr("Growth interval"), interval_);
    min_scale_ = spin(-24, 30, 0, glossary::min_max_scale());
    min_scale_->setPrefix(QStringLiteral("2^"));
    max_scale_ = spin(-24, 60, 24, glossary::min_max_scale());
    max_scale_->setPrefix(QStringLiteral("2^"));
    f->addRow(tr("Scale floor"), min_scale_);
    f->addRow(tr("Scale ceiling"), max_scale_);
    scaler_mode_ = new QComboBox;
    scaler_mode_->addItem(tr("One per network (G, D)"), false);
    scaler_mode_->addItem(tr("Shared by G and D"), true);
    scaler_mode_->setToolTip(glossary::shared_scaler());
    f->addRow(tr("Scalers"), scaler_mode_);
    v->addWidget(scaler_group_);
    locked_while_running_ << init_scale_ << growth_ << backoff_ << interval_ << min_scale_ << max_scale_
                          << scaler_mode_;
  }

  // ---- device ----
  {
    QGroupBox* g = group(tr("Device"));
    auto* f = new QFormLayout(g);
    device_ = new QComboBox;
    f->addRow(tr("Train on"), device_);
    device_note_ = new QLabel;
    device_note_->setWordWrap(true);
    device_note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    f->addRow(device_note_);
    fillDevices();
    v->addWidget(g);
    locked_while_running_ << device_;
  }

  // ---- bookkeeping ----
  {
    QGroupBox* g = group(tr("Every N steps"));
    g->setToolTip(tr("How often the run writes sample grids and checkpoints, evaluates sample quality and sends gradient histograms"));
    auto* f = new QFormLayout(g);
    sample_every_ = spin(0, 1000000, 100, tr("Write the 8×8 sample grid every N steps (0: only when the run ends)"),
                         tr("at the end"));
    f->addRow(tr("Samples"), sample_every_);
    checkpoint_every_ = spin(0, 10000000, 1000,
                             tr("Write a checkpoint every N steps (0: only when the run ends; Stop always writes "
                                "one)"),
                             tr("at the end"));
    f->addRow(tr("Checkpoints"), checkpoint_every_);
    keep_checkpoints_ = spin(0, 1000000, 5,
                             tr("Keep the newest N checkpoints, plus one every ten checkpoint intervals; older ones "
                                "are deleted as new ones are written (0: keep all)"),
                             tr("all"));
    f->addRow(tr("Keep checkpoints"), keep_checkpoints_);
    eval_every_ = spin(0, 10000000, 0, glossary::sample_quality() + tr("<br>0: never. Costs time: a few hundred "
                                                                       "steps is a good interval."),
                       tr("never"));
    f->addRow(tr("Evaluation"), eval_every_);
    eval_samples_ = spin(64, 100000, 1024, tr("Generated and real images per evaluation"));
    f->addRow(tr("Eval images"), eval_samples_);
    hist_every_ = spin(0, 100000, 25, glossary::exponent_histogram() + tr("<br>Every N steps (0: never)."),
                       tr("never"));
    f->addRow(tr("Histograms"), hist_every_);
    layers_every_ = spin(0, 10000000, 50, tr("Per-layer gradient statistics (max |g|, inf/NaN, underflow) to "
                                             "layers.csv and the Layers tab every N steps; overflow steps always "
                                             "(0: overflow steps only)."),
                         tr("overflows only"));
    f->addRow(tr("Layers every"), layers_every_);
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
    f->addRow(tr("Run name"), name_);
    v->addWidget(g);
    locked_while_running_ << sample_every_ << checkpoint_every_ << keep_checkpoints_ << eval_every_ << eval_samples_ << hist_every_ << layers_every_
                          << runs_root_ << rb << name_;
  }
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
  datasetChanged();
}

QStringList ConfigPanel::rangeProblems() const {
  QStringList out;
  // Hidden fields (the image count of a dataset that is not synthetic) do not count.
  for (const RangedSpinBox* b : findChildren<RangedSpinBox*>())
    if (!b->isHidden() && !b->valueInRange())
      out << tr("%1: %2 is outside the allowed range %3").arg(b->property("fieldName").toString()).arg(b->value()).arg(b->rangeText());
  for (const ScientificSpinBox* b : findChildren<ScientificSpinBox*>())
    if (!b->isHidden() && !b->valueInRange())
      out << tr("%1: %2 is outside the allowed range %3")
                 .arg(b->property("fieldName").toString(), b->textFromValue(b->value()), b->rangeText());
  return out;
}

QGroupBox* ConfigPanel::group(const QString& title) {
  auto* g = new QGroupBox(title);
  return g;
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
      model->item(device_->count() - 1)->setToolTip(tr("not usable by this build (compute capability 7.5 or newer "
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
      reason = cuda_backend_compiled() ? tr("no usable NVIDIA GPU was found")
                                       : tr("this build has no CUDA backend");
    device_note_->setText(tr("No usable GPU: %1. Training runs on the CPU, which is slower but shows the same "
                             "overflows, underflow and loss scaling: it rounds exactly where a GPU does.")
                              .arg(reason));
    device_note_->setStyleSheet(QStringLiteral("color: #8a5a00"));
  }
  device_->setToolTip(device_note_->text());
}

QString ConfigPanel::deviceNote() const { return device_note_->text(); }

void ConfigPanel::datasetChanged() {
  const QString key = dataset_->currentData().toString();
  folder_row_->setVisible(key == QStringLiteral("folder"));
  synthetic_count_->setVisible(key == QStringLiteral("synthetic"));
  synthetic_label_->setVisible(key == QStringLiteral("synthetic"));
  // QFormLayout keeps the label of a hidden field row: hide it with the row's widget.
  if (auto* f = qobject_cast<QFormLayout*>(folder_row_->parentWidget()->layout()))
    if (QWidget* l = f->labelForField(folder_row_)) l->setVisible(key == QStringLiteral("folder"));
  requestPreview();
}

QString ConfigPanel::datasetSpec() const {
  const QString key = dataset_->currentData().toString();
  return key == QStringLiteral("folder") ? folder_->text().trimmed() : key;
}

void ConfigPanel::requestPreview() {
  const QString spec = datasetSpec();
  if (spec.isEmpty()) return;
  preview_->request(spec, res_->currentData().toInt(), channels_->currentData().toInt());
}

void ConfigPanel::browseDataset() {
  const QString d = QFileDialog::getExistingDirectory(this, tr("Folder of training images"), folder_->text());
  if (d.isEmpty()) return;
  folder_->setText(d);
  requestPreview();
}

Precision ConfigPanel::precision() const { return static_cast<Precision>(precision_->currentData().toInt()); }

LayerPolicy ConfigPanel::layerPolicy() const {
  LayerPolicy p;
  p.fp32_layers = parse_layer_list(fp32_layers_->text().toStdString());
  p.half_blocks = half_blocks_->value();
  p.conv_clamp = static_cast<float>(conv_clamp_->value());
  return p;
}

void ConfigPanel::setPrecision(Precision p) {
  const QSignalBlocker b(precision_);
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(p)));
}

RunConfig ConfigPanel::config() const {
  RunConfig c = hidden_;
  c.dataset = datasetSpec().toStdString();
  c.channels = channels_->currentData().toInt();
  c.synthetic_count = synthetic_count_->value();
  c.res = res_->currentData().toInt();
  c.width = width_->value();
  c.batch = batch_->value();
  c.steps = steps_->value();
  c.model = parse_model_family(model_->currentData().toString().toStdString());
  c.loss = parse_loss(loss_->currentData().toString().toStdString());
  c.lr_g = static_cast<float>(lr_g_->value());
  c.lr_d = static_cast<float>(lr_d_->value());
  c.beta1 = static_cast<float>(beta1_->value());
  c.beta2 = static_cast<float>(beta2_->value());
  c.seed = static_cast<uint64_t>(seed_->value());
  c.n_dis = n_dis_->value();
  c.precision = precision();
  c.bf16_loss_scaling = bf16_scaling_->isChecked();
  c.amp_strategy = static_cast<AmpStrategy>(amp_strategy_->currentData().toInt());
  const LayerPolicy lp = layerPolicy();
  c.fp32_layers = lp.fp32_layers;
  c.half_blocks = lp.half_blocks;
  c.conv_clamp = lp.conv_clamp;
  c.use_graphs = graphs_->isChecked();
  c.scaler.init_scale = std::ldexp(1.0f, init_scale_->value());
  c.scaler.growth_factor = static_cast<float>(growth_->value());
  c.scaler.backoff_factor = static_cast<float>(backoff_->value());
  c.scaler.growth_interval = interval_->value();
  c.scaler.min_scale = std::ldexp(1.0f, min_scale_->value());
  c.scaler.max_scale = std::ldexp(1.0f, max_scale_->value());
  c.shared_scaler = scaler_mode_->currentData().toBool();
  // Items hold "auto", "cpu" or "cuda:N" (GPU N).
  const QString dev = device_->currentData().toString();
  c.backend = dev.section(':', 0, 0).toStdString();
  c.gpu = dev.startsWith(QStringLiteral("cuda:")) ? dev.section(':', 1).toInt() : 0;
  c.sample_every = sample_every_->value();
  c.checkpoint_every = checkpoint_every_->value();
  c.keep_checkpoints = keep_checkpoints_->value();
  c.eval_every = eval_every_->value();
  c.eval_samples = eval_samples_->value();
  c.hist_every = hist_every_->value();
  c.layers_every = layers_every_->value();
  c.runs_root = runs_root_->text().trimmed().toStdString();
  c.name = name_->text().trimmed().toStdString();
  c.out_dir = out_dir_.toStdString();
  return c;
}

void ConfigPanel::setConfig(const RunConfig& c) {
  hidden_ = c;
  // Programmatic changes are not user edits: no live-change signals.
  const QSignalBlocker b1(steps_), b2(lr_g_), b3(lr_d_), b4(precision_), b5(fp32_layers_), b6(half_blocks_),
      b7(conv_clamp_);
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
  channels_->setCurrentIndex(std::max(0, channels_->findData(c.channels)));
  synthetic_count_->setValue(c.synthetic_count);
  res_->setCurrentIndex(std::max(0, res_->findData(c.res)));
  width_->setValue(c.width);
  batch_->setValue(c.batch);
  steps_->setValue(static_cast<int>(std::min<int64_t>(c.steps, INT_MAX)));
  {
    const QSignalBlocker b(model_);  // showing a config must not apply the model's recipe over it
    model_->setCurrentIndex(std::max(0, model_->findData(QString::fromLatin1(model_family_name(c.model)))));
  }
  loss_->setCurrentIndex(std::max(0, loss_->findData(QString::fromLatin1(loss_name(c.loss)))));
  lr_g_->setValue(c.lr_g);
  lr_d_->setValue(c.lr_d);
  beta1_->setValue(c.beta1);
  beta2_->setValue(c.beta2);
  seed_->setValue(static_cast<int>(std::min<uint64_t>(c.seed, INT_MAX)));
  n_dis_->setValue(c.n_dis);
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(c.precision)));
  bf16_scaling_->setChecked(c.bf16_loss_scaling);
  amp_strategy_->setCurrentIndex(amp_strategy_->findData(static_cast<int>(c.amp_strategy)));
  fp32_layers_->setText(QString::fromStdString(join_layer_list(c.fp32_layers)));
  half_blocks_->setValue(c.half_blocks);
  conv_clamp_->setValue(c.conv_clamp);
  graphs_->setChecked(c.use_graphs);
  init_scale_->setValue(exponent_of(c.scaler.init_scale));
  growth_->setValue(c.scaler.growth_factor);
  backoff_->setValue(c.scaler.backoff_factor);
  interval_->setValue(c.scaler.growth_interval);
  min_scale_->setValue(exponent_of(c.scaler.min_scale));
  max_scale_->setValue(exponent_of(c.scaler.max_scale));
  scaler_mode_->setCurrentIndex(c.shared_scaler ? 1 : 0);
  const QString dev_key = c.backend == "cuda" ? QStringLiteral("cuda:%1").arg(c.gpu) : QString::fromStdString(c.backend);
  int dev = device_->findData(dev_key);
  if (dev < 0 && c.backend == "cuda") {
    // A GPU asked for (--backend cuda, a saved setting) that is not here: keep the request, so
    // Start fails with the engine's own message as the CLI does, instead of quietly training
    // on the CPU under "auto".
    device_->addItem(tr("GPU %1 (not available here)").arg(c.gpu), dev_key);
    dev = device_->count() - 1;
  }
  device_->setCurrentIndex(dev >= 0 ? dev : 0);
  sample_every_->setValue(c.sample_every);
  checkpoint_every_->setValue(c.checkpoint_every);
  keep_checkpoints_->setValue(c.keep_checkpoints);
  eval_every_->setValue(c.eval_every);
  eval_samples_->setValue(c.eval_samples);
  hist_every_->setValue(c.hist_every);
  layers_every_->setValue(c.layers_every);
  if (!c.runs_root.empty() && c.runs_root != "runs") runs_root_->setText(QString::fromStdString(c.runs_root));
  name_->setText(QString::fromStdString(c.name));
  out_dir_ = QString::fromStdString(c.out_dir);
  datasetChanged();
}

void ConfigPanel::setRunning(bool running) {
  running_ = running;
  for (QWidget* w : locked_while_running_) w->setEnabled(!running);
}

bool ConfigPanel::loadPresets(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return false;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f.readAll().toStdString());
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  if (!j.is_object()) return false;
  presets_.clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_object()) continue;
    presets_.insert(QString::fromStdString(it.key()), it.value());
  }
  preset_->clear();
  preset_->addItem(tr("(choose a preset)"));
  for (auto it = presets_.begin(); it != presets_.end(); ++it) {
    preset_->addItem(it.key());
    const auto& desc = it.value().find("_description");
    if (desc != it.value().end() && desc->is_string())
      preset_->setItemData(preset_->count() - 1, QString::fromStdString(desc->get<std::string>()), Qt::ToolTipRole);
  }
  return true;
}

bool ConfigPanel::applyPreset(const QString& name) {
  if (!presets_.contains(name)) return false;
  nlohmann::json j = presets_.value(name);
  j.erase("_description");  // documentation only
  // A preset is a whole configuration: what it names is set, everything else goes back to the
  // defaults (no leftovers of the previous settings). Kept: where runs go, the device of this
  // machine, and the dataset when the preset names none ("choose your folder").
  const RunConfig now = config();
  RunConfig c;
  c.runs_root = now.runs_root;
  c.backend = now.backend;
  c.gpu = now.gpu;
  if (!j.contains("dataset")) c.dataset = now.dataset;
  try {
    c.apply_json(j, ("preset " + name).toStdString());
  } catch (const Error&) {
    return false;
  }
  c.out_dir = out_dir_.toStdString();
  setConfig(c);
  return true;
}

}  // namespace ampgan::ui
