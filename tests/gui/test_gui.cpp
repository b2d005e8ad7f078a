// cibench-gui rendered offscreen (QT_QPA_PLATFORM=offscreen) on a fixture database written by the
// test through the harness's Store: what each view draws (series, point counts, the floor, the
// frontier, greyed points, unavailable counters), clicks and hovers, export, live refresh, and
// clear messages for empty, old and corrupt databases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <QApplication>
#include <QBarSeries>
#include <QBarSet>
#include <QBoxPlotSeries>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QHorizontalStackedBarSeries>
#include <QImage>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QTest>
#include <QValueAxis>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "gui/main_window.h"
#include "harness/lib/store.h"
#include "reports/render/svg.h"
#include "tests/gui/reports_fixture.h"

namespace cibench::gui {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) { return test::fresh_db_path("gui", name); }

struct Fx {
  std::string path;
  test::ReportsFixture ids;
};
const Fx& fx() {
  static Fx f = [] {
    Fx x;
    x.path = temp_path("fixture.sqlite");
    x.ids = test::make_reports_fixture(x.path);
    return x;
  }();
  return f;
}

void settle(QWidget& w) {
  w.show();
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
}

QAbstractSeries* series_named(QChart* c, const QString& name) {
  for (auto* s : c->series())
    if (s->name() == name) return s;
  return nullptr;
}

std::vector<QScatterSeries*> scatter(QChart* c) {
  std::vector<QScatterSeries*> out;
  for (auto* s : c->series())
    if (auto* sc = qobject_cast<QScatterSeries*>(s); sc && sc->name() != "selected") out.push_back(sc);
  return out;
}

// Where a click on the marker of this value lands in the view's viewport.
QPoint viewport_pos(QChartView* v, QAbstractSeries* s, const QPointF& value) {
  QChart* c = v->chart();
  return v->mapFromScene(c->mapToScene(c->mapToPosition(value, s)));
}

// The numeric labels drawn along an axis of a laid-out chart: the text items of the scene below
// the plot area (horizontal) or left of it (vertical) that read as numbers.
QStringList drawn_tick_labels(QChart* c, Qt::Orientation o) {
  QStringList out;
  const QRectF plot = c->mapRectToScene(c->plotArea());
  for (QGraphicsItem* it : c->scene()->items()) {
    auto* t = qgraphicsitem_cast<QGraphicsTextItem*>(it);
    if (!t || !t->isVisible() || t->toPlainText().isEmpty()) continue;
    bool number = false;
    (void)t->toPlainText().toDouble(&number);
    if (!number) continue;
    const QPointF m = t->sceneBoundingRect().center();
    const bool below = m.y() > plot.bottom() && m.y() < plot.bottom() + 40 && m.x() >= plot.left() - 40 &&
                       m.x() <= plot.right() + 40;
    const bool left = m.x() < plot.left() && m.x() > plot.left() - 120 && m.y() >= plot.top() - 20 &&
                      m.y() <= plot.bottom() + 20;
    if (o == Qt::Horizontal ? below : left) out << t->toPlainText();
  }
  return out;
}

// The status bar as shown: its message and the text of its labels.
QString status_text(MainWindow& w) {
  QStringList parts{w.statusBar()->currentMessage()};
  for (auto* l : w.statusBar()->findChildren<QLabel*>())
    if (l->isVisible()) parts << l->text();
  return parts.join(" | ");
}

TEST(Gui, RunsListFiltersAndProvenance) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path))) << w.message().toStdString();
  settle(w);
  EXPECT_TRUE(w.message().isEmpty());
  EXPECT_EQ(w.runsTable()->rowCount(), 4);
  ASSERT_EQ(w.selection().runs.size(), 1u);  // the newest run is selected on open
  EXPECT_EQ(w.selection().runs[0], fx().ids.run_stepped);
  w.scenarioFilter()->setText("formats");
  EXPECT_EQ(w.runsTable()->rowCount(), 2);
  w.hostFilter()->setText("hostB");
  EXPECT_EQ(w.runsTable()->rowCount(), 1);
  w.hostFilter()->clear();
  w.scenarioFilter()->clear();
  w.dateFromFilter()->setText("2024-06-02");
  EXPECT_EQ(w.runsTable()->rowCount(), 2);
  w.dateFromFilter()->clear();
  w.modelFilter()->setText("no-such-model");
  EXPECT_EQ(w.runsTable()->rowCount(), 0);
  w.modelFilter()->clear();
  w.selectRuns({fx().ids.run_formats_b});
  std::map<QString, QString> prov;
  for (int r = 0; r < w.provenanceTable()->rowCount(); ++r)
    prov[w.provenanceTable()->item(r, 0)->text()] = w.provenanceTable()->item(r, 1)->text();
  EXPECT_EQ(prov["hostname"], "hostB");
  EXPECT_EQ(prov["isa_active"], "avx2");
  EXPECT_EQ(prov["scenario_name"], "fixture-formats");
}

TEST(Gui, TradeoffViewDrawsFloorFrontierAndGreyedPoints) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  w.showView("tradeoff");
  settle(w);
  TradeoffView* t = w.tradeoffView();
  QChart* c = t->chart();
  EXPECT_EQ(t->xAxisBox()->currentData().toString(), "latency_p95_ms");
  EXPECT_EQ(t->yAxisBox()->currentData().toString(), "top1_agreement");
  // Every placed variant is one marker.
  int markers = 0, grey = 0;
  std::set<std::pair<double, double>> grey_pts;
  for (auto* s : scatter(c)) {
    markers += s->count();
    if (s->name().startsWith("below floor")) {
      grey += s->count();
      EXPECT_EQ(s->color(), QColor(reports::kBelowFloorColor));
      for (const auto& p : s->points()) grey_pts.insert({p.x(), p.y()});
    }
  }
  EXPECT_EQ(markers, 7);
  EXPECT_EQ(grey, 2);
  EXPECT_EQ(grey_pts, (std::set<std::pair<double, double>>{{25, 0.90}, {35, 0.93}}));  // int4, int8 sp0.5
  // Colour by format, marker by sparsity.
  auto* f32 = qobject_cast<QScatterSeries*>(series_named(c, "f32"));
  auto* bf16sp = qobject_cast<QScatterSeries*>(series_named(c, "bf16 sparsity 0.5"));
  ASSERT_TRUE(f32 && bf16sp);
  EXPECT_EQ(f32->color(), QColor(QString::fromStdString(reports::format_color("f32"))));
  EXPECT_EQ(f32->markerShape(), QScatterSeries::MarkerShapeCircle);
  EXPECT_EQ(bf16sp->markerShape(), QScatterSeries::MarkerShapeTriangle);
  // The legend says what the triangle is: one entry for the sparsity drawn with it.
  auto* sparse_entry = qobject_cast<QScatterSeries*>(series_named(c, "sparsity 0.5"));
  ASSERT_TRUE(sparse_entry);
  EXPECT_EQ(sparse_entry->markerShape(), QScatterSeries::MarkerShapeTriangle);
  EXPECT_EQ(sparse_entry->count(), 0);
  EXPECT_TRUE(c->legend()->markers(sparse_entry).value(0)->isVisible());
  // The floor: a line at 0.95, and the spin box shows it.
  auto* floor = qobject_cast<QLineSeries*>(series_named(c, "quality floor 0.95"));
  ASSERT_TRUE(floor);
  ASSERT_EQ(floor->count(), 2);
  EXPECT_DOUBLE_EQ(floor->at(0).y(), 0.95);
  EXPECT_DOUBLE_EQ(floor->at(1).y(), 0.95);
  EXPECT_DOUBLE_EQ(t->floorBox()->value(), 0.95);
  EXPECT_TRUE(t->floorEnabledBox()->isChecked());
  // The frontier: drawn through int8, bf16 sp0.5, bf16, f32 (by x) and listed.
  auto* front = qobject_cast<QLineSeries*>(series_named(c, "Pareto frontier"));
  ASSERT_TRUE(front);
  ASSERT_EQ(front->count(), 4);
  EXPECT_EQ(front->at(0), QPointF(40, 0.97));
  EXPECT_EQ(front->at(3), QPointF(100, 1.0));
  ASSERT_EQ(t->frontierList()->count(), 4);
  EXPECT_TRUE(t->frontierList()->item(0)->text().startsWith("int8 t2 w1"));
  EXPECT_TRUE(t->frontierList()->item(1)->text().startsWith("bf16 sp0.5 t2 w1"));
  EXPECT_TRUE(t->unplottedLabel()->text().contains("accuracy not run"));
  EXPECT_TRUE(t->unplottedLabel()->text().contains("failed"));
  EXPECT_EQ(t->unplottedLabel()->text().count("<br>"), 2) << t->unplottedLabel()->text().toStdString();
  // The same frontier as the query layer (and so as the report).
  const auto q = reports::tradeoff(*w.db(), {fx().ids.run_formats}, "latency_p95_ms", "top1_agreement");
  ASSERT_EQ(q.frontier.size(), t->data().frontier.size());
  for (size_t i = 0; i < q.frontier.size(); ++i)
    EXPECT_EQ(q.points[q.frontier[i]].v.variant_id, t->data().points[t->data().frontier[i]].v.variant_id);

  // Editing the floor re-greys the points and shrinks the frontier.
  t->floorBox()->setValue(0.985);
  c = t->chart();
  grey = 0;
  for (auto* s : scatter(c))
    if (s->name().startsWith("below floor")) grey += s->count();
  EXPECT_EQ(grey, 5);
  EXPECT_TRUE(series_named(c, "quality floor 0.985"));
  EXPECT_EQ(t->frontierList()->count(), 2);
  // Floor off: nothing greyed; the frontier then includes int4 (fastest).
  t->floorEnabledBox()->setChecked(false);
  c = t->chart();
  for (auto* s : scatter(c)) EXPECT_FALSE(s->name().startsWith("below floor"));
  EXPECT_FALSE(series_named(c, "quality floor 0.95"));
  EXPECT_TRUE(t->frontierList()->item(0)->text().startsWith("int4 t2 w1"));

  // Another y axis: its own scenario floor (ppl_ratio <= 1.05) and a throughput x axis.
  t->yAxisBox()->setCurrentIndex(t->yAxisBox()->findData("ppl_ratio"));
  t->xAxisBox()->setCurrentIndex(t->xAxisBox()->findData("achieved_qps"));
  c = t->chart();
  EXPECT_TRUE(series_named(c, "quality floor 1.05"));
  EXPECT_DOUBLE_EQ(t->floorBox()->value(), 1.05);
  EXPECT_EQ(t->data().x.key, "achieved_qps");

  // Two runs: the variants not plotted for the same reason share one line.
  w.selectRuns({fx().ids.run_formats, fx().ids.run_formats_b});
  settle(w);
  const QString un = t->unplottedLabel()->text();
  EXPECT_EQ(un.count("accuracy not run"), 1) << un.toStdString();
  EXPECT_TRUE(un.contains(QString("run %1: f32 t1 w1, run %2: f32 t1 w1: ").arg(fx().ids.run_formats).arg(fx().ids.run_formats_b)))
      << un.toStdString();
}

