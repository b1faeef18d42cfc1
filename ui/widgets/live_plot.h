// LivePlot: one QCustomPlot chart of per-step series, built for live training curves.
// - Series grow with addData (never setData) and the chart never replots itself: the owning
//   panel calls refresh() from one timer, so a flood of rows costs one replot per tick at most.
// - "Follow" mode (the default) keeps the whole run in view; zooming or panning (wheel, drag)
//   turns it off, double-click (or Reset view) turns it back on.
// - Hovering shows the step and every series' value there (tracer + tooltip); hovering the title
//   explains what the chart shows.
// - Vertical labelled markers (precision switches) and a context menu: reset view, log axis,
//   save as PNG/PDF, maximise.
// live_plot.cpp: series and follow mode; live_plot_mouse.cpp: hover, crosshair, clicks, zoom;
// live_plot_export.cpp: files, pixmaps and the context menu.
#pragma once

#include <QPointer>
#include <QString>
#include <QVector>

#include <qcustomplot.h>

#include "ui/widgets/plot_ticks.h"  // the charts' tickers and format_value

namespace ampgan::ui {

class LivePlot : public QCustomPlot {
  Q_OBJECT

 public:
  explicit LivePlot(const QString& title, QWidget* parent = nullptr);

  QCPGraph* addSeries(const QString& name, const QColor& color, Qt::PenStyle style = Qt::SolidLine, double width = 1.6,
                      bool right_axis = false, bool in_legend = true);
  // Data goes through these (not the graph directly): they keep each series' key/value range
  // up to date, so following the run costs O(series), not O(points), per replot.
  void append(QCPGraph* g, double key, double value);
  void setSeriesData(QCPGraph* g, const QVector<double>& keys, const QVector<double>& values);
  // Series that clearAllData() keeps (another run drawn over this one's).
  void setKeptOnClear(QCPGraph* g) { kept_ << g; }
  void removeSeries(QCPGraph* g);
  // Points only (no line): overflow markers and the like.
  QCPGraph* addMarkers(const QString& name, const QColor& color, QCPScatterStyle::ScatterShape shape, double size = 7,
                       bool right_axis = false);
  void setAxisLabels(const QString& y, const QString& y2 = {});
  // 0: linear; 2: log axis with "2^k" labels; 10: log axis. Non-positive values are not drawn.
  void setLogY(int base);
  int logBase() const { return log_base_; }
  // The context menu's "Logarithmic y axis" (on: back to `base`, 10 or 2).
  void setLogToggleAllowed(bool allowed, int base = 10) {
    log_toggle_ = allowed;
    log_toggle_base_ = base;
  }
  bool logToggleAllowed() const { return log_toggle_; }
  // x is wall time (seconds) instead of the step: the axis label and hover text say so.
  void setKeyIsTime(bool on);
  bool keyIsTime() const { return key_is_time_; }
  // A vertical line at key (NaN: none), drawn on every chart at the key hovered in one of them
  // when the panel links them (PlotsPanel::setCrosshair).
  void setCrosshair(double key);
  double crosshair() const { return cross_key_; }
  void setTitleToolTip(const QString& html) { title_tip_ = html; }
  // Shown in the middle of the chart while it has no data (e.g. how to turn evaluations on).
  void setEmptyText(const QString& text);
  QString emptyText() const;
  QString title() const;

  // A faint vertical line at x with a small glyph above the data area; the label (e.g.
  // "FP32 -> FP16 AMP") is hover text, so markers close together never cover the curves.
  void addVerticalMarker(double x, const QString& label, const QColor& color);
  int verticalMarkerCount() const { return static_cast<int>(markers_.size()); }
  QString verticalMarkerGlyph(int i) const;
  QPointF verticalMarkerGlyphBottom(int i);  // pixel position of the glyph's lower edge
  QString hoverTextAt(double key) const { return hoverText(key); }
  void clearVerticalMarkers();
  void clearAllData();  // every series and marker

  void markDirty() { dirty_ = true; }
  bool isDirty() const { return dirty_; }
  // Rescales (in follow mode) and queues a replot; called by the panel's timer.
  void refresh();
  // Only the first half: the axes (in follow mode) and the empty-chart text, no replot.
  void rescaleNow();
  void setFollow(bool follow);
  bool follow() const { return follow_; }
  void setKeyLowerBound(double lower) { key_lower_ = lower; }

  // By extension: .pdf vector, anything else PNG, at width x height pixels (0: the widget's
  // size) and dpi (PNG metadata and scale of fonts and lines: 96 is 1:1). The hover marker is
  // hidden while drawing, so an export never shows where the mouse happened to be.
  bool saveTo(const QString& path, int width = 0, int height = 0, int dpi = 96);
  // Draws the chart as it would be exported (no hover marker) into painter's w x h.
  void drawForExport(QCPPainter* painter, int width, int height);
  QPixmap exportPixmap(int width, int height, double scale = 1.0);
  bool hoverVisible() const { return tracer_->visible(); }
  int pointCount(int graph_index) const;
  int pointCount(const QString& series_name) const;
  QCPGraph* series(const QString& name) const;

 signals:
  void maximizeRequested();
  void hovered(double key);  // NaN: the mouse left the data area
  // A left click within a few pixels of a point of a points-only series (an overflow marker).
  void markerClicked(QCPGraph* series, double key);

 protected:
  virtual QString hoverText(double key) const;  // the hover tooltip at this x; empty: none
  virtual void rescaleFollow();
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void leaveEvent(QEvent* e) override;
  void contextMenuEvent(QContextMenuEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void fitLegend();  // one line when it fits the width, else two

  QCPTextElement* title_ = nullptr;
  QCPItemTracer* tracer_ = nullptr;
  QCPItemText* empty_text_ = nullptr;
  bool follow_ = true;

 private:
  struct Marker {
    QCPItemStraightLine* line;
    QCPItemText* glyph;
    QString label;
    double x;
  };
  QString markerTextNear(double key, double tolerance) const;
  struct Range {
    double kmin = 0, kmax = 0, vmin = 0, vmax = 0, pmin = 0, pmax = 0;  // p: positive values only
    bool has = false, has_pos = false;
    void add(double k, double v);
  };
  bool overTitle(const QPoint& p) const;
  static constexpr int kMarkerStrip = 11;  // px above the data area for switch glyphs
  QHash<const QCPGraph*, Range> ranges_;
  QSet<const QCPGraph*> kept_;
  QVector<Marker> markers_;
  bool dirty_ = false;
  int log_base_ = 0;
  bool log_toggle_ = false;
  int log_toggle_base_ = 10;
  bool key_is_time_ = false;
  QCPItemStraightLine* cross_ = nullptr;
  double cross_key_ = NAN;
  double key_lower_ = 0;
  QString title_tip_;
};

}  // namespace ampgan::ui
