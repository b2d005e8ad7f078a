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

#include "reports/analysis/labels.h"
#include "reports/render/svg.h"

#include "gui/chart_kit.h"

namespace cibench::gui {

TradeoffView::TradeoffView(QWidget* parent) : View(parent) {
  x_ = new QComboBox(this);
  y_ = new QComboBox(this);
  for (const auto& a : reports::x_axes()) x_->addItem(q(a.title()), q(a.key));
  for (const auto& a : reports::y_axes()) y_->addItem(q(a.title()), q(a.key));
  floor_on_ = new QCheckBox("quality floor", this);
  floor_ = new QDoubleSpinBox(this);
  floor_->setDecimals(4);
  floor_->setRange(-1e9, 1e9);
  floor_->setSingleStep(0.005);
  floor_->setKeyboardTracking(false);
  floor_src_ = new QLabel(this);
  floor_src_->setStyleSheet("color: #666");
  // Under the controls, wrapped: the floors of several scenarios make a long line, which must
  // not widen the window beyond the screen.
  floor_src_->setWordWrap(true);
  floor_src_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* reset = new QPushButton("Scenario floor", this);
  reset->setToolTip("Go back to the floor written in the scenario");
  auto* controls = new QHBoxLayout();
  controls->addWidget(new QLabel("x:", this));
  controls->addWidget(x_);
  controls->addWidget(new QLabel("y:", this));
  controls->addWidget(y_);
  controls->addSpacing(12);
  controls->addWidget(floor_on_);
  controls->addWidget(floor_);
  controls->addWidget(reset);
  controls->addStretch(1);

  view_ = new ChartView(this);
  frontier_ = new QListWidget(this);
  frontier_->setMaximumWidth(290);
  frontier_->setWordWrap(true);
  frontier_->setAlternatingRowColors(true);
  unplotted_ = new QLabel(this);
  unplotted_->setWordWrap(true);
  unplotted_->setStyleSheet("color: #666");
  unplotted_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  unplotted_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Many unplotted variants scroll instead of pushing the frontier list off the panel.
  auto* unplotted_scroll = unplotted_area_ = new QScrollArea(this);
  unplotted_scroll->setWidget(unplotted_);
  unplotted_scroll->setWidgetResizable(true);
  unplotted_scroll->setFrameShape(QFrame::NoFrame);
  unplotted_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* side = new QVBoxLayout();
  side->addWidget(new QLabel("<b>Pareto frontier</b> (above the floor)", this));
  side->addWidget(frontier_, 2);
  side->addWidget(unplotted_scroll, 1);
  auto* sidew = new QWidget(this);
  sidew->setLayout(side);
  sidew->setMaximumWidth(300);
  auto* body = new QHBoxLayout();
  body->addWidget(view_, 1);
  body->addWidget(sidew);
  auto* lay = new QVBoxLayout(this);
  lay->addLayout(controls);
  lay->addWidget(floor_src_);
  lay->addLayout(body, 1);

  connect(x_, &QComboBox::currentIndexChanged, this, [this] { axesChanged(); });
  connect(y_, &QComboBox::currentIndexChanged, this, [this] {
    user_floor_ = false;  // a floor belongs to one y axis
    axesChanged();
  });
  connect(floor_, &QDoubleSpinBox::valueChanged, this, [this] {
    user_floor_ = true;
    floor_on_->setChecked(true);
    rebuild();
  });
  connect(floor_on_, &QCheckBox::toggled, this, [this] {
    user_floor_ = true;
    rebuild();
  });
  connect(reset, &QPushButton::clicked, this, [this] {
    user_floor_ = false;
    rebuild();
  });
  connect(frontier_, &QListWidget::itemClicked, this, [this](QListWidgetItem* it) {
    const qint64 id = it->data(Qt::UserRole).toLongLong();
    // Later: the receiver rebuilds this list while its click is still being delivered.
    QTimer::singleShot(0, this, [this, id] { emit variantClicked(id, false); });
  });
}

QChart* TradeoffView::chart() const { return view_->chart(); }

void TradeoffView::refresh(const Selection& s) {
  const bool runs_changed = s.runs != sel_.runs || s.db != sel_.db;
  sel_ = s;
  if (runs_changed && s.db && !s.runs.empty()) {
    // New runs: start from the axes that have data.
    const auto [dx, dy] = reports::default_axes(*s.db, s.runs);
    QSignalBlocker bx(x_), by(y_);
    x_->setCurrentIndex(std::max(0, x_->findData(q(dx))));
    y_->setCurrentIndex(std::max(0, y_->findData(q(dy))));
    user_floor_ = false;
  }
  rebuild();
}

void TradeoffView::axesChanged() { rebuild(); }

const reports::TradeoffPoint* TradeoffView::pointAt(QXYSeries* series, const QPointF& p) const {
  auto it = series_points_.find(series);
  if (it == series_points_.end()) return nullptr;
  const reports::TradeoffPoint* best = nullptr;
  double best_d = INFINITY;
  const auto* ax = qobject_cast<QValueAxis*>(chart()->axes(Qt::Horizontal).value(0));
  const auto* ay = qobject_cast<QValueAxis*>(chart()->axes(Qt::Vertical).value(0));
  const double sx = ax ? std::max(ax->max() - ax->min(), 1e-12) : 1, sy = ay ? std::max(ay->max() - ay->min(), 1e-12) : 1;
  for (size_t i : it->second) {
    const auto& tp = data_.points[i];
    const double d = std::hypot((tp.x - p.x()) / sx, (tp.y - p.y()) / sy);
    if (d < best_d) best_d = d, best = &tp;
  }
  return best;
}

QString TradeoffView::tooltipFor(const reports::TradeoffPoint& p) const {
  QString t = QString("<b>%1</b><br>%2: %3<br>%4: %5<br>%6%7")
                  .arg((run_prefix(sel_, p.v.run_id) + q(p.v.short_name())).toHtmlEscaped(), q(data_.x.title()),
                       num(p.x), q(data_.y.title()), num(p.y),
                       p.on_frontier ? QString("on the Pareto frontier<br>")
                                     : p.meets_floor ? QString() : QString("below the quality floor<br>"),
                       numbers_.config(p.v).toHtmlEscaped().replace("\n", "<br>"));
  return t;
}

std::vector<std::pair<int64_t, QPoint>> TradeoffView::markerPositions(const QWidget* in) const {
  std::vector<std::pair<int64_t, QPoint>> out;
  QChart* c = chart();
  if (c->plotArea().isEmpty()) return out;
  for (const auto& [series, idx] : series_points_) {
    if (series->name() == "selected") continue;
    for (size_t i : idx) {
      const auto& p = data_.points[i];
      const QPoint at = view_->mapFromScene(c->mapToScene(c->mapToPosition(QPointF(p.x, p.y), series)));
      out.emplace_back(p.v.variant_id, view_->viewport()->mapTo(in, at));
    }
  }
  return out;
}

void TradeoffView::rebuild() {
  series_points_.clear();
  frontier_->clear();
  groups_.clear();
  QChart* c = fresh_chart(view_, "Trade-off");
  if (!sel_.db || sel_.runs.empty()) {
    data_ = {};
    numbers_ = {};
    c->setTitle("Trade-off: " + nothing_selected(sel_));
    unplotted_->clear();
    unplotted_area_->hide();
    floor_src_->clear();
    return;
  }
  const std::string xk = x_->currentData().toString().toStdString();
  const std::string yk = y_->currentData().toString().toStdString();
  // Runs of different scenarios (or models) answer different questions under different floors:
  // each (scenario, model) is judged on its own floor, with its own frontier.
  std::vector<std::pair<std::string, std::string>> keys;
  for (int64_t id : sel_.runs) {
    const reports::RunInfo info = sel_.db->run(id);
    const std::pair<std::string, std::string> key{info.scenario_name, info.model_spec};
    auto at = std::find(keys.begin(), keys.end(), key);
    if (at == keys.end()) {
      keys.push_back(key);
      groups_.push_back({});
      at = keys.end() - 1;
    }
    groups_[static_cast<size_t>(at - keys.begin())].runs.push_back(id);
  }
  std::optional<double> floor;
  if (user_floor_) floor = floor_on_->isChecked() ? std::optional<double>(floor_->value()) : std::nullopt;
  data_ = {};
  for (size_t g = 0; g < groups_.size(); ++g) {
    TradeoffGroup& gr = groups_[g];
    const auto& [scenario, model] = keys[g];
    bool shared_name = false;
    for (size_t o = 0; o < keys.size(); ++o) shared_name |= o != g && keys[o].first == scenario;
    gr.name = q(scenario.empty() ? "(no scenario)" : scenario) + (shared_name ? q(", " + model) : QString());
    gr.t = user_floor_ ? reports::tradeoff(*sel_.db, gr.runs, xk, yk, floor, false) : reports::tradeoff(*sel_.db, gr.runs, xk, yk);
    gr.offset = data_.points.size();
    if (g == 0) {
      data_.x = gr.t.x, data_.y = gr.t.y;
      data_.floor = gr.t.floor, data_.floor_source = gr.t.floor_source;
    }
    if (!data_.floor && gr.t.floor) data_.floor = gr.t.floor, data_.floor_source = gr.t.floor_source;
    data_.per_step |= gr.t.per_step;
    data_.points.insert(data_.points.end(), gr.t.points.begin(), gr.t.points.end());
    for (size_t i : gr.t.frontier) data_.frontier.push_back(gr.offset + i);
    data_.unplotted.insert(data_.unplotted.end(), gr.t.unplotted.begin(), gr.t.unplotted.end());
  }
  // Names carry the scenario when several are selected; shapes tell apart the groups with points.
  const bool many_groups = groups_.size() > 1;
  size_t plotted_groups = 0;
  for (const auto& g : groups_) plotted_groups += !g.t.points.empty();
  const bool shape_by_group = plotted_groups > 1;
  numbers_ = VariantNumbers(sel_.db->variants(sel_.runs));
  {
    QSignalBlocker b1(floor_), b2(floor_on_);
    floor_on_->setChecked(data_.floor.has_value());
    if (data_.floor) floor_->setValue(*data_.floor);
    else if (!user_floor_ && !data_.points.empty())
      floor_->setValue(std::min_element(data_.points.begin(), data_.points.end(),
                                        [](const auto& a, const auto& b) { return a.y < b.y; })->y);
  }
  if (many_groups && !user_floor_) {
    QStringList floors;
    for (const auto& g : groups_)
      floors << g.name + ": " + (g.t.floor ? num(*g.t.floor) + " (" + q(g.t.floor_source) + ")" : QString("no floor"));
    floor_src_->setText("Quality floor per scenario: " + floors.join("; "));
  } else {
    floor_src_->setText(data_.floor ? QString("Quality floor %1 (%2)").arg(num(*data_.floor), q(data_.floor_source))
                        : user_floor_ ? QString("Quality floor off")
                                      : QString("No quality floor in the scenario for this y axis"));
  }
  c->setTitle(QString("Trade-off: %1 against %2").arg(q(data_.y.label), q(data_.x.label)));

  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& p : data_.points) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  for (const auto& g : groups_)
    if (g.t.floor && !g.t.points.empty()) y0 = std::min(y0, *g.t.floor), y1 = std::max(y1, *g.t.floor);
  if (data_.points.empty()) x0 = 0, x1 = 1, y0 = data_.floor.value_or(0), y1 = y0 + 1;
  const auto [xa, xb] = padded(x0, x1);
  const auto [ya, yb] = padded(y0, y1);
  // Latencies, throughputs and accuracies are never negative: neither is their axis.
  auto* ax = value_axis(q(data_.x.title()), x0 >= 0 ? std::max(0.0, xa) : xa, xb);
  auto* ay = value_axis(q(data_.y.title()), y0 >= 0 ? std::max(0.0, ya) : ya, yb);
  if (x0 >= 0 && ax->min() < 0) ax->setMin(0);
  if (y0 >= 0 && ay->min() < 0) ay->setMin(0);
  c->addAxis(ax, Qt::AlignBottom);
  c->addAxis(ay, Qt::AlignLeft);

