// cibench-gui: the trade-off dashboard over a cibench results database.
//   cibench-gui [DB] [--runs 1,2] [--view tradeoff|latency|scaling|counters|compare]
//               [--variant ID] [--metric latency|ttft|tpot|queue|service]
//               [--screenshot FILE.png] [--export-charts DIR]
// DB defaults to results/cibench.sqlite. --screenshot grabs the window once it is drawn and exits
// (used for the documentation); --export-charts writes every chart as PNG and SVG and exits.
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>

#include "gui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("cibench-gui");
  QCommandLineParser p;
  p.setApplicationDescription("cibench-gui: which variant sits on the Pareto frontier, which fall below the "
                              "quality floor, where the latency tail grows with load");
  p.addHelpOption();
  p.addPositionalArgument("db", "Results database (default results/cibench.sqlite)", "[DB]");
  p.addOption({"runs", "Runs to select (comma-separated ids)", "ids"});
  p.addOption({"view", "View to show: tradeoff, latency, scaling, counters, compare", "name"});
  p.addOption({"variant", "Variant to select (as a click in the trade-off view would)", "id"});
  p.addOption({"metric", "Latency view metric: latency, ttft, tpot, queue, service", "name"});
  p.addOption({"size", "Window size WxH (default 1400x900)", "WxH"});
  p.addOption({"screenshot", "Grab the window into this PNG once drawn, then exit", "file"});
  p.addOption({"export-charts", "Write every chart as PNG and SVG into this folder, then exit", "dir"});
  p.process(app);

  cibench::gui::MainWindow w;
  if (p.isSet("size")) {
    const auto wh = p.value("size").split('x');
    if (wh.size() == 2) w.resize(wh[0].toInt(), wh[1].toInt());
  }
  const QString db = p.positionalArguments().value(0, "results/cibench.sqlite");
  w.openDatabase(db);
  if (p.isSet("runs")) {
    std::vector<int64_t> ids;
    for (const auto& s : p.value("runs").split(',', Qt::SkipEmptyParts)) ids.push_back(s.toLongLong());
    w.selectRuns(ids);
  }
  if (p.isSet("variant")) w.selectVariant(p.value("variant").toLongLong(), false);
  if (p.isSet("view") && !w.showView(p.value("view"))) {
    std::fprintf(stderr, "cibench-gui: unknown view '%s'\n", qPrintable(p.value("view")));
    return 2;
  }
  if (p.isSet("metric")) {
    try {
      w.latencyView()->setMetric(p.value("metric"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cibench-gui: %s\n", e.what());
      return 2;
    }
  }
  w.show();
  if (p.isSet("screenshot") || p.isSet("export-charts")) {
    QTimer::singleShot(1500, &w, [&] {
      int rc = 0;
      if (p.isSet("screenshot")) {
        if (!w.grab().save(p.value("screenshot"))) {
          std::fprintf(stderr, "cibench-gui: cannot write %s\n", qPrintable(p.value("screenshot")));
          rc = 1;
        }
      }
      if (p.isSet("export-charts"))
        for (const auto& f : w.exportAllCharts(p.value("export-charts"))) std::printf("wrote %s\n", qPrintable(f));
      if (!w.message().isEmpty()) std::fprintf(stderr, "cibench-gui: %s\n", qPrintable(w.message()));
      QApplication::exit(rc);
    });
  }
  return QApplication::exec();
}
