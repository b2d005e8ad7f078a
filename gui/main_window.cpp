#include "gui/main_window.h"

#include <QApplication>
#include <algorithm>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

namespace cibench::gui {
namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
QTableWidgetItem* cell(const QString& t) {
  auto* it = new QTableWidgetItem(t);
  it->setFlags(it->flags() & ~Qt::ItemIsEditable);
  it->setToolTip(t);
  return it;
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("cibench-gui");
  resize(1400, 900);

  // Left: database, filters, runs, provenance.
  db_label_ = new QLabel(this);
  db_label_->setWordWrap(true);
  auto* open = new QPushButton("Open...", this);
  f_scenario_ = new QLineEdit(this);
  f_host_ = new QLineEdit(this);
  f_model_ = new QLineEdit(this);
  f_from_ = new QLineEdit(this);
  f_to_ = new QLineEdit(this);
  f_scenario_->setPlaceholderText("any scenario");
  f_host_->setPlaceholderText("any host or CPU");
  f_model_->setPlaceholderText("any model");
  f_from_->setPlaceholderText("YYYY-MM-DD");
  f_to_->setPlaceholderText("YYYY-MM-DD");
  auto* dates = new QHBoxLayout();
  dates->addWidget(f_from_);
  dates->addWidget(new QLabel("to", this));
  dates->addWidget(f_to_);
  auto* filters = new QFormLayout();
  filters->addRow("Scenario", f_scenario_);
  filters->addRow("Host / CPU", f_host_);
  filters->addRow("Model", f_model_);
  filters->addRow("Date", dates);
  runs_ = new QTableWidget(this);
  runs_->setColumnCount(8);
  runs_->setHorizontalHeaderLabels({"run", "status", "scenario", "started (UTC)", "host", "CPU", "model", "variants"});
  runs_->setSelectionBehavior(QAbstractItemView::SelectRows);
  runs_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  runs_->verticalHeader()->hide();
  runs_->horizontalHeader()->setStretchLastSection(true);
  provenance_ = new QTableWidget(this);
  provenance_->setColumnCount(2);
  provenance_->setHorizontalHeaderLabels({"provenance", "value"});
  provenance_->verticalHeader()->hide();
  provenance_->horizontalHeader()->setStretchLastSection(true);

  auto* dbrow = new QHBoxLayout();
  dbrow->addWidget(db_label_, 1);
  dbrow->addWidget(open);
  auto* left = new QWidget(this);
  auto* ll = new QVBoxLayout(left);
  ll->addLayout(dbrow);
  ll->addLayout(filters);
  ll->addWidget(new QLabel("<b>Runs</b> (select one or more; Ctrl/Shift for several)", this));
  auto* lsplit = new QSplitter(Qt::Vertical, this);
  lsplit->addWidget(runs_);
  lsplit->addWidget(provenance_);
  lsplit->setStretchFactor(0, 3);
  lsplit->setStretchFactor(1, 2);
  ll->addWidget(lsplit, 1);

  // Right: the views.
  tabs_ = new QTabWidget(this);
  tradeoff_ = new TradeoffView(this);
  latency_ = new LatencyView(this);
  scaling_ = new ScalingView(this);
  counters_ = new CountersView(this);
  compare_ = new CompareView(this);
  serving_ = new ServingView(this);
  speculative_ = new SpeculativeView(this);
  hosts_ = new HostsView(this);
  tabs_->addTab(tradeoff_, "Trade-off");
  tabs_->addTab(latency_, "Latency");
  tabs_->addTab(scaling_, "Scaling");
  tabs_->addTab(counters_, "Counters");
  tabs_->addTab(compare_, "Compare");
  tabs_->addTab(serving_, "Serving");
  tabs_->addTab(speculative_, "Speculative decoding");
  tabs_->addTab(hosts_, "Hosts");
  tabs_->setTabVisible(tabs_->indexOf(serving_), false);  // shown when a selected run has serving data
  tabs_->setTabVisible(tabs_->indexOf(speculative_), false);  // shown when a selected run has a drafter
  tabs_->setTabVisible(tabs_->indexOf(hosts_), false);  // shown when a selected run's scenario ran on priced host types

  banner_ = new QLabel(this);
  banner_->setWordWrap(true);
  banner_->setStyleSheet("background: #fdecea; color: #611a15; padding: 8px; border: 1px solid #f5c6cb;");
  banner_->hide();
  auto* right = new QWidget(this);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->addWidget(banner_);
  rl->addWidget(tabs_, 1);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({430, 970});
  setCentralWidget(split);

  auto* file = menuBar()->addMenu("&File");
  file->addAction("&Open database...", QKeySequence::Open, this, [this] { openDialog(); });
  file->addAction("&Reload", QKeySequence::Refresh, this, [this] { reload(); });
  file->addAction("&Export charts of this view...", this, [this] { exportDialog(); });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, qApp, &QApplication::quit);

