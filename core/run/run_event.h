// One line of a run's events.jsonl: what happened at which step (overflows, scale changes,
// precision switches, checkpoints, samples, evaluations, warnings, errors, start/stop).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ampgan {

// The kinds of event; events.jsonl spells them as event_type_name gives (its "type" field), and
// core, the CLI and the studio compare these values, never the spellings.
enum class EventType {
  Start,
  Resume,
  Stop,  // the run's life
  Overflow,
  ScaleChange,      // AMP: a skipped step (inf/NaN gradients), the loss scale moved
  PrecisionSwitch,  // the precision changed between steps
  PolicySwitch,     // the per-layer precision policy changed between steps
  Checkpoint,
  Eval,  // what was written or measured
  Info,
  Warning,
  Error,   // for people; a warning with data "alert" is an AMP alert
  Unknown  // a type this version does not know (a newer writer's)
};
const char* event_type_name(EventType t);
EventType parse_event_type(const std::string& name);

struct RunEvent {
  int64_t step = 0;
  double time_s = 0;
  EventType type = EventType::Info;
  std::string network;                             // "D", "G" or empty
  std::string message;                             // for people: the GUI's event log and the CLI print this
  nlohmann::json data = nlohmann::json::object();  // extra fields, merged into the JSON line

  nlohmann::json to_json() const;
  static RunEvent from_json(const nlohmann::json& j);
};

}  // namespace ampgan
