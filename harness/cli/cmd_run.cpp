// cibench run SCENARIO [--db PATH] [--set key=value ...] [--json]
#include <unistd.h>

#include <iostream>

#include "harness/cli/command.h"
#include "harness/lib/suite.h"

namespace cibench::cli {
namespace {

struct RunArgs {
  std::string scenario;
  std::string db = "results/cibench.sqlite";
  std::vector<std::string> sets;
  bool json = false;
  bool quiet = false;
};

RegisterCommand reg{Command{
    "run", "Run a scenario file and store every variant's result (with provenance) in SQLite",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<RunArgs>();
      sub.add_option("scenario", a->scenario, "Scenario file (TOML), e.g. scenarios/quickstart.toml")->required();
      sub.add_option("--db", a->db, "Results database (created if absent)")->capture_default_str();
      sub.add_option("--set", a->sets, "Override a scenario key: table.key=value (TOML value), repeatable");
      sub.add_flag("--json", a->json, "Print the run's results as JSON on stdout");
      sub.add_flag("-q,--quiet", a->quiet, "No progress output");
      return [a]() {
        const Scenario sc = parse_scenario_file(a->scenario, a->sets);
        SuiteOptions o;
        o.db_path = a->db;
        o.log = a->quiet ? nullptr : &std::cerr;
        o.progress_bar = isatty(STDERR_FILENO);
        const SuiteResult r = run_suite(sc, o);
        if (a->json) {
          Store st(a->db);
          nlohmann::json j;
          j["run"] = st.query("SELECT * FROM runs WHERE run_id = ?", {r.run_id}).to_json()[0];
          j["variants"] = nlohmann::json::array();
          for (int64_t id : r.variant_ids) j["variants"].push_back(variant_summary_json(st, id));
          std::cout << j.dump(2) << "\n";
        }
        return r.failed_variants == 0 ? 0 : 2;
      };
    }}};

}  // namespace
}  // namespace cibench::cli