  run_count_ = new QLabel(this);
  statusBar()->addPermanentWidget(run_count_);

  connect(open, &QPushButton::clicked, this, [this] { openDialog(); });
  for (QLineEdit* f : {f_scenario_, f_host_, f_model_, f_from_, f_to_})
    connect(f, &QLineEdit::textChanged, this, [this] {
      fillRuns();
      showRunCount();
      runsSelectionChanged();
    });
  connect(runs_, &QTableWidget::itemSelectionChanged, this, [this] { runsSelectionChanged(); });
  connect(tradeoff_, &TradeoffView::variantClicked, this, [this](qint64 id, bool add) { selectVariant(id, add); });

  // Live refresh: file changes wake us up quickly; the poll of PRAGMA data_version catches
  // everything else (and reopens a database that did not exist or was unreadable).
  watcher_ = new QFileSystemWatcher(this);
  connect(watcher_, &QFileSystemWatcher::fileChanged, this, [this] { QTimer::singleShot(200, this, [this] { checkForChanges(); }); });
  connect(watcher_, &QFileSystemWatcher::directoryChanged, this, [this] { QTimer::singleShot(200, this, [this] { checkForChanges(); }); });
  poll_ = new QTimer(this);
  poll_->setInterval(1000);
  connect(poll_, &QTimer::timeout, this, [this] { checkForChanges(); });
  poll_->start();
}

MainWindow::~MainWindow() = default;

void MainWindow::showMessage(const QString& m) {
  message_ = m;
  banner_->setText(m);
  banner_->setVisible(!m.isEmpty());
  if (!m.isEmpty()) statusBar()->showMessage(m);
}

bool MainWindow::openDatabase(const QString& path) {
  path_ = path;
  db_.reset();
  sel_ = {};
  data_version_ = -1;
  if (!watcher_->files().isEmpty()) watcher_->removePaths(watcher_->files());
  if (!watcher_->directories().isEmpty()) watcher_->removePaths(watcher_->directories());
  db_label_->setText("<b>Database</b><br>" + path.toHtmlEscaped());
  try {
    db_ = std::make_unique<reports::Db>(path.toStdString());
    data_version_ = db_->data_version();
    showMessage("");
    statusBar()->clearMessage();  // an earlier database's error
  } catch (const std::exception& e) {
    db_.reset();
    showMessage(QString::fromUtf8(e.what()));
  }
  for (const QString& p : {path, path + "-wal"})
    if (QFileInfo::exists(p)) watcher_->addPath(p);
  const QString dir = QFileInfo(path).absolutePath();
  if (QFileInfo(dir).isDir()) watcher_->addPath(dir);
  fillRuns();
  if (db_ && runs_->rowCount() > 0 && runs_->selectedItems().isEmpty()) runs_->selectRow(0);
  runsSelectionChanged();
  showRunCount();
  return db_ != nullptr;
}

void MainWindow::showRunCount() {
  // The title names the database and what it holds, so a window list (or a test) tells which is open.
  const QString file = QFileInfo(path_).fileName();
  if (!db_) {
    run_count_->clear();
    setWindowTitle(QString("cibench-gui - %1 (not opened)").arg(file));
    return;
  }
  size_t total = 0;
  try {
    total = db_->runs().size();
  } catch (const std::exception& e) {
    showMessage(QString::fromUtf8(e.what()));
    return;
  }
  const QString runs_text = QString("%1 run%2").arg(total).arg(total == 1 ? "" : "s");
  const int shown = runs_->rowCount();
  run_count_->setText(QString("%1%2; schema version %3")
                          .arg(runs_text, static_cast<size_t>(shown) == total ? QString() : QString(" (%1 shown)").arg(shown))
                          .arg(db_->schema_version()));
  setWindowTitle(QString("cibench-gui - %1 (%2)").arg(file, runs_text));
}

