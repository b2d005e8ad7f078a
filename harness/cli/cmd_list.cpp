// cibench list [--db PATH] [--json]: the runs in a results database, newest first.
#include <iostream>

#include "harness/cli/command.h"
#include "harness/lib/store.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace cmd_list {

struct Args {
  std::string db = "results/cibench.sqlite";
  bool json = false;
  int limit = 50;
};

RegisterCommand reg{Command{
    "list", "List the runs in a results database (interrupted runs show as incomplete)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("--db", a->db, "Results database")->capture_default_str();
      sub.add_option("--limit", a->limit, "Show at most this many runs")->check(CLI::Range(1, 1000000000))->capture_default_str();
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() {
        Store st(a->db, /*create=*/false);  // opening marks dead 'running' runs incomplete
        const auto r = st.query(
            "SELECT r.run_id, r.status, r.started_utc, r.scenario_name, r.model_spec, r.cibench_commit, "
            "  (SELECT COUNT(*) FROM variants v WHERE v.run_id = r.run_id) AS variants, "
            "  (SELECT COUNT(*) FROM variants v WHERE v.run_id = r.run_id AND v.status = 'failed') AS failed, "
            "  (SELECT COUNT(*) FROM variants v WHERE v.run_id = r.run_id AND v.status = 'incomplete') AS incomplete "
            "FROM runs r ORDER BY r.run_id DESC LIMIT ?",
            {int64_t{a->limit}});
        if (a->json) {
          std::cout << r.to_json().dump(2) << "\n";
          return 0;
        }
        TextTable t({"run", "status", "started (UTC)", "scenario", "model", "variants", "failed", "commit"});
        for (const auto& row : r.rows)
          t.add({sql_to_string(row[0]), sql_to_string(row[1]), sql_to_string(row[2]).substr(0, 19),
                 sql_to_string(row[3]), sql_to_string(row[4]), sql_to_string(row[6]), sql_to_string(row[7]),
                 sql_to_string(row[5]).substr(0, 12)});
        t.print(std::cout);
        return 0;
      };
    }}};

}  // namespace cmd_list
}  // namespace cibench::cli
