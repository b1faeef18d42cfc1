// The charts' axis tickers (log 2 and log 10 axes whose labels stay distinct at any span) and
// the compact number format of their tooltips and tables.
#pragma once

#include <QString>
#include <QVector>

#include <qcustomplot.h>

namespace ampgan::ui {

// Log axis ticks labelled as powers of two ("2^16"): the loss scale lives on powers of two.
// Ticks sit on whole powers of two only, so no two carry the same label (QCPAxisTickerLog put
// several ticks inside one octave of a narrow axis, all rounded to "2^0"); an axis narrower than
// one octave gets plain, distinct numbers.
class Log2Ticker : public QCPAxisTickerLog {
 public:
  Log2Ticker();
  void generate(const QCPRange& range, const QLocale& locale, QChar formatChar, int precision, QVector<double>& ticks,
                QVector<double>* subTicks, QVector<QString>* tickLabels) override;
};

// Log-10 axis ticks that stay readable at any span: powers of ten over many decades, 1-2-5 over
// one or two, evenly spaced ordinary numbers within one decade (QCPAxisTickerLog labels a
// narrow range with a crowd of "6·10^1"s).
class NiceLogTicker : public QCPAxisTicker {
 public:
  void generate(const QCPRange& range, const QLocale& locale, QChar formatChar, int precision, QVector<double>& ticks,
                QVector<double>* subTicks, QVector<QString>* tickLabels) override;
};

// "0.693", "2^16", "1.2e-05": compact numbers for tooltips and tables.
QString format_value(double v, bool as_power_of_two = false);

}  // namespace ampgan::ui
