#include "harness/lib/suite.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "engines/core/error.h"
#include "harness/lib/accuracy.h"
#include "harness/lib/build_info.h"
#include "harness/lib/family.h"
#include "harness/lib/load.h"
#include "harness/lib/run_record.h"
#include "harness/lib/sysinfo.h"
#include "harness/lib/traffic.h"
#include "harness/lib/variant_result.h"

namespace cibench {
namespace {

// What the scenario needs, opened once per run before any row is written.
struct Prepared {
  std::unique_ptr<ModelFamily> family;
  std::shared_ptr<const Traffic> traffic;  // workload.sampling (null: uniform by choose_query)
};

// workload.sampling over the prepared samples.
std::shared_ptr<const Traffic> make_traffic(const Scenario& sc, int64_t n) {
  try {
    if (sc.sampling == "zipf") return std::make_shared<const Traffic>(Traffic::zipf(n, sc.zipf_s, sc.seed_samples));
    if (sc.sampling == "replay") return std::make_shared<const Traffic>(Traffic::replay(sc.replay, n));
  } catch (const Error& e) {
    throw ScenarioError(sc.pos(sc.sampling == "replay" ? "workload.replay" : "workload.sampling").message(e.what()));
  }
  return nullptr;
}

Prepared prepare(const Scenario& sc) {
  Prepared p;
  p.family = open_model_family(sc);
  p.traffic = make_traffic(sc, p.family->samples());
  return p;
}

// The SLO verdict (harness/schema/slo.h judge_slos) on the recorded distributions.
SloVerdict check_slos(const Scenario& sc, const Recorder& rec) {
  return judge_slos(sc.slos, [&](const Slo& s) -> std::optional<double> {
    for (Metric m : {Metric::latency, Metric::queue, Metric::service, Metric::ttft, Metric::tpot}) {
      if (s.metric != metric_name(m)) continue;
      const Distribution d = rec.distribution(m);
      if (d.count == 0) return std::nullopt;
      return static_cast<double>(d.at(s.percentile)) * 1e-6;
    }
    return std::nullopt;  // parse_slo_key admits no other metric
  });
}

// The serving measures of a timed run (VariantResult: ITL count, goodput and SLO attainment,
// in-flight and queued requests, the arrival process).
void serving_measures(const Scenario& sc, const LoadResult& lr, VariantResult& r) {
  const Recorder& rec = *lr.recorder;
  const auto records = rec.records();
  r.itl_count = rec.merged(Metric::itl).count();
  if (r.itl_count == 0)
    r.itl_reason = rec.output_tokens() == 0 ? "the SUT reported no output tokens"
                                            : "no request produced two or more tokens";
  // Goodput: per request, on the kept records (every request, or none is stored).
  if (sc.slos.empty()) {
    r.goodput_reason = "no SLO in the scenario";
  } else if (!rec.all_kept()) {
    r.goodput_reason = str("not every request was kept (", rec.count(), " > run.exact_sample_cap)");
  } else if (lr.duration_s <= 0) {
    r.goodput_reason = "no request completed";
  } else {
    Goodput g;
    g.duration_s = lr.duration_s;
    for (const auto& x : records) {
      if (!x.ok) continue;
      ++g.requests;
      const bool met = request_meets_slos(sc.slos, [&](const std::string& m) -> std::optional<double> {
        int64_t ns = -1;
        if (m == "latency") ns = x.latency_ns();
        else if (m == "queue") ns = x.queue_ns();
        else if (m == "service") ns = x.service_ns();
        else if (m == "ttft") ns = x.ttft_ns();
        else if (m == "tpot") ns = x.tpot_ns();
        if (ns < 0 && (m == "ttft" || m == "tpot")) return std::nullopt;
        return static_cast<double>(std::max<int64_t>(ns, 0)) * 1e-6;
      });
      if (met) ++g.met;
    }
    if (g.requests == 0) {
      r.goodput_reason = "no request completed";
    } else {
      r.goodput_qps = g.per_s();
      r.slo_attainment = g.attainment();
    }
  }
  // In flight and queued over [0, duration]: from every request when all were kept, else the
  // means from the latency and queue sums (Little's law) and no maxima.
  const int64_t dur_ns = static_cast<int64_t>(std::llround(lr.duration_s * 1e9));
  if (dur_ns <= 0) {
    r.concurrency_reason = "no request completed";
  } else if (rec.all_kept()) {
    std::vector<std::pair<int64_t, int64_t>> flight, queued;
    for (const auto& x : records) {
      if (!x.ok) continue;
      flight.emplace_back(x.scheduled_ns, x.end_ns);
      queued.emplace_back(x.scheduled_ns, x.start_ns);
    }
    const Occupancy f = occupancy(std::move(flight), dur_ns), q = occupancy(std::move(queued), dur_ns);
    r.inflight_mean = f.mean;
    r.inflight_max = f.max;
    r.queue_depth_mean = q.mean;
    r.queue_depth_max = q.max;
  } else {
    const Histogram lat = rec.merged(Metric::latency), qu = rec.merged(Metric::queue);
    r.inflight_mean = lat.mean() * static_cast<double>(lat.count()) / static_cast<double>(dur_ns);
    r.queue_depth_mean = qu.mean() * static_cast<double>(qu.count()) / static_cast<double>(dur_ns);
    r.concurrency_reason = str("maxima need every request (", rec.count(), " > run.exact_sample_cap); the means are "
                               "the summed latency and queue wait over the duration");
  }
  // The arrival process.
  switch (sc.pattern) {
    case Pattern::server:
    case Pattern::stepped:
      r.arrival_process = sc.burstiness == 1 ? str("poisson at ", lr.offered_qps, " qps (seed ", sc.seed_arrivals, ")")
                                             : str("gamma burstiness ", sc.burstiness, " at ", lr.offered_qps,
                                                   " qps (seed ", sc.seed_arrivals, ")");
      break;
    case Pattern::offline: r.arrival_process = "offline (every query at 0)"; break;
    case Pattern::single_stream: r.arrival_process = "single stream (next query at each completion)"; break;
    case Pattern::closed_loop: r.arrival_process = str("closed loop, ", sc.clients, " clients"); break;
  }
  if (lr.async) r.arrival_process += "; asynchronous SUT";
}

class Progress {
 public:
  Progress(const SuiteOptions& o) : o_(o) {}
  void line(const std::string& s) {
    if (!o_.log) return;
    if (bar_shown_) *o_.log << "\r\033[K";
    bar_shown_ = false;
    *o_.log << s << "\n" << std::flush;
  }
  void bar(double elapsed, int64_t done, int64_t expected) {
    if (!o_.log || !o_.progress_bar) return;
    const int width = 30;
    const double frac = expected > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(expected)) : 0;
    const int filled = static_cast<int>(frac * width);
    *o_.log << "\r  [" << std::string(static_cast<size_t>(filled), '#') << std::string(static_cast<size_t>(width - filled), '.')
            << "] " << done << "/" << expected << " queries  " << std::fixed << std::setprecision(1) << elapsed << " s"
            << std::flush;
    bar_shown_ = true;
  }

