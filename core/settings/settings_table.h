// The one list of a run's settings. Each row says what a setting is (JSON key, type, range),
// how `ampgan train` spells it (option, metavariable, --help text, section), where the studio's
// settings panel shows it (group, label, tooltip, the panel's range), whether it may change
// while a run trains and whether config.json (and so every checkpoint) records it.
// RunConfig's JSON, the CLI's options and --help, the studio's options and its panel all walk
// this table; adding a setting is one row here plus the code that uses the field.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace ampgan {

struct RunConfig;

enum class SettingType : uint8_t {
  Int,       // whole number in [lo, hi] (int64)
  Unsigned,  // whole number in [0, 2^64) (the seed)
  Real,      // FP32 in [min, max] (either end open or not)
  Bool,
  Text,
  Choice,  // one of `choices` (a string in JSON)
};

// The settings panel's groups, in the order the panel shows them.
enum class PanelGroup : uint8_t { None, Data, Model, Optimiser, Precision, Scaler, Device, Bookkeeping };

// How the panel shows a row. Auto: by type (spin box, scientific spin box, check box, combo box
// of `choices`); Pow2: a spin box of exponents of 2 (loss scales); Custom: the panel builds it
// (the dataset picker, the device list, the precision mode with its glossary).
enum class PanelWidget : uint8_t { Auto, Pow2, Custom };

struct SettingChoice {
  const char* value;  // as in JSON ("hinge"); for Int rows the number's text ("64")
  const char* label;  // the panel's text for it ("Hinge")
};

struct Setting {
  const char* key;  // JSON key (config.json, presets, --config files, the studio's saved settings)
  SettingType type;
  // `ampgan train`: --flag META, its help (a "\n" starts an indented line) in `section`.
  const char* flag = nullptr;  // without "--"; nullptr: no option
  const char* meta = nullptr;  // nullptr: a switch without value, which sets a Bool to `switch_sets`
  const char* help = nullptr;
  const char* section = nullptr;  // "Data", "Model and optimiser", "Precision", "Output"
  bool switch_sets = true;
  // Int: the allowed range, refused outside it with `hint`.
  int64_t lo = 0, hi = 0;
  const char* hint = "";
  // Real: the allowed range (an open end excludes its value), refused outside it with `hint`
  // and the option the value came from (--lr, not --lr-g).
  double min = -std::numeric_limits<double>::infinity();
  bool min_open = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;
  std::span<const SettingChoice> choices = {};
  // A valid value other than the default, as JSON text: the round-trip tests set it.
  const char* example = nullptr;
  // The studio's settings panel.
  PanelGroup panel = PanelGroup::None;
  int8_t panel_order = 0;  // the panel shows a group's rows by this, then in the table's order
  PanelWidget widget = PanelWidget::Auto;
  const char* label = nullptr;
  const char* tip = nullptr;  // plain text
  // An AMP term's entry in Help > AMP glossary ("loss_scale"; ui/common/amp_glossary.h): the
  // field's tooltip is that entry, then `tip`, so a term reads the same on a field and in the help.
  const char* glossary = nullptr;
  double panel_lo = 0, panel_hi = 0;  // the field's range (exponents for Pow2); both 0: lo..hi
  double panel_step = 0;              // Real: what the arrows add (0: they double or halve)
  const char* zero_text = nullptr;    // Int or Real: shown at the lowest value ("never", "off")
  const char* object_name = nullptr;  // the widget's objectName, which tests and screenshots find
  // Lifecycle.
  bool live = false;  // may change while a run trains (the engine applies it between steps)
  bool saved = true;  // written to config.json, and so into every checkpoint
  // What choosing this value on the command line or in the panel also sets (the ResNet's
  // recipe); reading JSON never calls it, a saved run keeps its own values.
  void (*chosen)(RunConfig&) = nullptr;
  // The field: get as JSON; set from a value set_setting has checked (type and range).
  nlohmann::json (*get)(const RunConfig&) = nullptr;
  void (*set)(RunConfig&, const nlohmann::json&) = nullptr;

  // "--width", or the key for a setting without an option (for error messages).
  std::string where() const { return flag ? std::string("--") + flag : std::string(key); }
};

std::span<const Setting> settings();
const Setting* find_setting(const std::string& key);           // nullptr: no such setting
const Setting* find_setting_by_flag(const std::string& flag);  // flag without "--"

// The one door for values from outside (JSON files, checkpoints' configs, CLI options, the
// studio's options): sets row s of c from v after checking its type and range before any
// narrowing (booleans, strings or fractions where whole numbers belong, width 4294967304,
// "steps": 1e19, "seed": -1, "lr": -1 throw Error naming `where`). A Bool, Text or Choice of the wrong
// JSON type throws nlohmann::json::type_error, which RunConfig::apply_json words for its file.
void set_setting(RunConfig& c, const Setting& s, const nlohmann::json& v, const std::string& where);

// Every Int and Real row within its range, whoever set the fields (the studio sets them directly).
void check_setting_ranges(const RunConfig& c);

// The parsed value of a row's example.
nlohmann::json setting_example(const Setting& s);

}  // namespace ampgan