TEST(Gui, HoverShowsConfigurationAndClickSelectsEverywhere) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  settle(w);
  TradeoffView* t = w.tradeoffView();
  auto* int8 = qobject_cast<QScatterSeries*>(series_named(t->chart(), "int8"));
  ASSERT_TRUE(int8);
  const auto* p = t->pointAt(int8, QPointF(40.3, 0.969));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->v.variant_id, fx().ids.v_int8);
  const QString tip = t->tooltipFor(*p);
  EXPECT_TRUE(tip.contains("format: int8"));
  EXPECT_TRUE(tip.contains("threads: 2"));
  EXPECT_TRUE(tip.contains("on the Pareto frontier"));
  emit int8->hovered(QPointF(40, 0.97), true);  // must not crash offscreen
  // A click on the marker selects the variant in the other views.
  emit int8->clicked(QPointF(40, 0.97));
  settle(w);  // the selection is applied once the click has been delivered
  ASSERT_EQ(w.selection().variants, std::set<int64_t>{fx().ids.v_int8});
  auto* ring = qobject_cast<QScatterSeries*>(series_named(t->chart(), "selected"));
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->count(), 1);
  ASSERT_EQ(w.latencyView()->cdfs().size(), 1u);  // only the clicked variant's CDF
  EXPECT_EQ(w.latencyView()->cdfs()[0].variant_id, fx().ids.v_int8);
  EXPECT_EQ(w.latencyView()->cdfs()[0].source, "histogram");
  auto sel = w.countersView()->table()->selectionModel()->selectedRows();
  ASSERT_EQ(sel.size(), 1);
  EXPECT_TRUE(w.countersView()->table()->item(sel[0].row(), 0)->text().startsWith("int8 t2"));
}

// Real mouse presses and releases on the markers (not emitted signals): each click selects the
// point's variant (Ctrl-click adds or removes it), the ring follows, and the window survives.
TEST(Gui, ClickingPointsWithTheMouseSelectsThem) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  w.showView("tradeoff");
  w.resize(1400, 900);
  settle(w);
  TradeoffView* t = w.tradeoffView();
  QChartView* view = t->chartViews()[0];
  ASSERT_GT(view->width(), 400);
  int clicks = 0;
  auto click = [&](int64_t variant, Qt::KeyboardModifiers mods) {
    const auto& pts = t->data().points;
    const auto p = std::find_if(pts.begin(), pts.end(), [&](const auto& tp) { return tp.v.variant_id == variant; });
    ASSERT_NE(p, pts.end());
    const QPointF value(p->x, p->y);
    QAbstractSeries* series = nullptr;  // the marker's series in the chart drawn now
    for (auto* s : scatter(view->chart()))
      if (s->points().contains(value)) series = s;
    ASSERT_TRUE(series) << "no marker for variant " << variant;
    QTest::mouseClick(view->viewport(), Qt::LeftButton, mods, viewport_pos(view, series, value));
    ++clicks;
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
  };
  auto ring = [&] {
    std::set<std::pair<double, double>> out;
    auto* r = qobject_cast<QScatterSeries*>(series_named(t->chart(), "selected"));
    if (r)
      for (const auto& p : r->points()) out.insert({p.x(), p.y()});
    return out;
  };
  const auto& ids = fx().ids;
  const std::vector<std::pair<int64_t, std::pair<double, double>>> plain{
      {ids.v_int8, {40, 0.97}},    {ids.v_f32, {100, 1.0}}, {ids.v_bf16, {60, 0.99}}, {ids.v_w8a8, {45, 0.96}},
      {ids.v_bf16_sp, {50, 0.98}}, {ids.v_int4, {25, 0.90}}, {ids.v_int8_sp, {35, 0.93}}};
  for (const auto& [id, xy] : plain) {
    click(id, Qt::NoModifier);
    EXPECT_EQ(w.selection().variants, std::set<int64_t>{id}) << "after click " << clicks;
    EXPECT_EQ(ring(), (std::set<std::pair<double, double>>{xy})) << "after click " << clicks;
  }
  click(ids.v_f32, Qt::ControlModifier);  // adds
  EXPECT_EQ(w.selection().variants, (std::set<int64_t>{ids.v_int8_sp, ids.v_f32}));
  click(ids.v_bf16, Qt::ControlModifier);
  EXPECT_EQ(w.selection().variants, (std::set<int64_t>{ids.v_int8_sp, ids.v_f32, ids.v_bf16}));
  EXPECT_EQ(ring().size(), 3u);
  click(ids.v_f32, Qt::ControlModifier);  // on a selected point (under its ring): removes it
  EXPECT_EQ(w.selection().variants, (std::set<int64_t>{ids.v_int8_sp, ids.v_bf16}));
  click(ids.v_int8, Qt::NoModifier);
  EXPECT_EQ(clicks, 11);
  EXPECT_EQ(w.selection().variants, std::set<int64_t>{ids.v_int8});
  ASSERT_EQ(w.latencyView()->cdfs().size(), 1u);
  EXPECT_EQ(w.latencyView()->cdfs()[0].variant_id, ids.v_int8);
  const auto listed = t->frontierList()->selectedItems();  // the frontier list marks it too
  ASSERT_EQ(listed.size(), 1);
  EXPECT_TRUE(listed[0]->text().startsWith("int8 t2 w1"));
  EXPECT_TRUE(w.isVisible());
  EXPECT_TRUE(status_text(w).contains("selected 1 variant")) << status_text(w).toStdString();
}

// Variants are numbered as the CLI numbers them while running ("variant 3/9"): from 1, of the
// run's total.
TEST(Gui, VariantNumbersCountFromOneOfTheTotal) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  settle(w);
  TradeoffView* t = w.tradeoffView();
  const auto& pts = t->data().points;
  const auto int8 = std::find_if(pts.begin(), pts.end(), [](const auto& p) { return p.v.variant_id == fx().ids.v_int8; });
  ASSERT_NE(int8, pts.end());
  ASSERT_EQ(int8->v.variant_index, 2);  // the third of the run's nine variants
  const QString tip = t->tooltipFor(*int8);
  EXPECT_TRUE(tip.contains("variant 3/9")) << tip.toStdString();
  EXPECT_FALSE(tip.contains("variant 2")) << tip.toStdString();
  const auto f32 = std::find_if(pts.begin(), pts.end(), [](const auto& p) { return p.v.variant_id == fx().ids.v_f32; });
  ASSERT_NE(f32, pts.end());
  EXPECT_TRUE(t->tooltipFor(*f32).contains("variant 1/9")) << t->tooltipFor(*f32).toStdString();
  // The frontier list and the counters table say the same.
  bool listed = false;
  for (int i = 0; i < t->frontierList()->count(); ++i)
    if (t->frontierList()->item(i)->text().startsWith("int8 t2 w1")) {
      listed = true;
      EXPECT_TRUE(t->frontierList()->item(i)->toolTip().contains("variant 3/9")) << t->frontierList()->item(i)->toolTip().toStdString();
    }
  EXPECT_TRUE(listed);
  QTableWidget* tb = w.countersView()->table();
  bool counted = false;
  for (int r = 0; r < tb->rowCount(); ++r)
    if (tb->item(r, 0)->text() == "int8 t2 w1") {
      counted = true;
      EXPECT_TRUE(tb->item(r, 0)->toolTip().contains("variant 3/9")) << tb->item(r, 0)->toolTip().toStdString();
    }
  EXPECT_TRUE(counted);
  // A stepped run: steps too count from 1 of the variant's steps.
  w.selectRuns({fx().ids.run_stepped});
  settle(w);
  tb = w.countersView()->table();
  QStringList tips;
  for (int r = 0; r < tb->rowCount(); ++r) tips << tb->item(r, 0)->toolTip();
  EXPECT_TRUE(tips.join("\n").contains("variant 1/1, step 4/4")) << tips.join("\n---\n").toStdString();
  EXPECT_FALSE(tips.join("\n").contains("step 0")) << tips.join("\n---\n").toStdString();
}

