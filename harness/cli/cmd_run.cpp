// cibench run SCENARIO [--db PATH] [--set key=value ...] [--json] [--dry-run]
#include <unistd.h>

#include <iostream>

#include "harness/cli/command.h"
#include "harness/lib/run_record.h"
#include "harness/lib/suite.h"

namespace cibench::cli {
namespace cmd_run {

struct RunArgs {
  std::string scenario;
  std::string db = "results/cibench.sqlite";
  std::vector<std::string> sets;
  bool json = false;
  bool quiet = false;
  bool dry_run = false;
};

// --dry-run: everything checked as for a run (the model opens, the matrix and memory fit), then
// the expanded matrix and the bounds of its duration, and nothing is stored.
int dry_run(const Scenario& sc) {
  prevalidate_scenario(sc);
  const auto variants = sc.variants();
  const size_t steps = sc.pattern == Pattern::stepped ? sc.rates_qps.size() : 1;
  std::cout << "scenario '" << sc.name << "' (" << sc.path << ", hash " << sc.hash << "): " << variants.size()
            << " variant" << (variants.size() == 1 ? "" : "s");
  if (steps > 1) std::cout << " x " << steps << " rates";
  std::cout << ", pattern " << pattern_name(sc.pattern) << "\n";
  for (const Variant& v : variants) std::cout << "  " << v.index + 1 << ". " << v.label() << "\n";
  for (const auto& sk : sc.skipped()) std::cout << "  skipped (not run): " << sk << "\n";
  const double n = static_cast<double>(variants.size() * steps);
  std::cout << "timed runs: at least " << n * static_cast<double>(sc.min_duration_ms) / 1000.0 << " s (run.min_duration_ms "
            << sc.min_duration_ms << " per step), at most " << n * static_cast<double>(sc.max_duration_ms) / 1000.0
            << " s (run.max_duration_ms " << sc.max_duration_ms << "); model builds"
            << (sc.accuracy.enabled ? ", accuracy scoring" : "") << (sc.counters_enabled ? ", profiling passes" : "")
            << " and warm-up come on top\n";
  std::cout << "nothing was run or stored (--dry-run)\n";
  return 0;
}

RegisterCommand reg{Command{
    "run", "Run a scenario file and store every variant's result (with provenance) in SQLite",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<RunArgs>();
      sub.add_option("scenario", a->scenario, "Scenario file (TOML), e.g. scenarios/quickstart.toml")->required();
      sub.add_option("--db", a->db, "Results database (created if absent)")->capture_default_str();
      sub.add_option("--set", a->sets, "Override a scenario key: table.key=value (TOML value), repeatable");
      sub.add_flag("--json", a->json, "Print the run's results as JSON on stdout");
      sub.add_flag("-q,--quiet", a->quiet, "No progress output");
      sub.add_flag("--dry-run", a->dry_run,
                   "Check everything a run checks, print the expanded matrix and the bounds of its duration, "
                   "store nothing");
      return [a]() {
        const Scenario sc = parse_scenario_file(a->scenario, a->sets);
        if (a->dry_run) return dry_run(sc);
        if (const std::string note = apply_cpu_limit_from_env(); !note.empty() && !a->quiet) std::cerr << note << "\n";
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

}  // namespace cmd_run
}  // namespace cibench::cli
