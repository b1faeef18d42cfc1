#include "core/run/run_event.h"

namespace ampgan {

namespace {
constexpr std::pair<EventType, const char*> kNames[] = {
    {EventType::Start, "start"},
    {EventType::Resume, "resume"},
    {EventType::Stop, "stop"},
    {EventType::Overflow, "overflow"},
    {EventType::ScaleChange, "scale_change"},
    {EventType::PrecisionSwitch, "precision_switch"},
    {EventType::PolicySwitch, "policy_switch"},
    {EventType::Checkpoint, "checkpoint"},
    {EventType::Eval, "eval"},
    {EventType::Info, "info"},
    {EventType::Warning, "warning"},
    {EventType::Error, "error"},
};
}  // namespace

const char* event_type_name(EventType t) {
  for (const auto& [type, name] : kNames)
    if (type == t) return name;
  return "unknown";
}

EventType parse_event_type(const std::string& name) {
  for (const auto& [type, n] : kNames)
    if (name == n) return type;
  return EventType::Unknown;
}

nlohmann::json RunEvent::to_json() const {
  nlohmann::json j = data.is_object() ? data : nlohmann::json::object();
  j["step"] = step;
  j["time_s"] = time_s;
  // An unknown type keeps the spelling it was read with (data["type"]).
  if (type != EventType::Unknown || !j.contains("type")) j["type"] = event_type_name(type);
  if (!network.empty()) j["network"] = network;
  j["message"] = message;
  return j;
}

RunEvent RunEvent::from_json(const nlohmann::json& j) {
  RunEvent e;
  e.step = j.value("step", int64_t{0});
  e.time_s = j.value("time_s", 0.0);
  e.type = parse_event_type(j.value("type", std::string()));
  e.network = j.value("network", std::string());
  e.message = j.value("message", std::string());
  e.data = j;
  for (const char* k : {"step", "time_s", "network", "message"}) e.data.erase(k);
  if (e.type != EventType::Unknown) e.data.erase("type");
  return e;
}

}  // namespace ampgan