void MainWindow::fillRuns() {
  QSignalBlocker b(runs_);
  std::set<int64_t> keep(sel_.runs.begin(), sel_.runs.end());
  runs_->clearContents();
  runs_->setRowCount(0);
  if (!db_) return;
  std::vector<reports::RunInfo> rs;
  try {
    reports::RunFilter f;
    f.scenario = f_scenario_->text().toStdString();
    f.host = f_host_->text().toStdString();
    f.model = f_model_->text().toStdString();
    f.date_from = f_from_->text().trimmed().toStdString();
    f.date_to = f_to_->text().trimmed().toStdString();
    rs = db_->runs(f);
  } catch (const std::exception& e) {
    showMessage(QString::fromUtf8(e.what()));
    return;
  }
  runs_->setRowCount(static_cast<int>(rs.size()));
  for (size_t i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i];
    const int row = static_cast<int>(i);
    auto* id = cell(QString::number(r.run_id));
    id->setData(Qt::UserRole, QVariant::fromValue<qint64>(r.run_id));
    runs_->setItem(row, 0, id);
    auto* st = cell(q(r.status));
    if (r.status == "running") st->setForeground(QColor("#1f77b4"));
    else if (r.status != "complete") st->setForeground(QColor("#d62728"));
    if (!r.error.empty()) st->setToolTip(q(r.error));
    runs_->setItem(row, 1, st);
    runs_->setItem(row, 2, cell(q(r.scenario_name)));
    runs_->setItem(row, 3, cell(q(r.started_utc.substr(0, 19))));
    // A fleet's run: its host type first, the machine's name after it.
    runs_->setItem(row, 4, cell(r.host_type.empty() ? q(r.hostname) : q(r.host_type + " (" + r.hostname + ")")));
    runs_->setItem(row, 5, cell(q(r.cpu_model)));
    runs_->setItem(row, 6, cell(q(r.model_spec)));
    runs_->setItem(row, 7, cell(QString::number(r.variants)));
    if (keep.count(r.run_id)) {
      runs_->selectionModel()->select(runs_->model()->index(row, 0),
                                      QItemSelectionModel::Select | QItemSelectionModel::Rows);
    }
  }
  runs_->resizeColumnsToContents();
}

void MainWindow::runsSelectionChanged() {
  std::vector<int64_t> ids;
  std::set<int> rows;
  for (const auto& idx : runs_->selectionModel()->selectedRows()) rows.insert(idx.row());
  for (int r : rows) ids.push_back(runs_->item(r, 0)->data(Qt::UserRole).toLongLong());
  std::sort(ids.begin(), ids.end());  // oldest first: run A of the compare is the earlier one
  if (ids != sel_.runs) sel_.variants.clear();
  sel_.runs = ids;
  sel_.db = db_.get();
  provenance_->clearContents();
  provenance_->setRowCount(0);
  if (db_ && !ids.empty()) {
    try {
      const auto prov = db_->provenance(ids.front());
      provenance_->setRowCount(static_cast<int>(prov.size()));
      for (size_t i = 0; i < prov.size(); ++i) {
        provenance_->setItem(static_cast<int>(i), 0, cell(q(prov[i].first)));
        provenance_->setItem(static_cast<int>(i), 1, cell(q(prov[i].second)));
      }
      provenance_->setHorizontalHeaderLabels({QString("run %1").arg(ids.front()), "value"});
    } catch (const std::exception& e) {
      showMessage(QString::fromUtf8(e.what()));
    }
  }
  refreshViews();
}

void MainWindow::refreshViews() {
  sel_.db = db_.get();
  for (View* v : std::initializer_list<View*>{tradeoff_, latency_, scaling_, counters_, compare_, serving_, speculative_,
                                              hosts_}) {
    try {
      v->refresh(sel_);
    } catch (const std::exception& e) {
      showMessage(QString("%1 view: %2").arg(v->name(), QString::fromUtf8(e.what())));
    }
  }
  // The serving and speculative views only for runs with their data (asked for by name, they say
  // there is none).
  for (const auto& [view, has] : {std::pair<View*, bool>{serving_, serving_->hasData()},
                                  std::pair<View*, bool>{speculative_, speculative_->hasData()},
                                  std::pair<View*, bool>{hosts_, hosts_->hasData()}}) {
    const int at = tabs_->indexOf(view);
    tabs_->setTabVisible(at, has || tabs_->currentIndex() == at);
  }
}

