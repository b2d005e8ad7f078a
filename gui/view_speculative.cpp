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

SpeculativeView::SpeculativeView(QWidget* parent) : View(parent) {
  speedup_ = new ChartView(this);
  tpot_ = new ChartView(this);
  position_ = new ChartView(this);
  notes_ = new QLabel(this);
  notes_->setWordWrap(true);
  notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* notes_area = new QScrollArea(this);
  notes_area->setWidget(notes_);
  notes_area->setWidgetResizable(true);
  notes_area->setFrameShape(QFrame::NoFrame);
  notes_area->setMaximumHeight(60);
  auto* top = new QWidget(this);
  auto* tl = new QHBoxLayout(top);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(speedup_);
  tl->addWidget(tpot_);
  table_ = new QTableWidget(this);
  table_->setColumnCount(9);
  table_->setHorizontalHeaderLabels({"drafter", "k", "TPOT p95 ms", "speed-up p95", "speed-up mean", "acceptance",
                                     "mean accepted length", "draft share", "variant"});
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  QFont tf = table_->font();
  tf.setPointSizeF(tf.pointSizeF() * 0.9);
  table_->setFont(tf);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* bottom = new QSplitter(Qt::Horizontal, this);
  bottom->addWidget(position_);
  bottom->addWidget(table_);
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(notes_area);
  lay->addWidget(split, 1);
}

QChart* SpeculativeView::speedupChart() const { return speedup_->chart(); }
QChart* SpeculativeView::tpotChart() const { return tpot_->chart(); }
QChart* SpeculativeView::positionChart() const { return position_->chart(); }

namespace {

// Text next to points: one marker-less series per point whose label is the text (Qt 6.4 labels a
// point with its coordinates only), kept out of the legend.
void point_labels(QChart* c, QAbstractAxis* ax, QAbstractAxis* ay, const std::vector<std::pair<QPointF, QString>>& labels,
                  const QColor& color) {
  for (const auto& [p, text] : labels) {
    auto* s = new QScatterSeries();
    s->setName(text);
    s->setMarkerSize(1);
    s->setColor(Qt::transparent);
    s->setBorderColor(Qt::transparent);
    s->append(p);
    QString fmt = text;
    s->setPointLabelsFormat(fmt.replace("@", "(at)"));  // '@' would start a coordinate tag
    s->setPointLabelsVisible(true);
    s->setPointLabelsClipping(false);
    s->setPointLabelsColor(color);
    QFont f = s->pointLabelsFont();
    f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
    s->setPointLabelsFont(f);
    attach(c, s, ax, ay);
    for (QLegendMarker* m : c->legend()->markers(s)) m->setVisible(false);
  }
}

// A horizontal dashed line across the x axis's range.
QLineSeries* reference_line(QChart* c, QValueAxis* ax, QAbstractAxis* ay, double y, const QString& name, const QColor& color) {
  auto* ls = new QLineSeries();
  ls->setName(name);
  QPen pen(color);
  pen.setWidthF(1.5);
  pen.setStyle(Qt::DashLine);
  ls->setPen(pen);
  ls->append(ax->min(), y);
  ls->append(ax->max(), y);
  attach(c, ls, ax, ay);
  return ls;
}

// An axis of whole numbers from lo to hi (draft tokens, draft positions), half a step of margin.
QValueAxis* count_axis(const QString& title, int64_t lo, int64_t hi) {
  auto* a = new QValueAxis();
  a->setTitleText(title);
  const int64_t step = std::max<int64_t>(1, (hi - lo + 11) / 12);
  a->setRange(static_cast<double>(lo) - 0.5 * static_cast<double>(step), static_cast<double>(hi) + 0.5 * static_cast<double>(step));
  a->setTickType(QValueAxis::TicksDynamic);
  a->setTickAnchor(0);
  a->setTickInterval(static_cast<double>(step));
  a->setLabelFormat("%.0f");
  return a;
}

}  // namespace

