#include "harness/lib/variant_result.h"

#include <iomanip>
#include <sstream>

#include "engines/core/error.h"
#include "harness/lib/sysinfo.h"

namespace cibench {

MetricSummary MetricSummary::of(const Distribution& d) {
  MetricSummary s;
  if (d.count == 0) return s;
  auto ms = [](int64_t ns) { return static_cast<double>(ns) * 1e-6; };
  s.mean_ms = d.mean_ns * 1e-6;
  s.p50_ms = ms(d.p50_ns);
  s.p90_ms = ms(d.p90_ns);
  s.p95_ms = ms(d.p95_ns);
  s.p99_ms = ms(d.p99_ns);
  s.p999_ms = ms(d.p999_ns);
  s.max_ms = ms(d.max_ns);
  return s;
}

std::optional<double> VariantResult::achieved_qps() const {
  if (duration_s <= 0) return std::nullopt;
  return static_cast<double>(queries) / duration_s;
}

std::optional<double> VariantResult::tokens_per_s() const {
  if (duration_s <= 0 || output_tokens <= 0) return std::nullopt;
  return static_cast<double>(output_tokens) / duration_s;
}

Fields accuracy_fields(const ClassifierAccuracy& c) {
  Fields f{{"acc_kind", c.kind}, {"acc_eval_set", c.eval_set}, {"acc_tokens", c.examples}, {"top1_agreement", c.agreement}};
  if (c.stats) {
    const ClassifierStats& cs = *c.stats;
    f.emplace_back("task_accuracy", cs.accuracy);
    f.emplace_back("task_accuracy_lo", cs.accuracy_ci.lo);
    f.emplace_back("task_accuracy_hi", cs.accuracy_ci.hi);
    f.emplace_back("macro_f1", cs.macro_f1);
    f.emplace_back("ref_task_accuracy", sql_opt(cs.reference_accuracy));
    f.emplace_back("accuracy_delta", sql_opt(cs.accuracy_delta));
    f.emplace_back("accuracy_delta_lo", cs.delta_ci ? SqlValue(cs.delta_ci->lo) : sql_null());
    f.emplace_back("accuracy_delta_hi", cs.delta_ci ? SqlValue(cs.delta_ci->hi) : sql_null());
    f.emplace_back("bootstrap_resamples", int64_t{cs.resamples});
  }
  f.emplace_back("quality_verdict", c.verdict);
  f.emplace_back("quality_reasons", c.reasons);
  return f;
}

Fields accuracy_fields(const AccuracyResult& a) {
  Fields f{{"acc_kind", a.kind},
          {"acc_eval_set", a.eval_set},
          {"acc_tokens", a.tokens},
          {"kl_mean", sql_opt(a.kl_mean)},
          {"kl_p99", sql_opt(a.kl_p99)},
          {"top1_agreement", sql_opt(a.top1_agreement)},
          {"ppl", sql_opt(a.ppl)},
          {"ppl_ref", sql_opt(a.ppl_ref)},
          {"ppl_ratio", sql_opt(a.ppl_ratio)},
          {"quality_verdict", a.verdict},
          {"quality_reasons", a.reasons}};
  if (const auto& t = a.task) {
    f.insert(f.end(), {{"task_file", t->file},
                       {"task_format", t->format},
                       {"task_metric", t->metric},
                       {"task_items", t->items},
                       {"task_accuracy", t->accuracy},
                       {"task_accuracy_lo", t->accuracy_ci.lo},
                       {"task_accuracy_hi", t->accuracy_ci.hi},
                       {"ref_task_accuracy", sql_opt(t->reference_accuracy)},
                       {"accuracy_delta", sql_opt(t->delta)},
                       {"accuracy_delta_lo", t->delta_ci ? SqlValue(t->delta_ci->lo) : sql_null()},
                       {"accuracy_delta_hi", t->delta_ci ? SqlValue(t->delta_ci->hi) : sql_null()},
                       {"task_mcnemar_p", sql_opt(t->mcnemar_p)},
                       {"bootstrap_resamples", int64_t{t->resamples}},
                       {"task_items_per_s", t->items_per_s}});
  }
  return f;
}

Fields VariantResult::fields() const {
  std::string reasons;
  for (const auto& w : invalid_reasons) reasons += (reasons.empty() ? "" : "; ") + w;
  Fields f{{"status", std::string("ok")},
           {"finished_utc", utc_now_iso()},
           {"isa_used", sql_opt(isa_used)},
           {"pinning", pinning},
           {"queries", queries},
           {"failed_queries", failed_queries},
           {"duration_s", duration_s},
           {"achieved_qps", sql_opt(achieved_qps())},
           {"prompt_tokens", sql_opt(prompt_tokens)},
           {"output_tokens", output_tokens},
           {"tokens_per_s", sql_opt(tokens_per_s())},
           {"percentile_estimator", percentile_estimator},
           {"peak_rss_bytes", sql_opt(peak_rss_bytes)},
           {"peak_rss_load_bytes", sql_opt(peak_rss_load_bytes)},
           {"peak_rss_reason", peak_rss_reason.empty() ? sql_null() : SqlValue(peak_rss_reason)},
           {"weight_bytes", sql_opt(weight_bytes)},
           {"repacked_weight_bytes", sql_opt(repacked_weight_bytes)},
           {"kv_cache_bytes", sql_opt(kv_cache_bytes)},
           {"weight_conversion_rel_rms", sql_opt(weight_conversion_rel_rms)},
           {"weight_conversion", sql_opt(weight_conversion)},
           {"weight_conversion_reason", weight_conversion_rel_rms ? sql_null() : SqlValue(weight_conversion_reason)},
           {"valid", int64_t{valid()}},
           {"validity_reasons", valid() ? std::string("min_duration and min_queries met") : reasons},
           {"slo_met", slo_met ? SqlValue(int64_t{*slo_met ? 1 : 0}) : sql_null()},
           {"slo_report", slo_report},
           {"counters_queries", sql_opt(counters_queries)}};
  for (Metric m : kAllMetrics) {
    const MetricSummary& s = metric(m);
    const std::string n = metric_name(m);
    f.emplace_back(n + "_mean_ms", sql_opt(s.mean_ms));
    f.emplace_back(n + "_p50_ms", sql_opt(s.p50_ms));
    f.emplace_back(n + "_p90_ms", sql_opt(s.p90_ms));
    f.emplace_back(n + "_p95_ms", sql_opt(s.p95_ms));
    f.emplace_back(n + "_p99_ms", sql_opt(s.p99_ms));
    f.emplace_back(n + "_p999_ms", sql_opt(s.p999_ms));
    f.emplace_back(n + "_max_ms", sql_opt(s.max_ms));
  }
  auto reason = [](const std::string& r) { return r.empty() ? sql_null() : SqlValue(r); };
  f.emplace_back("itl_count", itl_count > 0 ? SqlValue(itl_count) : sql_null());
  f.emplace_back("itl_reason", reason(itl_reason));
  f.emplace_back("goodput_qps", sql_opt(goodput_qps));
  f.emplace_back("slo_attainment", sql_opt(slo_attainment));
  f.emplace_back("goodput_reason", reason(goodput_reason));
  f.emplace_back("inflight_mean", sql_opt(inflight_mean));
  f.emplace_back("inflight_max", sql_opt(inflight_max));
  f.emplace_back("queue_depth_mean", sql_opt(queue_depth_mean));
  f.emplace_back("queue_depth_max", sql_opt(queue_depth_max));
  f.emplace_back("concurrency_reason", reason(concurrency_reason));
  f.emplace_back("arrival_process", reason(arrival_process));
  f.emplace_back("batches", batches);
  f.emplace_back("duplicate_rate", sql_opt(duplicate_rate));
  if (traffic) {
    f.emplace_back("traffic", *traffic);
    f.emplace_back("expected_duplicate_rate", sql_opt(expected_duplicate_rate));
  }
  for (const auto& x : family_fields) f.push_back(x);
  if (const ClassifierAccuracy* c = quality.classifier) {
    for (auto& x : accuracy_fields(*c)) f.push_back(std::move(x));
  } else if (const auto& a = quality.lm) {
    for (auto& x : accuracy_fields(*a)) f.push_back(std::move(x));
  } else {
    f.emplace_back("acc_unavailable_reason", quality.unavailable);
  }
  return f;
}

namespace {
std::string ms(const std::optional<double>& v) {
  if (!v) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(*v < 10 ? 2 : 1) << *v;
  return os.str();
}
}  // namespace

std::vector<std::string> VariantResult::console_lines() const {
  std::vector<std::string> out;
  std::string reasons;
  for (const auto& w : invalid_reasons) reasons += (reasons.empty() ? "" : "; ") + w;
  const MetricSummary& lat = metric(Metric::latency);
  std::ostringstream dur;
  dur << std::fixed << std::setprecision(2) << duration_s;
  out.push_back(str(queries, " queries in ", dur.str(), " s; latency p50 ", ms(lat.p50_ms), " p95 ", ms(lat.p95_ms),
                    " p99 ", ms(lat.p99_ms), " ms; ttft p95 ", ms(metric(Metric::ttft).p95_ms), " ms; tpot p95 ",
                    ms(metric(Metric::tpot).p95_ms), " ms; ",
                    tokens_per_s() ? str(*tokens_per_s(), " tok/s; ") : std::string(),
                    valid() ? std::string("valid") : "INVALID: " + reasons));
  out.push_back("SLO: " + slo_report);
  if (itl_count > 0 || goodput_qps || inflight_mean) {
    const MetricSummary& itl = metric(Metric::itl);
    const std::string itl_part =
        itl_count > 0 ? str("itl p50 ", ms(itl.p50_ms), " p99 ", ms(itl.p99_ms), " ms (n=", itl_count, "); ") : "";
    auto num = [](const std::optional<double>& v, int prec) {
      if (!v) return std::string("-");
      std::ostringstream os;
      os << std::fixed << std::setprecision(prec) << *v;
      return os.str();
    };
    out.push_back(str("serving: ", itl_part, "goodput ",
                      goodput_qps ? num(goodput_qps, 3) + " req/s, SLO attainment " + num(slo_attainment, 3)
                                  : "- (" + goodput_reason + ")",
                      "; in flight mean ", num(inflight_mean, 2), " max ",
                      inflight_max ? std::to_string(*inflight_max) : std::string("-"), "; queued mean ",
                      num(queue_depth_mean, 2), " max ", queue_depth_max ? std::to_string(*queue_depth_max) : std::string("-")));
  }
  {
    auto mib = [](const std::optional<int64_t>& b) {
      if (!b) return std::string("-");
      std::ostringstream os;
      os << std::fixed << std::setprecision(1) << static_cast<double>(*b) / (1 << 20);
      return os.str();
    };
    out.push_back(str("memory: resident peak ", mib(peak_rss_bytes), " MiB serving, ", mib(peak_rss_load_bytes),
                      " MiB with the build", peak_rss_reason.empty() ? "" : " (" + peak_rss_reason + ")", "; weights ",
                      mib(weight_bytes), " MiB",
                      repacked_weight_bytes && *repacked_weight_bytes > 0
                          ? str(" (+ ", mib(repacked_weight_bytes), " MiB laid out again for the kernels)")
                          : std::string(),
                      ", KV cache ", mib(kv_cache_bytes), " MiB"));
  }
  for (const auto& l : family_lines) out.push_back(l);
  if (const ClassifierAccuracy* c = quality.classifier)
    out.push_back(str("accuracy (", c->kind, "): agreement ", c->agreement,
                      c->stats ? str(", accuracy ", c->stats->accuracy, " [", c->stats->accuracy_ci.lo, ", ",
                                     c->stats->accuracy_ci.hi, "], delta ", *c->stats->accuracy_delta, " [",
                                     c->stats->delta_ci->lo, ", ", c->stats->delta_ci->hi, "], macro F1 ",
                                     c->stats->macro_f1)
                               : std::string(),
                      " -> ", c->verdict));
  if (const auto& a = quality.lm) {
    std::string task;
    if (const auto& t = a->task)
      task = str("; task ", t->metric, " ", t->accuracy, " [", t->accuracy_ci.lo, ", ", t->accuracy_ci.hi, "]",
                 t->delta ? str(", delta ", *t->delta, " [", t->delta_ci->lo, ", ", t->delta_ci->hi, "], McNemar p ",
                                *t->mcnemar_p)
                          : std::string(" (the reference)"),
                 ", ", t->items, " items at ", t->items_per_s, " items/s");
    out.push_back(str("accuracy (", a->kind, "): KL mean ", *a->kl_mean, ", top-1 ", *a->top1_agreement,
                      a->ppl_ratio ? str(", ppl ratio ", *a->ppl_ratio) : "", task, " -> ", a->verdict));
  }
  return out;
}

}  // namespace cibench
