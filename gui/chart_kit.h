#pragma once
// The small chart toolkit every dashboard view draws with: colours and markers (the report's
// conventions, reports/render/svg.h), fresh charts, padded and time axes, knee markers, legends
// that fit, table cells. Internal to gui/.

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QBoxPlotSeries>
#include <QBoxSet>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QContextMenuEvent>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QGridLayout>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScatterSeries>
#include <QScrollArea>
#include <QSplitter>
#include <QSvgGenerator>
#include <QTableWidget>
#include <QTimer>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "reports/render/svg.h"

#include "gui/views.h"

namespace cibench::gui {

inline QString q(const std::string& s) { return QString::fromStdString(s); }
inline QString num(double v) { return q(reports::fmt_num(v)); }

// 20 distinct line colours: the 16 curves a chart draws at most never share one.
inline constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
                          "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
inline QColor series_color(size_t i) { return QColor(kPalette[i % (sizeof kPalette / sizeof *kPalette)]); }

inline QScatterSeries::MarkerShape shape_of(const std::string& marker) {
  if (marker == "square") return QScatterSeries::MarkerShapeRectangle;
  if (marker == "triangle") return QScatterSeries::MarkerShapeTriangle;
  if (marker == "diamond") return QScatterSeries::MarkerShapeRotatedRectangle;
  if (marker == "star") return QScatterSeries::MarkerShapeStar;
  return QScatterSeries::MarkerShapeCircle;
}

inline QChart* fresh_chart(QChartView* v, const QString& title) {
  QChart* old = v->chart();
  auto* c = new QChart();
  c->setTitle(title);
  c->legend()->setAlignment(Qt::AlignRight);
  c->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
  c->legend()->setShowToolTips(true);  // a label cut short (at 40 % of the chart's width) in full on hover
  c->setMargins(QMargins(4, 4, 4, 4));
  v->setChart(c);  // the view takes ownership of the new chart
  // Not deleted here: a signal of one of its series may be on the stack.
  if (old) old->deleteLater();
  return c;
}

// [lo, hi] with a margin, never empty.
inline std::pair<double, double> padded(double lo, double hi, double frac = 0.08) {
  if (!(hi > lo)) {
    const double d = std::max(std::fabs(lo) * 0.1, 1e-3);
    return {lo - d, hi + d};
  }
  const double d = (hi - lo) * frac;
  return {lo - d, hi + d};
}

inline QValueAxis* value_axis(const QString& title, double lo, double hi) {
  auto* a = new QValueAxis();
  a->setTitleText(title);
  a->setRange(lo, hi);
  a->setLabelFormat("%.6g");  // 10000 as 10000, not 1e+04
  a->applyNiceNumbers();
  return a;
}

// How many powers of `base` lie in [lo, hi]: the labelled ticks of a QLogValueAxis.
inline int powers_within(double base, double lo, double hi) {
  const double l = std::log(lo) / std::log(base), h = std::log(hi) / std::log(base);
  return static_cast<int>(std::floor(h + 1e-9) - std::ceil(l - 1e-9)) + 1;
}

// An axis for positive times from lo to hi (ms) with at least three labelled ticks: a QLogValueAxis
// labels the powers of its base only, so base 10 when three of them are in range (1, 10, 100
// ms), else base 2 (0.25, 0.5, 1 ms), else a linear axis (0.3, 0.4, 0.5 ms within a decade).
inline QAbstractAxis* time_axis(const QString& what, double lo, double hi) {
  const double a = lo / 1.2, b = hi * 1.2;
  for (double base : {10.0, 2.0})
    if (powers_within(base, a, b) >= 3) {
      auto* ax = new QLogValueAxis();
      ax->setBase(base);
      ax->setTitleText(what + " (ms, log scale)");
      ax->setLabelFormat("%g");
      ax->setMinorTickCount(base == 10 ? 8 : 1);
      ax->setRange(a, b);
      return ax;
    }
  const auto [x0, x1] = padded(lo, hi, 0.05);
  return value_axis(what + " (ms)", std::max(0.0, x0), x1);
}

inline void attach(QChart* c, QAbstractSeries* s, QAbstractAxis* x, QAbstractAxis* y) {
  c->addSeries(s);
  s->attachAxis(x);
  s->attachAxis(y);
}

// Knee markers of a load sweep: filled diamonds where the knee was reached, hollow where every
// rate tried met the SLOs.
inline QScatterSeries* knee_series(const std::vector<QPointF>& marks, bool reached, const QString& name) {
  auto* ks = new QScatterSeries();
  ks->setName(name);
  ks->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
  ks->setMarkerSize(14);
  ks->setColor(reached ? QColor("#2ca02c") : QColor(Qt::transparent));
  ks->setBorderColor(QColor("#1b5e20"));
  QPen pen(QColor("#1b5e20"));
  pen.setWidthF(reached ? 1 : 2);
  ks->setPen(pen);
  for (const auto& p : marks) ks->append(p);
  return ks;
}

// A legend of many entries, or of long ones, in a smaller font so that fewer are cut off (Qt
// gives the legend at most 40 % of the chart's width and elides what does not fit).
inline void fit_legend(QChart* c, int entries, qsizetype longest) {
  if (entries <= 12 && longest <= 28) return;
  QFont f = c->legend()->font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * (entries > 24 ? 0.65 : entries > 16 ? 0.7 : 0.8)));
  c->legend()->setFont(f);
}