void SpeculativeView::refresh(const Selection& s) {
  data_ = {};
  QChart* sc = fresh_chart(speedup_, "Speed-up against acceptance rate");
  QChart* tc = fresh_chart(tpot_, "TPOT p95 against draft tokens k");
  QChart* pc = fresh_chart(position_, "Acceptance by draft position");
  table_->clearContents();
  table_->setRowCount(0);
  if (!s.db || s.runs.empty()) {
    for (QChart* c : {sc, tc, pc}) c->setTitle(c->title() + ": " + nothing_selected(s));
    notes_->clear();
    return;
  }
  data_ = reports::speculative(*s.db, s.runs);
  if (data_.empty()) {
    for (QChart* c : {sc, tc, pc}) c->setTitle(c->title() + ": no speculative data in the selected runs");
    QStringList notes{"No speculative data in the selected runs: this view shows decoders run with a drafter "
                      "(variants.speculative other than off, schema 10) beside the same build without one."};
    for (const auto& u : data_.unplotted) notes << q(u).toHtmlEscaped();
    notes_->setText(notes.join("<br>"));
    return;
  }
  constexpr size_t kMaxSeries = 16;
  const size_t n = std::min(data_.series.size(), kMaxSeries);
  // Speed-up against acceptance: a line per drafter through its k.
  {
    sc->setTitle("Speed-up (off variant's mean TPOT / this) against acceptance rate");
    double y0 = 1, y1 = 1;
    for (size_t i = 0; i < n; ++i)
      for (const auto& p : data_.series[i].points)
        if (p.speedup && p.acceptance) y0 = std::min(y0, *p.speedup), y1 = std::max(y1, *p.speedup);
    const auto [lo, hi] = padded(y0, y1, 0.12);
    auto* ax = value_axis("acceptance rate", 0, 1);
    auto* ay = value_axis("speed-up (x)", std::max(0.0, lo), hi);
    sc->addAxis(ax, Qt::AlignBottom);
    sc->addAxis(ay, Qt::AlignLeft);
    reference_line(sc, ax, ay, 1.0, "1.0x = no gain", QColor("#555555"));
    for (size_t i = 0; i < n; ++i) {
      const auto& ss = data_.series[i];
      std::vector<QPointF> pts;
      std::vector<QString> tips;
      for (const auto& p : ss.points)
        if (p.speedup && p.acceptance) {
          pts.emplace_back(*p.acceptance, *p.speedup);
          tips.push_back(q(ss.name + "\n" + p.summary()));
        }
      if (!pts.empty()) hover_tips(this, serving_line(sc, ax, ay, q(ss.name), series_color(i), false, pts), tips, this);
    }
    // Each point labelled with its k where the label has room (every point's hover text names it).
    for (const auto& [i, k] : data_.speedup_labels(n, 0.09 * (ax->max() - ax->min()), 0.05 * (ay->max() - ay->min()))) {
      const auto& p = data_.series[i].points[k];
      point_labels(sc, ax, ay, {{QPointF(*p.acceptance, *p.speedup), q(p.k_text())}}, series_color(i).darker(130));
    }
  }
  // TPOT p95 against k: a line per drafter, each build's off variant dashed, the lowest marked.
  {
    tc->setTitle("TPOT p95 against draft tokens k (dashed: speculation off)");
    int64_t k0 = INT64_MAX, k1 = 0;
    double y1 = 0;
    for (size_t i = 0; i < n; ++i)
      for (const auto& p : data_.series[i].points)
        if (p.k && p.tpot_p95_ms) k0 = std::min(k0, *p.k), k1 = std::max(k1, *p.k), y1 = std::max(y1, *p.tpot_p95_ms);
    for (const auto& b : data_.baselines)
      if (b.tpot_p95_ms) y1 = std::max(y1, *b.tpot_p95_ms);
    if (k1 == 0 || !(y1 > 0)) {
      tc->setTitle("TPOT p95 against draft tokens k: not measured (see the notes)");
    } else {
      auto* ax = count_axis("draft tokens per verification (k)", k0, k1);
      auto* ay = value_axis("TPOT p95 (ms)", 0, y1 * 1.12);
      tc->addAxis(ax, Qt::AlignBottom);
      tc->addAxis(ay, Qt::AlignLeft);
      for (size_t bi = 0; bi < data_.baselines.size(); ++bi) {
        const auto& b = data_.baselines[bi];
        if (!b.tpot_p95_ms) continue;
        const QString name = run_prefix(s, b.v.run_id) + "off" + (data_.several_builds ? " (" + q(b.build) + ")" : QString()) +
                             QString(": %1 ms").arg(num(*b.tpot_p95_ms));
        hover_tips(this, reference_line(tc, ax, ay, *b.tpot_p95_ms, name, QColor(bi ? "#999999" : "#555555")),
                   {name, name}, this);
      }
      for (size_t i = 0; i < n; ++i) {
        const auto& ss = data_.series[i];
        std::vector<QPointF> pts;
        std::vector<QString> tips;
        for (const auto& p : ss.points)
          if (p.k && p.tpot_p95_ms) {
            pts.emplace_back(static_cast<double>(*p.k), *p.tpot_p95_ms);
            tips.push_back(q(ss.name + "\n" + p.summary()));
          }
        if (!pts.empty()) hover_tips(this, serving_line(tc, ax, ay, q(ss.name), series_color(i), false, pts), tips, this);
      }
      auto* best = new QScatterSeries();
      best->setName("lowest TPOT p95");
      best->setMarkerShape(QScatterSeries::MarkerShapeStar);
      best->setMarkerSize(18);
      best->setColor(QColor("#2ca02c"));
      best->setBorderColor(QColor("#1b5e20"));
      std::vector<QString> tips;
      for (const auto& b : data_.best) {
        const auto& p = data_.at(b);
        if (!p.k || b.series >= n) continue;
        best->append(static_cast<double>(*p.k), *p.tpot_p95_ms);
        tips.push_back(q(b.text));  // the notes say it too
      }
      attach(tc, best, ax, ay);
      hover_tips(this, best, tips, this);
    }
  }
  // Acceptance by draft position at each drafter's best k.
  {
    pc->setTitle("Acceptance by draft position at each drafter's lowest-TPOT-p95 k");
    size_t positions = 0;
    for (size_t i = 0; i < n; ++i)
      if (const auto* p = data_.series[i].best()) positions = std::max(positions, p->by_position.size());
    if (positions == 0) {
      pc->setTitle("Acceptance by draft position: not stored (see the notes)");
    } else {
      auto* ax = count_axis("draft position (1 = the first drafted token)", 1, static_cast<int64_t>(positions));
      auto* ay = value_axis("acceptance rate", 0, 1);
      pc->addAxis(ax, Qt::AlignBottom);
      pc->addAxis(ay, Qt::AlignLeft);
      for (size_t i = 0; i < n; ++i) {
        const auto& ss = data_.series[i];
        const auto* p = ss.best();
        if (!p || p->by_position.empty()) continue;
        std::vector<QPointF> pts;
        std::vector<QString> tips;
        for (size_t k = 0; k < p->by_position.size(); ++k)
          if (const auto r = p->by_position[k]) {
            pts.emplace_back(static_cast<double>(k + 1), *r);
            tips.push_back(QString("%1 %2: position %3 accepted %4").arg(q(ss.name), q(p->k_text())).arg(k + 1).arg(num(*r)));
          }
        if (!pts.empty())
          hover_tips(this, serving_line(pc, ax, ay, q(ss.name + " " + p->k_text()), series_color(i), false, pts), tips, this);
      }
    }
  }
  // The top charts' legends on the right (a row below would cut their names short), the
  // position chart's below (it has the width).
  for (QChart* c : {sc, tc, pc}) {
    qsizetype longest = 0;
    for (auto* sr : c->series())
      for (const QLegendMarker* m : c->legend()->markers(sr))
        if (m->isVisible()) longest = std::max(longest, sr->name().size());
    QFont f = c->legend()->font();
    f.setPointSizeF(std::max(6.0, f.pointSizeF() * (longest > 20 ? 0.75 : 0.85)));
    c->legend()->setFont(f);
  }
  pc->legend()->setAlignment(Qt::AlignBottom);
  // The rows: each run's off variants, then its drafters by k.
  for (int64_t run : s.runs) {
    auto add = [&](const QString& drafter, const QString& k, const QString& tip, const reports::SpecPoint* p,
                   const reports::Variant& v, const std::optional<double>& tpot_p95, bool best) {
      const int r = table_->rowCount();
      table_->insertRow(r);
      const QString spec_why = p ? q(p->reason.empty() ? std::string("not measured (no reason recorded)") : p->reason)
                                 : q(v.text_of("spec_reason").empty() ? std::string("speculative off") : v.text_of("spec_reason"));
      const QString up_why = p ? q(p->speedup_reason) : QString("the baseline (speculative off)");
      auto val = [&](const std::optional<double>& x, const QString& why, const QString& unit = {}, double scale = 1,
                     int digits = 3) { return x ? item(q(reports::fmt_num(*x * scale, digits)) + unit, tip) : item("—", why); };
      const QString name = run_prefix(s, run) + drafter;
      QList<QTableWidgetItem*> cells{item(name, tip), item(k, tip),
                                     val(tpot_p95, "TPOT p95 not measured", {}, 1, 4),
                                     p ? val(p->speedup_p95, up_why, "x") : item("baseline", up_why),
                                     p ? val(p->speedup, up_why, "x") : item("baseline", up_why),
                                     val(p ? p->acceptance : std::nullopt, spec_why),
                                     val(p ? p->mean_accepted_length : std::nullopt, spec_why),
                                     val(p ? p->draft_share : std::nullopt, spec_why, " %", 100),
                                     item(q(reports::compact_label(v.label)) + (best ? " (lowest TPOT p95)" : ""), tip)};
      for (int c = 0; c < cells.size(); ++c) {
        if (best) {
          QFont f = cells[c]->font();
          f.setBold(true);
          cells[c]->setFont(f);
          cells[c]->setBackground(QColor("#eef6ee"));
        }
        table_->setItem(r, c, cells[c]);
      }
    };
    for (const auto& b : data_.baselines)
      if (b.v.run_id == run)
        add(data_.several_builds ? "off (" + q(b.build) + ")" : QString("off"), "—", q(b.v.label), nullptr, b.v, b.tpot_p95_ms, false);
    for (size_t si = 0; si < data_.series.size(); ++si) {
      const auto& ss = data_.series[si];
      if (ss.run_id != run) continue;
      for (size_t pi = 0; pi < ss.points.size(); ++pi) {
        const auto& p = ss.points[pi];
        const bool best = std::any_of(data_.best.begin(), data_.best.end(),
                                      [&](const reports::SpecBest& b) { return b.series == si && b.point == pi; });
        QString name = q(ss.name);
        if (s.runs.size() > 1) name = name.mid(run_prefix(s, run).size());  // the row adds it back
        add(name, p.k ? QString::number(*p.k) : QString("—"), q(ss.name + "\n" + p.summary()), &p, p.v, p.tpot_p95_ms, best);
      }
    }
  }
  table_->resizeColumnsToContents();
  QStringList notes;
  for (const auto& l : data_.notes()) notes << q(l).toHtmlEscaped();
  if (data_.series.size() > n) notes << QString("The charts show the first %1 of %2 series.").arg(n).arg(data_.series.size());
  notes_->setText(notes.join("<br>"));
}

// ---- compare --------------------------------------------------------------------------------

}  // namespace cibench::gui
