#pragma once
// The dashboard's views. Each one draws data from the query layer (reports/query.h) only, the
// same calls the HTML report makes, so both show the same numbers.
#include <QChartView>
#include <QWidget>
#include <memory>
#include <set>
#include <vector>

#include "reports/query.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
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

 protected:
  void contextMenuEvent(QContextMenuEvent* e) override;
};

// Writes a chart to PNG or SVG (by the file's suffix). Returns an error message, empty on success.
QString export_chart(QChartView* view, const QString& path);

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

class TradeoffView : public View {
  Q_OBJECT
 public:
  explicit TradeoffView(QWidget* parent = nullptr);
  void refresh(const Selection& s) override;
  QList<QChartView*> chartViews() const override { return {view_}; }
  QString name() const override { return "tradeoff"; }

  // For tests and scripting.
  const reports::Tradeoff& data() const { return data_; }
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

 signals:
  void variantClicked(qint64 variant_id, bool add);

 private:
  void rebuild();
  void axesChanged();
  Selection sel_;
  reports::Tradeoff data_;
  bool user_floor_ = false;
  ChartView* view_;
  QComboBox *x_, *y_;
  QCheckBox* floor_on_;
  QDoubleSpinBox* floor_;
  QLabel* floor_src_;
  QListWidget* frontier_;
  QLabel* unplotted_;
  std::map<QXYSeries*, std::vector<size_t>> series_points_;  // series -> indices into data_.points
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

 private:
  void rebuildChart();
  QTableWidget* table_;
  ChartView* chart_;
  QComboBox* which_;
  QLabel* unavailable_;
  std::vector<reports::CounterSummary> data_;
  std::set<int64_t> selected_;
  bool many_runs_ = false;
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