// What a view says when no run is selected: there is no database, it has no runs yet, or none
// is selected.
inline QString nothing_selected(const Selection& s) {
  if (!s.db) return "no database open";
  if (s.db->runs().empty()) return "no runs in this database yet";
  return "select one or more runs";
}

inline QString run_prefix(const Selection& s, int64_t run_id) {
  return s.runs.size() > 1 ? QString("run %1: ").arg(run_id) : QString();
}

inline QTableWidgetItem* item(const QString& text, const QString& tip = {}) {
  auto* it = new QTableWidgetItem(text);
  it->setFlags(it->flags() & ~Qt::ItemIsEditable);
  if (!tip.isEmpty()) it->setToolTip(tip);
  return it;
}


// ---- serving and speculative lines ----

// A line per series with its points, hover text per point.
inline QLineSeries* serving_line(QChart* c, QAbstractAxis* ax, QAbstractAxis* ay, const QString& name, const QColor& color,
                          bool dashed, const std::vector<QPointF>& pts) {
  auto* ls = new QLineSeries();
  ls->setName(name);
  QPen pen(color);
  pen.setWidthF(2);
  if (dashed) pen.setStyle(Qt::DashLine);
  ls->setPen(pen);
  ls->setPointsVisible(true);
  for (const auto& p : pts) ls->append(p);
  attach(c, ls, ax, ay);
  return ls;
}

// The knees as markers: filled where reached, hollow where every rate tried met the SLOs.
inline void serving_knees(QChart* c, QAbstractAxis* ax, QAbstractAxis* ay, const std::vector<QPointF>& reached,
                   const std::vector<QPointF>& held) {
  for (const bool r : {true, false}) {
    const auto& marks = r ? reached : held;
    if (!marks.empty()) attach(c, knee_series(marks, r, r ? "knee" : "no knee: all rates met SLOs"), ax, ay);
  }
}

inline void hover_tips(QObject* owner, QXYSeries* s, std::vector<QString> tips, QWidget* w) {
  QObject::connect(s, &QXYSeries::hovered, owner, [s, tips = std::move(tips), w](const QPointF& pt, bool on) {
    if (!on) return QToolTip::hideText();
    // The nearest point on screen (the axes' units differ: requests/s and ms).
    QChart* c = s->chart();
    if (!c) return;
    const QPointF at = c->mapToPosition(pt, s);
    int best = -1;
    double bd = INFINITY;
    for (int k = 0; k < s->count(); ++k) {
      const QPointF d = c->mapToPosition(s->at(k), s) - at;
      if (const double dd = std::hypot(d.x(), d.y()); dd < bd) bd = dd, best = k;
    }
    if (best >= 0 && best < static_cast<int>(tips.size())) QToolTip::showText(QCursor::pos(), tips[static_cast<size_t>(best)], w);
  });
}

inline QString step_tip(const reports::ServingSeries& ss, const reports::ServingStep& st) {
  return QString("%1 @%2 qps offered, %3 req/s achieved\n%4")
      .arg(q(ss.name), num(st.offered_qps), q(reports::fmt_opt(st.achieved_qps)), q(st.verdict.summary()));
}

}  // namespace cibench::gui
