#pragma once
// The dashboard's views. Each one draws data from the query layer (reports/query.h) only, the
// same calls the HTML report makes, so both show the same numbers.
#include <QChartView>
#include <QWidget>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/hosts.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"
#include "reports/format.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QScrollArea;
class QSpinBox;
class QTableWidget;
class QChart;
class QScatterSeries;
class QXYSeries;

namespace cibench::gui {

// A chart view with "Export PNG..." / "Export SVG..." in its context menu.
class ChartView : public QChartView {
  Q_OBJECT
 public:
  explicit ChartView(QWidget* parent = nullptr);
  // The keyboard modifiers of the last mouse press (Ctrl-click on a point adds it).
  Qt::KeyboardModifiers pressModifiers() const { return press_modifiers_; }

 protected:
  void contextMenuEvent(QContextMenuEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;

 private:
  Qt::KeyboardModifiers press_modifiers_;
};

// The size charts are exported at: readable, and the same for every chart whatever its size on
// screen (a chart in a hidden tab has never been laid out at a useful size).
inline constexpr QSize kExportSize{1200, 800};

// Writes a chart to PNG or SVG (by the file's suffix) at `size`; the view on screen is left as it
// was. Returns an error message, empty on success.
QString export_chart(QChartView* view, const QString& path, QSize size = kExportSize);

// Variants numbered as the CLI numbers them while running ("variant 2/7", "step 1/4"): from 1, of
// the run's variants and of the variant's steps as stored.
class VariantNumbers {
 public:
  VariantNumbers() = default;
  explicit VariantNumbers(const std::vector<reports::Variant>& all);
  // "run 3, variant 2/7" (", step 1/4" for a variant with several steps).
  QString of(const reports::Variant& v) const;
  // The variant's configuration (reports::Variant::config()) headed by of(v).
  QString config(const reports::Variant& v) const;

 private:
  std::map<int64_t, int64_t> variants_;                     // run -> variants
  std::map<std::pair<int64_t, int64_t>, int64_t> steps_;    // (run, variant index) -> steps
};

// What every view is shown: the open database, the runs selected in the runs list and the
// variants selected by clicking (in the trade-off view).
struct Selection {
  reports::Db* db = nullptr;
  std::vector<int64_t> runs;
  std::set<int64_t> variants;
};

class View : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  virtual void refresh(const Selection& s) = 0;
  virtual QList<QChartView*> chartViews() const = 0;
  virtual QString name() const = 0;  // tab title and screenshot file stem
};

// The runs of one scenario and model in the trade-off view: judged on their own floor, with their
// own frontier (points offset.. offset + t.points.size() of TradeoffView::data()).
struct TradeoffGroup {
  QString name;  // the scenario (and the model when two groups share a scenario name)
  std::vector<int64_t> runs;
  reports::Tradeoff t;
  size_t offset = 0;
};

class TradeoffView : public View {
  Q_OBJECT
 public:
  explicit TradeoffView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {view_}; }
  QString name() const override { return "tradeoff"; }

  // For tests and scripting.
  // Every plotted point of every group; frontier and floor are the first group's when several.
  const reports::Tradeoff& data() const { return data_; }
  // The selected runs grouped by (scenario, model), each with its own floor and frontier.
  const std::vector<TradeoffGroup>& groups() const { return groups_; }
  QChart* chart() const;
  QComboBox* xAxisBox() const { return x_; }
  QComboBox* yAxisBox() const { return y_; }
  QDoubleSpinBox* floorBox() const { return floor_; }
  QCheckBox* floorEnabledBox() const { return floor_on_; }
  QListWidget* frontierList() const { return frontier_; }
  QLabel* unplottedLabel() const { return unplotted_; }
  // The variant shown at this point of this series (nullptr when none): hover and click.
  const reports::TradeoffPoint* pointAt(QXYSeries* series, const QPointF& p) const;
  QString tooltipFor(const reports::TradeoffPoint& p) const;
  // Where each plotted variant's marker is drawn, in the coordinates of `in` (this view or a
  // widget containing it): (variant id, position). Empty until the chart has been laid out.
  std::vector<std::pair<int64_t, QPoint>> markerPositions(const QWidget* in) const;

