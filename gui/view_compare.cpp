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