void MainWindow::selectRuns(const std::vector<int64_t>& runs) {
  {
    QSignalBlocker b(runs_);
    runs_->clearSelection();
    for (int r = 0; r < runs_->rowCount(); ++r) {
      const int64_t id = runs_->item(r, 0)->data(Qt::UserRole).toLongLong();
      if (std::find(runs.begin(), runs.end(), id) != runs.end())
        runs_->selectionModel()->select(runs_->model()->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    }
  }
  runsSelectionChanged();
}

void MainWindow::selectVariant(int64_t variant_id, bool add) {
  if (!add) sel_.variants.clear();
  if (add && sel_.variants.count(variant_id)) sel_.variants.erase(variant_id);
  else sel_.variants.insert(variant_id);
  statusBar()->showMessage(QString("selected %1 variant(s): shown in the latency and counters views").arg(sel_.variants.size()));
  refreshViews();
}

bool MainWindow::showView(const QString& name) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (static_cast<View*>(tabs_->widget(i))->name() == name) {
      tabs_->setTabVisible(i, true);  // the serving (speculative) view without such data says so
      tabs_->setCurrentIndex(i);
      return true;
    }
  return false;
}

void MainWindow::reload() {
  ++reloads_;
  if (!db_) {
    if (!path_.isEmpty()) openDatabase(path_);
    return;
  }
  try {
    data_version_ = db_->data_version();
  } catch (const std::exception& e) {
    showMessage(QString::fromUtf8(e.what()));
    return;
  }
  const auto keep_variants = sel_.variants;
  fillRuns();
  showRunCount();
  runsSelectionChanged();
  sel_.variants = keep_variants;
  refreshViews();
}

void MainWindow::checkForChanges() {
  if (!db_) {
    // Not readable yet (absent, empty, being created): try again quietly.
    if (!path_.isEmpty() && QFileInfo::exists(path_)) {
      try {
        reports::Db probe(path_.toStdString());
      } catch (const std::exception&) {
        return;
      }
      openDatabase(path_);
    }
    return;
  }
  for (const QString& p : {path_, path_ + "-wal"})
    if (QFileInfo::exists(p) && !watcher_->files().contains(p)) watcher_->addPath(p);
  try {
    if (db_->data_version() != data_version_) reload();
  } catch (const std::exception& e) {
    showMessage(QString::fromUtf8(e.what()));
  }
}

void MainWindow::openDialog() {
  const QString p = QFileDialog::getOpenFileName(this, "Open a cibench results database",
                                                 path_.isEmpty() ? QString("results") : QFileInfo(path_).absolutePath(),
                                                 "SQLite databases (*.sqlite *.db);;All files (*)");
  if (!p.isEmpty()) openDatabase(p);
}

QStringList MainWindow::exportAllCharts(const QString& dir) {
  QStringList out;
  QDir().mkpath(dir);
  for (int i = 0; i < tabs_->count(); ++i) {
    if (!tabs_->isTabVisible(i)) continue;  // the serving (speculative) view of runs without such data
    auto* v = static_cast<View*>(tabs_->widget(i));
    const auto views = v->chartViews();
    for (int k = 0; k < views.size(); ++k)
      for (const char* ext : {"png", "svg"}) {
        const QString path = QString("%1/%2%3.%4").arg(dir, v->name(), views.size() > 1 ? QString("-%1").arg(k + 1) : QString(), ext);
        if (export_chart(views[k], path).isEmpty()) out << path;
      }
  }
  return out;
}

void MainWindow::exportDialog() {
  auto* v = static_cast<View*>(tabs_->currentWidget());
  const QString dir = QFileDialog::getExistingDirectory(this, "Export this view's charts (PNG and SVG) to");
  if (dir.isEmpty()) return;
  QStringList written;
  const auto views = v->chartViews();
  for (int k = 0; k < views.size(); ++k)
    for (const char* ext : {"png", "svg"}) {
      const QString path = QString("%1/%2%3.%4").arg(dir, v->name(), views.size() > 1 ? QString("-%1").arg(k + 1) : QString(), ext);
      const QString err = export_chart(views[k], path);
      if (!err.isEmpty()) QMessageBox::warning(this, "Export", err);
      else written << path;
    }
  statusBar()->showMessage(QString("wrote %1").arg(written.join(", ")));
}

}  // namespace cibench::gui
