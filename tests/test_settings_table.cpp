// The settings table (core/settings/settings_table.h): every row round-trips through JSON
// (config.json, --config files, presets, the studio's saved settings) and through the
// `ampgan train` options, and the man page documents every row's option. The studio's panel
// half of the round trip is tests/ui/test_settings.cpp, settingsPanelRoundTripsEveryRow.
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/train_options.h"
#include "core/settings/run_config.h"
#include "core/settings/settings_table.h"
#include "test_support.h"

using namespace ampgan;
using ampgan::testing::expect_error;

namespace {

// The value a row reads back after its example was set: FP32 rows hold the example rounded.
nlohmann::json expected_value(const Setting& s) {
  const nlohmann::json ex = setting_example(s);
  if (s.type == SettingType::Real) return nlohmann::json(static_cast<float>(ex.get<double>()));
  return ex;
}

// The keys whose written values differ between a and b.
std::set<std::string> changed_keys(const RunConfig& a, const RunConfig& b) {
  std::set<std::string> out;
  const nlohmann::json ja = a.to_json(), jb = b.to_json();
  for (auto it = ja.begin(); it != ja.end(); ++it)
    if (!jb.contains(it.key()) || jb[it.key()] != it.value()) out.insert(it.key());
  if (a.out_dir != b.out_dir) out.insert("out");
  return out;
}

// What setting row s (to its example) is allowed to change besides itself.
std::set<std::string> expected_changes(const Setting& s) {
  if (std::string(s.key) == "lr") return {"lr_g", "lr_d"};
  return {s.key};
}

// `ampgan train --FLAG EXAMPLE` (or just --FLAG for a switch) parsed as the program does.
RunConfig from_command_line(const Setting& s) {
  std::vector<std::string> words = {"ampgan", "train", std::string("--") + s.flag};
  const nlohmann::json ex = setting_example(s);
  if (s.meta) words.push_back(ex.is_string() ? ex.get<std::string>() : ex.dump());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  cli::Args a = cli::train_args();
  a.parse(static_cast<int>(argv.size()), argv.data(), 2);
  return cli::config_from(a);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST(SettingsTable, RowsAreConsistent) {
  const RunConfig d;
  std::set<std::string> keys, flags;
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.key);
    EXPECT_TRUE(keys.insert(s.key).second) << "duplicate key";
    if (s.flag) {
      EXPECT_TRUE(flags.insert(s.flag).second) << "duplicate option";
      EXPECT_TRUE(s.help && *s.help) << "an option needs its help";
      EXPECT_TRUE(s.section) << "an option needs its --help section";
      EXPECT_EQ(find_setting_by_flag(s.flag), &s);
    }
    EXPECT_EQ(find_setting(s.key), &s);
    ASSERT_TRUE(s.get && s.set);
    ASSERT_TRUE(s.example) << "every row needs an example for the round trips";
    EXPECT_NE(expected_value(s), s.get(d)) << "the example must differ from the default";
    if (s.type == SettingType::Bool && s.flag) EXPECT_FALSE(s.meta) << "Bool options are switches";
    if (s.type == SettingType::Bool && s.flag)
      EXPECT_NE(s.get(d).get<bool>(), s.switch_sets) << "a switch must change the default";
    if (s.type == SettingType::Int) {
      const int64_t v = s.get(d).get<int64_t>();
      EXPECT_TRUE(v >= s.lo && v <= s.hi) << "default " << v << " outside " << s.lo << ".." << s.hi;
      if (s.panel_lo != 0 || s.panel_hi != 0) {
        EXPECT_GE(s.panel_lo, static_cast<double>(s.lo)) << "the panel admits what the engine refuses";
        EXPECT_LE(s.panel_hi, static_cast<double>(s.hi)) << "the panel admits what the engine refuses";
      }
    }
    if (!s.choices.empty()) {
      const nlohmann::json dv = s.get(d);
      const std::string text = dv.is_string() ? dv.get<std::string>() : dv.dump();
      bool found = false;
      for (const SettingChoice& ch : s.choices) found = found || text == ch.value;
      EXPECT_TRUE(found) << "default " << text << " is not one of the choices";
    }
    if (s.panel != PanelGroup::None) EXPECT_TRUE(s.label) << "a panel field needs its label";
  }
  EXPECT_NO_THROW(d.validate());
}

TEST(SettingsTable, EveryRowRoundTripsThroughJson) {
  const RunConfig d;
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.key);
    RunConfig c;
    c.apply_json(nlohmann::json{{s.key, setting_example(s)}}, "test.json");
    EXPECT_EQ(s.get(c), expected_value(s));
    EXPECT_EQ(changed_keys(c, d), expected_changes(s)) << "a row sets its own field only";
    EXPECT_NO_THROW(c.validate()) << "the example is a valid value";
    const nlohmann::json written = c.to_json();
    EXPECT_EQ(written.contains(s.key), s.saved) << "saved says whether config.json (and a checkpoint) records it";
    if (s.saved) {
      const RunConfig back = RunConfig::from_json(nlohmann::json::parse(written.dump()), "config.json");
      EXPECT_EQ(s.get(back), expected_value(s));
      EXPECT_EQ(back.to_json(), written);
    }
  }
}

