// The Model view: every layer of G and D with the dtype it computes in under the current
// precision and per-layer policy, its block and its parameter count. The worker sends a new
// ModelDescription (ui_types.h) when a run starts and whenever the precision or the policy is
// switched.
#pragma once

#include <QWidget>

#include "ui/common/ui_types.h"

class QLabel;
class QTableWidget;

namespace ampgan::ui {

class ModelView : public QWidget {
  Q_OBJECT
 public:
  explicit ModelView(QWidget* parent = nullptr);
  void setDescription(const ModelDescription& d);
  const ModelDescription& description() const { return desc_; }
  int rowCount() const;
  QString cell(int row, int column) const;  // for tests

 signals:
  // Right-click on a layer's row: the window offers to keep it in FP32 (the per-layer policy).
  void layerMenuRequested(const QString& layer, const QPoint& global_pos);

 private:
  QLabel* caption_ = nullptr;
  QTableWidget* table_ = nullptr;
  ModelDescription desc_;
};

}  // namespace ampgan::ui
