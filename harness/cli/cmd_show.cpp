// cibench show RUN [--db PATH] [--json]: one run's provenance and every variant's result.
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "harness/cli/command.h"
#include "harness/lib/cost.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"
#include "harness/lib/suite.h"
#include "harness/lib/text_table.h"
#include "harness/schema/slo.h"

namespace cibench::cli {
namespace cmd_show {

struct Args {
  std::string run;
  std::string db = "results/cibench.sqlite";
  bool json = false;
};

std::string num(const SqlValue& v, int prec = 2) {
  if (auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(prec) << *d;
    return os.str();
  }
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (std::holds_alternative<std::monostate>(v)) return "-";
  return std::get<std::string>(v);
}

// The rows of a command's run (bench, recipes, bert-recipes --db): that command's own measures.
void print_command_rows(Store& st, int64_t id, const std::string& kind) {
  struct Col {
    const char* header;
    const char* column;
    int decimals;  // -1: text
    double scale;
  };
  static const std::map<std::string, std::vector<Col>> kCols{
      {"bench",
       {{"format", "format", -1, 1}, {"threads", "threads", 0, 1}, {"isa", "isa_used", -1, 1},
        {"prefill tok/s", "prefill_tokens_per_s", 1, 1}, {"sd", "prefill_tokens_per_s_sd", 1, 1},
        {"decode tok/s", "decode_tokens_per_s", 2, 1}, {"sd", "decode_tokens_per_s_sd", 2, 1},
        {"GB/s", "read_bandwidth_gb_s", 1, 1}, {"roofline tok/s", "decode_roofline_tokens_per_s", 1, 1},
        {"of roofline", "roofline_fraction", 2, 1}, {"weights MiB", "weight_bytes", 1, 1.0 / 1048576}}},
      {"recipes",
       {{"recipe", "recipe", -1, 1}, {"format", "format", -1, 1}, {"sparsity", "sparsity", 2, 1},
        {"KL mean", "kl_mean", 5, 1}, {"KL p99", "kl_p99", 5, 1}, {"top-1", "top1_agreement", 4, 1},
        {"ppl ratio", "ppl_ratio", 4, 1}, {"calib err", "calib_rel_err", 5, 1},
        {"rtn calib err", "rtn_calib_rel_err", 5, 1}, {"decode tok/s", "decode_tokens_per_s", 0, 1},
        {"f32 tok/s", "ref_decode_tokens_per_s", 0, 1}, {"weights MiB", "weight_bytes", 2, 1.0 / 1048576}}},
      {"bert-recipes",
       {{"recipe", "recipe", -1, 1}, {"format", "format", -1, 1}, {"sparsity", "sparsity", 2, 1},
        {"accuracy", "task_accuracy", 4, 1}, {"delta", "accuracy_delta", 4, 1}, {"lo", "accuracy_delta_lo", 4, 1},
        {"hi", "accuracy_delta_hi", 4, 1}, {"agree", "top1_agreement", 4, 1}, {"p50 ms", "latency_p50_ms", 3, 1},
        {"f32 p50 ms", "ref_latency_p50_ms", 3, 1}, {"verdict", "quality_verdict", -1, 1},
        {"weights MiB", "weight_bytes", 2, 1.0 / 1048576}}}};
  const auto it = kCols.find(kind);
  if (it == kCols.end()) throw StoreError(str("run ", id, ": unknown kind '", kind, "'"));
  std::string sql = "SELECT label, status";
  std::vector<std::string> headers{"variant", "status"};
  for (const Col& c : it->second) {
    sql += str(", ", c.column);
    headers.push_back(c.header);
  }
  const auto v = st.query(sql + " FROM variants WHERE run_id = ? ORDER BY variant_index", {id});
  TextTable t(headers);
  for (const auto& row : v.rows) {
    std::vector<std::string> cells{sql_to_string(row[0]), sql_to_string(row[1])};
    for (size_t i = 0; i < it->second.size(); ++i) {
      const Col& c = it->second[i];
      const SqlValue& x = row[i + 2];
      if (std::holds_alternative<std::monostate>(x)) {
        cells.push_back("-");
      } else if (c.decimals < 0 || std::holds_alternative<std::string>(x)) {
        cells.push_back(sql_to_string(x));
      } else {
        const double d = std::holds_alternative<int64_t>(x) ? static_cast<double>(std::get<int64_t>(x)) : std::get<double>(x);
        cells.push_back(num(SqlValue(d * c.scale), c.decimals));
      }
    }
    t.add(cells);
  }
  t.print(std::cout);
}

// `bench --peer` rows: cibench and the peer side by side, the ratios with their intervals.
void print_peer_rows(Store& st, int64_t id) {
  const auto v = st.query(
      "SELECT label, peer_engine, peer_version, peer_type, prefill_tokens_per_s, peer_prefill_tokens_per_s, "
      "peer_prefill_ratio, peer_prefill_ratio_lo, peer_prefill_ratio_hi, decode_tokens_per_s, "
      "peer_decode_tokens_per_s, peer_decode_ratio, peer_decode_ratio_lo, peer_decode_ratio_hi, peer_command "
      "FROM variants WHERE run_id = ? AND peer_engine IS NOT NULL ORDER BY variant_index",
      {id});
  if (v.rows.empty()) return;
  auto interval = [](const std::vector<SqlValue>& row, size_t i) {
    return num(row[i], 2) + "x [" + num(row[i + 1], 2) + ", " + num(row[i + 2], 2) + "]";
  };
  std::cout << "\nside by side with " << sql_to_string(v.rows[0][1]) << " (" << sql_to_string(v.rows[0][2])
            << "), alternating repetitions; ratio = cibench / peer median, 95 % paired-bootstrap interval\n";
  TextTable t({"variant", "peer type", "prefill tok/s", "peer", "ratio", "decode tok/s", "peer", "ratio"});
  for (const auto& row : v.rows)
    t.add({sql_to_string(row[0]), sql_to_string(row[3]), num(row[4], 1), num(row[5], 1), interval(row, 6),
           num(row[9], 2), num(row[10], 2), interval(row, 11)});
  t.print(std::cout);
  std::cout << "peer command (first row): " << sql_to_string(v.rows[0][14]) << "\n";
}

// A vLLM-style serving summary of a generative run, one row per variant (per step): request and
// output-token throughput, TTFT / TPOT / ITL / end-to-end mean, median and p99 with n (ITL's n is
// its gaps), goodput and SLO attainment, requests in flight and queued. Only when some variant
// measured a first token; columns a store predates read as '-', and the reasons for what was not
// measured follow the table.
void print_serving(Store& st, int64_t id) {
  const auto v = st.query("SELECT * FROM variants WHERE run_id = ? ORDER BY variant_index, step_index", {id});
  auto at = [&](const std::vector<SqlValue>& row, const char* c) -> SqlValue {
    for (size_t i = 0; i < v.columns.size(); ++i)
      if (v.columns[i] == c) return row[i];
    return SqlValue();  // a column this store predates
  };
  auto has = [](const SqlValue& x) { return !std::holds_alternative<std::monostate>(x); };
  bool any = false;
  for (const auto& row : v.rows) any |= has(at(row, "ttft_p50_ms")) || has(at(row, "itl_count"));
  if (!any) return;
  auto dist = [&](const std::vector<SqlValue>& row, const std::string& m) {
    const SqlValue mean = at(row, (m + "_mean_ms").c_str()), p50 = at(row, (m + "_p50_ms").c_str()),
                   p99 = at(row, (m + "_p99_ms").c_str());
    if (!has(mean) && !has(p50) && !has(p99)) return std::string("-");
    return num(mean) + " / " + num(p50) + " / " + num(p99);
  };
  TextTable t({"variant", "n", "req/s", "out tok/s", "TTFT ms mean/p50/p99", "TPOT ms mean/p50/p99",
               "ITL ms mean/p50/p99", "ITL n", "E2E ms mean/p50/p99", "goodput req/s", "SLO attain", "in flight mean/max",
               "queued mean/max"});
  std::vector<std::string> reasons;
  for (const auto& row : v.rows) {
    if (sql_to_string(at(row, "status")) != "ok") continue;
    const std::string label = sql_to_string(at(row, "label"));
    const SqlValue att = at(row, "slo_attainment");
    t.add({label, num(at(row, "queries")), num(at(row, "achieved_qps")), num(at(row, "tokens_per_s"), 1),
           dist(row, "ttft"), dist(row, "tpot"), dist(row, "itl"), num(at(row, "itl_count")), dist(row, "latency"),
           num(at(row, "goodput_qps"), 3),
           has(att) ? num(SqlValue(100 * *sql_number(att)), 1) + " %" : std::string("-"),
           num(at(row, "inflight_mean")) + " / " + num(at(row, "inflight_max")),
           num(at(row, "queue_depth_mean")) + " / " + num(at(row, "queue_depth_max"))});
    for (const char* r : {"itl_reason", "goodput_reason", "concurrency_reason"}) {
      const std::string why = sql_to_string(at(row, r));
      if (!why.empty()) reasons.push_back(label + ": " + std::string(r).substr(0, std::string(r).find('_')) + ": " + why);
    }
    if (!has(at(row, "itl_count")) && !has(at(row, "itl_reason")))
      reasons.push_back(label + ": itl, goodput, in flight: not stored (a run before schema 7)");
  }
  std::cout << "\nserving (mean / p50 / p99; n = completed requests, ITL n = gaps between tokens)\n";
  t.print(std::cout);
  for (const auto& r : reasons) std::cout << "  " << r << "\n";

  // Decoder batching (schema 8): how each variant batched and what its scheduler did.
  bool batching = false;
  for (const auto& row : v.rows) batching |= has(at(row, "batching"));
  if (!batching) return;
  TextTable b({"variant", "batching", "max_batch", "tokens/step", "KV pool tokens", "KV policy", "timeout ms", "steps",
               "seqs/step mean/max", "KV pool used mean/max", "preemptions", "forward ms/step",
               "scheduling"});
  std::vector<std::string> why;
  for (const auto& row : v.rows) {
    if (sql_to_string(at(row, "status")) != "ok") continue;
    const std::string label = sql_to_string(at(row, "label"));
    auto pct = [&](const char* c) {
      const SqlValue x = at(row, c);
      return has(x) ? num(SqlValue(100 * *sql_number(x)), 1) + " %" : std::string("-");
    };
    b.add({label, has(at(row, "batching")) ? sql_to_string(at(row, "batching")) : std::string("-"),
           num(at(row, "max_batch")), num(at(row, "max_tokens_per_step")), num(at(row, "kv_pool_tokens")),
           has(at(row, "kv_policy")) ? sql_to_string(at(row, "kv_policy")) : std::string("-"),
           num(at(row, "batch_timeout_ms")), num(at(row, "engine_steps")),
           num(at(row, "batch_occupancy_mean")) + " / " + num(at(row, "batch_occupancy_max")),
           pct("kv_occupancy_mean") + " / " + pct("kv_occupancy_max"), num(at(row, "preemptions")),
           num(at(row, "forward_ms_mean")), has(at(row, "scheduler_overhead")) ? pct("scheduler_overhead") : "-"});
    const std::string r = sql_to_string(at(row, "batching_reason"));
    if (!r.empty()) why.push_back(label + ": " + r);
  }
  std::cout << "\nbatching (seqs/step: sequences in an engine step; KV pool used: blocks in use / all, after each step;\n"
               "scheduling: the engine thread's time outside forward passes, per forward time)\n";
  b.print(std::cout);
  for (const auto& r : why) std::cout << "  " << r << "\n";

  // Prefix caching (schema 9): shown when a variant had it on, beside the same matrix with it off.
  bool prefix = false;
  for (const auto& row : v.rows) prefix |= has(at(row, "prefix_cache")) && *sql_number(at(row, "prefix_cache")) != 0;
  if (!prefix) return;
  TextTable pc({"variant", "prefix cache", "admissions hit", "prompt tokens attached", "hit rate", "evicted blocks",
                "TTFT p50 ms", "TTFT p99 ms"});
  std::vector<std::string> pwhy;
  for (const auto& row : v.rows) {
    if (sql_to_string(at(row, "status")) != "ok" || !has(at(row, "prefix_cache"))) continue;
    const std::string label = sql_to_string(at(row, "label"));
    const bool on = *sql_number(at(row, "prefix_cache")) != 0;
    const SqlValue rate = at(row, "prefix_cache_hit_rate");
    pc.add({label, on ? "on" : "off",
            has(at(row, "prefix_cache_hits")) ? num(at(row, "prefix_cache_hits")) + " of " + num(at(row, "prefix_cache_lookups")) : "-",
            has(at(row, "prefix_cache_hit_tokens"))
                ? num(at(row, "prefix_cache_hit_tokens")) + " of " + num(at(row, "prefix_cache_prompt_tokens"))
                : "-",
            has(rate) ? num(SqlValue(100 * *sql_number(rate)), 1) + " %" : std::string("-"),
            num(at(row, "prefix_cache_evictions")), num(at(row, "ttft_p50_ms")), num(at(row, "ttft_p99_ms"))});
    const std::string r = sql_to_string(at(row, "prefix_cache_reason"));
    if (on && !r.empty()) pwhy.push_back(label + ": " + r);
  }
  std::cout << "\nprefix cache (prompt tokens attached from cached KV blocks instead of computed)\n";
  pc.print(std::cout);
  for (const auto& r : pwhy) std::cout << "  " << r << "\n";
}

std::string money(const std::optional<double>& v, const std::string& currency) {
  if (!v) return "-";
  std::ostringstream os;
  os << std::setprecision(4) << *v << " " << currency;
  return os.str();
}

// Fleets (schema 14): the host type a run ran as, the cost per answer of its variants at the
// host type's price, and, when the store holds the same scenario on several host types, the host
// types ranked by the cost of their cheapest variant meeting the quality floor and the SLOs.
void print_host_costs(Store& st, int64_t id, const std::string& scenario, const std::string& host_type) {
  if (host_type.empty()) return;
  const auto price = st.query("SELECT price_per_hour, currency, source FROM host_types WHERE name = ?", {host_type});
  if (price.rows.empty()) {
    std::cout << "\ncost per answer: not priced (host type '" << host_type
              << "' has no price in this store; cibench fleet collect records the hosts file's)\n";
    return;
  }
  const std::vector<HostCost> mine = host_costs(st, scenario, {id});
  const std::string currency = sql_to_string(price.rows[0][1]);
  const std::string source = sql_to_string(price.rows[0][2]);
  std::cout << "\ncost per answer on host type " << host_type << " (" << num(price.rows[0][0], 4) << " " << currency
            << "/h" << (source.empty() ? "" : ", " + source) << ")\n";
  TextTable t({"variant", "rate priced", "p95 ms", "floor", "SLO", "valid", "per 1k requests", "per 1M output tokens"});
  for (const auto& c : mine)
    t.add({c.label, c.cost.basis.empty() ? "-" : c.cost.basis, num(sql_opt(c.p95_ms)), c.meets_floor ? "meets" : "below",
           c.meets_slo ? "met" : "missed", c.valid ? "yes" : "NO", money(c.cost.per_thousand_requests, currency),
           money(c.cost.per_million_tokens, currency)});
  t.print(std::cout);
  const std::vector<HostRank> ranks = rank_host_types(host_costs(st, scenario));
  if (ranks.size() < 2) return;
  std::cout << "\nhost types for scenario '" << scenario << "' in this store, cheapest first (each host type's cheapest "
            << "variant meeting the quality floor and the SLOs, per thousand requests at its knee or measured rate)\n";
  TextTable r({"rank", "host type", "price/h", "variant", "run", "rate priced", "p95 ms", "per 1k requests",
               "per 1M output tokens"});
  int rank = 0;
  for (const auto& h : ranks) {
    if (!h.best) {
      r.add({"-", h.host_type, money(h.price_per_hour, h.currency), h.reason, "-", "-", "-", "-", "-"});
      continue;
    }
    r.add({std::to_string(++rank), h.host_type, money(h.price_per_hour, h.currency), h.best->label,
           std::to_string(h.best->run_id), h.best->cost.basis, num(sql_opt(h.best->p95_ms)),
           money(h.best->cost.per_thousand_requests, h.currency), money(h.best->cost.per_million_tokens, h.currency)});
  }
  r.print(std::cout);
}

// Speculative decoding (schema 10): what each drafter and k did and bought against the same
// build without speculation in this run.
void print_speculative(Store& st, int64_t id) {
  const auto v = st.query("SELECT * FROM variants WHERE run_id = ? ORDER BY variant_index, step_index", {id});
  if (std::find(v.columns.begin(), v.columns.end(), "speculative") == v.columns.end()) return;
  auto at = [&](const std::vector<SqlValue>& row, const char* c) { return row[v.col(c)]; };
  auto has = [](const SqlValue& x) { return !std::holds_alternative<std::monostate>(x); };
  bool any = false;
  for (const auto& row : v.rows) any |= has(at(row, "draft_tokens"));
  if (!any) return;
  TextTable t({"variant", "drafter", "k", "acceptance", "mean accepted length", "by position", "draft time",
               "verify time", "TTFT p50 ms", "TPOT p50 ms", "TPOT p95 ms", "speed-up (mean TPOT)", "speed-up (p95 TPOT)"});
  std::vector<std::string> why;
  std::string best;
  double best_p95 = 0;
  for (const auto& row : v.rows) {
    if (sql_to_string(at(row, "status")) != "ok" || !has(at(row, "speculative"))) continue;
    const std::string label = sql_to_string(at(row, "label"));
    auto pct = [&](const char* c) {
      const SqlValue x = at(row, c);
      return has(x) ? num(SqlValue(100 * *sql_number(x)), 1) + " %" : std::string("-");
    };
    auto times = [&](const char* c) {
      const SqlValue x = at(row, c);
      return has(x) ? num(x) + "x" : std::string("-");
    };
    std::string by = "-";
    if (has(at(row, "spec_acceptance_by_position"))) {
      by.clear();
      for (const auto& x : nlohmann::json::parse(sql_to_string(at(row, "spec_acceptance_by_position"))))
        by += (by.empty() ? "" : " ") + (x.is_null() ? std::string("-") : num(SqlValue(x.get<double>())));
    }
    t.add({label, sql_to_string(at(row, "speculative")), num(at(row, "draft_tokens")), num(at(row, "spec_acceptance")),
           num(at(row, "spec_mean_accepted_length")), by, pct("spec_draft_share"), pct("spec_verify_share"),
           num(at(row, "ttft_p50_ms")), num(at(row, "tpot_p50_ms")), num(at(row, "tpot_p95_ms")), times("spec_speedup"),
           times("spec_speedup_p95")});
    if (const auto p95 = sql_number(at(row, "tpot_p95_ms")); p95 && (best.empty() || *p95 < best_p95)) {
      best = label;
      best_p95 = *p95;
    }
    for (const char* r : {"spec_reason", "spec_speedup_reason"}) {
      const std::string w = sql_to_string(at(row, r));
      if (!w.empty() && has(at(row, "draft_tokens"))) why.push_back(label + ": " + w);
    }
  }
  std::cout << "\nspeculative decoding (acceptance: accepted / drafted; mean accepted length: 1 + accepted / verifications "
               "with drafts;\nspeed-up: the same build without speculation in this run, its TPOT / this TPOT)\n";
  t.print(std::cout);
  if (!best.empty()) std::cout << "  lowest TPOT p95: " << best << " (" << num(SqlValue(best_p95)) << " ms)\n";
  for (const auto& r : why) std::cout << "  " << r << "\n";
}

// The number of variants of the run's matrix, as `cibench run` counts them ("variant 2/7"): from
// the stored scenario, or (when it no longer parses here, e.g. its model file is elsewhere) the
// variants stored.
int64_t variant_count(Store& st, int64_t run, const std::string& toml, const std::string& path) {
  try {
    return static_cast<int64_t>(parse_scenario_text(toml, path.empty() ? "scenario.toml" : path).variants().size());
  } catch (const std::exception&) {
    const auto n = st.query("SELECT MAX(variant_index) + 1 FROM variants WHERE run_id = ?", {run});
    const auto* v = std::get_if<int64_t>(&n.rows.at(0).at(0));
    return v ? *v : 0;
  }
}

// A stored knee (harness/schema/slo.h): knee_qps and knee_reached (schema 6); a run stored before
// has no knee_reached, and its knee was reached when one of its steps broke an SLO.
Knee stored_knee(const SqlValue& qps, const SqlValue& reached, const SqlValue& some_step_broke) {
  Knee k;
  k.qps = sql_number(qps);
  if (const auto* r = std::get_if<int64_t>(&reached)) k.reached = *r != 0;
  else if (const auto* b = std::get_if<int64_t>(&some_step_broke)) k.reached = *b != 0;
  return k;
}

RegisterCommand reg{Command{
    "show", "Show one run: provenance, and each variant's latency, throughput, validity, SLOs, accuracy",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("run", a->run, "Run id, 'last' or 'last~N'")->required();
      sub.add_option("--db", a->db, "Results database")->capture_default_str();
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() {
        Store st(a->db, false);
        const int64_t id = st.resolve_run(a->run);
        const auto run = st.query("SELECT * FROM runs WHERE run_id = ?", {id});
        const auto vars = st.query("SELECT variant_id FROM variants WHERE run_id = ? ORDER BY variant_index, step_index", {id});
        if (a->json) {
          nlohmann::json j;
          j["run"] = run.to_json()[0];
          // "variant": 2 of "variant_count": 7 reads as the text's "variant 2/7".
          const auto& row = run.rows[0];
          if (sql_to_string(row[run.col("kind")]) == "scenario")
            j["variant_count"] = variant_count(st, id, sql_to_string(row[run.col("scenario_toml")]),
                                               sql_to_string(row[run.col("scenario_path")]));
          j["variants"] = nlohmann::json::array();
          for (const auto& r : vars.rows) j["variants"].push_back(variant_summary_json(st, std::get<int64_t>(r[0])));
          std::cout << j.dump(2) << "\n";
          return 0;
        }
        const auto& r = run.rows[0];
        auto f = [&](const char* c) { return sql_to_string(r[run.col(c)]); };
        auto knob = [&](const char* c) {
          const std::string v = f(c);
          return v.empty() ? "unknown (" + f((std::string(c) + "_reason").c_str()) + ")" : v;
        };
        std::cout << "run " << id << "  " << f("status") << "  " << f("started_utc") << " .. " << f("finished_utc") << "\n";
        if (f("kind") != "scenario")
          std::cout << "command    " << f("command") << "\n";
        else
          std::cout << "scenario   " << f("scenario_name") << " (" << f("scenario_path") << ", hash " << f("scenario_hash")
                  << ", seeds arrivals=" << f("seed_arrivals") << " samples=" << f("seed_samples")
                  << " lengths=" << f("seed_lengths") << ")\n";
        if (!f("question").empty()) std::cout << "question   " << f("question") << "\n";
        if (!f("overrides").empty()) std::cout << "overrides  " << f("overrides") << "\n";
        std::cout << "model      " << f("model_spec") << (f("model_hash").empty() ? "" : " (hash " + f("model_hash") + ")") << "\n"
                  << "cibench    " << f("cibench_version") << " " << f("cibench_commit") << ", " << f("compiler") << ", "
                  << f("build_type") << " [" << f("cxx_flags") << "]\n"
                  << "cpu        " << f("cpu_model") << ", " << f("logical_cpus") << " logical CPUs, isa " << f("isa_active")
                  << " (best " << f("isa_best") << ")\n"
                  << "system     " << f("kernel") << "\n"
                  << "knobs      governor " << knob("governor") << "; turbo " << knob("turbo") << "; smt " << knob("smt")
                  << "; thp " << knob("thp") << "\n";
        if (!f("host_type").empty() || !f("slurm_job_id").empty() || !f("cpu_affinity").empty()) {
          std::cout << "placement  " << (f("host_type").empty() ? "" : "host type " + f("host_type") + "; ");
          if (!f("slurm_job_id").empty())
            std::cout << "slurm job " << f("slurm_job_id")
                      << (f("slurm_array_job_id").empty() ? "" : " (array " + f("slurm_array_job_id") + " task " +
                                                                     f("slurm_array_task_id") + ")")
                      << ", partition " << f("slurm_partition") << ", node " << f("slurm_node") << ", "
                      << f("slurm_cpus_per_task") << " CPUs per task; ";
          if (!f("cpu_bind").empty()) std::cout << "bind " << f("cpu_bind") << "; ";
          std::cout << "CPUs " << f("cpu_affinity") << " (" << f("affinity_cpus") << ")\n";
        }
        if (!f("warnings").empty()) std::cout << "warnings   " << f("warnings") << "\n";
        if (!f("error").empty()) std::cout << "error      " << f("error") << "\n";
        std::cout << "\n";
        if (f("kind") != "scenario") {
          print_command_rows(st, id, f("kind"));
          if (f("kind") == "bench" && st.schema_version() >= 11) print_peer_rows(st, id);
          return 0;
        }
        const auto v = st.query(
            "SELECT label, status, queries, achieved_qps, offered_qps, tokens_per_s, latency_p50_ms, latency_p95_ms, "
            "latency_p99_ms, ttft_p95_ms, tpot_p95_ms, valid, slo_met, quality_verdict, kl_mean, top1_agreement, "
            "ppl_ratio, error, validity_reasons, slo_report, knee_qps, isa_used, peak_rss_bytes "
            "FROM variants WHERE run_id = ? ORDER BY variant_index, step_index",
            {id});
        TextTable t({"variant", "status", "queries", "qps", "tok/s", "p50 ms", "p95 ms", "p99 ms", "ttft p95", "tpot p95",
                     "valid", "SLO", "quality", "KL mean", "top-1", "RSS MiB"});
        for (const auto& row : v.rows) {
          auto slo = [&] {
            const auto* m = std::get_if<int64_t>(&row[12]);
            return m ? (*m ? std::string("met") : std::string("BROKEN")) : std::string("-");
          };
          const auto* rss = std::get_if<int64_t>(&row[22]);
          t.add({sql_to_string(row[0]), sql_to_string(row[1]), num(row[2]), num(row[3]), num(row[5], 1), num(row[6]),
                 num(row[7]), num(row[8]), num(row[9]), num(row[10]),
                 std::holds_alternative<int64_t>(row[11]) ? (std::get<int64_t>(row[11]) ? "yes" : "NO") : "-", slo(),
                 sql_to_string(row[13]).empty() ? "-" : sql_to_string(row[13]), num(row[14], 5), num(row[15], 3),
                 rss ? std::to_string(*rss >> 20) : "-"});
        }
        t.print(std::cout);
        for (const auto& row : v.rows) {
          const std::string label = sql_to_string(row[0]);
          if (!sql_to_string(row[17]).empty()) std::cout << "\n" << label << ": error: " << sql_to_string(row[17]) << "\n";
          if (std::holds_alternative<int64_t>(row[11]) && !std::get<int64_t>(row[11]))
            std::cout << "\n" << label << ": invalid: " << sql_to_string(row[18]) << "\n";
          if (std::holds_alternative<int64_t>(row[12]) && !std::get<int64_t>(row[12]))
            std::cout << "\n" << label << ": SLO: " << sql_to_string(row[19]) << "\n";
        }
        print_serving(st, id);
        print_speculative(st, id);
        // Classifier variants: cache, traffic duplicates, batching and task accuracy side by side.
        const auto c = st.query(
            "SELECT label, cache_enabled, cache_hits, cache_misses, cache_hit_rate, cache_peak_bytes, duplicate_rate, "
            "queries, batches, task_accuracy, task_accuracy_lo, task_accuracy_hi, accuracy_delta, accuracy_delta_lo, "
            "accuracy_delta_hi, macro_f1, top1_agreement, knee_qps, knee_reached, "
            "(SELECT MAX(s.slo_met = 0) FROM variants s WHERE s.run_id = variants.run_id "
            "AND s.variant_index = variants.variant_index), pattern FROM variants "
            "WHERE run_id = ? AND shape IS NOT NULL ORDER BY variant_index, step_index",
            {id});
        if (!c.rows.empty()) {
          auto ci = [&](const SqlValue& x, const SqlValue& lo, const SqlValue& hi) {
            if (std::holds_alternative<std::monostate>(x)) return std::string("-");
            return num(x, 4) + " [" + num(lo, 4) + ", " + num(hi, 4) + "]";
          };
          TextTable ct({"variant", "cache", "hits", "misses", "hit rate", "cache KiB", "dup rate", "batch mean",
                        "accuracy [95% CI]", "delta vs ref [95% CI]", "macro F1", "agreement", "knee qps"});
          for (const auto& row : c.rows) {
            const auto* on = std::get_if<int64_t>(&row[1]);
            const auto* peak = std::get_if<int64_t>(&row[5]);
            const auto* q = std::get_if<int64_t>(&row[7]);
            const auto* b = std::get_if<int64_t>(&row[8]);
            ct.add({sql_to_string(row[0]), on ? (*on ? "on" : "off") : "-", num(row[2]), num(row[3]), num(row[4], 3),
                    peak ? num(SqlValue(static_cast<double>(*peak) / 1024.0), 1) : "-", num(row[6], 3),
                    q && b && *b ? num(SqlValue(static_cast<double>(*q) / static_cast<double>(*b)), 2) : "-",
                    ci(row[9], row[10], row[11]), ci(row[12], row[13], row[14]), num(row[15], 4), num(row[16], 4),
                    sql_to_string(row[20]) == "stepped" ? stored_knee(row[17], row[18], row[19]).cell() : "-"});
          }
          std::cout << "\n";
          ct.print(std::cout);
        }
        // Decoder task accuracy (schema 15): the task metric with its interval, the paired delta
        // against the reference build and McNemar's p.
        const auto tk = st.query(
            "SELECT label, task_metric, task_items, task_file, task_accuracy, task_accuracy_lo, task_accuracy_hi, "
            "accuracy_delta, accuracy_delta_lo, accuracy_delta_hi, task_mcnemar_p, task_items_per_s, quality_verdict "
            "FROM variants WHERE run_id = ? AND task_metric IS NOT NULL ORDER BY variant_index, step_index",
            {id});
        if (!tk.rows.empty()) {
          const auto& r0 = tk.rows[0];
          std::cout << "\ntask (" << sql_to_string(r0[1]) << ", " << sql_to_string(r0[2]) << " items of "
                    << sql_to_string(r0[3]) << "; 95% bootstrap intervals, the delta paired on the same items)\n";
          auto pct = [](const SqlValue& cell) {
            const auto x = sql_number(cell);
            if (!x) return std::string("-");
            std::ostringstream os;
            os << std::fixed << std::setprecision(1) << 100 * *x;
            return os.str();
          };
          TextTable tt({"variant", "accuracy % [95% CI]", "delta vs reference [95% CI]", "McNemar p", "items/s", "quality"});
          for (const auto& row : tk.rows) {
            const bool ref = std::holds_alternative<std::monostate>(row[7]);
            tt.add({sql_to_string(row[0]), pct(row[4]) + " [" + pct(row[5]) + ", " + pct(row[6]) + "]",
                    ref ? std::string("(the reference)") : pct(row[7]) + " [" + pct(row[8]) + ", " + pct(row[9]) + "]",
                    ref ? std::string("-") : num(row[10], 3), num(row[11], 1), sql_to_string(row[12])});
          }
          tt.print(std::cout);
        }
        const int64_t total = variant_count(st, id, f("scenario_toml"), f("scenario_path"));
        const auto knee = st.query(
            "SELECT variant_index, MAX(knee_qps), MAX(knee_reached), MAX(slo_met = 0) FROM variants "
            "WHERE run_id = ? AND pattern = 'stepped' GROUP BY variant_index ORDER BY variant_index",
            {id});
        for (const auto& k : knee.rows)
          std::cout << "\nvariant " << std::get<int64_t>(k[0]) + 1 << "/" << total
                    << ": knee (highest rate meeting the SLOs) = " << stored_knee(k[1], k[2], k[3]).describe() << "\n";
        print_host_costs(st, id, f("scenario_name"), f("host_type"));
        return 0;
      };
    }}};

}  // namespace cmd_show
}  // namespace cibench::cli
