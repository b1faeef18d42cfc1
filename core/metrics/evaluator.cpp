#include "core/metrics/evaluator.h"

#include "core/common/error.h"

namespace ampgan::metrics {
struct Evaluator::Impl {};
std::string describe(const EvalResult&) { return ""; }
nlohmann::json to_json(const EvalResult&) { return nlohmann::json::object(); }
Evaluator::Evaluator(const data::ImageSet&, int, uint64_t) { throw Error("sample-quality evaluation is not built yet", "--eval-every", "use --eval-every 0"); }
Evaluator::~Evaluator() = default;
EvalResult Evaluator::evaluate(Trainer&) { return {}; }
}  // namespace ampgan::metrics
