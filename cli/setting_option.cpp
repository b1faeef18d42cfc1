#include "cli/setting_option.h"

#include "core/common/error.h"
#include "core/settings/run_config.h"
#include "core/settings/settings_table.h"

namespace ampgan::cli {

nlohmann::json setting_value(const Args& a, const std::string& option, const std::string& key,
                             const nlohmann::json& fallback) {
  if (!a.has(option)) return fallback;
  RunConfig probe;
  const Setting* s = find_setting(key);
  AMPGAN_CHECK(s, "no setting " + key);
  set_setting(probe, *s, a.number(option), "--" + option);
  return s->get(probe);
}

}  // namespace ampgan::cli
