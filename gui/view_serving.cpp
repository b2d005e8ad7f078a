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

ServingView::ServingView(QWidget* parent) : View(parent) {
  for (auto*& v : latency_) v = new ChartView(this);
  goodput_ = new ChartView(this);
  occupancy_ = new ChartView(this);
  timeline_ = new ChartView(this);
  step_ = new QComboBox(this);
  step_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  shown_ = new QSpinBox(this);
  shown_->setRange(1, 1000);
  shown_->setValue(reports::kTimelineRequests);
  shown_->setToolTip("How many requests the timeline shows, the first by arrival");
  notes_ = new QLabel(this);
  notes_->setWordWrap(true);
  notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* notes_area = new QScrollArea(this);
  notes_area->setWidget(notes_);
  notes_area->setWidgetResizable(true);
  notes_area->setFrameShape(QFrame::NoFrame);
  notes_area->setMaximumHeight(70);
  auto* grid = new QWidget(this);
  auto* gl = new QGridLayout(grid);
  gl->setContentsMargins(0, 0, 0, 0);
  gl->addWidget(latency_[0], 0, 0);
  gl->addWidget(latency_[1], 0, 1);
  gl->addWidget(goodput_, 1, 0);
  gl->addWidget(occupancy_, 1, 1);
  auto* bottom = new QWidget(this);
  auto* bl = new QVBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  auto* pick = new QHBoxLayout();
  pick->addWidget(new QLabel("Requests of:", this));
  pick->addWidget(step_);
  pick->addWidget(new QLabel("first", this));
  pick->addWidget(shown_);
  pick->addWidget(new QLabel("by arrival", this));
  pick->addStretch(1);
  bl->addLayout(pick);
  bl->addWidget(timeline_, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(grid);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(notes_area);
  lay->addWidget(split, 1);
  connect(step_, &QComboBox::currentIndexChanged, this, [this] { rebuildTimeline(); });
  connect(shown_, &QSpinBox::valueChanged, this, [this] { rebuildTimeline(); });
}

QChart* ServingView::latencyChart(int i) const { return latency_[i]->chart(); }
QChart* ServingView::goodputChart() const { return goodput_->chart(); }
QChart* ServingView::occupancyChart() const { return occupancy_->chart(); }
QChart* ServingView::timelineChart() const { return timeline_->chart(); }


void ServingView::refresh(const Selection& s) {
  sel_ = s;
  data_ = {};
  const QString titles[] = {"Latency against throughput", "Latency against throughput",
                            "Goodput against offered rate", "Time per token against batch occupancy"};
  QChart* lc[2] = {fresh_chart(latency_[0], titles[0]), fresh_chart(latency_[1], titles[1])};
  QChart* g = fresh_chart(goodput_, titles[2]);
  QChart* o = fresh_chart(occupancy_, titles[3]);
  if (!s.db || s.runs.empty()) {
    for (QChart* c : {lc[0], lc[1], g, o}) c->setTitle(c->title() + ": " + nothing_selected(s));
    notes_base_.clear();
    notes_->clear();
    QSignalBlocker b(step_);
    step_->clear();
    rebuildTimeline();
    return;
  }
  data_ = reports::serving(*s.db, s.runs);
  if (data_.empty()) {
    for (QChart* c : {lc[0], lc[1], g, o})
      c->setTitle(c->title() + ": no serving data (a decoder under open-loop load) in the selected runs");
    notes_base_ = "No serving data in the selected runs: this view shows decoders serving open-loop arrivals "
                  "(stored TTFT and batching, inter-token latency or goodput).";
    notes_->setText(notes_base_);
    QSignalBlocker b(step_);
    step_->clear();
    rebuildTimeline();
    return;
  }
  constexpr size_t kMaxSeries = 16;
  const size_t n = std::min(data_.series.size(), kMaxSeries);
  const QString xt = q(data_.x_title());
  // Latency against throughput, one chart per metric (the first two; the report has them all).
  for (int k = 0; k < 2; ++k) {
    QChart* c = lc[k];
    if (static_cast<size_t>(k) >= data_.metrics.size()) {
      c->setTitle("Latency against throughput: the runs' SLOs bound one metric only");
      continue;
    }
    const reports::ServingMetric& m = data_.metrics[static_cast<size_t>(k)];
    c->setTitle(QString("%1 against %2").arg(q(m.title), data_.x_achieved ? "achieved throughput" : "offered rate"));
    double x1 = 0, y1 = m.slo ? m.slo->limit_ms : 0;
    for (size_t i = 0; i < n; ++i)
      for (const auto& st : data_.series[i].steps)
        if (const auto x = st.x(data_.x_achieved), y = st.v.get(m.column); x && y) x1 = std::max(x1, *x), y1 = std::max(y1, *y);
    if (!(x1 > 0) || !(y1 > 0)) {
      c->setTitle(c->title() + ": not measured");
      continue;
    }
    auto* ax = value_axis(xt, 0, x1 * 1.08);
    auto* ay = value_axis(q(m.title) + " (ms)", 0, y1 * 1.08);
    c->addAxis(ax, Qt::AlignBottom);
    c->addAxis(ay, Qt::AlignLeft);
    std::vector<QPointF> reached, held;
    for (size_t i = 0; i < n; ++i) {
      const auto& ss = data_.series[i];
      std::vector<QPointF> pts;
      std::vector<QString> tips;
      for (const auto& st : ss.steps)
        if (const auto x = st.x(data_.x_achieved), y = st.v.get(m.column); x && y) {
          pts.emplace_back(*x, *y);
          tips.push_back(step_tip(ss, st) + QString("\n%1 %2 ms").arg(q(m.title), num(*y)));
        }
      hover_tips(this, serving_line(c, ax, ay, q(ss.name), series_color(i), false, pts), tips, this);
      if (const reports::ServingStep* ks = ss.knee_step())
        if (const auto x = ks->x(data_.x_achieved), y = ks->v.get(m.column); x && y)
          (ss.knee().reached ? reached : held).emplace_back(*x, *y);
    }
    if (m.slo) {
      auto* ls = new QLineSeries();
      ls->setName(QString("SLO %1 ms").arg(num(m.slo->limit_ms)));
      QPen pen(QColor("#d62728"));
      pen.setWidthF(1.5);
      pen.setStyle(Qt::DotLine);
      ls->setPen(pen);
      ls->append(ax->min(), m.slo->limit_ms);
      ls->append(ax->max(), m.slo->limit_ms);
      attach(c, ls, ax, ay);
    }
    serving_knees(c, ax, ay, reached, held);
  }
  // Goodput against the offered rate, the offered rate itself dashed (every request meeting the SLOs).
  {
    g->setTitle("Goodput (requests meeting every SLO) against offered rate");
    double x1 = 0, y1 = 0;
    for (size_t i = 0; i < n; ++i)
      for (const auto& st : data_.series[i].steps) {
        x1 = std::max(x1, st.offered_qps);
        if (st.goodput_qps) y1 = std::max(y1, *st.goodput_qps);
      }
    y1 = std::max(y1, x1);
    auto* ax = value_axis("offered rate (requests/s)", 0, x1 * 1.08);
    auto* ay = value_axis("goodput (requests/s)", 0, y1 * 1.08);
    g->addAxis(ax, Qt::AlignBottom);
    g->addAxis(ay, Qt::AlignLeft);
    serving_line(g, ax, ay, "goodput = offered", QColor("#999999"), true, {{0, 0}, {x1, x1}})
        ->setPointsVisible(false);
    std::vector<QPointF> reached, held;
    for (size_t i = 0; i < n; ++i) {
      const auto& ss = data_.series[i];
      std::vector<QPointF> pts;
      std::vector<QString> tips;
      for (const auto& st : ss.steps)
        if (st.goodput_qps) {
          pts.emplace_back(st.offered_qps, *st.goodput_qps);
          tips.push_back(step_tip(ss, st) + QString("\ngoodput %1 req/s, SLO attainment %2")
                                                .arg(num(*st.goodput_qps), q(reports::fmt_opt(st.slo_attainment))));
        }
      hover_tips(this, serving_line(g, ax, ay, q(ss.name), series_color(i), false, pts), tips, this);
      if (const reports::ServingStep* ks = ss.knee_step(); ks && ks->goodput_qps)
        (ss.knee().reached ? reached : held).emplace_back(ks->offered_qps, *ks->goodput_qps);
    }
    serving_knees(g, ax, ay, reached, held);
  }
  // Time per token against the mean batch occupancy: p99 solid, p50 dashed.
  {
    const std::string m = data_.occupancy_metric;
    const QString title = m == "tpot" ? "TPOT" : "ITL";
    o->setTitle(QString("%1 p50 (dashed) and p99 against mean batch occupancy").arg(title));
    double x1 = 0, y1 = 0;
    for (size_t i = 0; i < n; ++i)
      for (const auto& st : data_.series[i].steps)
        if (const auto x = st.v.get("batch_occupancy_mean")) {
          x1 = std::max(x1, *x);
          for (const char* p : {"p50", "p99"})
            if (const auto y = st.v.get(m + "_" + p + "_ms")) y1 = std::max(y1, *y);
        }
    if (!(x1 > 0) || !(y1 > 0)) {
      o->setTitle(QString("%1 against batch occupancy: not measured (see the notes)").arg(title));
    } else {
      auto* ax = value_axis("sequences per step (mean)", 0, x1 * 1.08);
      auto* ay = value_axis(title + " (ms)", 0, y1 * 1.08);
      o->addAxis(ax, Qt::AlignBottom);
      o->addAxis(ay, Qt::AlignLeft);
      for (size_t i = 0; i < n; ++i) {
        const auto& ss = data_.series[i];
        for (const char* p : {"p99", "p50"}) {
          std::vector<QPointF> pts;
          std::vector<QString> tips;
          for (const auto& st : ss.steps)
            if (const auto x = st.v.get("batch_occupancy_mean"), y = st.v.get(m + "_" + p + "_ms"); x && y) {
              pts.emplace_back(*x, *y);
              tips.push_back(step_tip(ss, st) + QString("\n%1 %2 %3 ms at %4 sequences per step").arg(title, p, num(*y), num(*x)));
            }
          if (pts.empty()) continue;
          hover_tips(this, serving_line(o, ax, ay, q(ss.name) + " " + p, series_color(i), std::string(p) == "p50", pts), tips, this);
        }
      }
    }
  }
  for (QChart* c : {lc[0], lc[1], g, o}) {
    qsizetype longest = 0;
    for (const auto* sr : c->series()) longest = std::max(longest, sr->name().size());
    QFont f = c->legend()->font();
    f.setPointSizeF(std::max(6.0, f.pointSizeF() * (longest > 16 ? 0.75 : 0.85)));
    c->legend()->setFont(f);
  }
  QStringList notes;
  for (const auto& l : data_.notes()) notes << q(l).toHtmlEscaped();
  if (data_.series.size() > n) notes << QString("The charts show the first %1 of %2 series.").arg(n).arg(data_.series.size());
  notes_base_ = notes.join("<br>");
  notes_->setText(notes_base_);
  // The steps to choose from: each series' timeline step first (its knee, else its highest), then every step.
  const qint64 keep = step_->currentData().toLongLong();
  QSignalBlocker b(step_);
  step_->clear();
  for (const auto& ss : data_.series)
    if (const reports::ServingStep* t = ss.timeline_step())
      step_->addItem(QString("%1 @%2 qps (%3)").arg(q(ss.name), num(t->offered_qps), ss.knee_step() && ss.knee().reached ? "knee" : "highest"),
                     QVariant::fromValue<qint64>(t->v.variant_id));
  for (const auto& ss : data_.series)
    for (const auto& st : ss.steps)
      if (&st != ss.timeline_step())
        step_->addItem(QString("%1 @%2 qps").arg(q(ss.name), num(st.offered_qps)), QVariant::fromValue<qint64>(st.v.variant_id));
  // A variant clicked elsewhere (or --variant) that is a step here, else the step shown before.
  int at = -1;
  for (int64_t v : s.variants)
    if (at < 0) at = step_->findData(QVariant::fromValue<qint64>(v));
  if (at < 0) at = step_->findData(QVariant::fromValue<qint64>(keep));
  step_->setCurrentIndex(at >= 0 ? at : 0);
  rebuildTimeline();
}

void ServingView::showTimeline(int64_t variant_id) {
  const int at = step_->findData(QVariant::fromValue<qint64>(variant_id));
  if (at >= 0) step_->setCurrentIndex(at);  // rebuilds through the signal
  if (at == step_->currentIndex()) rebuildTimeline();
}

void ServingView::rebuildTimeline() {
  tl_ = {};
  QChart* c = fresh_chart(timeline_, "Requests of one step");
  const qint64 id = step_->currentData().toLongLong();
  const reports::ServingSeries* series = nullptr;
  const reports::ServingStep* step = nullptr;
  for (const auto& ss : data_.series)
    for (const auto& st : ss.steps)
      if (st.v.variant_id == id) series = &ss, step = &st;
  if (!sel_.db || !step) {
    c->setTitle("Requests of one step: " + (sel_.db && !sel_.runs.empty() ? QString("no serving data") : nothing_selected(sel_)));
    return;
  }
  tl_ = reports::timeline(*sel_.db, step->v, shown_->value());
  tl_.name = cibench::str(series->name, " @", reports::fmt_num(step->offered_qps, 3), " qps");
  tl_.why = step == series->knee_step() ? (series->knee().reached ? "knee step" : "highest step: every rate tried met the SLOs")
            : step == series->timeline_step() ? "highest step: no knee"
                                               : "selected";
  c->setTitle(QString("Requests of %1 (%2): %3, the first arrival at the top").arg(q(tl_.name), q(tl_.why), q(tl_.coverage())));
  if (tl_.requests.empty()) return;
  // Stacked horizontal bars, one per request: an invisible offset to the arrival, then the queue
  // wait, the rest of the time to the first token, and the decode (service, without a first token).
  auto* offset = new QBarSet("arrival");
  auto* queued = new QBarSet("queued");
  auto* first = new QBarSet("to first token");
  auto* decode = new QBarSet("decode");
  auto* service = new QBarSet("service");
  offset->setColor(Qt::transparent);
  offset->setBorderColor(Qt::transparent);
  queued->setColor(QColor("#bbbbbb"));
  first->setColor(QColor("#ff7f0e"));
  decode->setColor(QColor("#1f77b4"));
  service->setColor(QColor("#9467bd"));
  for (auto* set : {queued, first, decode, service}) set->setBorderColor(set->color());
  QStringList cats;
  double x1 = 0;
  bool any_service = false;
  // Bars fill a horizontal bar chart from the bottom: the last arrival first, so that the first is
  // at the top.
  for (size_t k = tl_.requests.size(); k-- > 0;) {
    const auto& r = tl_.requests[k];
    cats << QString::number(k + 1);
    auto len = [](const std::optional<std::pair<double, double>>& seg) { return seg ? seg->second - seg->first : 0.0; };
    const auto qd = r.queued(), f = r.to_first_token(), d = r.decode(), sv = r.service();
    // Each segment starts where the one before ends (to_first_token starts after the queue wait).
    const double q0 = r.scheduled_ms;
    *offset << q0;
    *queued << (qd && f && f->first < qd->second ? 0.0 : len(qd));
    *first << len(f);
    *decode << len(d);
    *service << len(sv);
    any_service = any_service || sv.has_value();
    for (const auto& seg : {qd, f, d, sv})
      if (seg) x1 = std::max(x1, seg->second);
    x1 = std::max(x1, q0);
  }
  auto* bars = new QHorizontalStackedBarSeries();
  bars->setBarWidth(0.75);
  for (auto* set : {offset, queued, first, decode}) bars->append(set);
  if (any_service) bars->append(service);
  else delete service;
  c->addSeries(bars);
  auto* ay = new QBarCategoryAxis();
  ay->append(cats);
  ay->setTitleVisible(false);  // the chart's title says what the rows are
  ay->setLabelsVisible(false);  // rows too thin for their numbers: hover a bar for its request
  auto* ax = value_axis("time since the start of the step (ms)", 0, x1 * 1.02);
  c->addAxis(ax, Qt::AlignBottom);
  c->addAxis(ay, Qt::AlignLeft);
  bars->attachAxis(ax);
  bars->attachAxis(ay);
  c->legend()->setAlignment(Qt::AlignBottom);
  c->legend()->setMarkerShape(QLegend::MarkerShapeRectangle);
  if (auto markers = c->legend()->markers(bars); !markers.isEmpty()) markers.front()->setVisible(false);  // the offset
  std::vector<QString> tips;  // by category: the last arrival first
  for (auto it = tl_.requests.rbegin(); it != tl_.requests.rend(); ++it) {
    const auto& r = *it;
    tips.push_back(QString("request %1%2: arrival %3 ms, queued %4 ms, TTFT %5 ms, latency %6 ms%7")
                       .arg(r.query_index + 1)
                       .arg(r.ok ? "" : " (failed)")
                       .arg(num(r.scheduled_ms), q(reports::fmt_opt(r.queue_ms)), q(reports::fmt_opt(r.ttft_ms)),
                            q(reports::fmt_opt(r.latency_ms)))
                       .arg(r.output_tokens ? QString(", %1 output tokens").arg(*r.output_tokens) : QString()));
  }
  connect(bars, &QHorizontalStackedBarSeries::hovered, this, [tips, this](bool on, int index, QBarSet*) {
    if (!on || index < 0 || index >= static_cast<int>(tips.size())) return QToolTip::hideText();
    QToolTip::showText(QCursor::pos(), tips[static_cast<size_t>(index)], this);
  });
  QStringList notes;
  for (const auto& l : tl_.notes()) notes << q(l).toHtmlEscaped();
  notes_->setText(notes.isEmpty() ? notes_base_ : notes_base_ + "<br>" + notes.join("<br>"));
}

// ---- speculative decoding ---------------------------------------------------------------------

}  // namespace cibench::gui