 private:
  const SuiteOptions& o_;
  bool bar_shown_ = false;
};

// Restarts the resident-set peak (SuiteOptions::reset_peak_rss when a test sets it), keeping
// the first refusal's reason.
struct RssPeaks {
  std::string refused;
  bool reset(const SuiteOptions& o) {
    std::string why;
    const bool ok = o.reset_peak_rss ? o.reset_peak_rss(&why) : reset_peak_rss(&why);
    if (!ok && refused.empty()) refused = "resident-set peak not restarted: " + why;
    return ok;
  }
};

struct StepOutcome {
  int64_t variant_id = 0;
  bool failed = false;
  std::optional<bool> slo_met;  // the step's SLO verdict (nullopt: none, or not measured)
};

StepOutcome run_step(Store& st, int64_t run_id, const Scenario& sc, const Variant& v, int step,
                     double rate, Prepared& p, const SuiteOptions& o, Progress& prog) {
  const Pattern pattern = sc.pattern == Pattern::stepped ? Pattern::server : sc.pattern;
  const double offered = sc.pattern == Pattern::stepped ? rate : sc.target_qps;
  ModelFamily& family = *p.family;
  std::string label = family.label(v);
  if (sc.pattern == Pattern::stepped) label += str(" @", rate, " qps");
  Fields cfg{{"run_id", run_id},
             {"variant_index", int64_t{v.index}},
             {"step_index", int64_t{step}},
             {"label", label},
             {"status", std::string("running")},
             {"started_utc", utc_now_iso()},
             {"threads", int64_t{v.threads}},
             {"workers", int64_t{v.workers}},
             {"isa_requested", std::string(v.isa ? isa_name(*v.isa) : "auto")},
             {"pattern", std::string(pattern_name(sc.pattern))},
             {"offered_qps", pattern == Pattern::server ? SqlValue(offered) : sql_null()},
             {"clients", sc.pattern == Pattern::closed_loop ? SqlValue(int64_t{sc.clients})
                         : sc.pattern == Pattern::single_stream ? SqlValue(int64_t{1}) : sql_null()},
             {"counters_mode", sc.counters_enabled ? SqlValue(sc.counters_mode) : SqlValue(std::string("off"))},
             {"max_batch", int64_t{v.max_batch}},
             {"max_wait_ms", v.max_batch > 1 && v.batching == BatchingMode::none ? SqlValue(sc.classifier.max_wait_ms) : sql_null()}};
  family.describe(v, cfg);
  int64_t vid = 0;
  {
    Store::Transaction t(st);
    vid = st.insert("variants", cfg);
    t.commit();
  }
  StepOutcome out;
  out.variant_id = vid;
  try {
    // Memory, per variant: earlier variants' builds are dropped and the memory they freed goes
    // back to the kernel (glibc keeps freed pages resident otherwise), then the resident-set peak
    // is restarted twice: before the build (the peak with the load) and after it, once the
    // build's transients are returned too (the peak while serving).
    family.release_builds_except(v);
    release_free_memory();
    RssPeaks rss;
    const bool load_reset = rss.reset(o);
    std::unique_ptr<SystemUnderTest> sut = family.make_sut(v);
    const std::optional<int64_t> build_peak = load_reset ? peak_rss_bytes() : std::nullopt;
    release_free_memory();
    const bool serve_reset = rss.reset(o);
    LoadSettings ls;
    ls.pattern = pattern;
    ls.target_qps = offered;
    ls.burstiness = sc.burstiness;
    ls.clients = sc.clients;
    ls.workers = v.workers;
    ls.warmup_queries = sc.warmup_queries;
    ls.min_duration_ns = sc.min_duration_ms * 1'000'000;
    ls.max_duration_ns = sc.max_duration_ms * 1'000'000;
    ls.min_queries = sc.min_queries;
    ls.exact_cap = sc.exact_sample_cap;
    ls.seed_arrivals = sc.seed_arrivals;
    ls.choice = ChoiceSeeds{sc.seed_samples, sc.seed_lengths};
    ls.n_samples = family.samples();
    ls.prompt = sc.prompt_tokens;
    ls.gen = sc.gen_tokens;
    ls.progress = [&](double e, int64_t d, int64_t x) { prog.bar(e, d, x); };
    // Static / continuous batching: the SUT forms its batches (max_batch is its limit), not the harness.
    ls.max_batch = v.batching == BatchingMode::none ? v.max_batch : 1;
    ls.max_wait_ns = static_cast<int64_t>(sc.classifier.max_wait_ms * 1e6);
    ls.traffic = p.traffic.get();

    std::unique_ptr<CounterPlan> plan;
    std::unique_ptr<CounterObserver> counters;
    // Counters count the harness's worker threads; an asynchronous SUT serves from its own.
    const bool async_sut = sut->as_async() != nullptr;
    if (sc.counters_enabled && !async_sut) {
      plan = std::make_unique<CounterPlan>(o.counter_plan ? o.counter_plan() : default_counter_plan());
      if (sc.counters_mode == "same") {
        counters = std::make_unique<CounterObserver>(*plan, v.workers, false);
        ls.observer = counters.get();
      }
    }
    const LoadResult lr = run_load(*sut, ls);
    if (!lr.error.empty()) throw Error(lr.error);
    const std::optional<int64_t> serve_peak = serve_reset ? peak_rss_bytes() : std::nullopt;
    const SutInfo info = sut->info();
    // What only this family measures of its SUT in the timed run (before the profiling pass).
    Fields family_fields;
    std::vector<std::string> family_lines;
    family.measured(*sut, family_fields, family_lines);

    // Profiling pass (counters perturb timing when read at phase boundaries): separate, after.
    int64_t counter_queries = lr.recorder->count();
    if (sc.counters_enabled && !async_sut && sc.counters_mode == "separate" && step == 0) {
      counters = std::make_unique<CounterObserver>(*plan, v.workers, true);
      LoadSettings pl = ls;
      pl.pattern = Pattern::closed_loop;
      pl.clients = v.workers;
      pl.min_queries = sc.profile_queries;
      pl.min_duration_ns = 0;
      pl.warmup_queries = 0;
      pl.exact_cap = 0;
      pl.max_batch = 1;
      pl.observer = counters.get();
      pl.progress = nullptr;
      const LoadResult pr = run_load(*sut, pl);
      if (!pr.error.empty()) throw Error("profiling pass: " + pr.error);
      counter_queries = pr.recorder->count();
    }

    // Quality (once per build: step 0).
    const VariantQuality quality = family.quality(v, step, [&](const std::string& n) { prog.line("  " + n); });

    // The typed result: the row and the console are both written from it.
    const Recorder& rec = *lr.recorder;
    VariantResult r;
    r.isa_used = info.isa_used;
    r.pinning = info.pinning;
    r.weight_bytes = info.weight_bytes;
    r.repacked_weight_bytes = info.repacked_weight_bytes;
    r.kv_cache_bytes = info.kv_cache_bytes;
    r.weight_conversion_rel_rms = info.weight_conversion_rel_rms;
    r.weight_conversion = info.weight_conversion;
    r.weight_conversion_reason = info.weight_conversion_reason;
    r.peak_rss_bytes = serve_peak;
    if (serve_peak && build_peak) r.peak_rss_load_bytes = std::max(*build_peak, *serve_peak);
    if (!serve_peak || !build_peak)
      r.peak_rss_reason = !rss.refused.empty() ? rss.refused : std::string("/proc/self/status: no VmHWM line");
    r.queries = rec.count();
    r.failed_queries = rec.failed();
    r.duration_s = lr.duration_s;
    r.output_tokens = rec.output_tokens();
    r.batches = lr.batches;
    r.percentile_estimator = rec.all_kept() ? str("nearest-rank, exact (all ", rec.count(), " requests kept)")
                                            : std::string("nearest-rank on a log-bucketed histogram (relative error <= 0.4%)");
    for (Metric m : kAllMetrics) r.metrics[static_cast<size_t>(m)] = MetricSummary::of(rec.distribution(m));
    r.counters_queries = counters ? std::optional<int64_t>(counter_queries) : std::nullopt;
    r.family_fields = std::move(family_fields);
    r.family_lines = std::move(family_lines);
    r.quality = quality;

    // Validity: the run rules.
    if (rec.count() < sc.min_queries)
      r.invalid_reasons.push_back(str("completed ", rec.count(), " queries < min_queries ", sc.min_queries));
    if (lr.duration_s * 1e3 < static_cast<double>(sc.min_duration_ms))
      r.invalid_reasons.push_back(str("ran ", lr.duration_s, " s < min_duration_ms ", sc.min_duration_ms,
                                      pattern == Pattern::offline ? ": raise min_queries so the run lasts longer" : ""));
    if (lr.hit_max_duration) {
      if (pattern == Pattern::server || pattern == Pattern::offline)
        r.invalid_reasons.push_back(str("stopped at max_duration_ms ", sc.max_duration_ms, " with ", rec.count(), " of ",
                                        lr.scheduled, " scheduled queries done: the system cannot keep up (lower the rate or raise max_duration_ms)"));
      else
        r.invalid_reasons.push_back(str("stopped at max_duration_ms ", sc.max_duration_ms, " after ", rec.count(),
                                        " queries, before min_queries and min_duration_ms were both reached (raise max_duration_ms)"));
    }
    const SloVerdict slo = check_slos(sc, rec);
    r.slo_met = out.slo_met = slo.met;
    r.slo_report = slo.detail;
    serving_measures(sc, lr, r);

    // Requests: prompt tokens (the family's count when the SUT reports none) and sampling.
    auto records = rec.records();
    for (auto& x : records)
      if (auto n = family.prompt_tokens(x.sample_index)) x.prompt_tokens = *n;
    if (rec.all_kept()) {
      int64_t prompt_tokens = 0;
      for (const auto& x : records) prompt_tokens += x.prompt_tokens;
      r.prompt_tokens = prompt_tokens;
    }
    {
      std::vector<int64_t> samples;
      samples.reserve(records.size());
      for (const auto& x : records) samples.push_back(x.sample_index);
      if (rec.all_kept() && !samples.empty()) r.duplicate_rate = duplicate_rate(samples);
      if (p.traffic) {
        r.traffic = p.traffic->describe();
        r.expected_duplicate_rate = p.traffic->expected_duplicate_rate(rec.count());
      } else if (family.has_samples()) {
        const int64_t n = family.samples();
        r.traffic = str("uniform (seed ", sc.seed_samples, ") over ", n, " samples");
        r.expected_duplicate_rate = Traffic::uniform(n, sc.seed_samples).expected_duplicate_rate(rec.count());
      }
    }

    Store::Transaction t(st);
    st.update("variants", "variant_id", vid, r.fields());
    if (sc.counters_enabled && async_sut) {
      // Stored as unavailable with the reason, never as zeros.
      std::vector<std::vector<SqlValue>> rows;
      const std::string why =
          "not counted: the SUT serves from its own threads and cibench counts the harness's worker threads";
      for (const auto* events : {&hardware_events(), &software_events()})
        for (const auto& e : *events)
          rows.push_back({vid, e, std::string("all"), std::string("total"), sql_null(),
                          std::string(e == "task_clock_ms" ? "ms" : "count"), std::string("none"), why});
      st.insert_many("counters", {"variant_id", "name", "phase", "scope", "value", "unit", "source", "unavailable_reason"}, rows);
    }
    if (counters) {
      std::vector<std::vector<SqlValue>> rows;
      for (const auto& c : counters->rows())
        rows.push_back({vid, c.name, c.phase, c.scope, sql_opt(c.value), c.unit, c.source,
                        c.value ? sql_null() : SqlValue(c.unavailable_reason)});
      st.insert_many("counters", {"variant_id", "name", "phase", "scope", "value", "unit", "source", "unavailable_reason"}, rows);
    }
    {
      std::vector<std::vector<SqlValue>> rows;
      rows.reserve(records.size());
      int64_t seq = 0;
      for (const auto& x : records) {
        rows.push_back({vid, seq++, x.index, int64_t{x.worker}, x.sample_index, int64_t{x.prompt_tokens},
                        int64_t{x.output_tokens}, int64_t{x.ok}, x.scheduled_ns * 1e-6, x.queue_ns() * 1e-6,
                        x.service_ns() * 1e-6, x.latency_ns() * 1e-6,
                        x.ttft_ns() >= 0 ? SqlValue(x.ttft_ns() * 1e-6) : sql_null(),
                        x.tpot_ns() >= 0 ? SqlValue(x.tpot_ns() * 1e-6) : sql_null()});
      }
      st.insert_many("requests", {"variant_id", "seq", "query_index", "worker", "sample_index", "prompt_tokens",
                                  "output_tokens", "ok", "scheduled_ms", "queue_ms", "service_ms", "latency_ms",
                                  "ttft_ms", "tpot_ms"},
                     rows);
    }
    {
      std::vector<std::vector<SqlValue>> rows;
      for (Metric m : kAllMetrics) {
        const Histogram h = rec.merged(m);
        for (int b = 0; b < Histogram::kBuckets; ++b)
          if (h.bucket_count(b))
            rows.push_back({vid, std::string(metric_name(m)), static_cast<int64_t>(Histogram::bucket_lower(b)),
                            static_cast<int64_t>(Histogram::bucket_lower(b) + Histogram::bucket_width(b)),
                            static_cast<int64_t>(h.bucket_count(b))});
      }
      st.insert_many("histograms", {"variant_id", "metric", "bucket_low_ns", "bucket_high_ns", "count"}, rows);
    }
    t.commit();
    for (const auto& l : r.console_lines()) prog.line("  " + l);
  } catch (const std::exception& e) {
    out.failed = true;
    Store::Transaction t(st);
    st.update("variants", "variant_id", vid,
              {{"status", std::string("failed")}, {"error", std::string(e.what())}, {"finished_utc", utc_now_iso()}});
    t.commit();
    prog.line(str("  FAILED: ", e.what()));
  }
  return out;
}

// The decode speed-up of each speculative variant against its plain twin (the same matrix point
// with speculative "off", the same load step) in this run: filled once both rows are stored ok,
// whichever ran first. `final`: the suite is over, rows still without a speed-up get the reason.
void link_speculative_speedups(Store& st, int64_t run_id, const std::vector<Variant>& variants, bool final) {
  bool any = false;
  for (const Variant& v : variants) any |= v.speculative();
  if (!any) return;
  const QueryResult q = st.query(
      "SELECT variant_id, variant_index, step_index, status, tpot_mean_ms, tpot_p95_ms, spec_speedup "
      "FROM variants WHERE run_id = ?", {run_id});
  struct Row {
    int64_t id = 0;
    std::string status;
    std::optional<double> mean, p95, speedup;
  };
  std::map<std::pair<int64_t, int64_t>, Row> rows;  // (variant index, step) -> row
  auto num = [](const SqlValue& x) -> std::optional<double> {
    if (const double* d = std::get_if<double>(&x)) return *d;
    if (const int64_t* i = std::get_if<int64_t>(&x)) return static_cast<double>(*i);
    return std::nullopt;
  };
  for (const auto& r : q.rows) {
    Row x;
    x.id = std::get<int64_t>(r[q.col("variant_id")]);
    x.status = sql_to_string(r[q.col("status")]);
    x.mean = num(r[q.col("tpot_mean_ms")]);
    x.p95 = num(r[q.col("tpot_p95_ms")]);
    x.speedup = num(r[q.col("spec_speedup")]);
    rows[{std::get<int64_t>(r[q.col("variant_index")]), std::get<int64_t>(r[q.col("step_index")])}] = x;
  }
  Store::Transaction t(st);
  for (const auto& [key, x] : rows) {
    const Variant& v = variants.at(static_cast<size_t>(key.first));
    if (!v.speculative() || x.speedup || x.status != "ok") continue;
    std::string why;
    Fields f;
    const auto base = v.spec_baseline >= 0 ? rows.find({v.spec_baseline, key.second}) : rows.end();
    if (v.spec_baseline < 0) {
      why = "no variant of this build with speculative = \"off\" in the matrix";
    } else if (base == rows.end()) {
      if (!final) continue;  // not run yet
      why = str("variant ", v.spec_baseline + 1, " (speculative off) has no row at this load step");
    } else if (base->second.status != "ok") {
      if (!final && base->second.status == "running") continue;
      why = str("variant ", v.spec_baseline + 1, " (speculative off) is ", base->second.status);
    } else if (!x.mean || !base->second.mean || *x.mean <= 0) {
      why = "no TPOT (generations of one token)";
    } else {
      f.emplace_back("spec_baseline_variant_id", base->second.id);
      f.emplace_back("spec_speedup", *base->second.mean / *x.mean);
      if (x.p95 && base->second.p95 && *x.p95 > 0) f.emplace_back("spec_speedup_p95", *base->second.p95 / *x.p95);
      f.emplace_back("spec_speedup_reason", sql_null());
      st.update("variants", "variant_id", x.id, f);
      continue;
    }
    if (base != rows.end()) f.emplace_back("spec_baseline_variant_id", base->second.id);
    f.emplace_back("spec_speedup_reason", why);
    st.update("variants", "variant_id", x.id, f);
  }
  t.commit();
}

}  // namespace

