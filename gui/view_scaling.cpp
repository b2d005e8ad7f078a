#include "gui/views.h"


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

#include "gui/chart_kit.h"

namespace cibench::gui {

ScalingView::ScalingView(QWidget* parent) : View(parent) {
  throughput_ = new ChartView(this);
  latency_ = new ChartView(this);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(throughput_);
  split->addWidget(latency_);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(new QLabel("Throughput and latency against threads x workers (first step of each variant; "
                            "hover a point for threads x workers).", this));
  lay->addWidget(split, 1);
}

QChart* ScalingView::throughputChart() const { return throughput_->chart(); }
QChart* ScalingView::latencyChart() const { return latency_->chart(); }

void ScalingView::refresh(const Selection& s) {
  QChart* t = fresh_chart(throughput_, "Throughput against threads x workers");
  QChart* l = fresh_chart(latency_, "Latency p95 against threads x workers");
  if (!s.db || s.runs.empty()) {
    t->setTitle(t->title() + ": " + nothing_selected(s));
    l->setTitle(l->title() + ": " + nothing_selected(s));
    return;
  }
  const auto series = reports::scaling(*s.db, s.runs);
  const bool decode = reports::scaling_plots_decode(series);
  if (decode) t->setTitle("Decode rate (cibench bench) against threads x workers");
  // One core count only: the points are shown, and the titles say nothing was scaled.
  std::set<int64_t> cores;
  for (const auto& sr : series)
    for (const auto& p : sr.points) cores.insert(p.threads * p.workers);
  if (cores.size() == 1)
    for (QChart* c : {t, l})
      c->setTitle(c->title() + QString(": every variant ran on %1 core%2, nothing to scale against")
                                   .arg(*cores.begin()).arg(*cores.begin() == 1 ? "" : "s"));
  for (int which : {0, 1}) {
    QChart* c = which == 0 ? t : l;
    double x1 = 1, y1 = 0;
    bool any = false;
    for (const auto& sr : series)
      for (const auto& p : sr.points) {
        const auto v = which == 0 ? p.throughput(decode) : p.p95_ms;
        if (!v) continue;
        any = true;
        x1 = std::max(x1, static_cast<double>(p.threads * p.workers));
        y1 = std::max(y1, *v);
      }
    if (!any) {
      c->setTitle(c->title() + ": nothing measured");
      continue;
    }
    auto* ax = new QValueAxis();
    ax->setTitleText("threads x workers (cores used)");
    ax->setRange(0.5, x1 + 0.5);
    ax->setTickType(QValueAxis::TicksDynamic);
    ax->setTickAnchor(1);
    ax->setTickInterval(x1 > 16 ? 4 : 1);
    ax->setLabelFormat("%d");
    auto* ay = value_axis(which == 1 ? "latency p95 (ms)" : decode ? "decode (tokens/s)" : "throughput (queries/s)", 0, y1 * 1.1);
    c->addAxis(ax, Qt::AlignBottom);
    c->addAxis(ay, Qt::AlignLeft);
    for (size_t i = 0; i < series.size(); ++i) {
      auto* ls = new QLineSeries();
      ls->setName(q(series[i].name));
      QPen pen(series_color(i));
      pen.setWidthF(2);
      ls->setPen(pen);
      ls->setPointsVisible(true);
      auto* pts = new QScatterSeries();
      pts->setMarkerSize(9);
      pts->setColor(series_color(i));
      std::vector<QString> tips;
      for (const auto& p : series[i].points) {
        const auto v = which == 0 ? p.throughput(decode) : p.p95_ms;
        if (!v) continue;
        const double x = static_cast<double>(p.threads * p.workers);
        ls->append(x, *v);
        pts->append(x, *v);
        tips.push_back(QString("%1: %2 threads x %3 workers\n%4").arg(q(series[i].name)).arg(p.threads).arg(p.workers).arg(num(*v)));
      }
      attach(c, ls, ax, ay);
      attach(c, pts, ax, ay);
      c->legend()->markers(pts).value(0)->setVisible(false);
      connect(pts, &QXYSeries::hovered, this, [pts, tips, this](const QPointF& pt, bool on) {
        if (!on) return QToolTip::hideText();
        int best = 0;
        double bd = INFINITY;
        for (int k = 0; k < pts->count(); ++k) {
          const double d = std::hypot(pts->at(k).x() - pt.x(), (pts->at(k).y() - pt.y()) * 1e-3);
          if (d < bd) bd = d, best = k;
        }
        if (best < static_cast<int>(tips.size())) QToolTip::showText(QCursor::pos(), tips[static_cast<size_t>(best)], this);
      });
    }
  }
}

// ---- counters ---------------------------------------------------------------------------------

}  // namespace cibench::gui