  // The markers' legend entries are hidden: the legend explains colour (format), shape (scenario)
  // and fill (cache) once each, with empty series of their own.
  std::set<QAbstractSeries*> hidden;
  auto hide_in_legend = [c, &hidden](QAbstractSeries* s) {
    for (QLegendMarker* m : c->legend()->markers(s)) m->setVisible(false);
    hidden.insert(s);
  };
  // Each group's frontier line under the markers, then its floor over its own points' x range.
  // One group: a black dashed frontier and a red dotted floor, each in the legend. Several: each
  // group's lines in a colour of its own (frontier dashed, floor dotted), hidden in the legend,
  // which has one entry per group naming the scenario and what its lines are.
  static const char* kGroupLineColors[] = {"#222222", "#6a3d9a", "#b15928", "#1b7837", "#08519c", "#7f0000"};
  std::vector<std::pair<QString, QPen>> line_entries;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    const QString suffix = many_groups ? ": " + g.name : QString();
    const QColor group_color(kGroupLineColors[gi % std::size(kGroupLineColors)]);
    QStringList drawn;
    QPen entry_pen;
    if (!g.t.frontier.empty()) {
      auto* f = new QLineSeries();
      f->setName("Pareto frontier" + suffix);
      QPen pen(many_groups ? group_color : QColor("#222222"));
      pen.setStyle(Qt::DashLine);
      pen.setWidthF(1.5);
      f->setPen(pen);
      for (size_t i : g.t.frontier) f->append(g.t.points[i].x, g.t.points[i].y);
      attach(c, f, ax, ay);
      if (many_groups) hide_in_legend(f);
      drawn << "frontier";
      entry_pen = pen;
    }
    if (g.t.floor && (!g.t.points.empty() || !many_groups)) {
      auto* fl = new QLineSeries();
      fl->setName(QString("quality floor %1").arg(num(*g.t.floor)) + suffix);
      QPen pen(many_groups ? group_color : QColor("#d62728"));
      pen.setWidthF(1.5);
      pen.setStyle(Qt::DotLine);
      fl->setPen(pen);
      double lo = ax->min(), hi = ax->max();
      if (many_groups) {
        lo = INFINITY, hi = -INFINITY;
        for (const auto& p : g.t.points) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
        const double d = (ax->max() - ax->min()) * 0.03;
        lo = std::max(ax->min(), lo - d), hi = std::min(ax->max(), hi + d);
      }
      fl->append(lo, *g.t.floor);
      fl->append(hi, *g.t.floor);
      attach(c, fl, ax, ay);
      if (many_groups) hide_in_legend(fl);
      drawn << QString("floor %1").arg(num(*g.t.floor));
      if (drawn.size() == 1) entry_pen = pen;
    }
    if (many_groups && !drawn.isEmpty()) line_entries.emplace_back(g.name + ": " + drawn.join(", "), entry_pen);
  }
  // Hover shows a point's configuration; a click selects its variant (Ctrl adds or removes it).
  auto interactive = [this](QScatterSeries* s) {
    connect(s, &QXYSeries::hovered, this, [this, s](const QPointF& pt, bool on) {
      if (!on) {
        QToolTip::hideText();
        return;
      }
      if (const auto* tp = pointAt(s, pt)) QToolTip::showText(QCursor::pos(), tooltipFor(*tp), view_);
    });
    connect(s, &QXYSeries::clicked, this, [this, s](const QPointF& pt) {
      const auto* tp = pointAt(s, pt);
      if (!tp) return;
      const qint64 id = tp->v.variant_id;
      const bool add = view_->pressModifiers() & Qt::ControlModifier;
      // Emitted once the mouse release has been delivered: the receiver rebuilds this chart,
      // and deleting the series under the mouse while Qt is still delivering the release to
      // its item crashes inside QGraphicsScene.
      QTimer::singleShot(0, this, [this, id, add] { emit variantClicked(id, add); });
    });
  };
  // Colours: the report's colour of each format, unless another format shown has it already;
  // then the first unused colour of a 20-colour palette (no repeats up to 20 formats).
  static const char* kFormatPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                                         "#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39",
                                         "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#d62728",
                                         "#636363", "#f7b6d2"};
  // The colour key of each point: its format when the points hold several formats, otherwise what
  // varies between them (a speculative run's drafter and k, a batching sweep's batching), so a
  // run of one format is not one colour under one name (reports::colour_keys).
  std::vector<const reports::Variant*> shown;
  for (const auto& p : data_.points) shown.push_back(&p.v);
  const std::vector<std::string> key_of = reports::colour_keys(shown);
  std::vector<std::string> formats;  // in the legend: those with a point above the floor
  std::map<std::string, QColor> colour;
  std::set<QRgb> used;
  for (size_t i = 0; i < data_.points.size(); ++i) {
    const auto& p = data_.points[i];
    const std::string& key = key_of[i];
    if (p.meets_floor && std::find(formats.begin(), formats.end(), key) == formats.end()) formats.push_back(key);
    if (colour.count(key)) continue;
    QColor col(key == p.v.format ? q(reports::format_color(p.v.format)) : QString(kFormatPalette[colour.size() % std::size(kFormatPalette)]));
    for (size_t j = 0; used.count(col.rgb()) && j < std::size(kFormatPalette); ++j) col = QColor(kFormatPalette[j]);
    used.insert(col.rgb());
    colour[key] = col;
  }
  static const QScatterSeries::MarkerShape kGroupShapes[] = {
      QScatterSeries::MarkerShapeCircle, QScatterSeries::MarkerShapeRectangle, QScatterSeries::MarkerShapeTriangle,
      QScatterSeries::MarkerShapeRotatedRectangle, QScatterSeries::MarkerShapeStar, QScatterSeries::MarkerShapePentagon};
  auto group_shape = [](size_t g) { return kGroupShapes[g % std::size(kGroupShapes)]; };
  // One scatter series per (group, format, sparsity, cache) above the floor; grey ones below.
  // One group: the shape is the sparsity's; several: the group's. Cache on: hollow.
  std::map<std::string, QScatterSeries*> series;
  bool any_cache = false, any_below = false;
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t k = 0; k < groups_[g].t.points.size(); ++k) {
      const size_t i = groups_[g].offset + k;
      const auto& p = data_.points[i];
      const bool cache = p.v.get("cache_enabled").value_or(0) > 0;
      any_cache |= cache;
      any_below |= !p.meets_floor;
      const std::string sp = p.v.sparsity && *p.v.sparsity > 0 ? " sparsity " + reports::fmt_num(*p.v.sparsity, 3) : "";
      const std::string name = (p.meets_floor ? key_of[i] : "below floor") + sp + (cache ? " cache" : "") +
                               (many_groups ? ": " + groups_[g].name.toStdString() : "");
      QScatterSeries*& s = series[std::to_string(g) + "\n" + name];
      if (!s) {
        s = new QScatterSeries();
        s->setName(q(name));
        s->setMarkerShape(shape_by_group ? group_shape(g) : shape_of(reports::sparsity_marker(p.v.sparsity)));
        s->setMarkerSize(13);
        const QColor col = p.meets_floor ? colour.at(key_of[i]) : QColor(reports::kBelowFloorColor);
        QPen border(cache ? col : QColor(p.meets_floor ? "#333333" : "#999999"));
        border.setWidthF(cache ? 2.5 : 1);
        s->setPen(border);
        s->setColor(cache ? QColor(Qt::transparent) : col);
        s->setBorderColor(border.color());
        attach(c, s, ax, ay);
        interactive(s);
        hide_in_legend(s);
      }
      s->append(p.x, p.y);
      series_points_[s].push_back(i);
    }
  // Legend-only entries: one per format colour, one per group shape, cache and below floor.
  auto legend_entry = [&](const QString& name, QScatterSeries::MarkerShape shape, const QColor& fill, const QColor& edge) {
    auto* s = new QScatterSeries();
    s->setName(name);
    s->setMarkerShape(shape);
    s->setMarkerSize(11);
    s->setColor(fill);
    s->setBorderColor(edge);
    attach(c, s, ax, ay);
  };
  for (const auto& f : formats) legend_entry(q(f), QScatterSeries::MarkerShapeCircle, colour.at(f), QColor("#333333"));
  // The shape is the sparsity's: one entry per shape of a sparse variant, naming its sparsities.
  if (!shape_by_group) {
    std::map<std::string, std::set<double>> sparse;  // marker -> the sparsities drawn with it
    for (const auto& p : data_.points)
      if (p.v.sparsity && *p.v.sparsity > 0) sparse[reports::sparsity_marker(p.v.sparsity)].insert(*p.v.sparsity);
    for (const char* marker : {"square", "triangle", "diamond", "star"}) {
      auto it = sparse.find(marker);
      if (it == sparse.end()) continue;
      QStringList values;
      for (double v : it->second) values << q(reports::fmt_num(v, 3));
      legend_entry("sparsity " + values.join(", "), shape_of(marker), QColor("#cccccc"), QColor("#333333"));
    }
  }
  if (shape_by_group)
    for (size_t g = 0; g < groups_.size(); ++g)
      if (!groups_[g].t.points.empty()) legend_entry(groups_[g].name, group_shape(g), QColor("#cccccc"), QColor("#333333"));
  if (any_cache) legend_entry("cache on (hollow)", QScatterSeries::MarkerShapeCircle, Qt::transparent, QColor("#333333"));
  if (any_below)
    legend_entry("below floor", QScatterSeries::MarkerShapeCircle, QColor(reports::kBelowFloorColor), QColor("#999999"));
  // Several groups: one entry per group for its frontier (dashed) and floor (dotted) in its
  // colour, drawn as its frontier: "chat: frontier, floor 0.95".
  for (const auto& [name, pen] : line_entries) {
    auto* s = new QLineSeries();
    s->setName(name);
    s->setPen(pen);
    attach(c, s, ax, ay);
  }
  // Selected variants: a ring around their markers.
  auto* selected = new QScatterSeries();
  selected->setName("selected");
  selected->setMarkerSize(22);
  selected->setColor(Qt::transparent);
  selected->setBorderColor(QColor("#000000"));
  QPen ring(QColor("#000000"));
  ring.setWidthF(2);
  selected->setPen(ring);
  for (size_t i = 0; i < data_.points.size(); ++i)
    if (sel_.variants.count(data_.points[i].v.variant_id)) {
      selected->append(data_.points[i].x, data_.points[i].y);
      series_points_[selected].push_back(i);
    }
  attach(c, selected, ax, ay);
  interactive(selected);  // the ring lies over its marker: hover and clicks land on it
  if (selected->count() == 0 || many_groups) hide_in_legend(selected);
  // Many entries or long ones (a scenario's frontier and floor): a smaller font, so that the
  // legend is not cut off.
  // (Counted on the series: a marker reads as hidden until the chart has been laid out.)
  int entries = 0;
  qsizetype longest = 0;
  for (QAbstractSeries* s : c->series())
    if (!hidden.count(s)) ++entries, longest = std::max(longest, s->name().size());
  fit_legend(c, entries, longest);

  for (const auto& g : groups_) {
    if (many_groups && !g.t.frontier.empty()) {
      auto* head = new QListWidgetItem(g.name);
      QFont f = head->font();
      f.setBold(true);
      head->setFont(f);
      head->setFlags(Qt::ItemIsEnabled);
      frontier_->addItem(head);
    }
    for (size_t k : g.t.frontier) {
      const auto& p = data_.points[g.offset + k];
      auto* it = new QListWidgetItem(QString("%1\n    x = %2 %3, y = %4 %5")
                                         .arg(run_prefix(sel_, p.v.run_id) + q(p.v.short_name()), num(p.x), q(data_.x.unit),
                                              num(p.y), q(data_.y.unit))
                                         .trimmed());
      it->setData(Qt::UserRole, QVariant::fromValue<qint64>(p.v.variant_id));
      it->setToolTip(numbers_.config(p.v));
      frontier_->addItem(it);
      if (sel_.variants.count(p.v.variant_id)) it->setSelected(true);  // only once in the list
    }
  }
  // Not plotted: one line per reason naming the variants it applies to.
  std::vector<QString> reasons;
  std::map<QString, QStringList> who;
  for (const auto& [v, why] : data_.unplotted) {
    const QString r = q(why);
    if (!who.count(r)) reasons.push_back(r);
    who[r] << run_prefix(sel_, v.run_id) + q(v.short_name());
  }
  QStringList un;
  for (const auto& r : reasons) un << (who.at(r).join(", ") + ": " + r).toHtmlEscaped();
  unplotted_->setText(un.isEmpty() ? QString() : "<b>Not plotted</b><br>" + un.join("<br>"));
  unplotted_area_->setVisible(!un.isEmpty());
}

// ---- latency --------------------------------------------------------------------------------

}  // namespace cibench::gui
