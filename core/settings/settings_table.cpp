#include "core/settings/settings_table.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/common/error.h"
#include "core/nn/layer_policy.h"
#include "core/settings/run_config.h"
#include "core/settings/settings_rows.h"
#include "core/train/trainer.h"

namespace ampgan {

namespace {

using namespace setting_rows;

// Every row, in the order of `ampgan train --help`; the panel shows a group's rows in this order too.
const std::vector<Setting>& all_rows() {
  static const std::vector<Setting> rows = [] {
    std::vector<Setting> r;
    for (std::span<const Setting> part : {data_and_model(), precision(), output()})
      r.insert(r.end(), part.begin(), part.end());
    return r;
  }();
  return rows;
}

std::string text_of(const nlohmann::json& v) { return v.dump().substr(0, 40); }

template <typename T>
[[noreturn]] void out_of_range(const std::string& value, const std::string& where, T lo, T hi,
                               const std::string& hint) {
  throw Error(value + " is out of range", where,
              "use a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + "; " + hint);
}

// v as a whole number in [lo, hi] (uint64 for the seed), checked before any conversion: a bool,
// a string, a fraction, or a value beyond the range (even beyond int64, as 1e19) is refused.
template <typename T>
T whole_number(const nlohmann::json& v, const std::string& label, const std::string& where, T lo, T hi,
               const std::string& hint) {
  if (!v.is_number())
    throw Error(label + " must be a whole number, not " + text_of(v), where,
                "write it as a number without quotes, e.g. 64");
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(d == std::floor(d)))
      throw Error(label + " must be a whole number, not " + text_of(v), where, "write it without a fractional part");
    // Compared in long double, where every int64 and uint64 is exact (a double rounds
    // UINT64_MAX up to 2^64, which must not pass).
    const long double ld = d;
    if (!(ld >= static_cast<long double>(lo) && ld <= static_cast<long double>(hi)))
      out_of_range(label + " " + text_of(v), where, lo, hi, hint);
    return static_cast<T>(ld);
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo)))
      out_of_range(label + " " + text_of(v), where, lo, hi, hint);
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < 0 && lo >= 0) out_of_range(label + " " + text_of(v), where, lo, hi, hint);
  if (static_cast<T>(i) < lo || static_cast<T>(i) > hi) out_of_range(label + " " + text_of(v), where, lo, hi, hint);
  return static_cast<T>(i);
}

// "0.0002", "1.18e-38", "3.4e38", "nan": a Real for messages.
std::string number_text(double x, int digits = 3) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  std::string t = buf;
  if (const auto e = t.find("e+"); e != std::string::npos) t.erase(e + 1, 1);
  for (size_t e = t.find('e'); e != std::string::npos && e + 1 < t.size();) {
    const size_t d = t[e + 1] == '-' ? e + 2 : e + 1;
    if (d + 1 < t.size() && t[d] == '0')
      t.erase(d, 1);
    else
      break;
  }
  return t;
}

// "above 0 and at most 1", "from 0 to below 1", "above 1": a Real row's range in words.
std::string real_range(const Setting& s) {
  const bool lo = std::isfinite(s.min), hi = std::isfinite(s.max);
  std::string out;
  if (lo) out += (s.min_open ? "above " : "from ") + number_text(s.min);
  if (lo && hi) out += s.min_open ? " and " : " ";
  if (hi)
    out += (s.max_open ? (lo && !s.min_open ? "to below " : "below ") : (lo && !s.min_open ? "to " : "at most ")) +
           number_text(s.max);
  return out;
}

void check_real_range(const Setting& s, double d, const std::string& where) {
  const bool above_min = d > s.min || (!s.min_open && d == s.min);
  const bool below_max = d < s.max || (!s.max_open && d == s.max);
  if (!above_min || !below_max)  // NaN fails both
    throw Error(std::string(s.key) + " " + number_text(d, 9) + " is out of range", where,
                "use a number " + real_range(s) + (*s.hint ? std::string("; ") + s.hint : std::string()));
}

}  // namespace

std::span<const Setting> settings() { return all_rows(); }

const Setting* find_setting(const std::string& key) {
  for (const Setting& s : all_rows())
    if (key == s.key) return &s;
  return nullptr;
}

const Setting* find_setting_by_flag(const std::string& flag) {
  for (const Setting& s : all_rows())
    if (s.flag && flag == s.flag) return &s;
  return nullptr;
}

void set_setting(RunConfig& c, const Setting& s, const nlohmann::json& v, const std::string& where) {
  const std::string key = s.key;
  switch (s.type) {
    case SettingType::Int:
      s.set(c, whole_number<int64_t>(v, key, where, s.lo, s.hi, s.hint));
      return;
    case SettingType::Unsigned:
      s.set(c, whole_number<uint64_t>(v, key, where, 0, std::numeric_limits<uint64_t>::max(), s.hint));
      return;
    case SettingType::Real: {
      // Beyond FP32 is refused before narrowing (narrowing a larger double is undefined behaviour).
      if (!v.is_number())
        throw Error(key + " must be a number, not " + text_of(v), where, "write it as a number without quotes");
      const double d = v.get<double>();
      if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
        throw Error(key + " " + text_of(v) + " is beyond FP32's range (3.4e38)", where, "use a smaller number");
      check_real_range(s, d, where);
      s.set(c, static_cast<float>(d));
      return;
    }
    case SettingType::Bool:
    case SettingType::Text:
    case SettingType::Choice:
      s.set(c, v);  // the field's own parser (parse_loss, ...) names the option and the choices
      return;
  }
}

void check_setting_ranges(const RunConfig& c) {
  for (const Setting& s : all_rows()) {
    if (s.type == SettingType::Int) {
      const int64_t v = s.get(c).get<int64_t>();
      if (v < s.lo || v > s.hi)
        out_of_range(std::string(s.key) + " " + std::to_string(v), s.where(), s.lo, s.hi, s.hint);
    } else if (s.type == SettingType::Real && s.saved) {  // --lr (not saved) is lr_g and lr_d
      check_real_range(s, s.get(c).get<double>(), s.where());
    } else if (s.type == SettingType::Choice && !s.choices.empty()) {
      const std::string v = s.get(c).get<std::string>();
      bool known = false;
      std::string names;  // "auto, cpu or cuda"
      for (size_t i = 0; i < s.choices.size(); ++i) {
        known |= v == s.choices[i].value;
        names += (i == 0 ? "" : i + 1 == s.choices.size() ? " or " : ", ") + std::string(s.choices[i].value);
      }
      if (!known) throw Error("unknown " + std::string(s.key) + " '" + v + "'", s.where(), "use " + names);
    }
  }
}

nlohmann::json setting_example(const Setting& s) { return nlohmann::json::parse(s.example); }

}  // namespace ampgan
