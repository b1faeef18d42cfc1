// ConfigPanel (ui/settings/config_panel.h): what changes several fields at once (presets, a
// model's recipe, Defaults), its undo, and the FP32 layers that the Model and Layers tabs edit.
#include <QComboBox>
#include <QDateTime>
#include <QFile>
#include <QInputDialog>
#include <QLineEdit>
#include <QSettings>
#include <QToolButton>

#include "core/common/error.h"
#include "core/run/config_file.h"
#include "ui/settings/config_panel.h"
#include "ui/settings/setting_fields.h"

namespace ampgan::ui {

namespace {
const QString kUserPresets = QStringLiteral("presets/user");  // QSettings: a JSON object, name -> config
}  // namespace

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
  // The user's own, after the ready-made ones (one unreadable is skipped, not fatal).
  user_presets_.clear();
  const QSettings settings;
  try {
    const nlohmann::json user =
        nlohmann::json::parse(settings.value(kUserPresets, QStringLiteral("{}")).toString().toStdString());
    for (auto it = user.begin(); it != user.end(); ++it) {
      const QString name = QString::fromStdString(it.key());
      if (!it.value().is_object() || presets_.contains(name)) continue;
      presets_.insert(name, it.value());
      user_presets_ << name;
    }
  } catch (const nlohmann::json::exception&) {}
  fillPresetBox();
  return true;
}

void ConfigPanel::fillPresetBox() {
  preset_->clear();
  preset_->addItem(tr("(choose a preset)"));
  for (int user = 0; user < 2; ++user) {
    if (user && !user_presets_.isEmpty()) preset_->insertSeparator(preset_->count());
    for (auto it = presets_.begin(); it != presets_.end(); ++it) {
      if (user_presets_.contains(it.key()) != (user == 1)) continue;
      preset_->addItem(it.key());
      const auto& desc = it.value().find("_description");
      if (desc != it.value().end() && desc->is_string())
        preset_->setItemData(preset_->count() - 1, QString::fromStdString(desc->get<std::string>()), Qt::ToolTipRole);
    }
  }
}

bool ConfigPanel::savePreset(const QString& typed) {
  const QString name = typed.trimmed();
  if (name.isEmpty() || (presets_.contains(name) && !user_presets_.contains(name))) return false;
  nlohmann::json j = config().to_json();
  for (const char* machine : {"backend", "gpu"}) j.erase(machine);  // this machine's, as presets keep them
  j["_description"] = tr("Your preset, saved %1").arg(QDateTime::currentDateTime().toString(Qt::ISODate)).toStdString();
  QSettings settings;
  nlohmann::json user = nlohmann::json::object();
  try {
    user = nlohmann::json::parse(settings.value(kUserPresets, QStringLiteral("{}")).toString().toStdString());
  } catch (const nlohmann::json::exception&) {}
  user[name.toStdString()] = j;
  settings.setValue(kUserPresets, QString::fromStdString(user.dump()));
  presets_.insert(name, j);
  if (!user_presets_.contains(name)) user_presets_ << name;
  fillPresetBox();
  emit notice(tr("preset “%1” saved: choose it under Preset to load these settings again").arg(name));
  return true;
}

void ConfigPanel::chooseAndSavePreset() {
  bool ok = false;
  const QString name = QInputDialog::getText(this, tr("Save as preset"),
                                             tr("Name of the preset (listed under Preset, after the ready-made ones):"),
                                             QLineEdit::Normal, QString(), &ok);
  if (!ok) return;
  if (!savePreset(name))
    emit inputRefused(name.trimmed().isEmpty() ? tr("a preset needs a name")
                                               : tr("“%1” is a ready-made preset's name: choose another").arg(name));
}

RunConfig ConfigPanel::defaults() const {
  RunConfig c;
  if (!gpu_usable_) {
    c.width = 32;
    c.batch = 32;
    c.steps = 1000;
  }
  return c;
}

bool ConfigPanel::applyPreset(const QString& name) {
  if (!presets_.contains(name)) return false;
  try {
    applySettingsJson(presets_.value(name), ("preset " + name).toStdString(), QStringLiteral("preset"));
  } catch (const Error&) {
    return false;
  }
  return true;
}

// A preset or settings file is a whole configuration: what it names is set, everything else goes
// back to the defaults (no leftovers of the previous settings). Kept: where runs go, the device of
// this machine, and the dataset when it names none ("choose your folder").
void ConfigPanel::applySettingsJson(nlohmann::json j, const std::string& what, const QString& undo_label) {
  if (!j.is_object()) throw Error("the settings are not a JSON object of config.json's keys", what, "");
  j.erase("_description");  // documentation only
  const RunConfig now = config();
  RunConfig c = defaults();
  c.runs_root = now.runs_root;
  c.backend = now.backend;
  c.gpu = now.gpu;
  if (!j.contains("dataset")) c.dataset = now.dataset;
  c.apply_json(j, what);
  c.out_dir = out_dir_.toStdString();
  remember(undo_label, now);
  showChanged(c);
}

