#pragma once
// A results database with known values, written through the harness's Store (so the schema is
// the real one), for the query-layer, report and GUI tests and for `cibench-gui-fixture`.
//
// Run 1 "fixture-formats" on hostA, server pattern, floor min_top1_agreement = 0.95, SLO
// p95_ms = 100 and ttft_p99_ms = 500. Variants (x = latency p95 ms, y = top-1 agreement):
//   f32 t2 (100, 1.00)   bf16 t2 (60, 0.99)   int8 t2 (40, 0.97)   w8a8 t2 (45, 0.96)
//   bf16 sp0.5 t2 (50, 0.98)   int4 t2 (25, 0.90)   int8 sp0.5 t2 (35, 0.93)
//   f32 t1 (150, no accuracy)  int4_sym_g32 t2 (failed)
// Above the floor the frontier is int8 -> bf16 sp0.5 -> bf16 -> f32; w8a8 is dominated by int8;
// int4 and int8 sp0.5 are below the floor (greyed). f32 t2 meets the p95 SLO exactly (100 <= 100),
// f32 t1 misses it (150). Counters: f32 t2 all unavailable (no PMU, no RAPL); bf16 t2 measured;
// both have the software counters (task clock, context switches, page faults, CPU migrations).
// Run 2: the same scenario on hostB, every latency 10 ms higher (for the compare view).
// Run 3 "fixture-threads": f32 at threads x workers 1x1, 2x1, 1x2, 2x2 (scaling view).
// Run 4 "fixture-stepped": f32 t2 at offered 1, 2, 4, 8 queries/s, p95 20, 25, 60, 300 ms.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/lib/store.h"

