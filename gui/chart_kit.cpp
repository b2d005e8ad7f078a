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

}  // namespace cibench::gui