// A CDF whose values lie within one decade (tpot 0.3..0.5 ms, ttft 8..12 ms) still has several
// labelled ticks; a wide one (1..1000 ms) keeps its log scale.
TEST(Gui, CdfAxisHasLabelledTicksForNarrowRanges) {
  const std::string path = temp_path("narrow.sqlite");
  {
    Store s(path);
    const int64_t run = s.insert("runs", test::fixture_run("narrow", test::fixture_formats_toml(), "hostA",
                                                           "2024-07-01T00:00:00Z", "server"));
    const int64_t v = test::fixture_variant(s, run, 0, 0, {"f32", 0, 2, 1, 80, 0.99}, 0, 2);
    std::vector<std::vector<SqlValue>> rows;
    for (int i = 0; i < 100; ++i) {
      const double f = i / 99.0;
      rows.push_back({v, int64_t{i}, int64_t{i}, int64_t{0}, int64_t{1}, 100.0 * i, 0.1, 1.0,
                      std::pow(10.0, 3 * f) /* latency 1..1000 ms */, 8 + 4 * f /* ttft */, 0.3 + 0.2 * f /* tpot */});
    }
    Store::Transaction tr(s);
    s.insert_many("requests", {"variant_id", "seq", "query_index", "worker", "ok", "scheduled_ms", "queue_ms",
                               "service_ms", "latency_ms", "ttft_ms", "tpot_ms"}, rows);
    tr.commit();
  }
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(path)));
  w.resize(1400, 900);
  w.showView("latency");
  settle(w);
  LatencyView* l = w.latencyView();
  for (const char* metric : {"tpot", "ttft", "latency"}) {
    l->setMetric(metric);
    settle(w);
    QChart* c = l->cdfChart();
    ASSERT_EQ(c->series().size(), 1) << metric;
    QAbstractAxis* ax = c->axes(Qt::Horizontal).value(0);
    ASSERT_TRUE(ax) << metric;
    // Every value is inside the axis' range.
    double lo = 0, hi = 0;
    if (auto* v = qobject_cast<QValueAxis*>(ax)) lo = v->min(), hi = v->max();
    else if (auto* g = qobject_cast<QLogValueAxis*>(ax)) lo = g->min(), hi = g->max();
    else FAIL() << metric << ": neither a value nor a log axis";
    const auto* ls = qobject_cast<QLineSeries*>(c->series()[0]);
    for (const auto& p : ls->points()) {
      EXPECT_LE(lo, p.x()) << metric;
      EXPECT_GE(hi, p.x()) << metric;
    }
    const QStringList labels = drawn_tick_labels(c, Qt::Horizontal);
    EXPECT_GE(labels.size(), 3) << metric << ": labels drawn: " << labels.join(", ").toStdString();
    if (std::string(metric) == "latency") {
      EXPECT_TRUE(qobject_cast<QLogValueAxis*>(ax)) << "three decades: log scale";
    }
    // The y axis (fraction of requests) is labelled too.
    EXPECT_GE(drawn_tick_labels(c, Qt::Vertical).size(), 3) << metric;
  }
}

TEST(Gui, LatencyViewCdfAndLoadWithSlo) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  w.showView("latency");
  settle(w);
  LatencyView* l = w.latencyView();
  // f32 and bf16 have per-request times, int8 a histogram; the others neither.
  EXPECT_EQ(l->cdfChart()->series().size(), 3);
  // 20..100 ms, less than a decade: a linear axis with several labelled ticks.
  EXPECT_TRUE(qobject_cast<QValueAxis*>(l->cdfChart()->axes(Qt::Horizontal).value(0)));
  EXPECT_GE(drawn_tick_labels(l->cdfChart(), Qt::Horizontal).size(), 3);
  auto* f32 = qobject_cast<QLineSeries*>(l->cdfChart()->series().value(0));
  ASSERT_TRUE(f32);
  EXPECT_DOUBLE_EQ(f32->at(f32->count() - 1).y(), 1.0);
  EXPECT_TRUE(l->loadChart()->series().isEmpty());  // not a stepped run
  EXPECT_TRUE(l->loadChart()->title().contains("no stepped-rate run"));

  w.selectRuns({fx().ids.run_stepped});
  settle(w);
  QChart* lc = l->loadChart();
  auto* p95 = qobject_cast<QLineSeries*>(series_named(lc, "f32 t2 w1 p95"));
  ASSERT_TRUE(p95);
  ASSERT_EQ(p95->count(), 4);
  EXPECT_EQ(p95->at(0), QPointF(1, 20));
  EXPECT_EQ(p95->at(3), QPointF(8, 300));
  EXPECT_TRUE(series_named(lc, "f32 t2 w1 p50"));
  EXPECT_TRUE(series_named(lc, "f32 t2 w1 p99"));
  auto* slo = qobject_cast<QLineSeries*>(series_named(lc, "SLO p95_ms 100 ms"));
  ASSERT_TRUE(slo);
  EXPECT_DOUBLE_EQ(slo->at(0).y(), 100);
  // p50 dotted, p95 solid, p99 dashed; the knee (4 qps) is a vertical line.
  EXPECT_EQ(qobject_cast<QLineSeries*>(series_named(lc, "f32 t2 w1 p50"))->pen().style(), Qt::DotLine);
  EXPECT_EQ(p95->pen().style(), Qt::SolidLine);
  EXPECT_EQ(qobject_cast<QLineSeries*>(series_named(lc, "f32 t2 w1 p99"))->pen().style(), Qt::DashLine);
  auto* knee = qobject_cast<QLineSeries*>(series_named(lc, "f32 t2 w1 knee 4 qps"));
  ASSERT_TRUE(knee);
  EXPECT_DOUBLE_EQ(knee->at(0).x(), 4);
  EXPECT_DOUBLE_EQ(knee->at(1).x(), 4);

  // The metric selector drives both charts: ttft percentiles against load (the fixture stores
  // ttft p95 = 0.3 x latency p95 and p99, no p50); the latency SLO moves to the title.
  l->setMetric("ttft");
  settle(w);
  lc = l->loadChart();
  EXPECT_TRUE(lc->title().startsWith("ttft percentiles"));
  EXPECT_TRUE(lc->title().contains("p95_ms 100 ms"));
  EXPECT_FALSE(series_named(lc, "SLO p95_ms 100 ms"));
  EXPECT_FALSE(series_named(lc, "f32 t2 w1 p50"));
  auto* t95 = qobject_cast<QLineSeries*>(series_named(lc, "f32 t2 w1 p95"));
  ASSERT_TRUE(t95);
  ASSERT_EQ(t95->count(), 4);
  EXPECT_NEAR(t95->at(3).y(), 300 * 0.3, 1e-9);
  EXPECT_THROW(l->setMetric("bogus"), reports::DbError);
  l->setMetric("latency");
  settle(w);
}

// A stepped run of many variants (a classifier sweep): one line per variant at the SLO's
// percentile instead of three each, the knees as markers on their curves instead of a vertical
// line each, the CDF title saying how many of how many variants it draws.
TEST(Gui, LatencyViewWithManyVariantsStaysReadable) {
  const std::string path = temp_path("many_stepped.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", test::fixture_run("many-stepped", "[load]\npattern = \"stepped\"\n\n[slo]\np95_ms = 100\n",
                                             "hostA", "2024-06-03T09:00:00Z", "stepped"));
    const double rates[] = {1, 2, 4, 8};
    for (int i = 0; i < 6; ++i)
      for (int st = 0; st < 4; ++st) {
        const double p95 = (st < 2 ? 20.0 + 5 * st : st == 2 ? 60.0 : 300.0) + 5 * i;
        const int64_t v = test::fixture_variant(s, run, i, st, {i % 2 ? "int8" : "f32", 0, 1 + i / 2, 1, p95, -1}, 0, rates[st]);
        s.update("variants", "variant_id", v, {{"pattern", std::string("stepped")}});
        if (i < 5) test::fixture_requests(s, v, p95);
      }
  }
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(path)));
  w.selectRuns({run});
  w.showView("latency");
  w.resize(1400, 900);
  settle(w);
  LatencyView* l = w.latencyView();
  QChart* lc = l->loadChart();
  int lines = 0;
  for (auto* sr : lc->series())
    if (auto* ls = qobject_cast<QLineSeries*>(sr); ls && !ls->name().startsWith("SLO")) {
      ++lines;
      EXPECT_TRUE(ls->name().endsWith(" p95")) << ls->name().toStdString();
      EXPECT_EQ(ls->pen().style(), Qt::SolidLine);
    }
  EXPECT_EQ(lines, 6);
  std::set<QRgb> colours;
  for (auto* sr : l->cdfChart()->series()) colours.insert(qobject_cast<QLineSeries*>(sr)->pen().color().rgb());
  EXPECT_EQ(colours.size(), l->cdfChart()->series().size());  // 16 curves, 16 colours
  EXPECT_TRUE(lc->title().startsWith("latency p95 against offered load, one line per variant")) << lc->title().toStdString();
  // Every variant meets p95 <= 100 ms up to 4 queries/s and breaks it at 8: a knee marker at 4 on
  // each curve, no vertical knee line.
  auto* knees = qobject_cast<QScatterSeries*>(series_named(lc, "knee (highest rate meeting every SLO)"));
  ASSERT_TRUE(knees);
  ASSERT_EQ(knees->count(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(knees->at(i), QPointF(4, 60 + 5 * i));
  for (auto* sr : lc->series()) EXPECT_FALSE(sr->name().contains(" knee ")) << sr->name().toStdString();
  // The CDF draws 16 of the 20 steps that kept their requests, and says so.
  EXPECT_EQ(l->cdfChart()->series().size(), 16);
  EXPECT_TRUE(l->cdfChart()->title().contains("the first 16 of 20 variants")) << l->cdfChart()->title().toStdString();
  // Many entries: the legend font is smaller.
  EXPECT_LT(l->cdfChart()->legend()->font().pointSizeF(), QChart().legend()->font().pointSizeF());
}

TEST(Gui, ScalingViewAgainstThreadsTimesWorkers) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_threads});
  w.showView("scaling");
  settle(w);
  for (QChart* c : {w.scalingView()->throughputChart(), w.scalingView()->latencyChart()}) {
    auto* w1 = qobject_cast<QLineSeries*>(series_named(c, "f32 w1"));
    auto* w2 = qobject_cast<QLineSeries*>(series_named(c, "f32 w2"));
    ASSERT_TRUE(w1 && w2) << c->title().toStdString();
    ASSERT_EQ(w1->count(), 2);  // 1x1, 2x1 at 1 and 2 cores
    ASSERT_EQ(w2->count(), 2);  // 1x2, 2x2 at 2 and 4 cores
    EXPECT_EQ(w1->at(1).x(), 2);
    EXPECT_EQ(w2->at(0).x(), 2);
    EXPECT_EQ(w2->at(1).x(), 4);
  }
  auto* lat = qobject_cast<QLineSeries*>(series_named(w.scalingView()->latencyChart(), "f32 w2"));
  EXPECT_DOUBLE_EQ(lat->at(1).y(), 75);
}

