#include "cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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

void Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const Spec* s = find(name);
    if (!s) throw UsageError("unknown option --" + name, "ampgan " + command_, "see 'ampgan " + command_ + " --help'");
    if (s->is_flag) {
      if (inline_value) throw UsageError("--" + name + " takes no value", "ampgan " + command_);
      values_.emplace_back(name, "1");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) throw UsageError("--" + name + " needs a value (" + s->meta + ")", "ampgan " + command_);
      value = argv[++i];
    }
    values_.emplace_back(name, value);
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

long long Args::integer(const std::string& name, long long fallback) const {
  if (!has(name)) return fallback;
  const std::string v = str(name);
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError("--" + name + " expects a whole number, not '" + v + "'", "ampgan " + command_);
  return x;
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
    if (left.size() < 28) left.resize(28, ' ');
    else left += "\n" + std::string(28, ' ');
    h += left + s.help + "\n";
  }
  h += "  --help                    this text\n";
  if (!note_.empty()) h += "\n" + note_;
  return h;
}

}  // namespace ampgan::cli
