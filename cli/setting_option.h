// One option read as a setting of the settings table (core/settings/settings_table.h): its type
// and range checked as the row checks them, the message naming the option the user gave. For the
// commands other than train that take a setting's value (eval --samples, --seed, bench --res);
// apart from train_options.h so that the GPU bundle's compute-only `ampgan bench` links it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.h"

namespace ampgan::cli {

// Option `option` checked as the setting `key` is, as JSON; fallback when the option is absent.
nlohmann::json setting_value(const Args& a, const std::string& option, const std::string& key,
                             const nlohmann::json& fallback);

}  // namespace ampgan::cli
