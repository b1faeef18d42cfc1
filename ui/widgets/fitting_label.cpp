#include "ui/widgets/fitting_label.h"

#include <utility>

#include <QResizeEvent>

namespace ampgan::ui {

FittingLabel::FittingLabel(QStringList texts, QWidget* parent) : QLabel(parent), texts_(std::move(texts)) {
  setText(texts_.value(0));
}

QSize FittingLabel::sizeHint() const {
  const QMargins m = contentsMargins();
  return {fontMetrics().horizontalAdvance(texts_.value(0)) + 2 * margin() + m.left() + m.right(),
          QLabel::sizeHint().height()};
}

// The layout may shrink it to nothing: fit() then shows no text rather than a cut one.
QSize FittingLabel::minimumSizeHint() const { return {0, QLabel::minimumSizeHint().height()}; }

void FittingLabel::resizeEvent(QResizeEvent* e) {
  QLabel::resizeEvent(e);
  fit();
}

void FittingLabel::fit() {
  const int room = contentsRect().width() - 2 * margin();
  QString shown;
  for (const QString& t : texts_)
    if (fontMetrics().horizontalAdvance(t) <= room) {
      shown = t;
      break;
    }
  // sizeHint() does not depend on the text shown, so this cannot start another layout pass.
  if (shown != text()) setText(shown);
}

}  // namespace ampgan::ui
