// cibench compare RUN_A RUN_B [--db PATH] [--json]: per variant, B - A of the median and p95
// with n per side, the change in %, and bootstrap 95 % intervals. The numbers are
// reports::compare_runs's, the same as the report's and the GUI's.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "harness/cli/command.h"
#include "harness/lib/text_table.h"
#include "reports/analysis/compare.h"
#include "reports/db.h"
#include "reports/format.h"

namespace cibench::cli {
namespace cmd_compare {

struct Args {
  std::string a, b;
  std::string db = "results/cibench.sqlite";
  bool json = false;
  int resamples = 2000;
  uint64_t seed = 1;
};

std::string opt(const std::optional<double>& v) { return v ? reports::fmt_num(*v) : std::string("n/a"); }

std::string pct(const std::optional<double>& v) {
  if (!v) return "";
  std::ostringstream os;
  os << std::showpos << std::fixed << std::setprecision(1) << *v << "%";
  return os.str();
}

std::string with_n(const std::optional<double>& v, const std::optional<int64_t>& n) {
  return opt(v) + (n ? " (n=" + std::to_string(*n) + ")" : "");
}

void print_text(const reports::Comparison& c, std::ostream& os) {
  for (const auto& w : c.warnings) os << "WARNING: " << w << "\n";
  if (!c.warnings.empty()) os << "\n";
  os << "compare run " << c.a.run_id << " (A: " << c.a.origin() << ", " << c.a.model_spec << ") with run "
     << c.b.run_id << " (B: " << c.b.origin() << ", " << c.b.model_spec << ")\n"
     << "difference B - A of nearest-rank percentiles; " << static_cast<int>(c.confidence * 100)
     << "% percentile-bootstrap interval, " << c.resamples << " resamples, seed " << c.seed << "\n\n";
  TextTable t({"variant", "metric", "A", "B", "B-A", "change", "95% CI", "verdict"});
  std::vector<std::string> warnings;
  for (const auto& r : c.rows) {
    std::string ci = r.ci_low ? "[" + reports::fmt_num(*r.ci_low) + ", " + reports::fmt_num(*r.ci_high) + "]" : r.note;
    std::string verdict = !r.ci_low ? "-" : *r.ci_high < 0 ? "B lower" : *r.ci_low > 0 ? "B higher" : "no significant difference";
    if (!r.warning.empty()) {
      verdict += " (!)";
      warnings.push_back(reports::compact_label(r.variant) + ", " + r.metric + ": " + r.warning);
    }
    t.add({reports::compact_label(r.variant), r.metric, with_n(r.a, r.n_a), with_n(r.b, r.n_b), opt(r.diff),
           pct(r.change_pct), ci, verdict});
  }
  t.print(os);
  for (const auto& w : warnings) os << "(!) " << w << "\n";
  for (const auto& f : c.failed) os << "failed: " << f << "\n";
  for (const auto& u : c.only_in_a) os << "unmatched: " << u << " (only in A)\n";
  for (const auto& u : c.only_in_b) os << "unmatched: " << u << " (only in B)\n";
}

RegisterCommand reg{Command{
    "compare", "Compare two runs: differences of median and p95 (B - A) with n, % change and bootstrap 95% intervals",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("run_a", a->a, "Baseline run (id, 'last', 'last~N')")->required();
      sub.add_option("run_b", a->b, "Candidate run")->required();
      sub.add_option("--db", a->db, "Results database")->capture_default_str();
      sub.add_option("--resamples", a->resamples, "Bootstrap resamples")->check(CLI::Range(10, 1000000))->capture_default_str();
      sub.add_option("--seed", a->seed, "Bootstrap seed")->capture_default_str();
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() {
        reports::Db db(a->db);
        const int64_t ra = db.resolve_run(a->a), rb = db.resolve_run(a->b);
        const reports::Comparison c = reports::compare_runs(db, ra, rb, a->resamples, a->seed);
        if (a->json) {
          for (const auto& w : c.warnings) std::cerr << "cibench compare: WARNING: " << w << "\n";
          std::cout << reports::comparison_json(c).dump(2) << "\n";
          return 0;
        }
        print_text(c, std::cout);
        return 0;
      };
    }}};

}  // namespace cmd_compare
}  // namespace cibench::cli
