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

namespace cibench::gui {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }
QString num(double v) { return q(reports::fmt_num(v)); }

// 20 distinct line colours: the 16 curves a chart draws at most never share one.
const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
                          "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
QColor series_color(size_t i) { return QColor(kPalette[i % (sizeof kPalette / sizeof *kPalette)]); }

QScatterSeries::MarkerShape shape_of(const std::string& marker) {
  if (marker == "square") return QScatterSeries::MarkerShapeRectangle;
  if (marker == "triangle") return QScatterSeries::MarkerShapeTriangle;
  if (marker == "diamond") return QScatterSeries::MarkerShapeRotatedRectangle;
  if (marker == "star") return QScatterSeries::MarkerShapeStar;
  return QScatterSeries::MarkerShapeCircle;
}

QChart* fresh_chart(QChartView* v, const QString& title) {
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
std::pair<double, double> padded(double lo, double hi, double frac = 0.08) {
  if (!(hi > lo)) {
    const double d = std::max(std::fabs(lo) * 0.1, 1e-3);
    return {lo - d, hi + d};
  }
  const double d = (hi - lo) * frac;
  return {lo - d, hi + d};
}

QValueAxis* value_axis(const QString& title, double lo, double hi) {
  auto* a = new QValueAxis();
  a->setTitleText(title);
  a->setRange(lo, hi);
  a->setLabelFormat("%.6g");  // 10000 as 10000, not 1e+04
  a->applyNiceNumbers();
  return a;
}

// How many powers of `base` lie in [lo, hi]: the labelled ticks of a QLogValueAxis.
int powers_within(double base, double lo, double hi) {
  const double l = std::log(lo) / std::log(base), h = std::log(hi) / std::log(base);
  return static_cast<int>(std::floor(h + 1e-9) - std::ceil(l - 1e-9)) + 1;
}

// An axis for positive times from lo to hi (ms) with at least three labelled ticks: a QLogValueAxis
// labels the powers of its base only, so base 10 when three of them are in range (1, 10, 100
// ms), else base 2 (0.25, 0.5, 1 ms), else a linear axis (0.3, 0.4, 0.5 ms within a decade).
QAbstractAxis* time_axis(const QString& what, double lo, double hi) {
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

void attach(QChart* c, QAbstractSeries* s, QAbstractAxis* x, QAbstractAxis* y) {
  c->addSeries(s);
  s->attachAxis(x);
  s->attachAxis(y);
}

// Knee markers of a load sweep: filled diamonds where the knee was reached, hollow where every
// rate tried met the SLOs.
QScatterSeries* knee_series(const std::vector<QPointF>& marks, bool reached, const QString& name) {
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
void fit_legend(QChart* c, int entries, qsizetype longest) {
  if (entries <= 12 && longest <= 28) return;
  QFont f = c->legend()->font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * (entries > 24 ? 0.65 : entries > 16 ? 0.7 : 0.8)));
  c->legend()->setFont(f);
}

// What a view says when no run is selected: there is no database, it has no runs yet, or none
// is selected.
QString nothing_selected(const Selection& s) {
  if (!s.db) return "no database open";
  if (s.db->runs().empty()) return "no runs in this database yet";
  return "select one or more runs";
}

QString run_prefix(const Selection& s, int64_t run_id) {
  return s.runs.size() > 1 ? QString("run %1: ").arg(run_id) : QString();
}

QTableWidgetItem* item(const QString& text, const QString& tip = {}) {
  auto* it = new QTableWidgetItem(text);
  it->setFlags(it->flags() & ~Qt::ItemIsEditable);
  if (!tip.isEmpty()) it->setToolTip(tip);
  return it;
}

}  // namespace

// ---- export ---------------------------------------------------------------------------------

ChartView::ChartView(QWidget* parent) : QChartView(new QChart(), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(320, 220);
}

void ChartView::mousePressEvent(QMouseEvent* e) {
  press_modifiers_ = e->modifiers();
  QChartView::mousePressEvent(e);
}

