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

}  // namespace cibench::gui
