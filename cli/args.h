// The commands' option lists: options as "--name value" or "--name=value", flags, positional
// arguments, and generated help in sections. Parsing is CLI11's; problems become UsageError
// naming the option.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/error.h"

namespace ampgan::cli {

// A mistake in the command line itself (unknown option, missing value): exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

class Args {
 public:
  Args(std::string command, std::string usage, std::string summary);
  // A "\n" in help starts a continuation line, indented under the first line's text.
  Args& option(const std::string& name, const std::string& meta, const std::string& help);
  Args& flag(const std::string& name, const std::string& help);
  Args& section(const std::string& title);
  Args& note(const std::string& text);  // printed after the options

  // Parses argv[first..argc); "--help" sets help_requested().
  void parse(int argc, char** argv, int first);
  // parse(), then on --help prints the help: false means the command is done (exit 0).
  bool parse_or_help(int argc, char** argv, int first);
  bool help_requested() const { return help_; }
  std::string help() const;

  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& fallback = "") const;
  // A whole number in [lo, hi], checked before any narrowing (4294967298 is not 2); fallback
  // when absent. UsageError naming the option when it is no whole number, Error when out of range.
  long long integer(const std::string& name, long long fallback, long long lo, long long hi) const;
  // The value as a JSON number for set_setting, which checks it against its setting's range
  // (every digit of a 64-bit whole number kept; a fraction or one beyond 64 bits as a double).
  nlohmann::json number(const std::string& name) const;
  double real(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  struct Spec {
    std::string name, meta, help;
    bool is_flag = false, is_section = false;
  };
  const Spec* find(const std::string& name) const;
  std::string command_, usage_, summary_, note_;
  std::vector<Spec> specs_;
  std::vector<std::pair<std::string, std::string>> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

}  // namespace ampgan::cli
