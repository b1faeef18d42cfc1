// The precision as one exclusive choice: four checkable actions (Ctrl+1..4, Run > Switch
// precision) in one QActionGroup, bound to the toolbar's combo box and the settings panel's
// field, so all three always show the same mode. A pick in any of them is one signal.
#pragma once

#include <QList>
#include <QObject>

#include "core/amp/precision.h"

class QAction;
class QActionGroup;
class QComboBox;
class QWidget;

namespace ampgan::ui {

class ConfigPanel;

class PrecisionActions : public QObject {
  Q_OBJECT

 public:
  // The actions are added to owner (their shortcuts work with the toolbar hidden).
  PrecisionActions(QWidget* owner, ConfigPanel* panel);

  QActionGroup* group() const { return group_; }
  QList<QAction*> actions() const;
  QComboBox* toolbarBox() const { return box_; }
  void show(Precision p);  // actions, combo box and panel, without emitting picked
  Precision shown() const { return shown_; }
  void setEnabled(bool on);

 signals:
  void picked(ampgan::Precision p);  // the user chose p in one of the three

 private:
  QActionGroup* group_ = nullptr;
  QComboBox* box_ = nullptr;
  ConfigPanel* panel_ = nullptr;
  Precision shown_ = Precision::FP32;
};

}  // namespace ampgan::ui