TEST(Gui, CountersViewShowsUnavailableNeverZero) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  w.showView("counters");
  settle(w);
  CountersView* cv = w.countersView();
  QTableWidget* tb = cv->table();
  EXPECT_EQ(tb->rowCount(), 8);  // every ok variant (the failed one has no counters)
  int ipc_col = -1;
  for (int c = 0; c < tb->columnCount(); ++c)
    if (tb->horizontalHeaderItem(c)->text() == "IPC") ipc_col = c;
  ASSERT_GE(ipc_col, 0);
  bool saw_f32 = false, saw_bf16 = false;
  for (int r = 0; r < tb->rowCount(); ++r) {
    const QString name = tb->item(r, 0)->text();
    for (int c = 2; c < tb->columnCount(); ++c) EXPECT_NE(tb->item(r, c)->text(), "0") << name.toStdString();
    if (name == "f32 t2 w1") {
      saw_f32 = true;
      EXPECT_EQ(tb->item(r, ipc_col)->text(), "unavailable");
      EXPECT_TRUE(tb->item(r, ipc_col)->toolTip().contains("PAPI_ENOEVNT"));
    }
    if (name == "bf16 t2 w1") {
      saw_bf16 = true;
      EXPECT_EQ(tb->item(r, ipc_col)->text(), "1.5");
    }
  }
  EXPECT_TRUE(saw_f32 && saw_bf16);
  // The chart has a bar for measured values only; the rest are listed as unavailable.
  cv->counterBox()->setCurrentIndex(cv->counterBox()->findData("ipc"));
  auto* bars = qobject_cast<QBarSeries*>(cv->chart()->series().value(0));
  ASSERT_TRUE(bars);
  ASSERT_EQ(bars->barSets().size(), 1);
  EXPECT_EQ(bars->barSets()[0]->count(), 1);
  EXPECT_DOUBLE_EQ(bars->barSets()[0]->at(0), 1.5);
  EXPECT_TRUE(cv->unavailableLabel()->text().contains("f32 t2 w1: needs instructions and cycles"));
  cv->counterBox()->setCurrentIndex(cv->counterBox()->findData("energy_per_request_j"));
  bars = qobject_cast<QBarSeries*>(cv->chart()->series().value(0));
  ASSERT_TRUE(bars);
  EXPECT_DOUBLE_EQ(bars->barSets()[0]->at(0), 0.75);
}

// Without a PMU (f32 t2) the software counters are still measured: the table has a column for
// every counter measured for some variant and none for those measured nowhere, the unavailable
// ones are one line per reason, and the chart plots a measured counter.
TEST(Gui, CountersViewShowsMeasuredColumnsAndOneLinePerReason) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  w.showView("counters");
  settle(w);
  CountersView* cv = w.countersView();
  QTableWidget* tb = cv->table();
  QStringList head;
  for (int c = 0; c < tb->columnCount(); ++c) head << tb->horizontalHeaderItem(c)->text();
  EXPECT_EQ(head, (QStringList{"variant", "mode", "IPC", "L1D misses / 1000 instr", "energy (J)",
                               "energy per request (J)", "task clock (ms)", "context switches", "page faults",
                               "CPU migrations"}))
      << head.join(" | ").toStdString();
  int f32_row = -1;
  for (int r = 0; r < tb->rowCount(); ++r)
    if (tb->item(r, 0)->text() == "f32 t2 w1") f32_row = r;
  ASSERT_GE(f32_row, 0);
  EXPECT_EQ(tb->item(f32_row, head.indexOf("task clock (ms)"))->text(), "812.5");
  EXPECT_EQ(tb->item(f32_row, head.indexOf("context switches"))->text(), "42");
  EXPECT_EQ(tb->item(f32_row, head.indexOf("IPC"))->text(), "unavailable");
  // One line per distinct reason, naming every counter that shares it and the variants (from 1,
  // of the run's 9) each counter lacks: IPC was counted for variant 2 and unavailable for 1, so
  // "not recorded" applies to variants 3-8 for IPC, to 1-8 for L2 (never "all 8 variants").
  const QString gaps = cv->gapsLabel()->text();
  EXPECT_TRUE(gaps.contains("IPC (variant 1 of 9): needs instructions and cycles: PAPI_ENOEVNT"))
      << gaps.toStdString();
  EXPECT_TRUE(gaps.contains("IPC, L1D misses / 1000 instr, energy (J), task clock (ms), context switches, page faults, "
                            "CPU migrations (variants 3-8 of 9); L2 misses / 1000 instr, L3 misses / 1000 instr, "
                            "branch misses / 1000 instr (variants 1-8 of 9): not recorded for this variant"))
      << gaps.toStdString();
  EXPECT_FALSE(gaps.contains("all ")) << gaps.toStdString();
  EXPECT_EQ(gaps.count("): not recorded for this variant"), 1) << gaps.toStdString();
  // After the heading, 6 distinct reasons; then the failed variant under its own heading.
  EXPECT_EQ(gaps.section("<b>Not counted</b>", 0, 0).count("<br>"), 7) << gaps.toStdString();
  // The chart's choices are the measured counters; it opens on one and draws its bars.
  QStringList choices;
  for (int i = 0; i < cv->counterBox()->count(); ++i) choices << cv->counterBox()->itemData(i).toString();
  EXPECT_EQ(choices, (QStringList{"ipc", "l1d_mpki", "energy_j", "energy_per_request_j", "task_clock_ms",
                                  "context_switches", "page_faults", "cpu_migrations"}));
  cv->counterBox()->setCurrentIndex(cv->counterBox()->findData("task_clock_ms"));
  auto* bars = qobject_cast<QBarSeries*>(cv->chart()->series().value(0));
  ASSERT_TRUE(bars);
  ASSERT_EQ(bars->barSets().size(), 1);
  ASSERT_EQ(bars->barSets()[0]->count(), 2);  // f32 t2 and bf16 t2
  EXPECT_DOUBLE_EQ(bars->barSets()[0]->at(0), 812.5);
  // A run without any counter rows: no counter column, every counter on one line, no chart.
  w.selectRuns({fx().ids.run_threads});
  settle(w);
  EXPECT_EQ(cv->table()->columnCount(), 2);
  EXPECT_EQ(cv->counterBox()->count(), 0);
  EXPECT_TRUE(cv->chart()->series().isEmpty());
  EXPECT_TRUE(cv->gapsLabel()->text().contains("(all 4 variants): not recorded")) << cv->gapsLabel()->text().toStdString();
}

