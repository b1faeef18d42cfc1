#include "core/run/config_file.h"

#include "core/common/error.h"
#include "core/io/atomic_file.h"

namespace ampgan {

nlohmann::json read_config_file(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(io::read_file(path, io::kConfigFileMaxBytes));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the configuration file is not valid JSON: ") + e.what(), path, "fix the JSON syntax");
  }
  if (!j.is_object())
    throw Error("the configuration file is not a JSON object of config.json's keys", path,
                "give a run's config.json, a doctor-config.json or a saved preset");
  return j;
}

}  // namespace ampgan