TEST(SettingsTable, JsonRefusesWrongTypesNamingTheKey) {
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.key);
    RunConfig c;
    // A number where text belongs, text where a number belongs.
    const nlohmann::json wrong =
        s.type == SettingType::Text || s.type == SettingType::Choice || s.type == SettingType::Bool
            ? nlohmann::json(17)
            : nlohmann::json("17");
    expect_error([&] { c.apply_json(nlohmann::json{{s.key, wrong}}, "bad.json"); }, {s.key, "bad.json"});
  }
  expect_error([] { RunConfig::from_json(nlohmann::json{{"widht", 64}}, "typo.json"); }, {"unknown setting 'widht'"});
}

TEST(SettingsTable, EveryRowRoundTripsThroughTheCommandLine) {
  const RunConfig d;
  for (const Setting& s : settings()) {
    if (!s.flag) continue;
    SCOPED_TRACE(s.flag);
    const RunConfig c = from_command_line(s);
    EXPECT_EQ(s.get(c), expected_value(s));
    if (s.chosen) {
      RunConfig recipe;
      s.set(recipe, expected_value(s));
      s.chosen(recipe);
      EXPECT_EQ(c.to_json(), recipe.to_json()) << "the option applies its recipe";
    } else {
      EXPECT_EQ(changed_keys(c, d), expected_changes(s)) << "an option sets its own field only";
    }
  }
}

TEST(SettingsTable, CommandLineOptionsOverrideTheModelsRecipeAndConfigFile) {
  ampgan::testing::TempDir tmp;
  { std::ofstream(tmp / "c.json") << R"({"width": 32, "batch": 8})"; }
  std::vector<std::string> words = {
      "ampgan", "train", "--lr-d=0.0003", "--model", "resnet", "--config", (tmp / "c.json").string(), "--batch", "16"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  cli::Args a = cli::train_args();
  a.parse(static_cast<int>(argv.size()), argv.data(), 2);
  const RunConfig c = cli::config_from(a);
  EXPECT_EQ(c.lr_d, 3e-4f);  // given: not the recipe's 4e-4
  EXPECT_EQ(c.lr_g, 1e-4f);  // the recipe's
  EXPECT_EQ(c.n_dis, 5);
  EXPECT_EQ(c.width, 32);  // the file's
  EXPECT_EQ(c.batch, 16);  // the option over the file
  // Out of range on the command line names the option.
  std::vector<std::string> bad = {"ampgan", "train", "--width", "4294967304"};
  std::vector<char*> bargv;
  for (std::string& w : bad) bargv.push_back(w.data());
  cli::Args b = cli::train_args();
  b.parse(static_cast<int>(bargv.size()), bargv.data(), 2);
  expect_error([&] { cli::config_from(b); }, {"--width", "out of range"});
}

// The man pages stay prose, but name every row's option, and --help lists each under its section.
TEST(SettingsTable, ManPageAndHelpCoverEveryOption) {
  auto man_page = [](const char* name) {
    std::string man = read_text(std::string(AMPGAN_SOURCE_DIR) + "/packaging/man/" + name);
    for (size_t at; (at = man.find("\\-")) != std::string::npos;) man.replace(at, 2, "-");
    return man;
  };
  const std::string man = man_page("ampgan.1"), studio_man = man_page("ampgan-studio.1");
  ASSERT_FALSE(man.empty());
  ASSERT_FALSE(studio_man.empty());
  const std::string help = cli::train_args().help();
  auto has_word = [](const std::string& text, const std::string& word) {
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
      const size_t end = at + word.size();
      const auto part = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-'; };
      if ((at == 0 || !part(text[at - 1])) && (end == text.size() || !part(text[end]))) return true;
    }
    return false;
  };
  for (const Setting& s : settings()) {
    if (!s.flag) continue;
    const std::string option = std::string("--") + s.flag;
    EXPECT_TRUE(has_word(man, option)) << "packaging/man/ampgan.1 does not document " << option;
    // ampgan-studio takes every row's option too (ui/window/app_options.cpp).
    EXPECT_TRUE(has_word(studio_man, option)) << "packaging/man/ampgan-studio.1 does not list " << option;
    EXPECT_TRUE(has_word(help, option)) << "ampgan train --help does not list " << option;
    const size_t section = help.find("\n" + std::string(s.section) + ":\n");
    ASSERT_NE(section, std::string::npos) << s.section;
    const size_t next = help.find(":\n", section + std::string(s.section).size() + 3);
    const size_t pos = help.find("  " + option + " ", section);
    EXPECT_TRUE(pos != std::string::npos && pos < next) << option << " is not under " << s.section;
  }
}

// Presets name settings by their JSON keys: every key is a row, and every preset is valid.
TEST(SettingsTable, PresetsUseTheTablesKeys) {
  const nlohmann::json presets =
      nlohmann::json::parse(read_text(std::string(AMPGAN_SOURCE_DIR) + "/resources/presets.json"));
  ASSERT_GE(presets.size(), 5u);
  for (auto it = presets.begin(); it != presets.end(); ++it) {
    SCOPED_TRACE(it.key());
    nlohmann::json j = it.value();
    j.erase("_description");
    for (auto k = j.begin(); k != j.end(); ++k) EXPECT_TRUE(find_setting(k.key())) << k.key();
    EXPECT_NO_THROW(RunConfig::from_json(j, it.key()).validate());
  }
}
