#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "core/common/error.h"

namespace ampgan::cli {

Args::Args(std::string command, std::string usage, std::string summary)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)) {}

Args& Args::option(const std::string& name, const std::string& meta, const std::string& help) {
  specs_.push_back({name, meta, help, false, false});
  return *this;
}

Args& Args::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, true, false});
  return *this;
}

Args& Args::section(const std::string& title) {
  specs_.push_back({"", "", title, false, true});
  return *this;
}

Args& Args::note(const std::string& text) {
  note_ += text;
  return *this;
}

const Args::Spec* Args::find(const std::string& name) const {
  for (const Spec& s : specs_)
    if (!s.is_section && s.name == name) return &s;
  return nullptr;
}

// CLI11 tokenises and matches; the values stay strings here, because every number goes through a
// range check before it is narrowed (set_setting's for the settings, integer()'s for the rest).
void Args::parse(int argc, char** argv, int first) {
  const std::string where = "ampgan " + command_;
  CLI::App app(summary_, command_);
  app.set_help_flag();  // --help is ours: help() prints the sections CLI11 does not know
  app.allow_extras();   // positional arguments and unknown options come back in remaining()
  app.add_flag("-h,--help", help_);
  std::vector<std::pair<const Spec*, CLI::Option*>> bound;
  for (const Spec& s : specs_) {
    if (s.is_section) continue;
    CLI::Option* o =
        s.is_flag ? app.add_flag("--" + s.name)
                  : app.add_option("--" + s.name)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    bound.emplace_back(&s, o);
  }
  std::vector<std::string> args(argv + first, argv + argc);
  for (const std::string& a : args) {  // CLI11 would take "--flag=value" as a value for the flag
    if (a.rfind("--", 0) != 0) continue;
    const auto eq = a.find('=');
    if (eq == std::string::npos) continue;
    const Spec* s = find(a.substr(2, eq - 2));
    if (s && s->is_flag) throw UsageError("--" + s->name + " takes no value", where);
  }
  std::reverse(args.begin(), args.end());  // CLI11 consumes the vector from its back
  try {
    app.parse(args);
  } catch (const CLI::ArgumentMismatch&) {
    // Only the last option can lack its value: every other one takes the word after it.
    const std::string last = argv[argc - 1];
    const Spec* s = last.rfind("--", 0) == 0 ? find(last.substr(2)) : nullptr;
    if (s) throw UsageError("--" + s->name + " needs a value (" + s->meta + ")", where);
    throw UsageError("a value is missing", where, "see '" + where + " --help'");
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what(), where, "see '" + where + " --help'");
  }
  for (const std::string& r : app.remaining()) {
    if (r.rfind("--", 0) == 0 && r != "--") {
      const std::string name = r.substr(2, r.find('=') - 2);
      throw UsageError("unknown option --" + name, where, "see '" + where + " --help'");
    }
    positional_.push_back(r);
  }
  for (const auto& [spec, o] : bound) {
    if (spec->is_flag) {
      if (o->count()) values_.emplace_back(spec->name, "1");
    } else {
      for (const std::string& v : o->results()) values_.emplace_back(spec->name, v);
    }
  }
}

bool Args::parse_or_help(int argc, char** argv, int first) {
  parse(argc, argv, first);
  if (help_) std::fputs(help().c_str(), stdout);
  return !help_;
}

bool Args::has(const std::string& name) const {
  for (const auto& [k, v] : values_)
    if (k == name) return true;
  return false;
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  std::string out = fallback;
  for (const auto& [k, v] : values_)
    if (k == name) out = v;  // the last occurrence wins
  return out;
}

nlohmann::json Args::number(const std::string& name) const {
  const std::string v = str(name);
  const char* p = v.c_str();
  char* end = nullptr;
  if (!v.empty() && !std::isspace(static_cast<unsigned char>(v[0]))) {
    errno = 0;
    if (v[0] == '-') {
      const long long x = std::strtoll(p, &end, 10);
      if (*end == '\0' && errno != ERANGE) return x;
    } else {
      const unsigned long long u = std::strtoull(p, &end, 10);
      if (*end == '\0' && errno != ERANGE) return u;
    }
    // 1e3, 0.5, a whole number beyond 64 bits, or nan and inf, which the setting's range refuses.
    const double d = std::strtod(p, &end);
    if (*end == '\0') return d;
  }
  throw UsageError("--" + name + " expects a number, not '" + v + "'", "ampgan " + command_);
}

long long Args::integer(const std::string& name, long long fallback, long long lo, long long hi) const {
  if (!has(name)) return fallback;
  const nlohmann::json v = number(name);
  const std::string text = str(name);
  if (v.is_number_float() && v.get<double>() != std::floor(v.get<double>()))
    throw UsageError("--" + name + " expects a whole number, not '" + text + "'", "ampgan " + command_);
  const bool below = v.is_number_unsigned()
                         ? lo > 0 && v.get<unsigned long long>() < static_cast<unsigned long long>(lo)
                     : v.is_number_integer() ? v.get<long long>() < lo
                                             : v.get<double>() < double(lo);
  const bool above = v.is_number_unsigned()  ? v.get<unsigned long long>() > static_cast<unsigned long long>(hi)
                     : v.is_number_integer() ? v.get<long long>() > hi
                                             : v.get<double>() > double(hi);
  if (below || above)
    throw Error(text + " is out of range", "--" + name,
                "use a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v.is_number_float() ? static_cast<long long>(v.get<double>()) : v.get<long long>();
}

double Args::real(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string v = str(name);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0')
    throw UsageError("--" + name + " expects a number, not '" + v + "'", "ampgan " + command_);
  return x;
}

std::string Args::help() const {
  std::string h = "Usage: " + usage_ + "\n\n" + summary_ + "\n";
  for (const Spec& s : specs_) {
    if (s.is_section) {
      h += "\n" + s.help + ":\n";
      continue;
    }
    std::string left = "  --" + s.name + (s.meta.empty() ? "" : " " + s.meta);
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    std::string text = s.help;  // continuation lines start under the first line's text
    for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 29))
      text.insert(at + 1, 28, ' ');
    h += left + text + "\n";
  }
  h += "  --help                    this text\n";
  if (!note_.empty()) h += "\n" + note_;
  return h;
}

}  // namespace ampgan::cli
