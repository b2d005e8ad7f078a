// cibench compare RUN_A RUN_B [--db PATH] [--json]: per variant, B - A of the median and p95
// with bootstrap 95 % intervals.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "harness/cli/command.h"
#include "harness/lib/compare.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace {

struct Args {
  std::string a, b;
  std::string db = "results/cibench.sqlite";
  bool json = false;
  int resamples = 2000;
  uint64_t seed = 1;
};

std::string f2(double x) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(std::abs(x) < 10 ? 3 : 1) << x;
  return os.str();
}

RegisterCommand reg{Command{
    "compare", "Compare two runs: differences of median and p95 (B - A) with bootstrap 95% intervals",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("run_a", a->a, "Baseline run (id, 'last', 'last~N')")->required();
      sub.add_option("run_b", a->b, "Candidate run")->required();
      sub.add_option("--db", a->db, "Results database")->capture_default_str();
      sub.add_option("--resamples", a->resamples, "Bootstrap resamples")->check(CLI::Range(10, 1000000))->capture_default_str();
      sub.add_option("--seed", a->seed, "Bootstrap seed")->capture_default_str();
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() {
        Store st(a->db, false);
        const int64_t ra = st.resolve_run(a->a), rb = st.resolve_run(a->b);
        const nlohmann::json j = compare_runs(st, ra, rb, a->resamples, a->seed);
        if (a->json) {
          std::cout << j.dump(2) << "\n";
          return 0;
        }
        std::cout << "compare run " << ra << " (A) with run " << rb << " (B): " << j["method"].get<std::string>() << "\n\n";
        TextTable t({"variant", "metric", "A p50", "B p50", "B-A p50 [95% CI]", "A p95", "B p95", "B-A p95 [95% CI]", "p95 verdict"});
        for (const auto& v : j["variants"]) {
          if (v.contains("note")) {
            t.add({v["label"].get<std::string>(), "-", "", "", v["note"].get<std::string>(), "", "", "", ""});
            continue;
          }
          for (const std::string m : {"latency", "ttft", "tpot"}) {
            if (!v.contains(m)) continue;
            const auto& x = v[m];
            auto ci = [&](const char* p) {
              return f2(x[p]["diff_ms"].get<double>()) + " [" + f2(x[p]["ci95_lo_ms"].get<double>()) + ", " +
                     f2(x[p]["ci95_hi_ms"].get<double>()) + "]";
            };
            t.add({v["label"].get<std::string>(), m + " ms" + (x["from_histogram"].get<bool>() ? " (hist)" : ""),
                   f2(x["p50"]["a_ms"].get<double>()), f2(x["p50"]["b_ms"].get<double>()), ci("p50"),
                   f2(x["p95"]["a_ms"].get<double>()), f2(x["p95"]["b_ms"].get<double>()), ci("p95"),
                   x["p95"]["verdict"].get<std::string>()});
          }
        }
        t.print(std::cout);
        for (const auto& u : j["unmatched"]) std::cout << "unmatched: " << u.get<std::string>() << "\n";
        return 0;
      };
    }}};

}  // namespace
}  // namespace cibench::cli
