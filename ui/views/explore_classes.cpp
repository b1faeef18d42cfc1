// The Explore tab's class picker (ExploreView, ui/views/explore_view.h): a class-conditional
// generator's images of one class, of the classes in turn, or of every class (the seeds again
// for each, a grid row per class, as `ampgan sample --class all` lays them out).
#include <algorithm>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>

#include "ui/views/explore_view.h"
#include "ui/widgets/input_guards.h"

namespace ampgan::ui {

void ExploreView::buildClassPicker(QHBoxLayout* row, WheelGuard* guard) {
  class_label_ = new QLabel(tr("Class"));
  row->addWidget(class_label_);
  class_ = new QComboBox;
  class_->setObjectName(QStringLiteral("exploreClass"));
  class_->setToolTip(
      tr("A class-conditional run's class: one for every image, the classes in turn, or every class "
         "(the seeds again for each, a row per class; as ampgan sample --class)"));
  class_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  guard->guard(class_);
  row->addWidget(class_);
  classes_ = -1;  // so that the call below fills and hides the picker
  setClasses(0, {});
}

void ExploreView::setClasses(int classes, const QStringList& names) {
  if (classes == classes_ && names == class_names_) return;
  classes_ = classes;
  class_names_ = names;
  class_->clear();
  class_->addItem(tr("In turn"), ExploreRequest::kClassesInTurn);
  class_->addItem(tr("Every class"), ExploreRequest::kEveryClass);
  for (int c = 0; c < classes; ++c) class_->addItem(className(c), c);
  class_->setVisible(classes > 0);
  class_label_->setVisible(classes > 0);
}

void ExploreView::setClassChoice(int choice) {
  const int i = class_->findData(choice);
  if (i >= 0) class_->setCurrentIndex(i);
}

int ExploreView::classChoice() const {
  return classes_ > 0 ? class_->currentData().toInt() : ExploreRequest::kClassesInTurn;
}

QString ExploreView::className(int c, bool numbered) const {
  if (c >= class_names_.size()) return tr("class %1").arg(c);
  return numbered ? QStringLiteral("%1 %2").arg(c).arg(class_names_[c]) : class_names_[c];
}

int ExploreView::classAt(int i) const {
  return grid_ && !grid_->classes.empty() ? grid_->classes.at(static_cast<size_t>(i)) : -1;
}

int ExploreView::walkClass() const {
  // A walk keeps one class: the chosen one, else the first picked image's, else the first class.
  if (classChoice() >= 0) return classChoice();
  const auto items = grid_list_->selectedItems();
  return items.isEmpty() ? 0 : items[0]->data(Qt::UserRole + 1).toInt();
}

QString ExploreView::classText(const ExploreResult& r) const {
  if (r.classes.empty()) return QString();
  if (r.per_row > 0) return tr(", every class (a row each)");
  if (r.request.class_choice >= 0) return tr(", class %1").arg(className(r.classes.front()));
  return tr(", classes in turn");
}

void ExploreView::layoutClassRows(const ExploreResult& r, int side) {
  // A row per class: cells a row's width over one class's seeds, never below the image's own
  // size (then rows wrap), the icons shrunk to fit.
  if (r.per_row <= 0) {
    grid_list_->setGridSize(QSize());
    return;
  }
  const int width = grid_list_->viewport()->width() - 8;
  int cell = std::max(r.res + 8, width / r.per_row);
  while (width / cell > r.per_row) ++cell;  // exactly one class's seeds to a row
  const int icon = std::min(side, cell - 8);
  grid_list_->setIconSize(QSize(icon, icon));
  grid_list_->setGridSize(QSize(cell, icon + grid_list_->fontMetrics().height() + 8));
}

}  // namespace ampgan::ui
