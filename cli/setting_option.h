// One option read as a setting of the settings table (core/settings/settings_table.h): its type
// and range checked as the row checks them, the message naming the option the user gave. For the
// commands other than train that take a setting's value (eval --samples, --seed, bench --res);
// apart from train_options.h so that the GPU bundle's compute-only `ampgan bench` links it.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "core/settings/run_config.h"
#include "core/settings/settings_table.h"

namespace ampgan::cli {

// Row s's option as `ampgan train` spells it (flag, metavariable, help); `help` replaces the row's
// words where they do not fit the command (bench's --model sets no recipe).
Args& add_setting_option(Args& a, const Setting& s, const char* help = nullptr);

// The value given for row s's option, as JSON for set_setting (a switch gives its switch_sets).
nlohmann::json option_value(const Args& a, const Setting& s);

// A setting another command shares with train: its row's key, and the command's own help where the
// row's words do not fit it (nullptr: the row's).
struct SharedSetting {
  const char* key;
  const char* help = nullptr;
};

// The options of the rows `shared`, in that order.
void add_setting_options(Args& a, std::span<const SharedSetting> shared);

// The options of the rows `shared` that a holds, set into c through set_setting (checked as the
// rows check them, the message naming the option); no row's `chosen` recipe is applied.
void apply_setting_options(const Args& a, std::span<const SharedSetting> shared, RunConfig& c);

// Option `option` checked as the setting `key` is, as JSON; fallback when the option is absent.
nlohmann::json setting_value(const Args& a, const std::string& option, const std::string& key,
                             const nlohmann::json& fallback);

}  // namespace ampgan::cli
