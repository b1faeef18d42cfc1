#include "cli/train_options.h"

#include "core/io/atomic_file.h"
#include "core/settings/settings_table.h"

namespace ampgan::cli {

const char* const kTrainSummary =
    "Trains a GAN and writes a run folder: config.json, metrics.csv (one row a step),\n"
    "events.jsonl, samples/step_NNNNNN.png and checkpoints/step_NNNNNN.safetensors.\n"
    "Ctrl-C stops cleanly: metrics are flushed and a checkpoint is written.";

Args train_args(const std::string& command, const std::string& usage, const std::string& summary) {
  Args a(command, usage, summary);
  const char* section = nullptr;
  for (const Setting& s : settings()) {  // the table's rows, in its order, under its sections
    if (!s.flag) continue;
    if (!section || std::string(section) != s.section) a.section(section = s.section);
    if (s.meta) a.option(s.flag, s.meta, s.help);
    else a.flag(s.flag, s.help);
  }
  a.option("config", "FILE", "read settings from a JSON file (keys as in a run's config.json);\n"
                             "options given here override it")
      .flag("quiet", "print only errors and the final line");
  return a;
}

RunConfig config_from(const Args& a) {
  RunConfig c;
  if (a.has("config")) {
    const std::string path = a.str("config");
    try {
      c.apply_json(nlohmann::json::parse(io::read_file(path, io::kConfigFileMaxBytes)), path);
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("the configuration file is not valid JSON: ") + e.what(), path, "fix the JSON syntax");
    }
  }
  // In the table's order: --model's recipe comes before the options that override it, --lr
  // before --lr-g and --lr-d. Numbers go through set_setting's range check before narrowing.
  for (const Setting& s : settings()) {
    if (!s.flag || !a.has(s.flag)) continue;
    nlohmann::json v;
    switch (s.type) {
      case SettingType::Int:
      case SettingType::Unsigned:
      case SettingType::Real: v = a.number(s.flag); break;
      case SettingType::Bool: v = s.switch_sets; break;  // a switch: --bf16-loss-scaling, --no-cuda-graphs
      case SettingType::Text:
      case SettingType::Choice: v = a.str(s.flag); break;
    }
    set_setting(c, s, v, s.where());
    if (s.chosen) s.chosen(c);
  }
  return c;
}

}  // namespace ampgan::cli
