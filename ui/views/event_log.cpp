#include "ui/views/event_log.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ui/common/amp_glossary.h"
#include "ui/common/ui_types.h"

namespace ampgan::ui {

namespace {
enum Col { kStep, kTime, kKind, kMessage };
constexpr int kCategoryRole = Qt::UserRole + 1;

// Filter categories: which entries each filter choice shows.
bool shown(const QString& filter, const QString& category) {
  if (filter == QLatin1String("all")) return true;
  if (filter == QLatin1String("amp")) return category == QLatin1String("amp");
  if (filter == QLatin1String("problems")) return category == QLatin1String("problem");
  if (filter == QLatin1String("run")) return category == QLatin1String("run");
  return true;
}
}  // namespace

EventLog::EventLog(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(2, 2, 2, 2);
  v->setSpacing(2);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Show")));
  filter_ = new QComboBox;
  filter_->addItem(tr("Everything"), QStringLiteral("all"));
  filter_->addItem(tr("AMP: overflows, scale changes, precision switches"), QStringLiteral("amp"));
  filter_->addItem(tr("Warnings and errors"), QStringLiteral("problems"));
  filter_->addItem(tr("Runs, checkpoints, evaluations, exports"), QStringLiteral("run"));
  connect(filter_, &QComboBox::currentIndexChanged, this, [this] {
    for (int i = 0; i < tree_->topLevelItemCount(); ++i) applyFilter(tree_->topLevelItem(i));
  });
  // The longest entry would otherwise set the log's (and so the window's) minimum width.
  filter_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  filter_->setMinimumContentsLength(12);
  bar->addWidget(filter_, 1);
  auto* clear_btn = new QPushButton(tr("Clear"));
  connect(clear_btn, &QPushButton::clicked, this, &EventLog::clear);
  bar->addWidget(clear_btn);
  v->addLayout(bar);

  tree_ = new QTreeWidget;
  tree_->setColumnCount(4);
  tree_->setHeaderLabels({tr("Step"), tr("Time"), tr("Kind"), tr("Message")});
  tree_->setRootIsDecorated(false);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  tree_->header()->setStretchLastSection(true);
  tree_->setColumnWidth(kStep, 70);
  tree_->setColumnWidth(kTime, 60);
  tree_->setColumnWidth(kKind, 90);
  v->addWidget(tree_, 1);
}

void EventLog::clear() {
  tree_->clear();
  group_open_ = false;
  group_ = Group{};
  overflow_events_ = 0;
}

bool EventLog::atEnd() const {
  const QScrollBar* sb = tree_->verticalScrollBar();
  return sb->value() >= sb->maximum() - 2;
}

void EventLog::scrollIfAtEnd(bool was_at_end) {
  if (was_at_end) tree_->scrollToBottom();  // do not yank the view away from what is being read
}

void EventLog::applyFilter(QTreeWidgetItem* item) const {
  item->setHidden(!shown(filter_->currentData().toString(), item->data(0, kCategoryRole).toString()));
}

QTreeWidgetItem* EventLog::addRow(int64_t step, double time_s, const QString& kind, const QString& text,
                                  const QString& category) {
  auto* item = new QTreeWidgetItem;
  item->setText(kStep, step >= 0 ? QString::number(step) : QString());
  item->setText(kTime, time_s > 0 ? format_duration(time_s) : QString());
  item->setText(kKind, kind);
  item->setText(kMessage, text);
  item->setToolTip(kMessage, text);
  item->setData(0, kCategoryRole, category);
  item->setTextAlignment(kStep, Qt::AlignRight | Qt::AlignVCenter);
  if (kind == QLatin1String("error")) {
    for (int c = 0; c < 4; ++c) item->setForeground(c, QColor(180, 0, 0));
    QFont f = item->font(kMessage);
    f.setBold(true);
    item->setFont(kMessage, f);
  } else if (kind == QLatin1String("warning")) {
    for (int c = 0; c < 4; ++c) item->setForeground(c, QColor(170, 90, 0));
  } else if (kind == QLatin1String("switch")) {
    for (int c = 0; c < 4; ++c) item->setForeground(c, QColor(20, 70, 170));
  } else if (kind == QLatin1String("overflow") || kind == QLatin1String("scale")) {
    item->setForeground(kKind, QColor(150, 40, 40));
    item->setToolTip(kKind, glossary::overflow());
  }
  tree_->addTopLevelItem(item);
  applyFilter(item);
  while (tree_->topLevelItemCount() > kMaxRows) {
    QTreeWidgetItem* old = tree_->takeTopLevelItem(0);
    if (group_open_ && old == group_.item) group_open_ = false;
    delete old;
  }
  return item;
}

void EventLog::updateGroup(Group& g) {
  const int overflows = g.over_d + g.over_g;
  QString steps = g.first == g.last ? tr("step %1").arg(g.first) : tr("steps %1–%2").arg(g.first).arg(g.last);
  QStringList parts;
  if (overflows > 0) {
    QString o = overflows == 1 ? tr("1 overflow") : tr("%1 overflows").arg(overflows);
    if (g.over_d && g.over_g)
      o += tr(" (D %1, G %2)").arg(g.over_d).arg(g.over_g);
    else
      o += g.over_d ? tr(" in D") : tr(" in G");
    o += tr(": inf/NaN gradients, step skipped");
    parts << o;
  }
  QStringList scales;
  auto change = [](const char* name, double from, double to) {
    return from == to ? QStringLiteral("%1 back at %2").arg(QLatin1String(name), format_scale(to))
                      : QStringLiteral("%1 %2 → %3").arg(QLatin1String(name), format_scale(from), format_scale(to));
  };
  if (g.from_d > 0) scales << change("S_D", g.from_d, g.to_d);
  if (g.from_g > 0) scales << change("S_G", g.from_g, g.to_g);
  // Without an overflow a scale grows (the scaler's probe), or is set (a switch to BF16 sets it to 1).
  const bool grew = (g.from_d <= 0 || g.to_d >= g.from_d) && (g.from_g <= 0 || g.to_g >= g.from_g);
  if (!scales.isEmpty())
    parts << (overflows > 0 ? QString()
              : grew        ? tr("loss scale grew: ")
                            : tr("loss scale set: ")) +
                 scales.join(QStringLiteral(", "));
  QString text = steps + QStringLiteral(": ") + parts.join(QStringLiteral("; "));
  if (!g.prefix.isEmpty()) text = QStringLiteral("[%1] ").arg(g.prefix) + text;
  g.item->setText(kStep, QString::number(g.first));
  g.item->setText(kKind, overflows > 0 ? tr("overflow") : tr("scale"));
  g.item->setText(kMessage, text);
  g.item->setToolTip(kMessage, text);
}

void EventLog::addEvent(const RunEvent& e, const QString& prefix) {
  const bool was_at_end = atEnd();
  const EventType type = e.type;
  const QString msg = QString::fromStdString(e.message);
  if (type == EventType::Overflow || type == EventType::ScaleChange) {
    if (type == EventType::Overflow) ++overflow_events_;
    const bool joins = group_open_ && group_.prefix == prefix && e.step >= group_.first &&
                       e.step - group_.last <= kGroupWindow && e.step - group_.first <= kGroupSpan;
    if (!joins) {
      group_ = Group{};
      group_.prefix = prefix;
      group_.first = group_.last = e.step;
      group_.item = addRow(e.step, e.time_s, QString(), QString(), QStringLiteral("amp"));
      group_open_ = true;
    }
    group_.last = std::max(group_.last, e.step);
    const bool d = e.network == "D";
    if (type == EventType::Overflow) {
      (d ? group_.over_d : group_.over_g) += 1;
    } else {
      const double from = e.data.value("from", 0.0), to = e.data.value("to", 0.0);
      double& f = d ? group_.from_d : group_.from_g;
      if (f == 0) f = from;
      (d ? group_.to_d : group_.to_g) = to;
    }
    updateGroup(group_);
    scrollIfAtEnd(was_at_end);
    return;
  }
  group_open_ = false;  // anything else ends a run of overflows
  QString kind = QString::fromLatin1(event_type_name(type)), category = QStringLiteral("run");
  if (type == EventType::PrecisionSwitch) {
    kind = QStringLiteral("switch");
    category = QStringLiteral("amp");
  } else if (type == EventType::Warning || type == EventType::Error) {
    category = QStringLiteral("problem");
  }
  addRow(e.step, e.time_s, kind, prefix.isEmpty() ? msg : QStringLiteral("[%1] %2").arg(prefix, msg), category);
  scrollIfAtEnd(was_at_end);
}

void EventLog::addEvents(const std::vector<RunEvent>& events, const QString& prefix) {
  if (events.empty()) return;
  tree_->setUpdatesEnabled(false);
  for (const RunEvent& e : events) addEvent(e, prefix);
  tree_->setUpdatesEnabled(true);
}

void EventLog::addNote(const QString& kind, const QString& text, int64_t step) {
  const bool was_at_end = atEnd();
  group_open_ = false;
  const QString category = kind == QLatin1String("error") || kind == QLatin1String("warning")
                               ? QStringLiteral("problem")
                               : QStringLiteral("run");
  addRow(step, 0, kind, text, category);
  scrollIfAtEnd(was_at_end);
}

int EventLog::rowCount() const { return tree_->topLevelItemCount(); }

QString EventLog::rowText(int row) const {
  const QTreeWidgetItem* it = tree_->topLevelItem(row);
  if (!it) return {};
  return it->text(kStep) + QStringLiteral(" | ") + it->text(kKind) + QStringLiteral(" | ") + it->text(kMessage);
}

}  // namespace ampgan::ui
