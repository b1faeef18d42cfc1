// The event log: what happened at which step (start, precision switches, checkpoints,
// evaluations, warnings, errors) plus the GUI's own notes (exports, failures). Overflow and
// loss-scale events come in floods in FP16 (one per network per skipped step), so runs of them
// on nearly consecutive steps are merged into one line that counts them and says where the
// scales went, e.g. "steps 1–3: 5 overflows (D 3, G 2), skipped; S_D 2^16 → 2^13".
#pragma once

#include <vector>

#include <QString>
#include <QWidget>

#include "core/run/run_event.h"

class QComboBox;
class QTreeWidget;
class QTreeWidgetItem;

namespace ampgan::ui {

class EventLog : public QWidget {
  Q_OBJECT

 public:
  explicit EventLog(QWidget* parent = nullptr);

  void clear();
  // prefix: which run, in a comparison ("FP32", "FP16 AMP"); empty for the main run.
  void addEvents(const std::vector<RunEvent>& events, const QString& prefix = {});
  void addEvent(const RunEvent& e, const QString& prefix = {});
  // The GUI's own entries: kind is "error", "warning", "info" or "export".
  void addNote(const QString& kind, const QString& text, int64_t step = -1);

  int rowCount() const;
  QString rowText(int row) const;  // "step | kind | message"
  int overflowEvents() const { return overflow_events_; }

  // A flood is overflows on (nearly) consecutive steps: an event joins the open group when it is
  // at most kGroupWindow steps after the group's last one and kGroupSpan after its first. Rare
  // overflows (a healthy scaler probing its limit every growth interval) keep a line each, so a
  // run's overflows never read as one line for hundreds of steps.
  static constexpr int kGroupWindow = 2;
  static constexpr int kGroupSpan = 200;
  static constexpr int kMaxRows = 5000;

 private:
  struct Group {
    QTreeWidgetItem* item = nullptr;
    QString prefix;
    int64_t first = 0, last = 0;
    int over_d = 0, over_g = 0, grew = 0;
    double from_d = 0, to_d = 0, from_g = 0, to_g = 0;  // 0: unchanged
    double skip_scale = 0;
  };
  QTreeWidgetItem* addRow(int64_t step, double time_s, const QString& kind, const QString& text,
                          const QString& category);
  void updateGroup(Group& g);
  void applyFilter(QTreeWidgetItem* item) const;
  void scrollIfAtEnd(bool was_at_end);
  bool atEnd() const;

  QTreeWidget* tree_ = nullptr;
  QComboBox* filter_ = nullptr;
  Group group_;
  bool group_open_ = false;
  int overflow_events_ = 0;
};

}  // namespace ampgan::ui