 signals:
  // A point (or a frontier entry) was clicked. Emitted from the event loop once the click has
  // been delivered, never from inside it: the receiver may rebuild the chart that was clicked.
  void variantClicked(qint64 variant_id, bool add);

 private:
  void rebuild();
  void axesChanged();
  Selection sel_;
  reports::Tradeoff data_;
  std::vector<TradeoffGroup> groups_;
  bool user_floor_ = false;
  ChartView* view_;
  QComboBox *x_, *y_;
  QCheckBox* floor_on_;
  QDoubleSpinBox* floor_;
  QLabel* floor_src_;
  QListWidget* frontier_;
  QLabel* unplotted_;
  QScrollArea* unplotted_area_;  // hidden when every variant is plotted
  std::map<QXYSeries*, std::vector<size_t>> series_points_;  // series -> indices into data_.points
  VariantNumbers numbers_;
};

class LatencyView : public View {
  Q_OBJECT
 public:
  explicit LatencyView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {cdf_, load_}; }
  QString name() const override { return "latency"; }
  QChart* cdfChart() const;
  QChart* loadChart() const;
  const std::vector<reports::CdfSeries>& cdfs() const { return cdfs_; }
  // The metric both charts show: latency, ttft, tpot, queue or service (refreshes).
  void setMetric(const QString& metric);
  QString metric() const;

 private:
  ChartView *cdf_, *load_;
  QComboBox* metric_;
  Selection sel_;
  std::vector<reports::CdfSeries> cdfs_;
};

class ScalingView : public View {
  Q_OBJECT
 public:
  explicit ScalingView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {throughput_, latency_}; }
  QString name() const override { return "scaling"; }
  QChart* throughputChart() const;
  QChart* latencyChart() const;

 private:
  ChartView *throughput_, *latency_;
};

class CountersView : public View {
  Q_OBJECT
 public:
  explicit CountersView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {chart_}; }
  QString name() const override { return "counters"; }
  QTableWidget* table() const { return table_; }
  QChart* chart() const;
  QComboBox* counterBox() const { return which_; }
  QLabel* unavailableLabel() const { return unavailable_; }
  // The counters unavailable for the selected variants, one line per distinct reason naming the
  // variants (numbered from 1 of the run's) each counter lacks.
  QLabel* gapsLabel() const { return gaps_; }
  // The counters measured for at least one selected variant (the table's columns, the chart's choices).
  const std::vector<std::string>& measured() const { return measured_; }

 private:
  void rebuildChart();
  QTableWidget* table_;
  QLabel* gaps_;
  std::vector<std::string> measured_;
  ChartView* chart_;
  QComboBox* which_;
  QLabel* unavailable_;
  std::vector<reports::CounterSummary> data_;
  std::vector<reports::Variant> variants_;  // every variant of the selected runs (numbering)
  QString empty_reason_;                    // the chart's title when no counter is measured
  VariantNumbers numbers_;
  std::set<int64_t> selected_;
  bool many_runs_ = false;
};

// Decoders serving open-loop traffic (reports::serving): the run's latency SLO metrics (TTFT
// p99 and TPOT p99 by default) against achieved throughput with the SLO lines and each series'
// knee, goodput against the offered rate, TPOT (or ITL) against the mean batch occupancy, and the
// requests of one step as a timeline (queued, to the first token, decode), the step chosen in a
// selector (each series' knee step, else its highest, first). Empty for runs without serving rows.
class ServingView : public View {
  Q_OBJECT
 public:
  explicit ServingView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {latency_[0], latency_[1], goodput_, occupancy_, timeline_}; }
  QString name() const override { return "serving"; }

  // For tests.
  const reports::Serving& data() const { return data_; }
  const reports::Timeline& timeline() const { return tl_; }
  QChart* latencyChart(int i) const;  // the throughput-latency chart of data().metrics[i] (i < 2)
  QChart* goodputChart() const;
  QChart* occupancyChart() const;
  QChart* timelineChart() const;
  QComboBox* stepBox() const { return step_; }  // "NAME @X qps", data: the variant id
  QLabel* notesLabel() const { return notes_; }
  bool hasData() const { return !data_.empty(); }
  // Shows this variant row's requests in the timeline (as choosing it in the step box).
  void showTimeline(int64_t variant_id);

 private:
  void rebuildTimeline();
  Selection sel_;
  reports::Serving data_;
  reports::Timeline tl_;
  ChartView* latency_[2];
  ChartView *goodput_, *occupancy_, *timeline_;
  QComboBox* step_;
  QSpinBox* shown_;
  QLabel* notes_;
  QString notes_base_;  // the series' notes (the timeline's follow)
};

