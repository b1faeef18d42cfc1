// A settings file: a JSON object of config.json's keys (a run's config.json, `ampgan train
// --config FILE`, the doctor's doctor-config.json, a preset). Read the one way for the CLI and
// the studio, so that both refuse a bad file in the same words.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ampgan {

// The file's JSON object; Error naming the file when it cannot be read, is not JSON, or is not an
// object. Its keys are checked where they are applied (RunConfig::apply_json).
nlohmann::json read_config_file(const std::string& path);

}  // namespace ampgan
