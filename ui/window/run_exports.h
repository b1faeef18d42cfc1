// Exports of the current run: the sample grid shown, the metrics as CSV and the charts as
// PNG/PDF, with the dialogs that ask where. Every default path comes from the RunController,
// so an export is always proposed inside, and filled from, the one current run.
#pragma once

#include <functional>
#include <thread>

#include <QObject>
#include <QString>

#include "ui/widgets/plot_export.h"

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
  ~RunExports() override;  // waits for an ONNX export still writing

  bool exportGrid(const QString& path, int factor);  // the grid shown in the Samples dock
  bool exportMetricsCsv(const QString& path);
  // One chart (ids as PlotsPanel's, plus hist_g/hist_d and the Compare tab's) at `size`.
  bool exportPlot(const QString& id, const QString& path, const PlotExportSize& size = {});
  // Every Live chart: kind Pdf (one page each), GridPng (one sheet, 3 per row) or Pngs (a file
  // each into the folder `path`). Returns how many charts were written.
  enum class AllPlots { Pdf, GridPng, Pngs };
  int exportAllPlots(const QString& path, AllPlots kind, const PlotExportSize& size = {});

  // The run's sample grids as a video or animated image (core/run/timelapse.h), written off the
  // GUI thread under a progress dialog whose Stop leaves the file as it was. Returns whether
  // the file was written.
  bool exportTimelapse(const QString& path);

  void chooseAndExportGrid();
  void chooseAndExportCsv();
  void chooseAndExportPlots();
  void chooseAndExportTimelapse();

  // The current run's generator (its newest checkpoint) as an ONNX model (core/run/onnx_export.h):
  // the EMA generator where the run keeps one (what the Samples dock shows), float32. Written on
  // a thread of its own; onnxExported(path, error) says when it is done (error empty on success).
  bool exportOnnx(const QString& path);
  void chooseAndExportOnnx();

 signals:
  void onnxExported(const QString& path, const QString& error);

 private:
  void onnxDone(const QString& path, const QString& what, const QString& hint, const QString& summary);

  Parts p_;
  std::thread onnx_thread_;
  bool onnx_running_ = false;
};

}  // namespace ampgan::ui
