// One line of a run's events.jsonl: what happened at which step (overflows, scale changes,
// precision switches, checkpoints, samples, evaluations, warnings, errors, start/stop).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ampgan {

struct RunEvent {
  int64_t step = 0;
  double time_s = 0;
  std::string type;     // start resume stop overflow scale_change precision_switch checkpoint
                        // samples eval info warning error
  std::string network;  // "D", "G" or empty
  std::string message;  // for people: the GUI's event log and the CLI print this
  nlohmann::json data = nlohmann::json::object();  // extra fields, merged into the JSON line

  nlohmann::json to_json() const;
  static RunEvent from_json(const nlohmann::json& j);
};

}  // namespace ampgan