// Every run selected: runs are grouped by (scenario, model), each group with its own floor and
// frontier; the axes do not go below zero and the legend has one entry per colour and shape.
TEST(Gui, TradeoffViewGroupsRunsByScenario) {
  const std::string path = temp_path("tradeoff_groups.sqlite");
  const test::ReportsFixture ids = test::make_reports_fixture(path);
  int64_t loose = 0, loose_int8 = 0, loose_int4 = 0;
  {
    // A scenario of the same model with a looser floor than fixture-formats (whose run comes first).
    Store s(path);
    const std::string toml = "[scenario]\nname = \"fixture-loose\"\n\n[load]\npattern = \"server\"\n\n"
                             "[accuracy]\nmin_top1_agreement = 0.90\n";
    loose = s.insert("runs", test::fixture_run("fixture-loose", toml, "hostA", "2024-07-01T09:00:00Z", "server"));
    test::fixture_variant(s, loose, 0, 0, {"f32", 0, 2, 1, 90, 1.00}, 0, 2.0);
    loose_int8 = test::fixture_variant(s, loose, 1, 0, {"int8", 0, 2, 1, 30, 0.92}, 0, 2.0);
    loose_int4 = test::fixture_variant(s, loose, 2, 0, {"int4", 0, 2, 1, 20, 0.85}, 0, 2.0);
  }
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(path)));
  w.selectRuns({loose, ids.run_formats, ids.run_formats_b, ids.run_threads, ids.run_stepped});
  w.showView("tradeoff");
  w.resize(1400, 900);
  settle(w);
  TradeoffView* t = w.tradeoffView();
  QStringList names;
  for (const auto& g : t->groups()) names << g.name;
  names.sort();
  EXPECT_EQ(names, (QStringList{"fixture-formats", "fixture-loose", "fixture-stepped", "fixture-threads"}));
  // Accuracy on y: each scenario under its own floor, drawn and named with the scenario.
  ASSERT_EQ(t->yAxisBox()->currentData().toString(), "top1_agreement");
  QChart* c = t->chart();
  auto* loose_floor = qobject_cast<QLineSeries*>(series_named(c, "quality floor 0.9: fixture-loose"));
  auto* formats_floor = qobject_cast<QLineSeries*>(series_named(c, "quality floor 0.95: fixture-formats"));
  ASSERT_TRUE(loose_floor && formats_floor);
  EXPECT_DOUBLE_EQ(loose_floor->at(0).y(), 0.90);
  EXPECT_DOUBLE_EQ(formats_floor->at(0).y(), 0.95);
  EXPECT_TRUE(series_named(c, "Pareto frontier: fixture-loose"));
  EXPECT_TRUE(series_named(c, "Pareto frontier: fixture-formats"));
  // int8 of fixture-loose (0.92) meets its run's 0.90 (not fixture-formats' 0.95) and is drawn in
  // its format's colour and on its frontier; int4 of fixture-loose (0.85) misses 0.90 and is grey.
  const auto& pts = t->data().points;
  const auto at = [&](int64_t id) {
    return std::find_if(pts.begin(), pts.end(), [id](const auto& p) { return p.v.variant_id == id; });
  };
  ASSERT_NE(at(loose_int8), pts.end());
  ASSERT_NE(at(loose_int4), pts.end());
  EXPECT_TRUE(at(loose_int8)->meets_floor);
  EXPECT_TRUE(at(loose_int8)->on_frontier);
  EXPECT_FALSE(at(loose_int4)->meets_floor);
  EXPECT_TRUE(at(ids.v_int8)->meets_floor);
  EXPECT_FALSE(at(ids.v_int4)->meets_floor);  // 0.90 < fixture-formats' 0.95
  auto* int8 = qobject_cast<QScatterSeries*>(series_named(c, "int8: fixture-loose"));
  ASSERT_TRUE(int8);
  EXPECT_TRUE(int8->points().contains(QPointF(30, 0.92)));
  EXPECT_NE(int8->color(), QColor(reports::kBelowFloorColor));
  auto* grey = qobject_cast<QScatterSeries*>(series_named(c, "below floor: fixture-loose"));
  ASSERT_TRUE(grey);
  EXPECT_TRUE(grey->points().contains(QPointF(20, 0.85)));
  // A different shape per scenario.
  auto* formats_int8 = qobject_cast<QScatterSeries*>(series_named(c, "int8: fixture-formats"));
  ASSERT_TRUE(formats_int8);
  EXPECT_NE(int8->markerShape(), formats_int8->markerShape());
  EXPECT_EQ(int8->color(), formats_int8->color());  // colour is the format's
  // Throughput on y: every scenario has points, and each has its own frontier.
  t->yAxisBox()->setCurrentIndex(t->yAxisBox()->findData("tokens_per_s"));
  settle(w);
  c = t->chart();
  for (const auto& g : t->groups()) {
    EXPECT_FALSE(g.t.points.empty()) << g.name.toStdString();
    EXPECT_TRUE(series_named(c, "Pareto frontier: " + g.name)) << g.name.toStdString();
  }
  for (bool accuracy : {false, true}) {
    if (accuracy) {
      t->yAxisBox()->setCurrentIndex(t->yAxisBox()->findData("top1_agreement"));
      settle(w);
      c = t->chart();
    }
    // Latencies are never negative: nor is the axis.
    auto* ax = qobject_cast<QValueAxis*>(c->axes(Qt::Horizontal).value(0));
    ASSERT_TRUE(ax);
    EXPECT_GE(ax->min(), 0);
    // One legend entry per format colour, per scenario shape, cache and below floor at most, and
    // one per scenario for its frontier and floor, drawn in the colour and dash of its frontier.
    std::set<std::string> formats;
    for (const auto& p : t->data().points) formats.insert(p.v.format);
    QStringList shown;
    for (QLegendMarker* m : c->legend()->markers())
      if (m->isVisible()) shown << m->label();
    EXPECT_LE(static_cast<size_t>(shown.size()), formats.size() + 2 * t->groups().size() + 2)
        << shown.join(" | ").toStdString();
    EXPECT_TRUE(shown.contains("int8")) << shown.join(" | ").toStdString();
    EXPECT_TRUE(shown.contains("fixture-formats")) << shown.join(" | ").toStdString();
    EXPECT_EQ(shown.removeDuplicates(), 0) << shown.join(" | ").toStdString();
    std::set<QRgb> frontier_colours;
    for (const auto& g : t->groups()) {
      auto* frontier = qobject_cast<QLineSeries*>(series_named(c, "Pareto frontier: " + g.name));
      if (!frontier) continue;
      frontier_colours.insert(frontier->pen().color().rgb());
      const QString floor = g.t.floor ? QString(", floor %1").arg(QString::fromStdString(reports::fmt_num(*g.t.floor)))
                                      : QString();
      const QString entry = g.name + ": frontier" + floor;
      EXPECT_TRUE(shown.contains(entry)) << entry.toStdString() << " in " << shown.join(" | ").toStdString();
      auto* legend_line = qobject_cast<QLineSeries*>(series_named(c, entry));
      ASSERT_TRUE(legend_line) << entry.toStdString();
      EXPECT_EQ(legend_line->pen().color(), frontier->pen().color());
      EXPECT_EQ(legend_line->pen().style(), Qt::DashLine);
      EXPECT_EQ(legend_line->count(), 0);  // an entry only: nothing drawn
      if (g.t.floor) {
        auto* fl = qobject_cast<QLineSeries*>(series_named(c, QString("quality floor %1: ").arg(
                                                                   QString::fromStdString(reports::fmt_num(*g.t.floor))) + g.name));
        ASSERT_TRUE(fl) << g.name.toStdString();
        EXPECT_EQ(fl->pen().color(), frontier->pen().color());  // a group's lines share its colour
        EXPECT_EQ(fl->pen().style(), Qt::DotLine);
      }
    }
    // Long entries: a smaller legend font, so that they are not cut short.
    EXPECT_LT(c->legend()->font().pointSizeF(), QChart().legend()->font().pointSizeF());
    // Each group's lines in a colour of their own.
    size_t with_frontier = 0;
    for (const auto& g : t->groups()) with_frontier += !g.t.frontier.empty();
    EXPECT_EQ(frontier_colours.size(), with_frontier);
  }
}

// A store with no run, a store with one run and a run with a failed variant: every view says why
// it draws nothing instead of showing an empty frame, and the failed variant is named.
TEST(Gui, ViewsSayWhyTheyAreEmpty) {
  const std::string empty = temp_path("no_runs.sqlite");
  { Store s(empty); }
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(empty)));
  settle(w);
  const QString none = "no runs in this database yet";
  EXPECT_TRUE(w.tradeoffView()->chart()->title().contains(none)) << w.tradeoffView()->chart()->title().toStdString();
  EXPECT_TRUE(w.latencyView()->cdfChart()->title().contains(none));
  EXPECT_TRUE(w.latencyView()->loadChart()->title().contains(none));
  EXPECT_TRUE(w.scalingView()->throughputChart()->title().contains(none));
  EXPECT_TRUE(w.scalingView()->latencyChart()->title().contains(none));
  EXPECT_TRUE(w.countersView()->chart()->title().contains(none));
  EXPECT_TRUE(w.compareView()->infoLabel()->text().contains(none)) << w.compareView()->infoLabel()->text().toStdString();

  // One run of one variant: the compare says there is nothing to compare it with; the counters'
  // unavailable lines say "the only variant", not "all 1 variant".
  const std::string one = temp_path("one_run.sqlite");
  int64_t run = 0;
  {
    Store s(one);
    run = s.insert("runs", test::fixture_run("one", "[scenario]\nname = \"one\"\n", "hostA", "2024-06-01T09:00:00Z", "server"));
    const int64_t v = test::fixture_variant(s, run, 0, 0, {"f32", 0, 1, 1, 50, 1.0}, 0, 2.0);
    test::fixture_counters(s, v, false);
  }
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(one)));
  w.selectRuns({run});
  settle(w);
  EXPECT_TRUE(w.compareView()->infoLabel()->text().contains("holds one run")) << w.compareView()->infoLabel()->text().toStdString();
  EXPECT_TRUE(w.compareView()->chart()->title().contains("pick a run B"));
  EXPECT_TRUE(w.scalingView()->throughputChart()->title().contains("every variant ran on 1 core, nothing to scale against"))
      << w.scalingView()->throughputChart()->title().toStdString();
  const QString gaps = w.countersView()->gapsLabel()->text();
  EXPECT_TRUE(gaps.contains("IPC (the only variant): needs instructions and cycles")) << gaps.toStdString();
  EXPECT_FALSE(gaps.contains("all 1")) << gaps.toStdString();

  // A failed variant has no counters: named under the table with its error.
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  settle(w);
  const QString f = w.countersView()->gapsLabel()->text();
  EXPECT_TRUE(f.contains(QString("<b>Not counted</b><br>run %1, variant 9/9 (int4_sym_g32 t2 w1): failed: no kernel for this format")
                             .arg(fx().ids.run_formats)))
      << f.toStdString();
}

TEST(Gui, CompareViewTwoRunsWithIntervals) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats, fx().ids.run_formats_b});
  w.showView("compare");
  settle(w);
  CompareView* cv = w.compareView();
  ASSERT_TRUE(cv->comparison());
  EXPECT_EQ(cv->comparison()->a.run_id, fx().ids.run_formats);
  EXPECT_EQ(cv->comparison()->b.run_id, fx().ids.run_formats_b);
  EXPECT_EQ(cv->table()->rowCount(), static_cast<int>(cv->comparison()->rows.size()));
  EXPECT_GT(cv->table()->rowCount(), 0);
  auto* box = qobject_cast<QBoxPlotSeries*>(cv->chart()->series().value(0));
  ASSERT_TRUE(box);
  // f32 and bf16 have per-request times in both runs, int8 a histogram (the same in both).
  ASSERT_EQ(box->count(), 3);
  for (auto* set : box->boxSets()) {
    if (set->label().startsWith("int8")) {
      EXPECT_DOUBLE_EQ(set->at(QBoxSet::Median), 0.0);
      continue;
    }
    EXPECT_GT(set->at(QBoxSet::LowerExtreme), 0) << set->label().toStdString();  // B slower: above 0
    EXPECT_DOUBLE_EQ(set->at(QBoxSet::Median), 10.0);  // every latency of run B is shifted up
  }
  // The same run on both sides: nothing to compare, no crash.
  cv->runB()->setCurrentIndex(cv->runA()->currentIndex());
  EXPECT_FALSE(cv->comparison());
}

// With one run selected, B is the newest run of the same scenario and model, or none: never a run
// of another scenario picked silently. Across scenarios, the warning comes first.
TEST(Gui, CompareViewNeverPicksAnotherScenarioSilently) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.showView("compare");
  CompareView* cv = w.compareView();
  w.selectRuns({fx().ids.run_formats});
  settle(w);
  ASSERT_TRUE(cv->comparison());
  EXPECT_EQ(cv->comparison()->b.run_id, fx().ids.run_formats_b);  // the same scenario and model
  EXPECT_TRUE(cv->comparison()->warnings.empty());
  w.selectRuns({fx().ids.run_threads});  // no other fixture-threads run
  settle(w);
  EXPECT_FALSE(cv->comparison());
  EXPECT_TRUE(cv->infoLabel()->text().contains("Pick run B")) << cv->infoLabel()->text().toStdString();
  cv->runB()->setCurrentIndex(cv->runB()->findData(QVariant::fromValue<qint64>(fx().ids.run_formats)));
  ASSERT_TRUE(cv->comparison());
  EXPECT_TRUE(cv->infoLabel()->text().startsWith("<b style=\"color:#a00\">WARNING: different scenarios"))
      << cv->infoLabel()->text().toStdString();
  EXPECT_TRUE(cv->infoLabel()->text().contains("Failed: B: int4_sym_g32")) << cv->infoLabel()->text().toStdString();
}

