// The options of `ampgan train` (and `ampgan compare`, which takes the same): one per row of the
// settings table (core/settings/settings_table.h) under its section, plus --config and --quiet.
#pragma once

#include <string>

#include "cli/args.h"
#include "cli/setting_option.h"
#include "core/settings/run_config.h"

namespace ampgan::cli {

extern const char* const kTrainSummary;

Args train_args(const std::string& command = "train", const std::string& usage = "ampgan train [OPTIONS]",
                const std::string& summary = kTrainSummary);

// The run's settings: the defaults, then --config FILE, then each option given, in the table's
// order (--model's recipe first, so the options after it override it; --lr before --lr-g).
RunConfig config_from(const Args& a);

}  // namespace ampgan::cli