void ChartView::contextMenuEvent(QContextMenuEvent* e) {
  QMenu m(this);
  QAction* png = m.addAction("Export PNG...");
  QAction* svg = m.addAction("Export SVG...");
  QAction* got = m.exec(e->globalPos());
  if (!got) return;
  const bool is_png = got == png;
  (void)svg;
  const QString path = QFileDialog::getSaveFileName(this, is_png ? "Export PNG" : "Export SVG",
                                                    chart()->title().isEmpty() ? "chart" : chart()->title(),
                                                    is_png ? "PNG image (*.png)" : "SVG image (*.svg)");
  if (path.isEmpty()) return;
  const QString err = export_chart(this, path.endsWith(is_png ? ".png" : ".svg") ? path : path + (is_png ? ".png" : ".svg"));
  if (!err.isEmpty()) QMessageBox::warning(this, "Export", err);
}

QString export_chart(QChartView* view, const QString& path, QSize size) {
  // The chart is laid out at the export size for the drawing, then given back its size on screen.
  QChart* chart = view->chart();
  const QRectF shown = chart->geometry();
  const bool svg = path.endsWith(".svg", Qt::CaseInsensitive);
  chart->setGeometry(QRectF(QPointF(0, 0), size));
  QString err;
  QSvgGenerator gen;
  QImage img(size, QImage::Format_ARGB32_Premultiplied);
  QPainter p;
  if (svg) {
    gen.setFileName(path);
    gen.setSize(size);
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle(chart->title());
    gen.setDescription("cibench-gui chart");
    if (!p.begin(&gen)) err = QString("%1: cannot write the SVG file").arg(path);
  } else {
    img.fill(Qt::white);
    if (!p.begin(&img)) err = QString("%1: cannot draw the image").arg(path);
  }
  if (err.isEmpty()) {
    p.setRenderHint(QPainter::Antialiasing);
    view->scene()->render(&p, QRectF(QPointF(0, 0), size), QRectF(QPointF(0, 0), size));
    p.end();
    if (!svg && !img.save(path)) err = QString("%1: cannot write the image (PNG needs a .png name)").arg(path);
  }
  chart->setGeometry(shown);
  return err;
}

// ---- variant numbers --------------------------------------------------------------------------

VariantNumbers::VariantNumbers(const std::vector<reports::Variant>& all) {
  for (const auto& v : all) {
    int64_t& n = variants_[v.run_id];
    n = std::max(n, v.variant_index + 1);
    int64_t& k = steps_[{v.run_id, v.variant_index}];
    k = std::max(k, v.step_index + 1);
  }
}

QString VariantNumbers::of(const reports::Variant& v) const {
  const auto n = variants_.find(v.run_id);
  const auto k = steps_.find({v.run_id, v.variant_index});
  const int64_t total = std::max(n == variants_.end() ? 0 : n->second, v.variant_index + 1);
  const int64_t steps = std::max(k == steps_.end() ? 0 : k->second, v.step_index + 1);
  QString s = QString("run %1, variant %2/%3").arg(v.run_id).arg(v.variant_index + 1).arg(total);
  if (steps > 1) s += QString(", step %1/%2").arg(v.step_index + 1).arg(steps);
  return s;
}

QString VariantNumbers::config(const reports::Variant& v) const {
  // config() opens with "run R, variant I[, step S]": replaced by of(v), which adds the totals.
  const QString c = q(v.config());
  const int nl = c.indexOf('\n');
  if (!c.startsWith("run ")) return of(v) + "\n" + c;
  return of(v) + (nl < 0 ? QString() : c.mid(nl));
}

