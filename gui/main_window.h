#pragma once
// cibench-gui's window: the database, the runs list with filters and the provenance of the
// selected run on the left; the views (trade-off, latency, scaling, counters, compare, serving when a selected run
// has serving data, speculative decoding when one has a drafter, hosts when a run's scenario ran on
// priced host types) as tabs.
// A database that cannot be read gives a message in the window, never a crash. The views
// refresh when the database changes (a run in progress appears live).
#include <QMainWindow>
#include <memory>
#include <set>
#include <vector>

#include "gui/views.h"
#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"
#include "reports/format.h"

class QFileSystemWatcher;
class QLabel;
class QLineEdit;
class QTabWidget;
class QTableWidget;
class QTimer;

namespace cibench::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a database; on failure shows the reason in the window and returns false.
  bool openDatabase(const QString& path);
  // Selects runs in the runs list (ids not listed are ignored).
  void selectRuns(const std::vector<int64_t>& runs);
  void selectVariant(int64_t variant_id, bool add);
  // Shows the view with this name ("tradeoff", "latency", ...); false when unknown.
  bool showView(const QString& name);
  // Re-reads the runs list and every view (also called by the live refresh).
  void reload();
  // Checks whether the database changed since the last read and reloads if so.
  void checkForChanges();
  // Writes the charts of every view (PNG and SVG) into a folder; returns the files written.
  QStringList exportAllCharts(const QString& dir);

  // For tests.
  const QString& message() const { return message_; }  // "" when the database is readable
  reports::Db* db() const { return db_.get(); }
  QTableWidget* runsTable() const { return runs_; }
  QTableWidget* provenanceTable() const { return provenance_; }
  QLineEdit* scenarioFilter() const { return f_scenario_; }
  QLineEdit* hostFilter() const { return f_host_; }
  QLineEdit* modelFilter() const { return f_model_; }
  QLineEdit* dateFromFilter() const { return f_from_; }
  QLineEdit* dateToFilter() const { return f_to_; }
  TradeoffView* tradeoffView() const { return tradeoff_; }
  LatencyView* latencyView() const { return latency_; }
  ScalingView* scalingView() const { return scaling_; }
  CountersView* countersView() const { return counters_; }
  CompareView* compareView() const { return compare_; }
  ServingView* servingView() const { return serving_; }
  SpeculativeView* speculativeView() const { return speculative_; }
  HostsView* hostsView() const { return hosts_; }
  QTabWidget* tabs() const { return tabs_; }
  QLabel* runCountLabel() const { return run_count_; }  // in the status bar
  const Selection& selection() const { return sel_; }
  int reloads() const { return reloads_; }

 private:
  void showMessage(const QString& m);
  void fillRuns();
  // The run count (and how many the filters show) in the status bar and the window title.
  void showRunCount();
  void runsSelectionChanged();
  void refreshViews();
  void openDialog();
  void exportDialog();

  std::unique_ptr<reports::Db> db_;
  QString path_;
  QString message_;
  int64_t data_version_ = -1;
  int reloads_ = 0;
  Selection sel_;
  QLabel* banner_;
  QLabel* db_label_;
  QLabel* run_count_;
  QLineEdit *f_scenario_, *f_host_, *f_model_, *f_from_, *f_to_;
  QTableWidget* runs_;
  QTableWidget* provenance_;
  QTabWidget* tabs_;
  TradeoffView* tradeoff_;
  LatencyView* latency_;
  ScalingView* scaling_;
  CountersView* counters_;
  CompareView* compare_;
  ServingView* serving_;
  SpeculativeView* speculative_;
  HostsView* hosts_;
  QFileSystemWatcher* watcher_;
  QTimer* poll_;
};

}  // namespace cibench::gui
