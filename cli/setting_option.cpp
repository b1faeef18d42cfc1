#include "cli/setting_option.h"

#include "core/common/error.h"
namespace ampgan::cli {

Args& add_setting_option(Args& a, const Setting& s, const char* help) {
  AMPGAN_CHECK(s.flag, std::string("setting ") + s.key + " has no option");
  if (s.meta) return a.option(s.flag, s.meta, help ? help : s.help);
  return a.flag(s.flag, help ? help : s.help);
}

nlohmann::json option_value(const Args& a, const Setting& s) {
  switch (s.type) {
    case SettingType::Int:
    case SettingType::Unsigned:
    case SettingType::Real:
      return a.number(s.flag);
    case SettingType::Bool:
      return s.switch_sets;  // a switch: --bf16-loss-scaling, --no-cuda-graphs
    case SettingType::Text:
    case SettingType::Choice:
      return a.str(s.flag);
  }
  return nullptr;
}

void add_setting_options(Args& a, std::span<const SharedSetting> shared) {
  for (const SharedSetting& sh : shared) {
    const Setting* s = find_setting(sh.key);
    AMPGAN_CHECK(s, std::string("no setting ") + sh.key);
    add_setting_option(a, *s, sh.help);
  }
}

void apply_setting_options(const Args& a, std::span<const SharedSetting> shared, RunConfig& c) {
  for (const SharedSetting& sh : shared) {
    const Setting* s = find_setting(sh.key);
    AMPGAN_CHECK(s && s->flag, std::string("no setting with an option: ") + sh.key);
    if (a.has(s->flag)) set_setting(c, *s, option_value(a, *s), s->where());
  }
}

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
