// cibench report RUN... --out DIR [--db PATH]: a self-contained HTML page (inline SVG charts, no
// network) and a Markdown summary with the same tables, from the results database.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "harness/cli/command.h"
#include "reports/db.h"
#include "reports/report.h"

namespace cibench::cli {
namespace cmd_report {

struct ReportArgs {
  std::vector<std::string> runs;
  std::string out;
  std::string db = "results/cibench.sqlite";
  std::string x_axis, y_axis;
  std::optional<double> floor;
  int resamples = 2000;
};

int run_report(const ReportArgs& a) {
  reports::Db db(a.db);
  std::vector<int64_t> ids;
  for (const auto& r : a.runs) ids.push_back(db.resolve_run(r));
  if (!a.x_axis.empty()) reports::find_axis(a.x_axis);  // unknown names fail before any work
  if (!a.y_axis.empty()) reports::find_axis(a.y_axis);
  reports::ReportOptions opt;
  opt.x_axis = a.x_axis;
  opt.y_axis = a.y_axis;
  opt.floor = a.floor;
  opt.compare_resamples = a.resamples;
  const reports::ReportFiles f = reports::write_report(db, ids, a.out, opt);
  std::cout << "wrote " << f.html << "\nwrote " << f.markdown << "\n";
  return 0;
}

std::string axis_list(const std::vector<reports::Axis>& axes) {
  std::string s;
  for (const auto& x : axes) s += (s.empty() ? "" : ", ") + x.key;
  return s;
}

const RegisterCommand kRegister{Command{
    "report", "Write an HTML report (inline SVG charts) and a Markdown summary of one or more runs",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<ReportArgs>();
      sub.add_option("runs", a->runs, "Run ids, 'last' or 'last~N' (two runs: adds the compare)")->required();
      sub.add_option("--out", a->out, "Folder for report.html and report.md")->required();
      sub.add_option("--db", a->db, "Results database")->capture_default_str();
      sub.add_option("--x", a->x_axis, "Trade-off x axis: " + axis_list(reports::x_axes()));
      sub.add_option("--y", a->y_axis, "Trade-off y axis: " + axis_list(reports::y_axes()));
      sub.add_option_function<double>("--floor", [a](double v) { a->floor = v; },
                                      "Quality floor on the y axis (default: the scenario's)");
      sub.add_option("--resamples", a->resamples, "Bootstrap resamples for the compare of two runs")
          ->capture_default_str()
          ->check(CLI::Range(10, 1000000));
      return [a] { return run_report(*a); };
    }}};

}  // namespace cmd_report
}  // namespace cibench::cli
