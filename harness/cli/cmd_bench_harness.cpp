// cibench bench-harness: the harness's own cost per query with a null SUT (completes at once),
// and proof that recording stays bounded in memory as the number of requests grows.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "harness/cli/command.h"
#include "harness/lib/load.h"
#include "harness/lib/sysinfo.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace cmd_bench_harness {

struct Args {
  std::vector<int64_t> queries{100000, 1000000, 10000000};
  int workers = 1;
  int64_t exact_cap = 262144;
  bool json = false;
};

std::string fixed(double x, int p) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(p) << x;
  return os.str();
}

RegisterCommand reg{Command{
    "bench-harness",
    "Measure the harness's own overhead per query (null SUT, offline) and its memory at 10^5..10^7 requests",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("--queries", a->queries, "Request counts to run (each a separate offline run)")
          ->delimiter(',')
          ->capture_default_str();
      sub.add_option("--workers", a->workers, "Worker threads")->capture_default_str();
      sub.add_option("--exact-cap", a->exact_cap, "Requests kept for exact percentiles")->capture_default_str();
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() {
        nlohmann::json out = nlohmann::json::array();
        TextTable t({"requests", "workers", "wall s", "ns/query", "latency p50 ns", "latency p99 ns", "percentiles",
                     "recorder MiB", "peak RSS MiB"});
        for (int64_t n : a->queries) {
          NullSut sut;
          LoadSettings s;
          s.pattern = Pattern::offline;
          s.workers = a->workers;
          s.min_queries = n;
          s.exact_cap = a->exact_cap;
          s.prompt.value = s.prompt.min = s.prompt.max = 16;
          s.gen.value = s.gen.min = s.gen.max = 16;
          s.n_samples = 1024;
          const bool reset = reset_peak_rss();
          const int64_t t0 = monotonic_ns();
          const LoadResult r = run_load(sut, s);
          const double wall = static_cast<double>(monotonic_ns() - t0) * 1e-9;
          const auto rss = cibench::peak_rss_bytes();
          const Distribution d = r.recorder->distribution(Metric::latency);
          const double per_q = r.duration_s * 1e9 * a->workers / static_cast<double>(n);
          const double rec_mib = static_cast<double>(r.recorder->bytes_reserved()) / (1 << 20);
          nlohmann::json j{{"requests", n},
                           {"workers", a->workers},
                           {"wall_s", wall},
                           {"run_s", r.duration_s},
                           {"ns_per_query", per_q},
                           {"latency_p50_ns", d.p50_ns},
                           {"latency_p99_ns", d.p99_ns},
                           {"percentiles_exact", d.exact},
                           {"recorder_bytes", r.recorder->bytes_reserved()},
                           {"peak_rss_bytes", reset && rss ? nlohmann::json(*rss) : nlohmann::json(nullptr)}};
          out.push_back(j);
          t.add({std::to_string(n), std::to_string(a->workers), fixed(wall, 2), fixed(per_q, 1), std::to_string(d.p50_ns),
                 std::to_string(d.p99_ns), d.exact ? "exact" : "histogram", fixed(rec_mib, 1),
                 reset && rss ? fixed(static_cast<double>(*rss) / (1 << 20), 1) : "-"});
        }
        if (a->json) {
          std::cout << out.dump(2) << "\n";
        } else {
          std::cout << "null SUT, offline (all queries at t=0); ns/query = run time x workers / requests "
                       "(harness work per query: pick, time, callback, record)\n";
          t.print(std::cout);
        }
        return 0;
      };
    }}};

}  // namespace cmd_bench_harness
}  // namespace cibench::cli
