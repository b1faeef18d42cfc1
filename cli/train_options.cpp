#include "cli/train_options.h"

#include "core/run/config_file.h"
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
    add_setting_option(a, s);
  }
  a.option("config", "FILE",
           "read settings from a JSON file (keys as in a run's config.json);\n"
           "options given here override it")
      .flag("quiet", "print only errors and the final line");
  return a;
}

RunConfig config_from(const Args& a) {
  RunConfig c;
  if (a.has("config")) {
    const std::string path = a.str("config");
    c.apply_json(read_config_file(path), path);
  }
  // In the table's order: --model's recipe comes before the options that override it, --lr
  // before --lr-g and --lr-d. Numbers go through set_setting's range check before narrowing.
  for (const Setting& s : settings()) {
    if (!s.flag || !a.has(s.flag)) continue;
    set_setting(c, s, option_value(a, s), s.where());
    if (s.chosen) s.chosen(c);
  }
  return c;
}

}  // namespace ampgan::cli