// The reports fixture with the serving run (tests/gui/reports_fixture.h make_serving_fixture).
struct ServingFx {
  std::string path;
  test::ReportsFixture ids;
  test::ServingFixture serving;
};
const ServingFx& serving_fx() {
  static ServingFx f = [] {
    ServingFx x;
    x.path = temp_path("serving.sqlite");
    x.ids = test::make_reports_fixture(x.path);
    x.serving = test::make_serving_fixture(x.path);
    return x;
  }();
  return f;
}

std::vector<QPointF> points_of(QAbstractSeries* s) {
  auto* xy = qobject_cast<QXYSeries*>(s);
  if (!xy) return {};
  const QList<QPointF> p = xy->points();
  return {p.begin(), p.end()};
}

TEST(Gui, ServingViewDrawsTheSeriesKneesSloLinesAndTimeline) {
  MainWindow w;
  w.resize(1500, 1000);
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(serving_fx().path)));
  w.selectRuns({serving_fx().serving.run});
  ASSERT_TRUE(w.showView("serving"));
  settle(w);
  ServingView* sv = w.servingView();
  const int tab = w.tabs()->indexOf(sv);
  EXPECT_TRUE(w.tabs()->isTabVisible(tab));
  EXPECT_EQ(w.tabs()->currentIndex(), tab);
  ASSERT_TRUE(sv->hasData());
  ASSERT_EQ(sv->data().series.size(), 3u);
  // TTFT p99 against achieved throughput: one line per series at its steps, the SLO at 500 ms, the
  // knees of none (2 qps) and continuous (4 qps), static's hollow marker (every rate met).
  QChart* ttft = sv->latencyChart(0);
  EXPECT_EQ(ttft->title(), "TTFT p99 against achieved throughput");
  const auto cont = points_of(series_named(ttft, "b8 batching=continuous"));
  ASSERT_EQ(cont.size(), 4u);
  const double cont_ttft[] = {120, 140, 200, 700}, rates[] = {1, 2, 4, 8};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(cont[i].x(), 0.95 * rates[i]);
    EXPECT_DOUBLE_EQ(cont[i].y(), cont_ttft[i]);
  }
  EXPECT_EQ(points_of(series_named(ttft, "batching=none")).size(), 3u);
  const auto slo = points_of(series_named(ttft, "SLO 500 ms"));
  ASSERT_EQ(slo.size(), 2u);
  EXPECT_EQ(slo[0].y(), 500);
  EXPECT_EQ(slo[1].y(), 500);
  const auto knees = points_of(series_named(ttft, "knee"));
  ASSERT_EQ(knees.size(), 2u);
  EXPECT_DOUBLE_EQ(knees[0].x(), 1.9);
  EXPECT_DOUBLE_EQ(knees[0].y(), 200);
  EXPECT_DOUBLE_EQ(knees[1].x(), 3.8);
  const auto held = points_of(series_named(ttft, "no knee: all rates met SLOs"));
  ASSERT_EQ(held.size(), 1u);
  EXPECT_DOUBLE_EQ(held[0].x(), 7.6);
  EXPECT_DOUBLE_EQ(held[0].y(), 450);
  QChart* tpot = sv->latencyChart(1);
  EXPECT_EQ(tpot->title(), "TPOT p99 against achieved throughput");
  EXPECT_EQ(points_of(series_named(tpot, "SLO 50 ms")).front().y(), 50);
  // Goodput: continuous's 8 qps step is not measured, not drawn.
  const auto good = points_of(series_named(sv->goodputChart(), "b8 batching=continuous"));
  ASSERT_EQ(good.size(), 3u);
  EXPECT_DOUBLE_EQ(good[2].y(), 3.8);
  // Occupancy: no line for none (NULL with its reason, in the notes).
  EXPECT_FALSE(series_named(sv->occupancyChart(), "batching=none p99"));
  const auto occ = points_of(series_named(sv->occupancyChart(), "b8 batching=continuous p99"));
  ASSERT_EQ(occ.size(), 4u);
  EXPECT_DOUBLE_EQ(occ[3].x(), 6);
  EXPECT_DOUBLE_EQ(occ[3].y(), 40);
  EXPECT_TRUE(sv->notesLabel()->text().contains("batching none: one sequence per worker"));
  EXPECT_TRUE(sv->notesLabel()->text().contains("not every request was kept"));
  // The step selector starts with each series' timeline step; the first is none's knee.
  ASSERT_EQ(sv->stepBox()->count(), 11);  // 3 + 4 + 4 steps
  EXPECT_EQ(sv->stepBox()->currentData().toLongLong(), serving_fx().serving.none_knee);
  EXPECT_EQ(sv->stepBox()->itemData(2).toLongLong(), serving_fx().serving.cont_knee);
  // Choose continuous's knee: one stacked bar per request, the segments as stored.
  sv->stepBox()->setCurrentIndex(2);
  settle(w);
  EXPECT_EQ(sv->timeline().requests.size(), static_cast<size_t>(test::kServingRequests));
  EXPECT_TRUE(sv->timelineChart()->title().startsWith("Requests of b8 batching=continuous @4 qps (knee step): all 12 requests"));
  QHorizontalStackedBarSeries* bars = nullptr;
  for (auto* s : sv->timelineChart()->series())
    if (auto* b = qobject_cast<QHorizontalStackedBarSeries*>(s)) bars = b;
  ASSERT_TRUE(bars);
  const auto sets = bars->barSets();
  ASSERT_EQ(sets.size(), 4);  // arrival (invisible), queued, to first token, decode
  EXPECT_EQ(sets[1]->label(), "queued");
  const int n = test::kServingRequests;
  for (int i = 0; i < n; ++i) {
    const auto t = test::serving_request(i);
    const int k = n - 1 - i;  // the last arrival first (drawn at the bottom)
    EXPECT_DOUBLE_EQ(sets[0]->at(k), t.scheduled) << i;
    EXPECT_DOUBLE_EQ(sets[1]->at(k), i == 2 ? 0.0 : t.queue) << i;
    EXPECT_DOUBLE_EQ(sets[2]->at(k), i == 2 ? t.ttft : t.ttft - t.queue) << i;
    EXPECT_DOUBLE_EQ(sets[3]->at(k), t.latency - t.ttft) << i;
    // The stack ends where the request ended.
    EXPECT_DOUBLE_EQ(sets[0]->at(k) + sets[1]->at(k) + sets[2]->at(k) + sets[3]->at(k), t.scheduled + t.latency) << i;
  }
  EXPECT_TRUE(sv->notesLabel()->text().contains("the queue wait of 1 was not measured"));
  // Fewer requests on demand.
  sv->findChild<QSpinBox*>()->setValue(5);
  settle(w);
  EXPECT_EQ(sv->timeline().requests.size(), 5u);
  // Drawn: the window grabs to a non-empty image with the charts' colours in it.
  const QImage img = w.grab().toImage();
  ASSERT_FALSE(img.isNull());
  EXPECT_GE(img.width(), 1000);
  std::set<QRgb> colours;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
  EXPECT_GT(colours.size(), 50u);
  // Exported with the other views.
  const QStringList files = w.exportAllCharts(QString::fromStdString(temp_path("serving_export")));
  EXPECT_TRUE(files.contains(QString::fromStdString(temp_path("serving_export")) + "/serving-5.png"));
}

TEST(Gui, ServingTabOnlyForRunsWithServingData) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(serving_fx().path)));
  const int tab = w.tabs()->indexOf(w.servingView());
  w.selectRuns({serving_fx().ids.run_formats});
  settle(w);
  EXPECT_FALSE(w.tabs()->isTabVisible(tab));
  EXPECT_FALSE(w.servingView()->hasData());
  w.selectRuns({serving_fx().ids.run_stepped, serving_fx().serving.run});
  settle(w);
  EXPECT_TRUE(w.tabs()->isTabVisible(tab));
  ASSERT_EQ(w.servingView()->data().series.size(), 3u);
  EXPECT_EQ(w.servingView()->data().series[0].name, "run " + std::to_string(serving_fx().serving.run) + ": batching=none");
  // Asked for by name without serving data, it says so.
  w.selectRuns({serving_fx().ids.run_threads});
  ASSERT_TRUE(w.showView("serving"));
  settle(w);
  EXPECT_TRUE(w.servingView()->latencyChart(0)->title().contains("no serving data"));
  EXPECT_TRUE(w.servingView()->timelineChart()->series().isEmpty());
}

// The reports fixture with the speculative run (tests/gui/reports_fixture.h make_speculative_fixture).
struct SpeculativeFx {
  std::string path;
  test::ReportsFixture ids;
  test::SpeculativeFixture spec;
};
const SpeculativeFx& speculative_fx() {
  static SpeculativeFx f = [] {
    SpeculativeFx x;
    x.path = temp_path("speculative.sqlite");
    x.ids = test::make_reports_fixture(x.path);
    x.spec = test::make_speculative_fixture(x.path);
    return x;
  }();
  return f;
}

