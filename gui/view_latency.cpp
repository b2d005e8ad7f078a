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

LatencyView::LatencyView(QWidget* parent) : View(parent) {
  metric_ = new QComboBox(this);
  for (const char* m : {"latency", "ttft", "tpot", "queue", "service"}) metric_->addItem(m);
  cdf_ = new ChartView(this);
  load_ = new ChartView(this);
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel("Distribution of:", this));
  top->addWidget(metric_);
  top->addWidget(new QLabel("(the variants clicked in the trade-off view, else every variant of the selected runs)", this), 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(cdf_);
  split->addWidget(load_);
  auto* lay = new QVBoxLayout(this);
  lay->addLayout(top);
  lay->addWidget(split, 1);
  connect(metric_, &QComboBox::currentIndexChanged, this, [this] { refresh(sel_); });
}

QChart* LatencyView::cdfChart() const { return cdf_->chart(); }
void LatencyView::setMetric(const QString& metric) {
  const int i = metric_->findText(metric);
  if (i < 0) throw reports::DbError("unknown latency metric '" + metric.toStdString() + "'");
  metric_->setCurrentIndex(i);  // refreshes through the combo's signal
}
QString LatencyView::metric() const { return metric_->currentText(); }
QChart* LatencyView::loadChart() const { return load_->chart(); }

