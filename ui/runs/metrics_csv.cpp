#include "ui/runs/metrics_csv.h"

#include <string>

#include "core/common/error.h"
#include "core/io/atomic_file.h"

namespace ampgan::ui {

QString write_metrics_csv(const QString& path, const std::vector<StepMetrics>& rows) {
  std::string out;
  for (const std::string& c : StepMetrics::columns()) out += (out.empty() ? "" : ",") + c;
  out += "\n";
  for (const StepMetrics& m : rows) out += m.csv_row() + "\n";
  try {
    io::write_file_atomic(path.toStdString(), out);
  } catch (const Error& e) {
    return QString::fromStdString(e.what_failed() + " (" + e.subject() + ")");
  }
  return {};
}

}  // namespace ampgan::ui