// ---- trade-off --------------------------------------------------------------------------------

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
  std::vector<std::string> formats;  // in the legend: those with a point above the floor
  std::map<std::string, QColor> colour;
  std::set<QRgb> used;
  for (const auto& p : data_.points) {
    if (p.meets_floor && std::find(formats.begin(), formats.end(), p.v.format) == formats.end())
      formats.push_back(p.v.format);
    if (colour.count(p.v.format)) continue;
    QColor col(q(reports::format_color(p.v.format)));
    for (size_t i = 0; used.count(col.rgb()) && i < std::size(kFormatPalette); ++i) col = QColor(kFormatPalette[i]);
    used.insert(col.rgb());
    colour[p.v.format] = col;
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
      const std::string name = (p.meets_floor ? p.v.format : "below floor") + sp + (cache ? " cache" : "") +
                               (many_groups ? ": " + groups_[g].name.toStdString() : "");
      QScatterSeries*& s = series[std::to_string(g) + "\n" + name];
      if (!s) {
        s = new QScatterSeries();
        s->setName(q(name));
        s->setMarkerShape(shape_by_group ? group_shape(g) : shape_of(reports::sparsity_marker(p.v.sparsity)));
        s->setMarkerSize(13);
        const QColor col = p.meets_floor ? colour.at(p.v.format) : QColor(reports::kBelowFloorColor);
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

CountersView::CountersView(QWidget* parent) : View(parent) {
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  gaps_ = new QLabel(this);
  gaps_->setWordWrap(true);
  gaps_->setStyleSheet("color: #666");
  gaps_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  which_ = new QComboBox(this);
  chart_ = new ChartView(this);
  unavailable_ = new QLabel(this);
  unavailable_->setWordWrap(true);
  unavailable_->setStyleSheet("color: #666");
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel("Chart:", this));
  top->addWidget(which_);
  top->addWidget(new QLabel("— measured counters only; unavailable values get no bar, never a zero", this), 1);
  auto* upper = new QWidget(this);
  auto* ul = new QVBoxLayout(upper);
  ul->setContentsMargins(0, 0, 0, 0);
  ul->addWidget(table_, 1);
  ul->addWidget(gaps_);
  auto* lower = new QWidget(this);
  auto* ll = new QVBoxLayout(lower);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->addLayout(top);
  ll->addWidget(chart_, 1);
  ll->addWidget(unavailable_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(upper);
  split->addWidget(lower);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(split);
  connect(which_, &QComboBox::currentIndexChanged, this, [this] { rebuildChart(); });
}

QChart* CountersView::chart() const { return chart_->chart(); }

void CountersView::refresh(const Selection& s) {
  data_.clear();
  variants_.clear();
  selected_ = s.variants;
  many_runs_ = s.runs.size() > 1;
  numbers_ = {};
  empty_reason_ = "Counters: " + nothing_selected(s);
  if (s.db && !s.runs.empty()) {
    data_ = reports::counters(*s.db, s.runs);
    variants_ = s.db->variants(s.runs);
    numbers_ = VariantNumbers(variants_);
    empty_reason_ = data_.empty() ? "Counters: no variant of the selected runs completed"
                                  : "Counters: none measured for the selected variants";
  }
  // Hardware and derived counters, then the operating system's (measured without a PMU).
  std::vector<std::string> names = reports::counter_names();
  names.insert(names.end(), reports::software_counter_names().begin(), reports::software_counter_names().end());
  measured_.clear();
  for (const auto& n : names)
    for (const auto& cs : data_)
      if (auto it = cs.values.find(n); it != cs.values.end() && it->second.value) {
        measured_.push_back(n);
        break;
      }
  table_->clear();
  table_->setRowCount(static_cast<int>(data_.size()));
  table_->setColumnCount(static_cast<int>(measured_.size()) + 2);
  QStringList head{"variant", "mode"};
  for (const auto& n : measured_) head << q(reports::counter_title(n));
  table_->setHorizontalHeaderLabels(head);
  for (size_t r = 0; r < data_.size(); ++r) {
    const auto& cs = data_[r];
    const int row = static_cast<int>(r);
    const QString name = (many_runs_ ? QString("run %1: ").arg(cs.v.run_id) : QString()) + q(cs.v.short_name());
    table_->setItem(row, 0, item(name, numbers_.config(cs.v)));
    table_->setItem(row, 1, item(cs.mode.empty() ? "-" : q(cs.mode)));
    for (size_t c = 0; c < measured_.size(); ++c) {
      const auto found = cs.values.find(measured_[c]);
      const reports::CounterValue cv = found != cs.values.end() ? found->second : reports::CounterValue{};
      QTableWidgetItem* it;
      if (cv.value) {
        it = item(num(*cv.value), QString("source: %1").arg(q(cv.source)));
      } else {
        it = item("unavailable", q(cv.reason.empty() ? "not recorded" : cv.reason));
        it->setForeground(QColor("#888888"));
        QFont f = it->font();
        f.setItalic(true);
        it->setFont(f);
      }
      table_->setItem(row, static_cast<int>(c) + 2, it);
    }
    if (selected_.count(cs.v.variant_id)) table_->selectRow(row);
  }
  table_->resizeColumnsToContents();

  // Unavailable counters, one line per distinct reason naming the counters that share it and
  // the variants each lacks it for, as the report does: "IPC (variants 1-3, 5 of 8); energy (J)
  // (all 8 variants): no RAPL ...".
  QStringList gaps;
  for (const auto& g : reports::counter_gaps(data_, variants_)) gaps << q(g.text()).toHtmlEscaped();
  // Variants that did not complete have no row in the table: named, with their error.
  QStringList failed;
  for (const auto& v : variants_) {
    if (v.status == "ok" || std::any_of(data_.begin(), data_.end(), [&](const auto& cs) { return cs.v.variant_id == v.variant_id; }))
      continue;
    failed << (numbers_.of(v) + " (" + q(v.short_name()) + "): " + q(v.status) +
               (v.error.empty() ? QString() : ": " + q(v.error)))
                  .toHtmlEscaped();
  }
  QString text;
  if (!gaps.isEmpty()) text = "<b>Unavailable</b><br>" + gaps.join("<br>");
  if (!failed.isEmpty()) text += (text.isEmpty() ? "" : "<br>") + QString("<b>Not counted</b><br>") + failed.join("<br>");
  gaps_->setText(text);

  // The chart's choices: the measured counters; the current one is kept when still measured.
  const QString current = which_->currentData().toString();
  {
    QSignalBlocker block(which_);
    which_->clear();
    for (const auto& n : measured_) which_->addItem(q(reports::counter_title(n)), q(n));
    which_->setCurrentIndex(std::max(0, which_->findData(current)));
  }
  rebuildChart();
}

void CountersView::rebuildChart() {
  const std::string name = which_->currentData().toString().toStdString();
  if (name.empty()) {
    QChart* c = fresh_chart(chart_, empty_reason_);
    c->legend()->hide();
    unavailable_->clear();
    return;
  }
  QChart* c = fresh_chart(chart_, q(reports::counter_title(name)) + " per variant");
  c->legend()->hide();
  auto* set = new QBarSet(q(reports::counter_title(name)));
  set->setColor(QColor("#1f77b4"));
  QStringList cats;
  std::vector<std::string> order;
  std::map<std::string, QStringList> missing;  // reason -> variants without a bar
  double hi = 0;
  for (const auto& cs : data_) {
    const QString vn = (many_runs_ ? QString("run %1: ").arg(cs.v.run_id) : QString()) + q(cs.v.short_name());
    const auto found = cs.values.find(name);
    if (found == cs.values.end() || !found->second.value) {  // no bar: a zero-height bar would read as a measured zero
      const std::string why = found == cs.values.end() ? "not recorded" : found->second.reason;
      if (!missing.count(why)) order.push_back(why);
      missing[why] << vn;
      continue;
    }
    cats << vn;
    *set << *found->second.value;
    hi = std::max(hi, *found->second.value);
  }
  QStringList lines;
  for (const auto& why : order) lines << missing.at(why).join(", ") + ": " + q(why);
  unavailable_->setText(lines.isEmpty() ? QString()
                                        : "<b>No bar</b> (unavailable)<br>" + lines.join("\n").toHtmlEscaped().replace("\n", "<br>"));
  auto* bars = new QBarSeries();
  bars->append(set);
  c->addSeries(bars);
  auto* ax = new QBarCategoryAxis();
  ax->append(cats);
  // Names wider than their bar are slanted rather than cut short ("int4_g128 t1 ...").
  qsizetype longest = 0;
  for (const auto& n : cats) longest = std::max(longest, n.size());
  if (cats.size() > 4 && longest > 12) ax->setLabelsAngle(-30);
  auto* ay = value_axis(q(reports::counter_title(name)), 0, hi * 1.1 > 0 ? hi * 1.1 : 1);
  c->addAxis(ax, Qt::AlignBottom);
  c->addAxis(ay, Qt::AlignLeft);
  bars->attachAxis(ax);
  bars->attachAxis(ay);
}

// ---- serving ----------------------------------------------------------------------------------

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

namespace {

// A line per series with its points, hover text per point.
QLineSeries* serving_line(QChart* c, QAbstractAxis* ax, QAbstractAxis* ay, const QString& name, const QColor& color,
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
void serving_knees(QChart* c, QAbstractAxis* ax, QAbstractAxis* ay, const std::vector<QPointF>& reached,
                   const std::vector<QPointF>& held) {
  for (const bool r : {true, false}) {
    const auto& marks = r ? reached : held;
    if (!marks.empty()) attach(c, knee_series(marks, r, r ? "knee" : "no knee: all rates met SLOs"), ax, ay);
  }
}

void hover_tips(QObject* owner, QXYSeries* s, std::vector<QString> tips, QWidget* w) {
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

QString step_tip(const reports::ServingSeries& ss, const reports::ServingStep& st) {
  return QString("%1 @%2 qps offered, %3 req/s achieved\n%4")
      .arg(q(ss.name), num(st.offered_qps), q(reports::fmt_opt(st.achieved_qps)), q(st.verdict.summary()));
}

}  // namespace

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

CompareView::CompareView(QWidget* parent) : View(parent) {
  a_ = new QComboBox(this);
  b_ = new QComboBox(this);
  info_ = new QLabel(this);
  info_->setWordWrap(true);
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  chart_ = new ChartView(this);
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel("Run A:", this));
  top->addWidget(a_, 1);
  top->addWidget(new QLabel("Run B:", this));
  top->addWidget(b_, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(chart_);
  auto* lay = new QVBoxLayout(this);
  lay->addLayout(top);
  lay->addWidget(info_);
  lay->addWidget(split, 1);
  connect(a_, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
  connect(b_, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
}

QChart* CompareView::chart() const { return chart_->chart(); }

void CompareView::refresh(const Selection& s) {
  const bool changed = s.db != sel_.db || s.runs != sel_.runs;
  sel_ = s;
  const qint64 keep_a = a_->currentData().toLongLong(), keep_b = b_->currentData().toLongLong();
  {
    QSignalBlocker ba(a_), bb(b_);
    a_->clear();
    b_->clear();
    if (s.db)
      for (const auto& r : s.db->runs()) {
        const QString t = QString("run %1 — %2 on %3 (%4)").arg(r.run_id).arg(q(r.scenario_name), q(r.hostname), q(r.started_utc.substr(0, 16)));
        a_->addItem(t, QVariant::fromValue<qint64>(r.run_id));
        b_->addItem(t, QVariant::fromValue<qint64>(r.run_id));
      }
    qint64 ra = keep_a, rb = keep_b;
    if (changed && s.runs.size() >= 2) ra = s.runs[0], rb = s.runs[1];
    else if (changed && s.runs.size() == 1) {
      // B is never a run of another scenario or model picked silently: the newest comparable run,
      // else B = A and the view asks for a run B.
      ra = s.runs[0];
      const auto same = reports::comparable_runs(*s.db, ra);
      rb = same.empty() ? ra : same.front();
    }
    a_->setCurrentIndex(std::max(0, a_->findData(QVariant::fromValue<qint64>(ra))));
    b_->setCurrentIndex(std::max(0, b_->findData(QVariant::fromValue<qint64>(rb))));
  }
  recompute();
}

void CompareView::recompute() {
  cmp_.reset();
  table_->clear();
  table_->setRowCount(0);
  QChart* c = fresh_chart(chart_, "Difference B - A with its 95% interval");
  if (!sel_.db || a_->count() == 0) {
    info_->setText(sel_.db ? QString("No runs to compare: %1 (<tt>cibench run SCENARIO --db %2</tt> stores one).")
                                 .arg(nothing_selected(sel_), QString::fromStdString(sel_.db->path()).toHtmlEscaped())
                           : QString("No runs to compare."));
    c->setTitle("Difference B - A: no runs");
    return;
  }
  const int64_t ra = a_->currentData().toLongLong(), rb = b_->currentData().toLongLong();
  if (ra == rb) {
    c->setTitle("Difference B - A: pick a run B");
    if (a_->count() == 1) {
      info_->setText(QString("This database holds one run: nothing to compare run %1 with yet.").arg(ra));
      return;
    }
    info_->setText(QString("Pick run B: no other run of %1 with model %2 is selected or stored; runs of other "
                           "scenarios or models can be picked, with a warning.")
                       .arg(q(sel_.db->run(ra).origin()), q(sel_.db->run(ra).model_spec)));
    return;
  }
  cmp_ = reports::compare_runs(*sel_.db, ra, rb);
  const auto& cmp = *cmp_;
  QString info = QString("A = run %1 on %2 (%3); B = run %4 on %5 (%6). Differences B - A with %7% percentile-bootstrap "
                         "intervals as <tt>cibench compare %1 %4</tt> computes them (%8 resamples, seed %9); "
                         "bold: the interval excludes 0.")
                     .arg(cmp.a.run_id).arg(q(cmp.a.hostname), q(cmp.a.cpu_model)).arg(cmp.b.run_id)
                     .arg(q(cmp.b.hostname), q(cmp.b.cpu_model)).arg(static_cast<int>(cmp.confidence * 100)).arg(cmp.resamples)
                     .arg(cmp.seed);
  for (const auto& w : cmp.warnings) info = "<b style=\"color:#a00\">WARNING: " + q(w).toHtmlEscaped() + "</b><br>" + info;
  for (const auto& f : cmp.failed) info += "<br>Failed: " + q(f).toHtmlEscaped();
  for (const auto& u : cmp.only_in_a) info += "<br>Only in A: " + q(u).toHtmlEscaped();
  for (const auto& u : cmp.only_in_b) info += "<br>Only in B: " + q(u).toHtmlEscaped();
  info_->setText(info);
  const QStringList head{"variant", "metric", "A", "B", "B - A", "95% interval", "significant", "change", "n A / B"};
  table_->setColumnCount(static_cast<int>(head.size()));
  table_->setHorizontalHeaderLabels(head);
  table_->setRowCount(static_cast<int>(cmp.rows.size()));
  for (size_t i = 0; i < cmp.rows.size(); ++i) {
    const auto& r = cmp.rows[i];
    const int row = static_cast<int>(i);
    table_->setItem(row, 0, item(q(reports::compact_label(r.variant)), q(r.variant)));
    table_->setItem(row, 1, item(q(r.metric)));
    table_->setItem(row, 2, item(q(reports::fmt_opt(r.a))));
    table_->setItem(row, 3, item(q(reports::fmt_opt(r.b))));
    table_->setItem(row, 4, item(q(reports::fmt_opt(r.diff))));
    table_->setItem(row, 5, item(r.ci_low ? QString("[%1, %2]").arg(num(*r.ci_low), num(*r.ci_high)) : q(r.note)));
    table_->setItem(row, 6, item(QString(r.ci_low ? (r.significant() ? "yes" : "no") : "-") +
                                     (r.warning.empty() ? "" : " (!)"), q(r.warning)));
    table_->setItem(row, 7, item(r.change_pct ? QString::asprintf("%+.1f%%", *r.change_pct) : QString()));
    table_->setItem(row, 8, item(r.n_a && r.n_b ? QString("%1 / %2").arg(*r.n_a).arg(*r.n_b) : QString()));
    if (r.significant())
      for (int col = 0; col < 9; ++col) {
        QFont f = table_->item(row, col)->font();
        f.setBold(true);
        table_->item(row, col)->setFont(f);
      }
  }
  table_->resizeColumnsToContents();

  // Chart: latency p95 difference per variant as a box from the interval's ends to the estimate.
  auto* box = new QBoxPlotSeries();
  box->setName("latency p95, B - A (ms): interval and estimate");
  QStringList cats;
  double lo = 0, hi = 0;
  for (const auto& r : cmp.rows) {
    if (r.metric != "latency p95 (ms)" || !r.diff || !r.ci_low) continue;
    auto* set = new QBoxSet(*r.ci_low, *r.ci_low, *r.diff, *r.ci_high, *r.ci_high, q(reports::compact_label(r.variant)));
    set->setBrush(QColor(r.significant() ? "#ff7f0e" : "#9ecae1"));
    box->append(set);
    cats << q(reports::compact_label(r.variant));
    lo = std::min(lo, *r.ci_low), hi = std::max(hi, *r.ci_high);
  }
  if (cats.isEmpty()) {
    delete box;
    c->setTitle("Difference B - A: no per-request times stored for matching variants");
    return;
  }
  c->addSeries(box);
  auto* ax = new QBarCategoryAxis();
  ax->append(cats);
  const auto [ya, yb] = padded(lo, hi);
  auto* ay = value_axis("latency p95, B - A (ms)", ya, yb);
  c->addAxis(ax, Qt::AlignBottom);
  c->addAxis(ay, Qt::AlignLeft);
  box->attachAxis(ax);
  box->attachAxis(ay);
  auto* zero = new QLineSeries();
  zero->setName("no difference");
  zero->setPen(QPen(QColor("#555555"), 1, Qt::DashLine));
  zero->append(-0.5, 0);
  zero->append(cats.size() - 0.5, 0);
  auto* zx = new QValueAxis();
  zx->setRange(-0.5, cats.size() - 0.5);
  zx->setVisible(false);
  c->addAxis(zx, Qt::AlignTop);
  attach(c, zero, zx, ay);
}

}  // namespace cibench::gui