TEST(Gui, SpeculativeViewDrawsSpeedUpTpotAndAcceptanceByPosition) {
  MainWindow w;
  w.resize(1400, 900);
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(speculative_fx().path)));
  w.selectRuns({speculative_fx().spec.run});
  ASSERT_TRUE(w.showView("speculative"));
  settle(w);
  SpeculativeView* sv = w.speculativeView();
  const int tab = w.tabs()->indexOf(sv);
  EXPECT_TRUE(w.tabs()->isTabVisible(tab));
  EXPECT_EQ(w.tabs()->currentIndex(), tab);
  EXPECT_EQ(w.tabs()->tabText(tab), "Speculative decoding");
  ASSERT_TRUE(sv->hasData());
  ASSERT_EQ(sv->data().series.size(), 2u);
  // Speed-up against acceptance: lookup's k=4 has no speed-up and is not drawn; 1.0x dashed.
  QChart* su = sv->speedupChart();
  const auto lookup = points_of(series_named(su, "lookup:1-3"));
  ASSERT_EQ(lookup.size(), 1u);
  EXPECT_DOUBLE_EQ(lookup[0].x(), 0.5);
  EXPECT_DOUBLE_EQ(lookup[0].y(), 50.0 / 44.0);
  const auto self = points_of(series_named(su, "self:int4_g128_a8"));
  ASSERT_EQ(self.size(), 2u);
  EXPECT_DOUBLE_EQ(self[0].x(), 0.8);
  EXPECT_DOUBLE_EQ(self[0].y(), 1.25);
  EXPECT_DOUBLE_EQ(self[1].x(), 0.6);
  const auto gain = points_of(series_named(su, "1.0x = no gain"));
  ASSERT_EQ(gain.size(), 2u);
  EXPECT_EQ(gain[0].y(), 1.0);
  EXPECT_EQ(qobject_cast<QLineSeries*>(series_named(su, "1.0x = no gain"))->pen().style(), Qt::DashLine);
  // Each drawn point labelled with its k (three points: k=2 twice, k=4 once), out of the legend.
  int k2 = 0, k4 = 0;
  for (auto* s : su->series()) {
    auto* xy = qobject_cast<QXYSeries*>(s);
    if (!xy || !xy->pointLabelsVisible()) continue;
    k2 += xy->pointLabelsFormat() == "k=2";
    k4 += xy->pointLabelsFormat() == "k=4";
    for (QLegendMarker* m : su->legend()->markers(s)) EXPECT_FALSE(m->isVisible());
  }
  EXPECT_EQ(k2, 2);
  EXPECT_EQ(k4, 1);
  // TPOT p95 against k: every point with a TPOT (lookup's k=4 too), the off variant dashed at 60 ms,
  // the lowest starred and named.
  QChart* tp = sv->tpotChart();
  const auto lk = points_of(series_named(tp, "lookup:1-3"));
  ASSERT_EQ(lk.size(), 2u);
  EXPECT_EQ(lk[0], QPointF(2, 40));
  EXPECT_EQ(lk[1], QPointF(4, 66));
  const auto off = points_of(series_named(tp, "off: 60 ms"));
  ASSERT_EQ(off.size(), 2u);
  EXPECT_EQ(off[0].y(), 60);
  auto* best = qobject_cast<QScatterSeries*>(series_named(tp, "lowest TPOT p95"));
  ASSERT_TRUE(best);
  ASSERT_EQ(best->count(), 1);
  EXPECT_EQ(best->at(0), QPointF(2, 40));
  // Acceptance by position at each drafter's best k (k=2).
  const auto pos = points_of(series_named(sv->positionChart(), "lookup:1-3 k=2"));
  ASSERT_EQ(pos.size(), 2u);
  EXPECT_EQ(pos[0], QPointF(1, 0.6));
  EXPECT_EQ(pos[1], QPointF(2, 0.4));
  EXPECT_EQ(points_of(series_named(sv->positionChart(), "self:int4_g128_a8 k=2")).size(), 2u);
  // The notes: the best and the point left out with its reason.
  const QString notes = sv->notesLabel()->text();
  EXPECT_EQ(notes, QString("lowest TPOT p95: lookup:1-3 k=2, 40 ms (speed-up 1.5x at p95 over the off variant's 60 ms).<br>"
                            "lookup:1-3 k=4: speed-up not measured: ") + test::kSpecSpeedupReason + ".");
  // The table: the off row, then each drafter by k; the best in bold; "—" with the reason as its tooltip.
  QTableWidget* t = sv->table();
  ASSERT_EQ(t->rowCount(), 5);
  auto cell = [&](int r, int c) { return t->item(r, c)->text(); };
  EXPECT_EQ(cell(0, 0), "off");
  EXPECT_EQ(cell(0, 2), "60");
  EXPECT_EQ(cell(0, 3), "baseline");
  EXPECT_EQ(cell(0, 5), "—");
  EXPECT_EQ(t->item(0, 5)->toolTip(), "speculative off: nothing drafted");
  EXPECT_EQ(cell(1, 0), "lookup:1-3");
  EXPECT_EQ(cell(1, 1), "2");
  EXPECT_EQ(cell(1, 2), "40");
  EXPECT_EQ(cell(1, 3), "1.5x");
  EXPECT_EQ(cell(1, 4), "1.14x");
  EXPECT_EQ(cell(1, 5), "0.5");
  EXPECT_EQ(cell(1, 7), "1 %");
  EXPECT_EQ(cell(1, 8), "w8a8 t1 w1 spec=lookup:1-3 k=2 (lowest TPOT p95)");
  EXPECT_TRUE(t->item(1, 0)->font().bold());
  EXPECT_FALSE(t->item(2, 0)->font().bold());
  EXPECT_EQ(cell(2, 3), "—");  // lookup k=4: no speed-up, never 0
  EXPECT_EQ(t->item(2, 3)->toolTip(), test::kSpecSpeedupReason);
  EXPECT_EQ(cell(2, 2), "66");
  EXPECT_EQ(cell(4, 0), "self:int4_g128_a8");
  EXPECT_EQ(cell(4, 1), "4");
  EXPECT_EQ(cell(4, 3), "1.15x");
  // Exported with the other views: three charts.
  const QString dir = QString::fromStdString(temp_path("speculative_export"));
  const QStringList files = w.exportAllCharts(dir);
  for (const char* f : {"/speculative-1.png", "/speculative-2.svg", "/speculative-3.png"})
    EXPECT_TRUE(files.contains(dir + f)) << f;
}

// The trade-off view of a run of one format tells its variants apart by what varies: each drafter
// and k its own colour and legend entry, the frontier list naming the drafter, not five "w8a8".
TEST(Gui, TradeoffOfASpeculativeRunColoursAndNamesByDrafterAndK) {
  MainWindow w;
  w.resize(1400, 900);
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(speculative_fx().path)));
  w.selectRuns({speculative_fx().spec.run});
  w.showView("tradeoff");
  settle(w);
  TradeoffView* t = w.tradeoffView();
  ASSERT_EQ(t->data().points.size(), 5u);
  QChart* c = t->chart();
  std::set<QRgb> colours;
  int drawn = 0;
  for (auto* s : scatter(c)) {
    if (s->count() == 0 || s->name() == "selected") continue;
    drawn += s->count();
    colours.insert(s->color().rgb());
    EXPECT_NE(s->name(), "w8a8");
  }
  EXPECT_EQ(drawn, 5);
  EXPECT_EQ(colours.size(), 5u);
  for (const char* name : {"spec=off", "spec=self:int4_g128_a8 k=2", "spec=self:int4_g128_a8 k=4",
                           "spec=lookup:1-3 k=2", "spec=lookup:1-3 k=4"}) {
    auto* s = qobject_cast<QScatterSeries*>(series_named(c, name));
    ASSERT_TRUE(s) << name;
    EXPECT_EQ(s->count(), 1) << name;
    // Its legend entry (a marker-less twin) is shown.
    bool entry = false;
    for (auto* e : scatter(c))
      if (e != s && e->name() == name && e->count() == 0) entry = c->legend()->markers(e).value(0)->isVisible();
    EXPECT_TRUE(entry) << name;
  }
  // The frontier list names the drafter of each frontier variant.
  QStringList listed;
  for (int i = 0; i < t->frontierList()->count(); ++i) listed << t->frontierList()->item(i)->text();
  ASSERT_FALSE(listed.isEmpty());
  EXPECT_TRUE(listed.join("\n").contains("w8a8 t1 w1 spec=lookup:1-3 k=2")) << listed.join("\n").toStdString();
}

// The hosts view on the fleet fixture (tests/gui/reports_fixture.h make_fleet_fixture): shown for a
// run whose scenario ran on priced host types, the host types ranked by cost at the floor, one
// colour per host type and the below-floor variant grey, the frontier through large f32 and small
// int8; hidden again for a run without host types.
TEST(Gui, HostsViewRanksHostTypesByCostAtTheFloor) {
  const std::string path = temp_path("fleet.sqlite");
  const auto ids = test::make_reports_fixture(path);
  const test::FleetFixture fx = test::make_fleet_fixture(path);
  MainWindow w;
  w.resize(1400, 900);
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(path)));
  w.selectRuns({fx.run_small});
  settle(w);
  HostsView* hv = w.hostsView();
  // The runs list names a fleet run's host type before the machine's name.
  bool named = false;
  for (int r = 0; r < w.runsTable()->rowCount(); ++r)
    if (w.runsTable()->item(r, 0)->text() == QString::number(fx.run_small))
      named = w.runsTable()->item(r, 4)->text() == "small (node-small)";
  EXPECT_TRUE(named);
  const int tab = w.tabs()->indexOf(hv);
  EXPECT_TRUE(w.tabs()->isTabVisible(tab));
  EXPECT_EQ(w.tabs()->tabText(tab), "Hosts");
  ASSERT_TRUE(hv->hasData());
  ASSERT_TRUE(w.showView("hosts"));
  settle(w);
  EXPECT_EQ(hv->scenarioBox()->currentText(), "fixture-fleet");
  QTableWidget* t = hv->table();
  ASSERT_EQ(t->rowCount(), 2);
  EXPECT_EQ(t->item(0, 0)->text(), "1");
  EXPECT_EQ(t->item(0, 1)->text(), "small");
  EXPECT_EQ(t->item(0, 3)->text(), "int8 t1 w1 @4 qps");
  EXPECT_EQ(t->item(0, 5)->text(), "knee 4 queries/s");
  EXPECT_EQ(t->item(0, 7)->text(), "0.025 USD");
  EXPECT_TRUE(t->item(0, 1)->font().bold());
  EXPECT_EQ(t->item(1, 1)->text(), "large");
  EXPECT_EQ(t->item(1, 7)->text(), "0.0375 USD");
  QChart* c = hv->chart();
  auto* small = qobject_cast<QScatterSeries*>(series_named(c, "small"));
  auto* large = qobject_cast<QScatterSeries*>(series_named(c, "large"));
  auto* grey = qobject_cast<QScatterSeries*>(series_named(c, "below floor, SLO missed or invalid"));
  ASSERT_TRUE(small && large && grey);
  EXPECT_EQ(small->count(), 2);
  EXPECT_EQ(large->count(), 1);
  EXPECT_EQ(grey->count(), 1);
  EXPECT_EQ(grey->color(), QColor(reports::kBelowFloorColor));
  EXPECT_NE(small->color(), large->color());
  const auto frontier = points_of(series_named(c, "frontier"));
  ASSERT_EQ(frontier.size(), 2u);
  EXPECT_DOUBLE_EQ(frontier[0].x(), 120);
  EXPECT_DOUBLE_EQ(frontier[0].y(), 0.0375);
  EXPECT_DOUBLE_EQ(frontier[1].x(), 250);
  EXPECT_DOUBLE_EQ(frontier[1].y(), 0.025);
  // A run of a scenario without host types: the tab goes away once another is shown.
  w.showView("tradeoff");
  w.selectRuns({ids.run_formats});
  settle(w);
  EXPECT_FALSE(hv->hasData());
  EXPECT_FALSE(w.tabs()->isTabVisible(tab));
}

