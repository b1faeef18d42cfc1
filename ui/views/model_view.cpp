#include "ui/views/model_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ampgan::ui {

ModelView::ModelView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("modelView"));
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  caption_ = new QLabel(tr("Start or resume a run to see its layers, their dtypes and parameters."));
  caption_->setWordWrap(true);
  v->addWidget(caption_);
  table_ = new QTableWidget(0, 6);
  table_->setObjectName(QStringLiteral("modelTable"));
  table_->setHorizontalHeaderLabels(
      {tr("Network"), tr("Layer"), tr("Type"), tr("Block"), tr("Dtype"), tr("Parameters")});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(table_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
    if (const QTableWidgetItem* it = table_->itemAt(at))
      if (const QTableWidgetItem* layer = table_->item(it->row(), 1))
        emit layerMenuRequested(layer->text(), table_->viewport()->mapToGlobal(at));
  });
  v->addWidget(table_, 1);
}

void ModelView::setDescription(const ModelDescription& d) {
  desc_ = d;
  table_->setRowCount(0);
  qint64 params[2] = {0, 0}, fp32[2] = {0, 0};
  for (const ModelLayerRow& r : d.layers) {
    const int i = table_->rowCount();
    table_->insertRow(i);
    const QStringList cells = {
        r.network, r.name, r.type, QString::number(r.block), r.dtype, QString::number(r.parameters)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c >= 3) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (r.fp32_by_policy) item->setBackground(QColor(210, 230, 255));  // kept in FP32 by the policy
      table_->setItem(i, c, item);
    }
    const int n = r.network == QLatin1String("G") ? 0 : 1;
    params[n] += r.parameters;
    if (r.fp32_by_policy) fp32[n] += r.parameters;
  }
  caption_->setText(tr("%1; %2. G: %3 parameters (%4 in FP32 layers by the policy), D: %5 (%6). "
                       "Blue rows stay in FP32 while the rest computes in half precision.")
                        .arg(QString::fromLatin1(precision_label(d.precision)), d.policy)
                        .arg(params[0])
                        .arg(fp32[0])
                        .arg(params[1])
                        .arg(fp32[1]));
}

int ModelView::rowCount() const { return table_->rowCount(); }

QString ModelView::cell(int row, int column) const {
  const QTableWidgetItem* it = table_->item(row, column);
  return it ? it->text() : QString();
}

}  // namespace ampgan::ui
