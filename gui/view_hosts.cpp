// The hosts view (views.h HostsView): the same scenario's variants across host types, priced.
#include "gui/views.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "reports/render/svg.h"

#include "gui/chart_kit.h"

namespace cibench::gui {
namespace {

QString money(const std::optional<double>& v, const std::string& currency) {
  return v ? q(reports::fmt_num(*v, 4) + " " + currency) : QString("—");
}

}  // namespace

HostsView::HostsView(QWidget* parent) : View(parent) {
  scenario_ = new QComboBox(this);
  notes_ = new QLabel(this);
  notes_->setWordWrap(true);
  notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chart_ = new ChartView(this);
  table_ = new QTableWidget(this);
  table_->setColumnCount(10);
  table_->setHorizontalHeaderLabels({"rank", "host type", "price/h", "cheapest variant at the floor", "run", "rate priced",
                                     "p95 ms", "per 1k requests", "per 1M output tokens", "variants"});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel("scenario:", this));
  top->addWidget(scenario_, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(chart_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* lay = new QVBoxLayout(this);
  lay->addLayout(top);
  lay->addWidget(notes_);
  lay->addWidget(split, 1);
  connect(scenario_, &QComboBox::currentIndexChanged, this, [this] { draw(); });
}

QChart* HostsView::chart() const { return chart_->chart(); }

void HostsView::refresh(const Selection& s) {
  data_ = {};
  const QString keep = scenario_->currentText();
  {
    QSignalBlocker b(scenario_);
    scenario_->clear();
  }
  if (!s.db || s.runs.empty()) {
    fresh_chart(chart_, "Cost per answer against latency p95: " + nothing_selected(s));
    table_->setRowCount(0);
    notes_->clear();
    return;
  }
  data_ = reports::hosts(*s.db, s.runs);
  {
    QSignalBlocker b(scenario_);
    for (const auto& sc : data_.scenarios) scenario_->addItem(q(sc.scenario));
    const int at = scenario_->findText(keep);
    if (at >= 0) scenario_->setCurrentIndex(at);
  }
  draw();
}

void HostsView::draw() {
  QChart* c = fresh_chart(chart_, "Cost per answer against latency p95");
  table_->setRowCount(0);
  if (data_.empty()) {
    c->setTitle(c->title() + ": no priced host types for the selected runs");
    notes_->setText(
        "No host types with a price for the selected runs' scenarios: this view compares one scenario's variants "
        "across host types, from a store cibench fleet collect merged (runs.host_type with host_types' prices, "
        "schema 14).");
    return;
  }
  const int idx = std::max(0, scenario_->currentIndex());
  const reports::HostsScenario& sc = data_.scenarios[static_cast<size_t>(idx)];
  const std::string currency = sc.costs.empty() ? std::string() : sc.costs.front().currency;
  c->setTitle(q("Cost per 1k requests against latency p95: " + sc.scenario));
  notes_->setText(
      QString("%1 host types, %2 priced variants. Each priced at its knee (a stepped run) or its measured rate; "
              "grey: below the quality floor, missing the SLOs or invalid; dashed: the frontier (no variant both "
              "faster and cheaper).")
          .arg(sc.host_types())
          .arg(sc.costs.size()));
  // Axes over every priced point.
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& h : sc.costs)
    if (h.p95_ms && h.cost.per_thousand_requests) {
      x0 = std::min(x0, *h.p95_ms), x1 = std::max(x1, *h.p95_ms);
      y0 = std::min(y0, *h.cost.per_thousand_requests), y1 = std::max(y1, *h.cost.per_thousand_requests);
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  const auto [xl, xh] = padded(x0, x1, 0.1);
  const auto [yl, yh] = padded(y0, y1, 0.1);
  auto* ax = value_axis("latency p95 at the rate priced (ms)", std::max(0.0, xl), xh);
  auto* ay = value_axis(q("cost per 1k requests (" + currency + ")"), std::max(0.0, yl), yh);
  c->addAxis(ax, Qt::AlignBottom);
  c->addAxis(ay, Qt::AlignLeft);
  if (sc.frontier.size() > 1) {
    auto* f = new QLineSeries();
    f->setName("frontier");
    QPen pen(QColor("#222222"));
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(1.5);
    f->setPen(pen);
    for (size_t i : sc.frontier) f->append(*sc.costs[i].p95_ms, *sc.costs[i].cost.per_thousand_requests);
    attach(c, f, ax, ay);
  }
  std::map<std::string, QScatterSeries*> series;
  std::map<QScatterSeries*, std::vector<QString>> tips;
  size_t colours = 0;
  for (const auto& h : sc.costs) {
    if (!h.p95_ms || !h.cost.per_thousand_requests) continue;
    const bool ok = h.meets_floor && h.meets_slo && h.valid;
    const std::string key = ok ? h.host_type : "below floor, SLO missed or invalid";
    QScatterSeries*& s = series[key];
    if (!s) {
      s = new QScatterSeries();
      s->setName(q(key));
      s->setMarkerSize(12);
      const QColor col = ok ? series_color(colours++) : QColor(reports::kBelowFloorColor);
      s->setColor(col);
      s->setBorderColor(QColor(ok ? "#333333" : "#999999"));
      attach(c, s, ax, ay);
    }
    s->append(*h.p95_ms, *h.cost.per_thousand_requests);
    tips[s].push_back(q(h.host_type + ": " + h.label + " (run " + std::to_string(h.run_id) + ")\n" + h.cost.basis +
                        "\np95 " + reports::fmt_num(*h.p95_ms) + " ms\n" +
                        reports::fmt_num(*h.cost.per_thousand_requests, 4) + " " + currency + " per 1k requests" +
                        (h.cost.per_million_tokens
                             ? ", " + reports::fmt_num(*h.cost.per_million_tokens, 4) + " per 1M output tokens"
                             : std::string()) +
                        (ok ? "" : std::string("\n") + (!h.meets_floor ? "below the quality floor " : "") +
                                       (!h.meets_slo ? "SLO missed " : "") + (!h.valid ? "invalid" : ""))));
  }
  for (auto& [s, t] : tips) hover_tips(this, s, t, this);
  // The ranking.
  table_->setRowCount(static_cast<int>(sc.ranks.size()));
  int rank = 0;
  for (size_t r = 0; r < sc.ranks.size(); ++r) {
    const HostRank& h = sc.ranks[r];
    const int row = static_cast<int>(r);
    table_->setItem(row, 0, item(h.best ? QString::number(++rank) : QString("—")));
    table_->setItem(row, 1, item(q(h.host_type)));
    table_->setItem(row, 2, item(money(h.price_per_hour, h.currency)));
    table_->setItem(row, 9, item(QString::number(h.variants)));
    if (!h.best) {
      table_->setItem(row, 3, item(q(h.reason), q(h.reason)));
      for (int col : {4, 5, 6, 7, 8}) table_->setItem(row, col, item("—"));
      continue;
    }
    const HostCost& b = *h.best;
    table_->setItem(row, 3, item(q(reports::compact_label(b.label))));
    table_->setItem(row, 4, item(QString::number(b.run_id)));
    table_->setItem(row, 5, item(q(b.cost.basis)));
    table_->setItem(row, 6, item(b.p95_ms ? num(*b.p95_ms) : QString("—")));
    table_->setItem(row, 7, item(money(b.cost.per_thousand_requests, h.currency)));
    table_->setItem(row, 8, item(money(b.cost.per_million_tokens, h.currency), q(b.cost.reason)));
    if (rank == 1)
      for (int col = 0; col < table_->columnCount(); ++col)
        if (auto* it = table_->item(row, col)) {
          QFont f = it->font();
          f.setBold(true);
          it->setFont(f);
        }
  }
  table_->resizeColumnsToContents();
}

}  // namespace cibench::gui
