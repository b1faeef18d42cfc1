// A zip dataset's dataset.json as the zip reader takes it: dataset_tool's layout or an error, and
// labels that, checked against the images they label, never name more classes than there are
// images (above IDX's 256) nor a class outside [0, num_classes).
#include <algorithm>

#include "core/common/error.h"
#include "core/data/preprocess.h"
#include "core/data/zip_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ampgan::data;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto labels = parse_dataset_labels(text, "fuzz input");
    std::vector<std::string> names;
    std::vector<int32_t> values;
    for (const auto& [name, label] : labels) names.push_back(name), values.push_back(label);
    // The honest size bound admits any dataset.json of these labels, written compactly.
    if (dataset_json_max_bytes(names) < 64) __builtin_trap();
    ImageSet set;
    set.count = static_cast<int>(values.size());
    detail::set_labels(set, values, "fuzz input");
    if (values.empty() != set.labels.empty() || set.labels.size() != values.size()) __builtin_trap();
    if (!values.empty() && uint64_t(set.num_classes) > std::max<uint64_t>(values.size(), detail::kMaxSparseClasses))
      __builtin_trap();
    for (int32_t l : set.labels)
      if (l < 0 || l >= set.num_classes) __builtin_trap();
  } catch (const ampgan::Error&) {}
  return 0;
}