// Speculative decoding (reports::speculative): speed-up against acceptance rate (one line per
// drafter through its k, each point labelled "k=N", a dashed line at 1.0x = no gain), TPOT p95
// against k with each build's off variant as a dashed line and the lowest TPOT p95 marked, and
// acceptance by draft position at each drafter's lowest-TPOT-p95 k beside a table of the rows;
// notes above the charts name the lowest TPOT p95 per run and build and every row left out with its
// reason. Empty for runs without a drafter.
class SpeculativeView : public View {
  Q_OBJECT
 public:
  explicit SpeculativeView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {speedup_, tpot_, position_}; }
  QString name() const override { return "speculative"; }

  // For tests.
  const reports::Speculative& data() const { return data_; }
  QChart* speedupChart() const;
  QChart* tpotChart() const;
  QChart* positionChart() const;
  QLabel* notesLabel() const { return notes_; }
  // One row per off and speculative variant (drafter, k, TPOT p95, speed-up p95 and mean,
  // acceptance, mean accepted length, draft share, label), the lowest TPOT p95 in bold; "—" where
  // not measured, the reason in its tooltip.
  QTableWidget* table() const { return table_; }
  bool hasData() const { return !data_.empty(); }

 private:
  reports::Speculative data_;
  ChartView *speedup_, *tpot_, *position_;
  QTableWidget* table_;
  QLabel* notes_;
};

// Host types side by side (reports::hosts; cibench fleet): for each scenario of the selected runs,
// its variants on every priced host type in the store. The chart: cost per thousand requests
// against latency p95 at the rate priced (the knee, or the measured rate), one colour per host
// type, grey below the quality floor, missing the SLOs or invalid, the frontier dashed. The
// table: the host types ranked by their cheapest variant meeting the floor and the SLOs, with the
// knee and the cost per thousand requests and per million output tokens side by side. Shown when
// a selected run's scenario ran on priced host types.
class HostsView : public View {
  Q_OBJECT
 public:
  explicit HostsView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {chart_}; }
  QString name() const override { return "hosts"; }

  // For tests.
  const reports::Hosts& data() const { return data_; }
  QChart* chart() const;
  QTableWidget* table() const { return table_; }
  QComboBox* scenarioBox() const { return scenario_; }
  QLabel* notesLabel() const { return notes_; }
  bool hasData() const { return !data_.empty(); }

 private:
  void draw();
  reports::Hosts data_;
  QComboBox* scenario_;
  QLabel* notes_;
  ChartView* chart_;
  QTableWidget* table_;
};

class CompareView : public View {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {chart_}; }
  QString name() const override { return "compare"; }
  QComboBox* runA() const { return a_; }
  QComboBox* runB() const { return b_; }
  QTableWidget* table() const { return table_; }
  QChart* chart() const;
  const reports::Comparison* comparison() const { return cmp_ ? &*cmp_ : nullptr; }
  QLabel* infoLabel() const { return info_; }

 private:
  void recompute();
  Selection sel_;
  QComboBox *a_, *b_;
  QLabel* info_;
  QTableWidget* table_;
  ChartView* chart_;
  std::optional<reports::Comparison> cmp_;
};

}  // namespace cibench::gui
