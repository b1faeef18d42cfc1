// A one-line label with a long and shorter wordings of one message: it shows the longest that
// fits its width (none when even the shortest does not), so a hint never appears cut off in a
// small window. The tooltip carries the whole message.
#pragma once

#include <QLabel>
#include <QStringList>

namespace ampgan::ui {

class FittingLabel : public QLabel {
 public:
  // texts: the wordings, longest first.
  explicit FittingLabel(QStringList texts, QWidget* parent = nullptr);
  // The longest wording's size: what the layout offers when there is room.
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  void fit();
  QStringList texts_;
};

}  // namespace ampgan::ui
