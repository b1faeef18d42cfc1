// The Model view (issue 13): every layer of G and D with the dtype it computes in under the
// current precision and per-layer policy, its block and its parameter count. The worker sends
// a new description when a run starts and whenever the precision or the policy is switched.
#pragma once

#include <QString>
#include <QVector>
#include <QWidget>

#include "core/amp/precision.h"

class QLabel;
class QTableWidget;

namespace ampgan::ui {

struct ModelLayerRow {
  QString network;  // "G", "D"
  QString name;     // "D.2", as in layers.csv and --fp32-layers
  QString type;     // "Conv2d"
  int block = 0;
  qint64 parameters = 0;
  QString dtype;    // "f32", "f16", "bf16"
  bool fp32_by_policy = false;  // kept in FP32 while its network runs in half
};

struct ModelDescription {
  Precision precision = Precision::FP32;
  QVector<ModelLayerRow> layers;
  QString policy;  // the policy in words ("FP32 layers: D.2; half blocks: all; clamp: off")
};

class ModelView : public QWidget {
  Q_OBJECT
 public:
  explicit ModelView(QWidget* parent = nullptr);
  void setDescription(const ModelDescription& d);
  const ModelDescription& description() const { return desc_; }
  int rowCount() const;
  QString cell(int row, int column) const;  // for tests

 private:
  QLabel* caption_ = nullptr;
  QTableWidget* table_ = nullptr;
  ModelDescription desc_;
};

}  // namespace ampgan::ui

Q_DECLARE_METATYPE(ampgan::ui::ModelDescription)
