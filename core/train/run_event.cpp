#include "core/train/run_event.h"

namespace ampgan {

nlohmann::json RunEvent::to_json() const {
  nlohmann::json j = data.is_object() ? data : nlohmann::json::object();
  j["step"] = step;
  j["time_s"] = time_s;
  j["type"] = type;
  if (!network.empty()) j["network"] = network;
  j["message"] = message;
  return j;
}

RunEvent RunEvent::from_json(const nlohmann::json& j) {
  RunEvent e;
  e.step = j.value("step", int64_t{0});
  e.time_s = j.value("time_s", 0.0);
  e.type = j.value("type", std::string());
  e.network = j.value("network", std::string());
  e.message = j.value("message", std::string());
  e.data = j;
  for (const char* k : {"step", "time_s", "type", "network", "message"}) e.data.erase(k);
  return e;
}

}  // namespace ampgan