namespace cibench::test {

// A path for a new database in a per-process folder of the temporary directory
// (cibench_PREFIX_PID/NAME), with anything left there by an earlier test removed: a file, or a
// folder (a report's output) left by an earlier process that had the same PID.
inline std::string fresh_db_path(const std::string& prefix, const std::string& name) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("cibench_" + prefix + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove_all(p.string() + suffix);
  return p.string();
}

struct ReportsFixture {
  int64_t run_formats = 0, run_formats_b = 0, run_threads = 0, run_stepped = 0;
  // variant ids in run 1, by short name
  int64_t v_f32 = 0, v_bf16 = 0, v_int8 = 0, v_w8a8 = 0, v_bf16_sp = 0, v_int4 = 0, v_int8_sp = 0,
          v_f32_t1 = 0, v_failed = 0;
};

inline const char* fixture_formats_toml() {
  return "[scenario]\nname = \"fixture-formats\"\n\n[model]\nsource = \"synthetic:tinystories-15m\"\n\n"
         "[load]\npattern = \"server\"\ntarget_qps = 2.0\n\n[slo]\np95_ms = 100\nttft_p99_ms = 500\n\n"
         "[accuracy]\nmin_top1_agreement = 0.95\nmax_ppl_ratio = 1.05\n";
}

inline Fields fixture_run(const std::string& scenario, const std::string& toml, const std::string& host,
                          const std::string& started, const std::string& pattern) {
  return {{"status", std::string("complete")},  {"started_utc", started},
          {"finished_utc", started},            {"scenario_name", scenario},
          {"scenario_hash", std::string("0123456789abcdef")},
          {"scenario_toml", toml},              {"question", std::string("Which format holds p95 <= 100 ms?")},
          {"pattern", pattern},                 {"model_spec", std::string("synthetic:tinystories-15m")},
          {"hostname", host},                   {"cpu_model", std::string("AMD EPYC 7B13 (fixture)")},
          {"cpu_vendor", std::string("AuthenticAMD")},
          {"isa_active", std::string("avx2")},  {"logical_cpus", int64_t{2}},
          {"cibench_commit", std::string("fixture")}, {"compiler", std::string("GNU 12.2.0")},
          {"build_type", std::string("Release")}, {"kernel", std::string("6.1.0")},
          {"governor", sql_null()},             {"governor_reason", std::string("no cpufreq in this VM")},
          {"pid", int64_t{0}}};
}

struct FixtureVariant {
  std::string format;
  double sparsity;
  int threads, workers;
  double p95;      // latency p95 (ms)
  double top1;     // < 0: not measured
  const char* status = "ok";
};

inline int64_t fixture_variant(Store& s, int64_t run, int index, int step, const FixtureVariant& f,
                               double shift_ms, double offered_qps) {
  const std::string label = f.format + (f.sparsity > 0 ? " sp" + std::to_string(f.sparsity).substr(0, 3) : "") +
                            " t" + std::to_string(f.threads) + " w" + std::to_string(f.workers) +
                            " kv=preallocated isa=auto";
  Fields v{{"run_id", run},
           {"variant_index", int64_t{index}},
           {"step_index", int64_t{step}},
           {"label", label},
           {"status", std::string(f.status)},
           {"format", f.format},
           {"sparsity", f.sparsity},
           {"threads", int64_t{f.threads}},
           {"workers", int64_t{f.workers}},
           {"kv_mode", std::string("preallocated")},
           {"isa_requested", std::string("auto")},
           {"isa_used", std::string("avx2")},
           {"pattern", std::string(offered_qps > 0 ? "server" : "closed_loop")}};
  if (std::string(f.status) != "ok") {
    v.push_back({"error", std::string("no kernel for this format on this CPU")});
    return s.insert("variants", v);
  }
  const double p95 = f.p95 + shift_ms;
  v.insert(v.end(), {{"offered_qps", offered_qps > 0 ? SqlValue(offered_qps) : sql_null()},
                     {"queries", int64_t{200}},
                     {"failed_queries", int64_t{0}},
                     {"duration_s", 10.0},
                     {"achieved_qps", 1000.0 / p95 * f.threads * f.workers / 2},
                     {"tokens_per_s", 24000.0 / p95},
                     {"latency_mean_ms", p95 * 0.8},
                     {"latency_p50_ms", p95 * 0.7},
                     {"latency_p90_ms", p95 * 0.9},
                     {"latency_p95_ms", p95},
                     {"latency_p99_ms", p95 * 1.2},
                     {"ttft_p95_ms", p95 * 0.3},
                     {"ttft_p99_ms", p95 * 0.35},
                     {"peak_rss_bytes", int64_t{64} << 20},
                     {"weight_bytes", int64_t{24} << 20},
                     {"valid", int64_t{1}},
                     {"slo_met", int64_t{p95 <= 100 ? 1 : 0}},
                     {"counters_mode", std::string("separate")},
                     {"counters_queries", int64_t{4}}});
  if (f.top1 >= 0) {
    v.insert(v.end(), {{"acc_kind", std::string("lm")}, {"top1_agreement", f.top1},
                       {"kl_mean", (1 - f.top1) / 10}, {"ppl_ratio", 1 + (1 - f.top1) / 2},
                       {"quality_verdict", std::string(f.top1 >= 0.95 ? "pass" : "fail")}});
  } else {
    v.push_back({"acc_unavailable_reason", std::string("accuracy not run for this variant")});
  }
  return s.insert("variants", v);
}

// 200 requests, latencies spread so that nearest-rank p95 is close to `p95`.
inline void fixture_requests(Store& s, int64_t variant, double p95) {
  std::vector<std::vector<SqlValue>> rows;
  for (int i = 0; i < 200; ++i) {
    const double lat = p95 * (0.5 + 0.5 * i / 189.0);  // the 190th of 200 (nearest-rank p95) = p95
    // Time per output token in no particular order (stored in completion order, as a real run's):
    // a reader must not depend on the order the rows come back in.
    const double tpot = p95 / 20 * (0.5 + 0.5 * ((i * 77) % 200) / 199.0);
    rows.push_back({variant, int64_t{i}, int64_t{i}, int64_t{0}, int64_t{1}, 500.0 * i, lat * 0.1, lat * 0.9, lat,
                    lat * 0.3, tpot});
  }
  Store::Transaction t(s);
  s.insert_many("requests",
                {"variant_id", "seq", "query_index", "worker", "ok", "scheduled_ms", "queue_ms", "service_ms",
                 "latency_ms", "ttft_ms", "tpot_ms"},
                rows);
  t.commit();
}

inline void fixture_counters(Store& s, int64_t variant, bool measured) {
  auto row = [&](const std::string& name, double value, const std::string& unit, const std::string& scope,
                 const std::string& source, const std::string& reason) {
    Fields f{{"variant_id", variant}, {"name", name}, {"phase", std::string("all")}, {"scope", scope},
             {"unit", unit}, {"source", source}};
    if (reason.empty()) f.push_back({"value", value});
    else f.push_back({"unavailable_reason", reason});
    s.insert("counters", f);
  };
  const std::string no_pmu = measured ? "" : "PAPI_ENOEVNT: event not available (no PMU in this VM)";
  row("cycles", 3e9, "", "total", measured ? "papi" : "none", no_pmu);
  row("instructions", 4.5e9, "", "total", measured ? "papi" : "none", no_pmu);
  row("ipc", 1.5, "instructions/cycle", "total", "derived", measured ? "" : "needs instructions and cycles: " + no_pmu);
  row("l1d_mpki", 12.0, "per 1000 instructions", "total", "derived", measured ? "" : "needs l1d_misses and instructions: " + no_pmu);
  row("task_clock_ms", 812.5, "ms", "total", "perf_event", "");
  row("context_switches", 42.0, "", "total", "perf_event", "");
  row("page_faults", 1200.0, "", "total", "perf_event", "");
  row("cpu_migrations", 3.0, "", "total", "perf_event", "");
  row("energy_j", 3.0, "J", "package", "rapl", measured ? "" : "no RAPL: /sys/class/powercap not present");
}

inline ReportsFixture make_reports_fixture(const std::string& path) {
  ReportsFixture fx;
  Store s(path);
  const std::vector<FixtureVariant> formats{
      {"f32", 0, 2, 1, 100, 1.00},  {"bf16", 0, 2, 1, 60, 0.99},  {"int8", 0, 2, 1, 40, 0.97},
      {"w8a8", 0, 2, 1, 45, 0.96},  {"bf16", 0.5, 2, 1, 50, 0.98}, {"int4", 0, 2, 1, 25, 0.90},
      {"int8", 0.5, 2, 1, 35, 0.93}, {"f32", 0, 1, 1, 150, -1},    {"int4_sym_g32", 0, 2, 1, 0, 0, "failed"},
  };
  for (int r = 0; r < 2; ++r) {
    const int64_t run = s.insert("runs", fixture_run("fixture-formats", fixture_formats_toml(), r ? "hostB" : "hostA",
                                                     r ? "2024-06-01T09:00:00Z" : "2024-05-01T10:00:00Z", "server"));
    std::vector<int64_t> ids;
    for (size_t i = 0; i < formats.size(); ++i)
      ids.push_back(fixture_variant(s, run, static_cast<int>(i), 0, formats[i], r ? 10.0 : 0.0, 2.0));
    // Per-request times for f32 and bf16 (the compare's bootstrap); int8 has a histogram only.
    fixture_requests(s, ids[0], formats[0].p95 + (r ? 10.0 : 0.0));
    fixture_requests(s, ids[1], formats[1].p95 + (r ? 10.0 : 0.0));
    {
      Store::Transaction t(s);
      std::vector<std::vector<SqlValue>> h;
      for (int b = 0; b < 10; ++b)  // 10 buckets of 4 ms from 20 ms, 10 requests each
        h.push_back({ids[2], std::string("latency"), int64_t{(20 + 4 * b) * 1000000LL},
                     int64_t{(24 + 4 * b) * 1000000LL}, int64_t{10}});
      s.insert_many("histograms", {"variant_id", "metric", "bucket_low_ns", "bucket_high_ns", "count"}, h);
      t.commit();
    }
    fixture_counters(s, ids[0], false);
    fixture_counters(s, ids[1], true);
    if (r == 0) {
      fx.run_formats = run;
      fx.v_f32 = ids[0], fx.v_bf16 = ids[1], fx.v_int8 = ids[2], fx.v_w8a8 = ids[3], fx.v_bf16_sp = ids[4];
      fx.v_int4 = ids[5], fx.v_int8_sp = ids[6], fx.v_f32_t1 = ids[7], fx.v_failed = ids[8];
    } else {
      fx.run_formats_b = run;
    }
  }
  {
    fx.run_threads = s.insert("runs", fixture_run("fixture-threads", "[slo]\np95_ms = 200\n", "hostA",
                                                  "2024-06-02T09:00:00Z", "closed_loop"));
    const std::vector<FixtureVariant> tw{{"f32", 0, 1, 1, 120, -1}, {"f32", 0, 2, 1, 70, -1},
                                         {"f32", 0, 1, 2, 110, -1}, {"f32", 0, 2, 2, 75, -1}};
    for (size_t i = 0; i < tw.size(); ++i) fixture_variant(s, fx.run_threads, static_cast<int>(i), 0, tw[i], 0, 0);
  }
  {
    fx.run_stepped = s.insert("runs", fixture_run("fixture-stepped", "[load]\npattern = \"stepped\"\n\n[slo]\np95_ms = 100\n",
                                                  "hostA", "2024-06-03T09:00:00Z", "stepped"));
    const double rates[] = {1, 2, 4, 8}, p95s[] = {20, 25, 60, 300};
    for (int st = 0; st < 4; ++st) {
      const int64_t v = fixture_variant(s, fx.run_stepped, 0, st, {"f32", 0, 2, 1, p95s[st], -1}, 0, rates[st]);
      s.update("variants", "variant_id", v, {{"knee_qps", 4.0}});
    }
  }
  return fx;
}

// ---- a serving run (make_serving_fixture) ---------------------------------------------------
//
// Run "fixture-serving": a decoder (w8a8 t1 w1) under stepped Poisson load at 1, 2, 4, 8 requests/s
// with SLOs ttft_p99_ms = 500 and tpot_p99_ms = 50, three ways to batch (the series):
//   batching none:       TTFT p99 100, 200, 600 ms at 1, 2, 4 qps (4 breaks it: knee 2 qps, the run
//                        stopped there); no batch occupancy (NULL with batching_reason)
//   batching static:     TTFT p99 150, 180, 300, 450 ms: every rate met (no knee, >= 8 qps)
//   batching continuous: TTFT p99 120, 140, 200, 700 ms, TPOT p99 10, 15, 25, 40 ms: knee 4 qps;
//                        batch occupancy mean 1.2, 2, 3.5, 6; the goodput of its 8 qps step is NULL
//                        with goodput_reason
// Achieved = 0.95 x offered. Goodput (where stored) = achieved x attainment, attainment 1 at the
// steps meeting the SLOs and 0.5 at the others. Requests are stored for each series' timeline
// step (none @2, static @8, continuous @4): serving_request() gives their times.
struct ServingFixture {
  int64_t run = 0;
  int64_t none_knee = 0, static_top = 0, cont_knee = 0;  // variant ids of the timeline steps
  int64_t cont_top = 0;                                  // continuous @8 qps (goodput NULL)
};

struct ServingRequestTimes {
  double scheduled, queue, ttft, latency;
  int64_t output_tokens;
};
// Request i (0-based) of a timeline step: arrivals 100 ms apart from 50 ms, queue 4 i ms, TTFT
// queue + 30 ms, latency TTFT + 10 (i + 1) ms; request 2 has no queue wait stored (NULL).
inline ServingRequestTimes serving_request(int i) {
  const double queue = 4.0 * i, ttft = queue + 30;
  return {50.0 + 100.0 * i, queue, ttft, ttft + 10.0 * (i + 1), int64_t{i + 2}};
}
constexpr int kServingRequests = 12;

inline int64_t serving_variant(Store& s, int64_t run, int index, int step, const std::string& batching, double offered,
                               double ttft_p99, double tpot_p99, std::optional<double> occupancy, bool goodput_stored) {
  const bool met = ttft_p99 <= 500 && tpot_p99 <= 50;
  const double achieved = 0.95 * offered, attainment = met ? 1.0 : 0.5;
  Fields v{{"run_id", run},
           {"variant_index", int64_t{index}},
           {"step_index", int64_t{step}},
           {"label", std::string("w8a8 t1 w1 ") + batching},
           {"status", std::string("ok")},
           {"format", std::string("w8a8")},
           {"sparsity", 0.0},
           {"threads", int64_t{1}},
           {"workers", int64_t{1}},
           {"kv_mode", std::string("preallocated")},
           {"isa_requested", std::string("auto")},
           {"isa_used", std::string("avx2")},
           {"pattern", std::string("stepped")},
           {"offered_qps", offered},
           {"queries", int64_t{kServingRequests}},
           {"failed_queries", int64_t{0}},
           {"duration_s", kServingRequests / achieved},
           {"achieved_qps", achieved},
           {"latency_p50_ms", ttft_p99 + 100},
           {"latency_p99_ms", ttft_p99 + 300},
           {"ttft_p50_ms", ttft_p99 / 2},
           {"ttft_p99_ms", ttft_p99},
           {"tpot_p50_ms", tpot_p99 / 2},
           {"tpot_p99_ms", tpot_p99},
           {"itl_count", int64_t{100}},
           {"itl_p50_ms", tpot_p99 / 2},
           {"itl_p99_ms", tpot_p99 * 1.5},
           {"slo_attainment", attainment},
           {"slo_met", int64_t{met ? 1 : 0}},
           {"valid", int64_t{1}},
           {"batching", batching}};
  if (goodput_stored) v.push_back({"goodput_qps", achieved * attainment});
  else v.push_back({"goodput_reason", std::string("not every request was kept (12 > run.exact_sample_cap)")});
  if (batching == "none") {
    v.push_back({"batching_reason", std::string("batching none: one sequence per worker, no scheduler steps")});
  } else {
    v.insert(v.end(), {{"max_batch", int64_t{8}},
                       {"engine_steps", int64_t{400}},
                       {"preemptions", int64_t{0}},
                       {"batch_occupancy_mean", *occupancy},
                       {"batch_occupancy_max", int64_t{8}},
                       {"kv_occupancy_mean", *occupancy / 16},
                       {"kv_occupancy_max", *occupancy / 8}});
  }
  return s.insert("variants", v);
}

inline void serving_requests(Store& s, int64_t variant) {
  std::vector<std::vector<SqlValue>> rows;
  for (int i = 0; i < kServingRequests; ++i) {
    const ServingRequestTimes t = serving_request(i);
    rows.push_back({variant, int64_t{i}, int64_t{i}, int64_t{0}, int64_t{i % 5}, int64_t{16}, t.output_tokens, int64_t{1},
                    t.scheduled, i == 2 ? sql_null() : SqlValue(t.queue), t.latency - t.queue, t.latency, t.ttft,
                    (t.latency - t.ttft) / static_cast<double>(t.output_tokens - 1)});
  }
  Store::Transaction tr(s);
  s.insert_many("requests",
                {"variant_id", "seq", "query_index", "worker", "sample_index", "prompt_tokens", "output_tokens", "ok",
                 "scheduled_ms", "queue_ms", "service_ms", "latency_ms", "ttft_ms", "tpot_ms"},
                rows);
  tr.commit();
}

// Adds the serving run to the database at `path` (created when absent).
inline ServingFixture make_serving_fixture(const std::string& path) {
  ServingFixture fx;
  Store s(path);
  fx.run = s.insert("runs", fixture_run("fixture-serving",
                                        "[load]\npattern = \"stepped\"\n\n[slo]\nttft_p99_ms = 500\ntpot_p99_ms = 50\n",
                                        "hostA", "2024-06-04T09:00:00Z", "stepped"));
  const double rates[] = {1, 2, 4, 8};
  const double none_ttft[] = {100, 200, 600}, static_ttft[] = {150, 180, 300, 450}, cont_ttft[] = {120, 140, 200, 700};
  const double cont_tpot[] = {10, 15, 25, 40}, static_occ[] = {1, 1.5, 2.5, 4}, cont_occ[] = {1.2, 2, 3.5, 6};
  for (int st = 0; st < 3; ++st) {
    const int64_t id = serving_variant(s, fx.run, 0, st, "none", rates[st], none_ttft[st], 8, std::nullopt, true);
    if (st == 1) fx.none_knee = id;
  }
  for (int st = 0; st < 4; ++st) {
    const int64_t id = serving_variant(s, fx.run, 1, st, "static", rates[st], static_ttft[st], 12, static_occ[st], true);
    if (st == 3) fx.static_top = id;
  }
  for (int st = 0; st < 4; ++st) {
    const int64_t id = serving_variant(s, fx.run, 2, st, "continuous", rates[st], cont_ttft[st], cont_tpot[st], cont_occ[st], st != 3);
    if (st == 2) fx.cont_knee = id;
    if (st == 3) fx.cont_top = id;
  }
  for (int64_t id : {fx.none_knee, fx.static_top, fx.cont_knee}) serving_requests(s, id);
  return fx;
}

// ---- a speculative-decoding run (make_speculative_fixture) ------------------------------------
//
// Run "fixture-speculative": one target build (w8a8 t1 w1), closed loop, its off variant and two
// drafters at k = 2 and 4 (times in ms; speed-up = off / this, mean and p95 TPOT):
//   off                    TPOT mean 50, p50 48, p95 60, TTFT p50 20; no acceptance (spec_reason)
//   self:int4_g128_a8 k=2  acceptance 0.8, mean accepted length 2.6, by position [0.9, 0.7],
//                          TPOT mean 40, p95 45: speed-up 1.25 (p95 1.333)
//   self:int4_g128_a8 k=4  acceptance 0.6, 3.4, [0.9, 0.7, 0.5, 0.3], TPOT mean 45, p95 52: 1.111 (1.154)
//   lookup:1-3 k=2         acceptance 0.5, 2.0, [0.6, 0.4], TPOT mean 44, p95 40: 1.136 (1.5): the
//                          lowest TPOT p95
//   lookup:1-3 k=4         acceptance 0.3, 2.2, [0.5, 0.3, 0.2, null], TPOT mean 55, p95 66: speed-up
//                          NULL with spec_speedup_reason kSpecSpeedupReason
// Draft shares 0.3 (self) and 0.01 (lookup), verify shares 0.6 and 0.8; TTFT p50 = 20 + k.
struct SpeculativeFixture {
  int64_t run = 0;
  int64_t off = 0, self_k2 = 0, self_k4 = 0, lookup_k2 = 0, lookup_k4 = 0;  // variant ids
};
inline const char* kSpecSpeedupReason = "the off variant's TPOT was not stored when this row was";

struct SpecRow {
  const char* drafter;
  int k;  // 0: off
  double acceptance, mean_len;
  const char* by_position;
  double draft_share, verify_share, tpot_mean, tpot_p95;
  bool speedup_stored;
};

inline int64_t speculative_variant(Store& s, int64_t run, int index, const SpecRow& r, const std::string& format = "w8a8") {
  const bool off = r.k == 0;
  const std::string drafter = r.drafter;
  Fields v{{"run_id", run},
           {"variant_index", int64_t{index}},
           {"step_index", int64_t{0}},
           {"label", format + " t1 w1 spec=" + drafter + (off ? "" : " k=" + std::to_string(r.k))},
           {"status", std::string("ok")},
           {"format", format},
           {"sparsity", 0.0},
           {"threads", int64_t{1}},
           {"workers", int64_t{1}},
           {"kv_mode", std::string("preallocated")},
           {"isa_requested", std::string("auto")},
           {"isa_used", std::string("avx512_vnni")},
           {"pattern", std::string("closed_loop")},
           {"queries", int64_t{8}},
           {"failed_queries", int64_t{0}},
           {"duration_s", 4.0},
           {"achieved_qps", 2.0},
           {"latency_p50_ms", 64 * r.tpot_mean},
           {"latency_p95_ms", 64 * r.tpot_p95},
           {"ttft_p50_ms", 20.0 + r.k},
           {"tpot_mean_ms", r.tpot_mean},
           {"tpot_p50_ms", r.tpot_mean * 0.96},
           {"tpot_p95_ms", r.tpot_p95},
           {"valid", int64_t{1}},
           {"speculative", drafter}};
  if (off) {
    v.insert(v.end(), {{"draft_tokens", sql_null()}, {"spec_reason", std::string("speculative off: nothing drafted")},
                       {"spec_speedup_reason", std::string("the baseline itself (speculative off)")}});
    return s.insert("variants", v);
  }
  const int64_t drafted = 100 * r.k, accepted = static_cast<int64_t>(std::lround(r.acceptance * drafted));
  v.insert(v.end(), {{"draft_tokens", int64_t{r.k}},
                     {"spec_drafted", drafted},
                     {"spec_accepted", accepted},
                     {"spec_draft_steps", int64_t{100}},
                     {"spec_verify_steps", int64_t{100}},
                     {"spec_acceptance", r.acceptance},
                     {"spec_mean_accepted_length", r.mean_len},
                     {"spec_acceptance_by_position", std::string(r.by_position)},
                     {"spec_target_forwards", int64_t{108}},
                     {"spec_draft_forwards", drafter.rfind("lookup", 0) == 0 ? int64_t{0} : int64_t{100 * r.k}},
                     {"spec_draft_share", r.draft_share},
                     {"spec_verify_share", r.verify_share}});
  if (r.speedup_stored)
    v.insert(v.end(), {{"spec_speedup", 50.0 / r.tpot_mean}, {"spec_speedup_p95", 60.0 / r.tpot_p95}});
  else
    v.push_back({"spec_speedup_reason", std::string(kSpecSpeedupReason)});
  return s.insert("variants", v);
}

// Adds the speculative run to the database at `path` (created when absent).
inline SpeculativeFixture make_speculative_fixture(const std::string& path) {
  SpeculativeFixture fx;
  Store s(path);
  fx.run = s.insert("runs", fixture_run("fixture-speculative", "[load]\npattern = \"closed_loop\"\n", "hostA",
                                        "2024-06-05T09:00:00Z", "closed_loop"));
  fx.off = speculative_variant(s, fx.run, 0, {"off", 0, 0, 0, "", 0, 0, 50, 60, false});
  fx.self_k2 = speculative_variant(s, fx.run, 1, {"self:int4_g128_a8", 2, 0.8, 2.6, "[0.9,0.7]", 0.3, 0.6, 40, 45, true});
  fx.self_k4 = speculative_variant(s, fx.run, 2, {"self:int4_g128_a8", 4, 0.6, 3.4, "[0.9,0.7,0.5,0.3]", 0.3, 0.6, 45, 52, true});
  fx.lookup_k2 = speculative_variant(s, fx.run, 3, {"lookup:1-3", 2, 0.5, 2.0, "[0.6,0.4]", 0.01, 0.8, 44, 40, true});
  fx.lookup_k4 = speculative_variant(s, fx.run, 4, {"lookup:1-3", 4, 0.3, 2.2, "[0.5,0.3,0.2,null]", 0.01, 0.8, 55, 66, false});
  // The baseline of each speculative row.
  for (int64_t id : {fx.self_k2, fx.self_k4, fx.lookup_k2, fx.lookup_k4})
    s.update("variants", "variant_id", id, {{"spec_baseline_variant_id", fx.off}});
  return fx;
}

// ---- a fleet: one stepped scenario on two priced host types (make_fleet_fixture) ---------------
//
// Host types "small" (0.36 USD/h = 0.0001 per second) and "large" (1.08 USD/h), run
// "fixture-fleet" on each (runs.host_type; hostnames node-small, node-large), f32 and int8 at offered 2, 4 and 8 queries/s, 24 output
// tokens per request, top-1 floor 0.95 (f32 1.00 pass; int8 0.97 pass on small, 0.90 fail on large):
//   small: f32 knee 2 (p95 at the knee 300 ms), int8 knee 4 (250 ms)
//   large: f32 knee 8 (120 ms), int8 knee 8 (100 ms, below the floor)
// Cost per 1k requests = price per second / knee * 1000: small f32 0.05, small int8 0.025,
// large f32 0.0375 (int8 below the floor). Ranked: small (int8, 0.025), then large (f32, 0.0375).
// The frontier of cost against p95: large f32 (120 ms, 0.0375), small int8 (250 ms, 0.025).
struct FleetFixture {
  int64_t run_small = 0, run_large = 0;
};

inline FleetFixture make_fleet_fixture(const std::string& path) {
  FleetFixture fx;
  Store s(path);
  for (const auto& [name, price] : std::vector<std::pair<std::string, double>>{{"small", 0.36}, {"large", 1.08}})
    s.insert("host_types", {{"name", name},
                            {"price_per_hour", price},
                            {"currency", std::string("USD")},
                            {"source", std::string("fixture price")},
                            {"cpus_per_task", int64_t{name == "small" ? 1 : 2}},
                            {"updated_utc", std::string("2024-06-06T00:00:00Z")}});
  const std::string toml =
      "[scenario]\nname = \"fixture-fleet\"\n\n[load]\npattern = \"stepped\"\nrates_qps = [2.0, 4.0, 8.0]\n\n"
      "[slo]\np95_ms = 400\n\n[accuracy]\nmin_top1_agreement = 0.95\n";
  struct Row {
    const char* format;
    double knee;
    double top1;
    std::vector<double> p95;  // per step 2, 4, 8 qps
  };
  auto add_run = [&](const std::string& host, const std::string& started, const std::vector<Row>& rows) {
    Fields r = fixture_run("fixture-fleet", toml, "node-" + host, started, "stepped");
    r.push_back({"host_type", host});
    r.push_back({"floors_json", std::string("[{\"key\":\"min_top1_agreement\",\"value\":0.95}]")});
    const int64_t run = s.insert("runs", r);
    for (size_t vi = 0; vi < rows.size(); ++vi) {
      const Row& row = rows[vi];
      const double rates[] = {2, 4, 8};
      for (int st = 0; st < 3; ++st) {
        const bool met = row.p95[static_cast<size_t>(st)] <= 400;
        Fields v{{"run_id", run},
                 {"variant_index", static_cast<int64_t>(vi)},
                 {"step_index", int64_t{st}},
                 {"label", std::string(row.format) + " t1 w1 @" + std::to_string(int(rates[st])) + " qps"},
                 {"status", std::string("ok")},
                 {"format", std::string(row.format)},
                 {"threads", int64_t{1}},
                 {"workers", int64_t{1}},
                 {"pattern", std::string("stepped")},
                 {"offered_qps", rates[st]},
                 {"achieved_qps", rates[st] * 0.98},
                 {"queries", int64_t{20}},
                 {"output_tokens", int64_t{480}},
                 {"latency_p95_ms", row.p95[static_cast<size_t>(st)]},
                 {"slo_met", int64_t{met}},
                 {"valid", int64_t{1}},
                 {"knee_qps", row.knee},
                 {"knee_reached", int64_t{row.knee < 8 ? 1 : 0}}};
        if (st == 0) {
          v.push_back({"top1_agreement", row.top1});
          v.push_back({"quality_verdict", std::string(row.top1 >= 0.95 ? "pass" : "fail")});
        }
        s.insert("variants", v);
      }
    }
    return run;
  };
  fx.run_small = add_run("small", "2024-06-06T09:00:00Z",
                         {{"f32", 2, 1.00, {300, 900, 2000}}, {"int8", 4, 0.97, {150, 250, 700}}});
  fx.run_large = add_run("large", "2024-06-06T10:00:00Z",
                         {{"f32", 8, 1.00, {60, 80, 120}}, {"int8", 8, 0.90, {50, 70, 100}}});
  return fx;
}

}  // namespace cibench::test