void ConfigPanel::loadSettingsFile(const QString& path) {
  const std::string file = path.toStdString();
  applySettingsFile(read_config_file(file), file);
}

void ConfigPanel::applySettingsFile(nlohmann::json j, const std::string& file) {
  if (j.is_object()) {
    j.erase("backend");
    j.erase("gpu");
  }
  applySettingsJson(std::move(j), file, tr("settings file"));
}

// A choice with a recipe (the ResNet's: SNGAN's hinge loss, TTUR, beta1 0, n-dis 5, an EMA of G)
// applies it as `ampgan train --model resnet` does, says which fields it set, and can be undone;
// choosing the previous value again is that undo. The fields stay editable afterwards.
void ConfigPanel::choiceWithRecipe(const Setting* row) {
  const RunConfig before = configExcept(row);
  RunConfig c = config();
  if (!undo_.empty() && undo_.back().what == QString::fromLatin1(row->key) &&
      row->get(undo_.back().config) == row->get(c)) {
    const RunConfig back = undo_.back().config;
    undo_.pop_back();
    undo_button_->setEnabled(canUndo());
    showChanged(back);
    emit notice(tr("%1 back to %2: the settings its other choice set are as they were")
                    .arg(setting_text(row->label), QString::fromStdString(row->get(c).get<std::string>())));
    return;
  }
  row->chosen(c);
  auto text = [](const nlohmann::json& v) {
    return v.is_number_float() ? QString::number(v.get<double>(), 'g', 4)
           : v.is_string()     ? QString::fromStdString(v.get<std::string>())
                               : QString::fromStdString(v.dump());
  };
  QStringList changed;
  for (const Setting& s : settings())
    if (&s != row && s.get && s.get(before) != s.get(c))
      changed << QStringLiteral("%1 %2").arg(s.label ? setting_text(s.label) : QString::fromLatin1(s.key),
                                             text(s.get(c)));
  hidden_ = c;
  for (const auto& [r, f] : fields_) show_setting(f, *r, c);
  if (changed.isEmpty()) return;
  remember(QString::fromLatin1(row->key), before);
  emit notice(tr("%1 %2 also set %3 (its recipe); Undo in the settings panel puts them back")
                  .arg(setting_text(row->label), QString::fromStdString(row->get(c).get<std::string>()),
                       changed.join(QStringLiteral(", "))));
}

void ConfigPanel::remember(const QString& what, const RunConfig& before) {
  undo_.push_back({before, what});
  if (undo_.size() > 50) undo_.erase(undo_.begin());
  undo_button_->setEnabled(true);
}

void ConfigPanel::showChanged(const RunConfig& c) {
  const Precision was = precision();
  setConfig(c);
  // The toolbar and Run > Switch precision show the precision too: they follow.
  if (c.precision != was) emit precisionEdited(c.precision);
}

void ConfigPanel::undo() {
  if (undo_.empty()) return;
  const RunConfig back = undo_.back().config;
  undo_.pop_back();
  undo_button_->setEnabled(canUndo());
  showChanged(back);
  emit notice(tr("settings put back as they were"));
}

void ConfigPanel::resetToDefaults() {
  const RunConfig now = config();
  RunConfig c = defaults();
  c.runs_root = now.runs_root;
  c.backend = now.backend;
  c.gpu = now.gpu;
  c.out_dir = out_dir_.toStdString();
  remember(QStringLiteral("defaults"), now);
  showChanged(c);
  emit notice(tr("every setting back to its default; Undo puts them back"));
}

namespace {
QStringList layer_list(const QLineEdit* field) {
  QStringList out;
  for (const QString& l : field->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) out << l.trimmed();
  return out;
}
}  // namespace

bool ConfigPanel::layerInFp32(const QString& layer) const {
  return layer_list(qobject_cast<QLineEdit*>(field("fp32_layers"))).contains(layer);
}

void ConfigPanel::setLayerInFp32(const QString& layer, bool on) {
  auto* f = qobject_cast<QLineEdit*>(field("fp32_layers"));
  QStringList layers = layer_list(f);
  if (layers.contains(layer) == on) return;
  if (on)
    layers << layer;
  else
    layers.removeAll(layer);
  f->setText(layers.join(QStringLiteral(",")));
  emit f->editingFinished();  // as typed: the policy is applied (mid-run at the next step)
  emit notice(on ? tr("%1 is kept in FP32 (settings panel: FP32 layers %2)").arg(layer, f->text())
                 : tr("%1 computes in half precision again (FP32 layers: %2)")
                       .arg(layer, layers.isEmpty() ? tr("none") : f->text()));
}

}  // namespace ampgan::ui