TEST(Gui, SpeculativeTabOnlyForRunsWithADrafter) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(speculative_fx().path)));
  const int tab = w.tabs()->indexOf(w.speculativeView());
  w.selectRuns({speculative_fx().ids.run_formats});
  settle(w);
  EXPECT_FALSE(w.tabs()->isTabVisible(tab));
  EXPECT_FALSE(w.speculativeView()->hasData());
  w.selectRuns({speculative_fx().ids.run_stepped, speculative_fx().spec.run});
  settle(w);
  EXPECT_TRUE(w.tabs()->isTabVisible(tab));
  ASSERT_EQ(w.speculativeView()->data().series.size(), 2u);
  EXPECT_EQ(w.speculativeView()->data().series[0].name, "run " + std::to_string(speculative_fx().spec.run) + ": lookup:1-3");
  // Asked for by name without speculative data, it says so.
  w.selectRuns({speculative_fx().ids.run_threads});
  ASSERT_TRUE(w.showView("speculative"));
  settle(w);
  for (QChart* c : {w.speculativeView()->speedupChart(), w.speculativeView()->tpotChart(), w.speculativeView()->positionChart()}) {
    EXPECT_TRUE(c->title().endsWith(": no speculative data in the selected runs")) << c->title().toStdString();
    EXPECT_TRUE(c->series().isEmpty());
  }
  EXPECT_TRUE(w.speculativeView()->notesLabel()->text().startsWith("No speculative data in the selected runs"));
}

TEST(Gui, ExportChartsAsPngAndSvg) {
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  w.selectRuns({fx().ids.run_formats});
  settle(w);
  const std::string dir = temp_path("export");
  const QStringList files = w.exportAllCharts(QString::fromStdString(dir));
  EXPECT_EQ(files.size(), 2 * 7);  // 7 charts (1 + 2 + 2 + 1 + 1), PNG and SVG each
  for (const auto& f : files) {
    ASSERT_TRUE(fs::exists(f.toStdString()));
    EXPECT_GT(fs::file_size(f.toStdString()), 500u) << f.toStdString();
  }
  std::ifstream svg(dir + "/tradeoff.svg");
  std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  QImage png(QString::fromStdString(dir + "/tradeoff.png"));
  EXPECT_FALSE(png.isNull());
  // Every chart, shown or in a hidden tab, is written at the same readable size.
  for (const auto& f : files) {
    if (f.endsWith(".png")) {
      const QImage img(f);
      EXPECT_EQ(img.size(), QSize(1200, 800)) << f.toStdString();
    } else {
      std::ifstream in(f.toStdString());
      const std::string svg_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_NE(svg_text.find("viewBox=\"0 0 1200 800\""), std::string::npos) << f.toStdString();
    }
  }
  // The window's own charts keep their on-screen size.
  EXPECT_LT(w.scalingView()->chartViews()[0]->width(), 1200);
  EXPECT_EQ(export_chart(w.tradeoffView()->chartViews()[0], "/nonexistent-folder/x.png").isEmpty(), false);
}

TEST(Gui, LiveRefreshShowsANewRun) {
  const std::string path = temp_path("live.sqlite");
  const auto ids = test::make_reports_fixture(path);
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(path)));
  settle(w);
  EXPECT_EQ(w.runsTable()->rowCount(), 4);
  {
    Store s(path);
    const int64_t run = s.insert("runs", test::fixture_run("live-run", test::fixture_formats_toml(), "hostA",
                                                           "2024-07-01T00:00:00Z", "server"));
    test::fixture_variant(s, run, 0, 0, {"f32", 0, 2, 1, 80, 0.99}, 0, 2);
  }
  // The poll (1 s) or the file watcher picks it up without any call from here.
  QElapsedTimer timer;
  timer.start();
  while (w.runsTable()->rowCount() < 5 && timer.elapsed() < 10000) {
    QApplication::processEvents(QEventLoop::AllEvents, 50);
    usleep(20000);
  }
  EXPECT_EQ(w.runsTable()->rowCount(), 5);
  EXPECT_GE(w.reloads(), 1);
  (void)ids;
}

// The run count in the title and the status bar follows the live refresh.
TEST(Gui, RunCountFollowsTheLiveRefresh) {
  const std::string path = temp_path("count.sqlite");
  { Store s(path); }
  MainWindow w;
  ASSERT_TRUE(w.openDatabase(QString::fromStdString(path)));
  settle(w);
  EXPECT_EQ(w.windowTitle(), "cibench-gui - count.sqlite (0 runs)");
  EXPECT_TRUE(status_text(w).contains("0 runs")) << status_text(w).toStdString();
  auto add_run = [&](const std::string& started) {
    Store s(path);
    const int64_t run = s.insert("runs", test::fixture_run("live-run", test::fixture_formats_toml(), "hostA", started, "server"));
    test::fixture_variant(s, run, 0, 0, {"f32", 0, 2, 1, 80, 0.99}, 0, 2);
  };
  add_run("2024-07-01T00:00:00Z");
  w.checkForChanges();  // what the poll and the file watcher call
  settle(w);
  EXPECT_EQ(w.runsTable()->rowCount(), 1);
  EXPECT_EQ(w.windowTitle(), "cibench-gui - count.sqlite (1 run)");
  EXPECT_TRUE(status_text(w).contains("1 run;")) << status_text(w).toStdString();
  EXPECT_FALSE(status_text(w).contains("0 runs")) << status_text(w).toStdString();
  // A second one, picked up by the window itself (poll or watcher).
  add_run("2024-07-02T00:00:00Z");
  QElapsedTimer timer;
  timer.start();
  while (w.runsTable()->rowCount() < 2 && timer.elapsed() < 10000) {
    QApplication::processEvents(QEventLoop::AllEvents, 50);
    usleep(20000);
  }
  EXPECT_EQ(w.runsTable()->rowCount(), 2);
  EXPECT_EQ(w.windowTitle(), "cibench-gui - count.sqlite (2 runs)");
  EXPECT_TRUE(status_text(w).contains("2 runs;")) << status_text(w).toStdString();
  // A filter shows fewer rows; the count says how many are in the database and how many are shown.
  w.dateFromFilter()->setText("2024-07-02");
  EXPECT_EQ(w.runsTable()->rowCount(), 1);
  EXPECT_EQ(w.windowTitle(), "cibench-gui - count.sqlite (2 runs)");
  EXPECT_TRUE(status_text(w).contains("2 runs (1 shown)")) << status_text(w).toStdString();
}

TEST(Gui, BadDatabasesGiveAMessageNotACrash) {
  MainWindow w;
  settle(w);
  const std::string absent = temp_path("absent.sqlite");
  EXPECT_FALSE(w.openDatabase(QString::fromStdString(absent)));
  EXPECT_TRUE(w.message().contains("no such results database"));

  const std::string empty = temp_path("empty.sqlite");
  std::ofstream(empty).close();
  EXPECT_FALSE(w.openDatabase(QString::fromStdString(empty)));
  EXPECT_TRUE(w.message().contains("the database is empty")) << w.message().toStdString();

  const std::string garbage = temp_path("garbage.sqlite");
  {
    std::ofstream out(garbage, std::ios::binary);
    for (int i = 0; i < 400; ++i) out << "not sqlite at all ";
  }
  EXPECT_FALSE(w.openDatabase(QString::fromStdString(garbage)));
  EXPECT_TRUE(w.message().contains("not a readable SQLite database")) << w.message().toStdString();
  settle(w);
  EXPECT_EQ(w.runsTable()->rowCount(), 0);
  EXPECT_TRUE(w.tradeoffView()->chart()->series().isEmpty());

  const std::string old = temp_path("old.sqlite");
  {
    Store s(old);
    s.exec("PRAGMA user_version = 0");
  }
  EXPECT_FALSE(w.openDatabase(QString::fromStdString(old)));
  EXPECT_TRUE(w.message().contains(QString("database schema version 0 is older than this cibench reads (%1)")
                                       .arg(reports::kReadsSchemaVersion)))
      << w.message().toStdString();

  // A database with the schema and no runs: no message, empty views.
  const std::string none = temp_path("none.sqlite");
  { Store s(none); }
  EXPECT_TRUE(w.openDatabase(QString::fromStdString(none)));
  EXPECT_TRUE(w.message().isEmpty());
  EXPECT_EQ(w.runsTable()->rowCount(), 0);
  for (const char* v : {"tradeoff", "latency", "scaling", "counters", "compare"}) {
    EXPECT_TRUE(w.showView(v));
    settle(w);
  }
  EXPECT_FALSE(w.grab().isNull());

  // Back to a good one: the message goes away.
  EXPECT_TRUE(w.openDatabase(QString::fromStdString(fx().path)));
  EXPECT_TRUE(w.message().isEmpty());
}

}  // namespace
}  // namespace cibench::gui

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
