#include "ui/settings/precision_actions.h"

#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QSignalBlocker>
#include <QWidget>

#include "ui/common/amp_glossary.h"
#include "ui/settings/config_panel.h"

namespace ampgan::ui {

namespace {
constexpr Precision kModes[] = {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16};
}

PrecisionActions::PrecisionActions(QWidget* owner, ConfigPanel* panel) : QObject(owner), panel_(panel) {
  group_ = new QActionGroup(this);
  group_->setExclusive(true);
  box_ = new QComboBox;
  box_->setObjectName(QStringLiteral("toolbarPrecision"));
  box_->setToolTip(
      tr("Precision; switching it while training takes effect at the next step and is marked on every "
         "plot (Ctrl+1…4)"));
  for (int i = 0; i < 4; ++i) {
    const Precision p = kModes[i];
    const QString label = QString::fromLatin1(precision_label(p));
    auto* a = new QAction(label, group_);
    a->setObjectName(QStringLiteral("actionPrecision%1").arg(i + 1));
    a->setCheckable(true);
    a->setData(static_cast<int>(p));
    const QKeySequence key(Qt::CTRL | (Qt::Key_1 + i));
    a->setShortcut(key);
    const QString tip = tr("Train in %1 from the next step on").arg(label);
    a->setToolTip(QStringLiteral("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText)));
    a->setStatusTip(tip);
    owner->addAction(a);
    box_->addItem(label, static_cast<int>(p));
    box_->setItemData(i, glossary::precision_mode(static_cast<int>(p)), Qt::ToolTipRole);
  }
  group_->actions().first()->setChecked(true);
  connect(group_, &QActionGroup::triggered, this,
          [this](QAction* a) { emit picked(static_cast<Precision>(a->data().toInt())); });
  connect(box_, &QComboBox::activated, this,
          [this](int i) { emit picked(static_cast<Precision>(box_->itemData(i).toInt())); });
  connect(panel_, &ConfigPanel::precisionEdited, this, [this](Precision p) { emit picked(p); });
}

QList<QAction*> PrecisionActions::actions() const { return group_->actions(); }

void PrecisionActions::show(Precision p) {
  shown_ = p;
  for (QAction* a : group_->actions())
    if (a->data().toInt() == static_cast<int>(p)) a->setChecked(true);
  const QSignalBlocker b(box_);
  box_->setCurrentIndex(box_->findData(static_cast<int>(p)));
  if (panel_->precision() != p) panel_->setPrecision(p);
}

void PrecisionActions::setEnabled(bool on) {
  group_->setEnabled(on);
  box_->setEnabled(on);
}

}  // namespace ampgan::ui
