// Settings JSON (--config, a run's config.json): parsing, the numeric settings table, enums.
#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/settings/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;  // not JSON: the callers report this themselves
  }
  try {
    ampgan::RunConfig c;
    c.apply_json(j, "fuzz.json");
  } catch (const ampgan::Error&) {}
  try {
    (void)ampgan::RunConfig::from_json(j, "config.json");
  } catch (const ampgan::Error&) {}
  return 0;
}