void prevalidate_scenario(const Scenario& sc) { prepare(sc); }

SuiteResult run_suite(const Scenario& sc, const SuiteOptions& o) {
  Prepared p = prepare(sc);  // throws before anything is written
  Progress prog(o);
  Store st(o.db_path);
  const SystemInfo si = collect_system_info();
  std::string overrides;
  for (const auto& ov : sc.overrides) overrides += (overrides.empty() ? "" : " ") + ov;
  Fields run{{"status", std::string("running")},
             {"started_utc", utc_now_iso()},
             {"kind", std::string("scenario")},
             {"scenario_name", sc.name},
             {"scenario_path", sc.path},
             {"scenario_hash", sc.hash},
             {"scenario_toml", sc.canonical},
             {"question", sc.question},
             {"overrides", overrides.empty() ? sql_null() : SqlValue(overrides)},
             {"pattern", std::string(pattern_name(sc.pattern))},
             {"seed_arrivals", static_cast<int64_t>(sc.seed_arrivals)},
             {"seed_samples", static_cast<int64_t>(sc.seed_samples)},
             {"seed_lengths", static_cast<int64_t>(sc.seed_lengths)},
             {"model_spec", sc.model},
             // The SLOs and quality floors in force, typed: what the reports and the GUI read.
             {"slos_json", slos_to_json(sc.slos).dump()},
             {"floors_json", floors_to_json(sc.accuracy.floors()).dump()}};
  SystemInfo with_model = si;  // the machine's warnings and the model family's
  for (const auto& w : p.family->warnings()) with_model.warnings.push_back(w);
  for (auto& x : run_provenance_fields(with_model)) run.push_back(std::move(x));
  for (auto& x : placement_fields()) run.push_back(std::move(x));
  for (auto& x : p.family->model_provenance()) run.push_back(std::move(x));
  SuiteResult res;
  {
    Store::Transaction t(st);
    res.run_id = st.insert("runs", run);
    t.commit();
  }
  prog.line(str("cibench: run ", res.run_id, " of scenario '", sc.name, "' (", sc.variants().size(), " variant",
                sc.variants().size() == 1 ? "" : "s", ") into ", o.db_path));
  if (!sc.question.empty()) prog.line("  question: " + sc.question);
  for (const auto& sk : sc.skipped()) prog.line("  skipped (not run): " + sk);
  for (const auto& w : with_model.warnings) prog.line("  warning: " + w);
  try {
    const auto variants = sc.variants();
    for (const Variant& v : variants) {
      std::vector<double> rates = sc.pattern == Pattern::stepped ? sc.rates_qps : std::vector<double>{sc.target_qps};
      std::vector<int64_t> step_ids;
      std::vector<KneeStep> steps;  // stepped: the steps measured, in the order run
      for (size_t k = 0; k < rates.size(); ++k) {
        prog.line(str("variant ", v.index + 1, "/", variants.size(), ": ",
                      sc.is_test_sut() ? str(sc.model, " ", p.family->label(v)) : p.family->label(v),
                      sc.pattern == Pattern::stepped ? str(" @ ", rates[k], " qps") : std::string()));
        const StepOutcome so = run_step(st, res.run_id, sc, v, static_cast<int>(k), rates[k], p, o, prog);
        res.variant_ids.push_back(so.variant_id);
        step_ids.push_back(so.variant_id);
        if (so.failed) {
          res.failed_variants++;
          break;
        }
        if (sc.pattern == Pattern::stepped) {
          steps.push_back({rates[k], so.slo_met});
          if (!so.slo_met.value_or(false)) break;  // higher rates are not run
        }
      }
      if (sc.pattern == Pattern::stepped) {
        const Knee knee = find_knee(steps);
        prog.line("  knee (highest rate meeting the SLOs): " + knee.describe());
        Store::Transaction t(st);
        for (int64_t id : step_ids)
          st.update("variants", "variant_id", id,
                    {{"knee_qps", sql_opt(knee.qps)}, {"knee_reached", int64_t{knee.reached ? 1 : 0}}});
        t.commit();
      }
      link_speculative_speedups(st, res.run_id, variants, false);
    }
    link_speculative_speedups(st, res.run_id, variants, true);
    res.status = "complete";
    Store::Transaction t(st);
    st.update("runs", "run_id", res.run_id, {{"status", res.status}, {"finished_utc", utc_now_iso()}});
    t.commit();
  } catch (const std::exception& e) {
    res.status = "failed";
    Store::Transaction t(st);
    st.update("runs", "run_id", res.run_id,
              {{"status", res.status}, {"finished_utc", utc_now_iso()}, {"error", std::string(e.what())}});
    t.commit();
    throw;
  }
  prog.line(str("cibench: run ", res.run_id, " ", res.status, " (", res.failed_variants, " failed variant",
                res.failed_variants == 1 ? "" : "s", "); see: cibench show ", res.run_id));
  return res;
}

nlohmann::json variant_summary_json(Store& store, int64_t variant_id) {
  auto v = store.query("SELECT * FROM variants WHERE variant_id = ?", {variant_id}).to_json();
  if (v.empty()) throw StoreError(str("no variant ", variant_id));
  nlohmann::json out = v[0];
  // Numbered as cibench run, show, the reports and cibench-gui number them: from 1. The stored
  // 0-based columns variant_index and step_index are not repeated beside them.
  for (const auto& [stored, shown] : {std::pair{"variant_index", "variant"}, std::pair{"step_index", "step"}}) {
    auto it = out.find(stored);
    if (it == out.end()) continue;
    out[shown] = it->is_number_integer() ? nlohmann::json(it->get<int64_t>() + 1) : nlohmann::json(nullptr);
    out.erase(stored);
  }
  out["counters"] = store.query(
      "SELECT name, phase, scope, value, unit, source, unavailable_reason FROM counters "
      "WHERE variant_id = ? AND scope IN ('total','package') ORDER BY rowid", {variant_id}).to_json();
  return out;
}

}  // namespace cibench
