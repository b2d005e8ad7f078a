// cibench-gui: the trade-off dashboard over a cibench results database.
//   cibench-gui [DB] [--runs 1,2] [--view tradeoff|latency|scaling|counters|compare|serving|speculative|hosts]
//               [--variant ID] [--metric latency|ttft|tpot|queue|service]
//               [--screenshot FILE.png] [--export-charts DIR] [--print-points]
// DB defaults to results/cibench.sqlite. --screenshot grabs the window once it is drawn and exits
// (used for the documentation); --export-charts writes every chart as PNG and SVG (1200x800) and
// exits; --print-points prints where the trade-off points are drawn, for scripted clicks.
// --help and --version work without a display.
#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gui/main_window.h"

#ifndef CIBENCH_GUI_VERSION
#define CIBENCH_GUI_VERSION "unknown"
#endif

namespace {

void add_options(QCommandLineParser& p) {
  p.setApplicationDescription("cibench-gui: which variant sits on the Pareto frontier, which fall below the "
                              "quality floor, where the latency tail grows with load");
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument("db", "Results database (default results/cibench.sqlite)", "[DB]");
  p.addOption({"runs", "Runs to select (comma-separated ids)", "ids"});
  p.addOption({"view", "View to show: tradeoff, latency, scaling, counters, compare, serving, speculative, hosts", "name"});
  p.addOption({"variant", "Variant to select (as a click in the trade-off view would)", "id"});
  p.addOption({"metric", "Latency view metric: latency, ttft, tpot, queue, service", "name"});
  p.addOption({"size", "Window size WxH (default 1400x900)", "WxH"});
  p.addOption({"screenshot", "Grab the window into this PNG once drawn, then exit", "file"});
  p.addOption({"export-charts", "Write every chart as PNG and SVG (1200x800) into this folder, then exit", "dir"});
  p.addOption({"print-points",
               "Once drawn, print each trade-off point's position in the window (\"point VARIANT X Y\") and "
               "each selection (\"selected IDS\") on stdout, for scripted clicks"});
}

// --help and --version need no display: they are answered before QApplication looks for a
// platform plugin (which aborts when there is no display).
bool wants_help_or_version(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--")) return false;
    for (const char* o : {"-h", "--help", "-?", "--help-all", "-v", "--version"})
      if (!std::strcmp(a, o)) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (wants_help_or_version(argc, argv)) {
    QCoreApplication core(argc, argv);
    QCoreApplication::setApplicationName("cibench-gui");
    QCoreApplication::setApplicationVersion(CIBENCH_GUI_VERSION);
    QCommandLineParser p;
    add_options(p);
    p.process(core);  // prints the usage or the version and exits 0
    return 0;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("cibench-gui");
  QApplication::setApplicationVersion(CIBENCH_GUI_VERSION);
  QCommandLineParser p;
  add_options(p);
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
  if (p.isSet("print-points")) {
    // The points where they are drawn now, then again after each click (the layout may move).
    auto print = [&w] {
      const auto& sel = w.selection().variants;
      QStringList ids;
      for (int64_t v : sel) ids << QString::number(v);
      std::printf("selected %s\n", ids.isEmpty() ? "none" : qPrintable(ids.join(',')));
      for (const auto& [id, at] : w.tradeoffView()->markerPositions(&w))
        std::printf("point %lld %d %d\n", static_cast<long long>(id), at.x(), at.y());
      std::fflush(stdout);
    };
    QTimer::singleShot(1000, &w, print);
    QObject::connect(w.tradeoffView(), &cibench::gui::TradeoffView::variantClicked, &w,
                     [&w, print] { QTimer::singleShot(300, &w, print); });
  }
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
