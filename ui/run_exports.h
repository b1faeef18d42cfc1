// Exports of the current run: the sample grid shown, the metrics as CSV and the charts as
// PNG/PDF, with the dialogs that ask where. Every default path comes from the RunController,
// so an export is always proposed inside, and filled from, the one current run.
#pragma once

#include <functional>

#include <QObject>
#include <QString>

class QStatusBar;
class QWidget;

namespace ampgan::ui {

class CompareView;
class EventLog;
class PlotsPanel;
class RunController;
class SampleView;

class RunExports : public QObject {
  Q_OBJECT

 public:
  struct Parts {
    RunController* runs = nullptr;
    SampleView* samples = nullptr;
    PlotsPanel* plots = nullptr;
    CompareView* compare = nullptr;
    EventLog* log = nullptr;
    QStatusBar* status = nullptr;
    QWidget* dialog_parent = nullptr;
    std::function<void(const QString& during, const QString& what, const QString& hint)> report;
    std::function<bool()> busy;  // a run is going: its metrics.csv is not final yet
  };
  RunExports(Parts parts, QObject* parent = nullptr);

  bool exportGrid(const QString& path, int factor);  // the grid shown in the Samples dock
  bool exportMetricsCsv(const QString& path);
  bool exportPlot(const QString& id, const QString& path);

  void chooseAndExportGrid();
  void chooseAndExportCsv();
  void chooseAndExportPlots();

 private:
  Parts p_;
};

}  // namespace ampgan::ui