void LatencyView::refresh(const Selection& s) {
  sel_ = s;
  cdfs_.clear();
  QChart* c = fresh_chart(cdf_, "Latency distribution (CDF)");
  QChart* l = fresh_chart(load_, "Percentiles against offered load");
  if (!s.db || s.runs.empty()) {
    c->setTitle("Latency distribution: " + nothing_selected(s));
    l->setTitle("Percentiles against offered load: " + nothing_selected(s));
    return;
  }
  const std::string metric = metric_->currentText().toStdString();
  std::vector<reports::Variant> vs;
  for (const auto& v : s.db->variants(s.runs))
    if (v.status == "ok" && (s.variants.empty() || s.variants.count(v.variant_id))) vs.push_back(v);
  if (vs.empty())  // clicked variants belong to other runs: show the runs' variants
    for (const auto& v : s.db->variants(s.runs))
      if (v.status == "ok") vs.push_back(v);
  // At most 16 curves (the first ones, in run and matrix order); the title says when more have
  // this metric, and how to choose among them.
  constexpr size_t kMaxCdfs = 16;
  double x0 = INFINITY, x1 = 0;
  size_t with_metric = 0;
  for (const auto& v : vs) {
    auto cdf = reports::latency_cdf(*s.db, v.variant_id, metric);
    if (cdf.points.empty()) continue;
    ++with_metric;
    if (cdfs_.size() >= kMaxCdfs) continue;
    cdf.name = (run_prefix(s, v.run_id) + q(v.short_name())).toStdString();
    for (const auto& p : cdf.points)
      if (p.x > 0) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
    cdfs_.push_back(std::move(cdf));
  }
  if (!(x1 > 0)) x0 = x1 = 1;  // no positive time: nothing is drawn, the axis still needs a range
  c->setTitle(with_metric > cdfs_.size()
                  ? QString("%1 distribution (CDF, the first %2 of %3 variants: click points in the trade-off view "
                            "to choose)").arg(q(metric)).arg(cdfs_.size()).arg(with_metric)
                  : QString("%1 distribution (CDF, %2 variant%3)").arg(q(metric)).arg(cdfs_.size()).arg(cdfs_.size() == 1 ? "" : "s"));
  if (!cdfs_.empty()) {
    QAbstractAxis* ax = time_axis(q(metric), x0, x1);
    auto* ay = value_axis("fraction of requests", 0, 1);
    c->addAxis(ax, Qt::AlignBottom);
    c->addAxis(ay, Qt::AlignLeft);
    for (size_t i = 0; i < cdfs_.size(); ++i) {
      auto* ls = new QLineSeries();
      ls->setName(q(cdfs_[i].name) + (cdfs_[i].source == "histogram" ? " (histogram)" : ""));
      QPen pen(series_color(i));
      pen.setWidthF(2);
      ls->setPen(pen);
      double prev = 0;
      for (const auto& p : cdfs_[i].points) {
        if (p.x <= 0) continue;
        ls->append(p.x, prev);  // a step: flat, then up at each value
        ls->append(p.x, p.y);
        prev = p.y;
      }
      attach(c, ls, ax, ay);
    }
    qsizetype longest = 0;
    for (const auto* sr : c->series()) longest = std::max(longest, sr->name().size());
    fit_legend(c, static_cast<int>(cdfs_.size()), longest);
  } else {
    c->setTitle(c->title() + ": no per-request times or histograms stored");
  }

  // Percentiles of the same metric against offered load, for runs with steps: p50 dotted, p95
  // solid, p99 dashed; the SLOs on this metric as red lines (the others named in the title); the
  // knee (highest rate meeting every SLO) as a vertical line. More than kFewCurves curves (a
  // classifier sweep of ten variants): one line per curve at one percentile (the highest one an
  // SLO on this metric bounds, else p95), the knees as markers on their curves, at most
  // kMaxCurves curves.
  constexpr size_t kFewCurves = 3, kMaxCurves = 16;
  struct Curve {
    QString name;
    const reports::LoadCurve* cv;
  };
  std::vector<std::pair<int64_t, reports::LoadSweep>> sweeps;  // (run, its sweep)
  std::vector<Curve> curves;
  std::vector<std::pair<QString, double>> slo_lines;
  QStringList other_slos;
  std::optional<int> slo_percentile;
  for (int64_t run : s.runs) {
    auto sweep = reports::load_sweep(*s.db, run, metric);
    if (!sweep.has_steps()) continue;
    for (const auto& slo : sweep.slos) {
      if (slo.metric == metric) {
        const QString name = QString("SLO %1 %2 ms").arg(q(slo.key), num(slo.limit_ms));
        if (std::find_if(slo_lines.begin(), slo_lines.end(), [&](const auto& x) { return x.first == name; }) ==
            slo_lines.end())
          slo_lines.emplace_back(name, slo.limit_ms);
        if (slo.percentile == 50 || slo.percentile == 95 || slo.percentile == 99)  // the highest: the tail
          slo_percentile = std::max(slo_percentile.value_or(0), static_cast<int>(slo.percentile));
      } else {
        const QString o = QString("%1 %2 ms").arg(q(slo.key), num(slo.limit_ms));
        if (!other_slos.contains(o)) other_slos << o;
      }
    }
    sweeps.emplace_back(run, std::move(sweep));
  }
  size_t all_curves = 0;
  for (const auto& [run, sweep] : sweeps)
    for (const auto& cv : sweep.curves) {
      ++all_curves;
      if (curves.size() < kMaxCurves) curves.push_back({run_prefix(s, run) + q(cv.name), &cv});
    }
  const bool few = all_curves <= kFewCurves;
  const int one_percentile = slo_percentile.value_or(95);
  auto value_at = [](const reports::LoadCurve::Step& st, int which) {
    return which == 50 ? st.p50_ms : which == 95 ? st.p95_ms : st.p99_ms;
  };
  double lx = INFINITY, hx = -INFINITY, ly = INFINITY, hy = -INFINITY;
  struct Line {
    QString name;
    QColor color;
    Qt::PenStyle style;
    std::vector<QPointF> pts;
  };
  std::vector<Line> lines;
  std::vector<std::pair<QString, double>> knee_lines;  // few curves: vertical lines
  std::vector<QPointF> knee_marks, held_marks;          // many: markers on the curves
  for (size_t ci = 0; ci < curves.size(); ++ci) {
    const reports::LoadCurve& cv = *curves[ci].cv;
    for (int which : {50, 95, 99}) {
      if (!few && which != one_percentile) continue;
      const Qt::PenStyle style = !few || which == 95 ? Qt::SolidLine : which == 50 ? Qt::DotLine : Qt::DashLine;
      Line ln{curves[ci].name + QString(" p%1").arg(which), series_color(ci), style, {}};
      for (const auto& st : cv.steps) {
        const auto v = value_at(st, which);
        if (!v) continue;
        ln.pts.emplace_back(st.offered_qps, *v);
        lx = std::min(lx, st.offered_qps), hx = std::max(hx, st.offered_qps);
        ly = std::min(ly, *v), hy = std::max(hy, *v);
      }
      if (!ln.pts.empty()) lines.push_back(ln);
    }
    // The knee as the run defines it (find_knee): a rate where every step tried met the SLOs
    // is a lower bound, not a knee.
    const Knee kn = cv.knee_of_steps();
    if (!kn.qps) continue;
    if (few) {
      knee_lines.emplace_back(curves[ci].name + (kn.reached ? QString(" knee %1 qps").arg(num(*kn.qps))
                                                            : QString(" all met up to %1 qps (knee not reached)")
                                                                  .arg(num(*kn.qps))),
                              *kn.qps);
    } else {
      for (const auto& st : cv.steps)
        if (st.offered_qps == *kn.qps)
          if (const auto v = value_at(st, one_percentile)) (kn.reached ? knee_marks : held_marks).emplace_back(*kn.qps, *v);
    }
  }
  for (const auto& [name, v] : slo_lines) ly = std::min(ly, v), hy = std::max(hy, v);
  if (lines.empty()) {
    l->setTitle(QString("%1 percentiles against offered load: no stepped-rate run selected%2")
                    .arg(q(metric), s.runs.empty() ? "" : " (or none with this metric stored)"));
    return;
  }
  QString title = few ? QString("%1 percentiles against offered load").arg(q(metric))
                      : QString("%1 p%2 against offered load, one line per variant").arg(q(metric)).arg(one_percentile);
  if (all_curves > curves.size()) title += QString(" (the first %1 of %2)").arg(curves.size()).arg(all_curves);
  if (!other_slos.isEmpty()) title += QString(" (other SLOs: %1)").arg(other_slos.join(", "));
  l->setTitle(title);
  const auto [xa, xb] = padded(lx, hx, 0.05);
  const auto yb = padded(std::min(ly, 0.0), hy, 0.05).second;
  const double ya = 0;  // latencies are never negative
  auto* ax = value_axis("offered load (queries/s)", std::max(0.0, xa), xb);
  auto* ay = value_axis(q(metric) + " (ms)", ya, yb);
  l->addAxis(ax, Qt::AlignBottom);
  l->addAxis(ay, Qt::AlignLeft);
  qsizetype longest = 0;
  int entries = 0;
  auto add = [&](QAbstractSeries* sr) {
    attach(l, sr, ax, ay);
    ++entries, longest = std::max(longest, sr->name().size());
  };
  for (const auto& ln : lines) {
    auto* ls = new QLineSeries();
    ls->setName(ln.name);
    QPen pen(ln.color);
    pen.setWidthF(2);
    pen.setStyle(ln.style);
    ls->setPen(pen);
    ls->setPointsVisible(true);
    for (const auto& p : ln.pts) ls->append(p);
    add(ls);
  }
  for (const auto& [name, v] : slo_lines) {
    auto* ls = new QLineSeries();
    ls->setName(name);
    QPen pen(QColor("#d62728"));
    pen.setWidthF(1.5);
    pen.setStyle(Qt::DotLine);
    ls->setPen(pen);
    ls->append(ax->min(), v);
    ls->append(ax->max(), v);
    add(ls);
  }
  for (const auto& [name, x] : knee_lines) {
    auto* ls = new QLineSeries();
    ls->setName(name);
    QPen pen(QColor("#2ca02c"));
    pen.setWidthF(1.5);
    pen.setStyle(Qt::DashDotLine);
    ls->setPen(pen);
    ls->append(x, ya);
    ls->append(x, yb);
    add(ls);
  }
  for (const bool reached : {true, false}) {
    const auto& marks = reached ? knee_marks : held_marks;
    if (!marks.empty())
      add(knee_series(marks, reached, reached ? "knee (highest rate meeting every SLO)" : "every rate tried met the SLOs"));
  }
  fit_legend(l, entries, longest);
}

// ---- scaling ----------------------------------------------------------------------------------

}  // namespace cibench::gui
