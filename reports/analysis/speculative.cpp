#include "reports/analysis/speculative.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include "engines/core/error.h"
#include "reports/analysis/labels.h"
#include "reports/format.h"

namespace cibench::reports {
// ---- speculative decoding ----------------------------------------------------------------------

std::string SpecPoint::k_text() const { return k ? "k=" + std::to_string(*k) : std::string("k=?"); }

std::string SpecPoint::summary() const {
  std::string s = k_text() + ": acceptance " + fmt_opt(acceptance, 3) + ", mean accepted length " +
                  fmt_opt(mean_accepted_length, 3) + ", speed-up " + (speedup ? fmt_num(*speedup, 3) + "x" : "n/a");
  if (speedup_p95) s += " (p95 " + fmt_num(*speedup_p95, 3) + "x)";
  return s + ", TPOT p95 " + (tpot_p95_ms ? fmt_num(*tpot_p95_ms) + " ms" : "n/a");
}

const SpecPoint* SpecSeries::best() const {
  const SpecPoint* b = nullptr;
  for (const SpecPoint& p : points)
    if (p.tpot_p95_ms && (!b || *p.tpot_p95_ms < *b->tpot_p95_ms)) b = &p;
  return b;
}

std::vector<std::pair<size_t, size_t>> Speculative::speedup_labels(size_t max_series, double wx, double wy) const {
  std::vector<std::tuple<int, size_t, size_t>> order;  // (0: an end of its line, series, point)
  for (size_t i = 0; i < series.size() && i < max_series; ++i) {
    std::vector<size_t> drawn;
    for (size_t k = 0; k < series[i].points.size(); ++k)
      if (series[i].points[k].speedup && series[i].points[k].acceptance) drawn.push_back(k);
    for (size_t j = 0; j < drawn.size(); ++j) order.emplace_back(j == 0 || j + 1 == drawn.size() ? 0 : 1, i, drawn[j]);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<std::pair<double, double>> placed;
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& [rank, i, k] : order) {
    const SpecPoint& p = series[i].points[k];
    const double x = *p.acceptance, y = *p.speedup;
    if (std::any_of(placed.begin(), placed.end(),
                    [&](const auto& o) { return std::fabs(o.first - x) < wx && std::fabs(o.second - y) < wy; }))
      continue;
    placed.emplace_back(x, y);
    out.emplace_back(i, k);
  }
  return out;
}

const SpecBaseline* Speculative::baseline_of(const SpecSeries& s) const {
  // The row the run named (spec_baseline_variant_id), else the off row of the same build.
  for (const SpecPoint& p : s.points)
    if (const auto id = p.v.get("spec_baseline_variant_id"))
      for (const SpecBaseline& b : baselines)
        if (b.v.variant_id == static_cast<int64_t>(*id)) return &b;
  for (const SpecBaseline& b : baselines)
    if (b.v.run_id == s.run_id && b.build == s.build) return &b;
  return nullptr;
}

std::vector<std::string> Speculative::notes() const {
  std::vector<std::string> out;
  if (empty()) return out;
  for (const SpecBest& b : best) {
    std::string where;
    if (runs.size() > 1) where += "run " + std::to_string(b.run_id);
    if (several_builds) where += (where.empty() ? "" : ", ") + b.build;
    out.push_back((where.empty() ? "" : where + ": ") + b.text + ".");
  }
  for (const SpecSeries& s : series)
    if (!baseline_of(s)) out.push_back(s.name + ": no off variant of this build in the run (no baseline line).");
  for (const std::string& u : unplotted) out.push_back(u + ".");
  return out;
}

namespace {

std::vector<std::optional<double>> acceptance_by_position(const Variant& v) {
  const std::string text = v.text_of("spec_acceptance_by_position");
  std::vector<std::optional<double>> out;
  if (text.empty()) return out;
  const auto bad = [&](const std::string& what) {
    return DbError(str("variant ", v.variant_id, " (run ", v.run_id, ", ", v.label,
                       "): spec_acceptance_by_position is not a JSON array of rates and nulls (", what, "): ", text));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw bad(e.what());
  }
  if (!j.is_array()) throw bad("not an array");
  for (const auto& x : j) {
    if (x.is_null()) out.emplace_back();
    else if (x.is_number()) out.emplace_back(x.get<double>());
    else throw bad("an entry is neither a number nor null");
  }
  return out;
}

}  // namespace

Speculative speculative(Db& db, const std::vector<int64_t>& run_ids) {
  Speculative sp;
  sp.runs = run_ids;
  const std::vector<Variant> all = db.variants(run_ids);
  const auto drafter_of = [](const Variant& v) { return v.text_of("speculative"); };
  if (std::none_of(all.begin(), all.end(), [&](const Variant& v) { return !drafter_of(v).empty() && drafter_of(v) != "off"; }))
    return sp;
  const auto build_of = [](const Variant& v) {
    return v.format.empty() ? compact_label(v.label) : name_without(v, {"speculative", "draft_tokens"});
  };
  // The off rows: the baselines.
  for (const Variant& v : all) {
    if (drafter_of(v) != "off") continue;
    if (v.status != "ok") {
      sp.unplotted.push_back(str(run_ids.size() > 1 ? str("run ", v.run_id, ": ") : std::string(), "off (", build_of(v),
                                 "): ", v.status, v.error.empty() ? std::string() : ": " + v.error));
      continue;
    }
    SpecBaseline b;
    b.v = v;
    b.build = build_of(v);
    b.ttft_p50_ms = v.get("ttft_p50_ms");
    b.tpot_p50_ms = v.get("tpot_p50_ms");
    b.tpot_p95_ms = v.get("tpot_p95_ms");
    b.tpot_mean_ms = v.get("tpot_mean_ms");
    sp.baselines.push_back(std::move(b));
  }
  // The speculative rows, one series per (run, build, drafter).
  std::vector<std::pair<const Variant*, std::string>> failed;
  for (const Variant& v : all) {
    const std::string d = drafter_of(v);
    if (d.empty() || d == "off") continue;
    if (v.status != "ok") {
      failed.push_back({&v, str(v.status, v.error.empty() ? std::string() : ": " + v.error)});
      continue;
    }
    SpecPoint p;
    p.v = v;
    p.drafter = d;
    if (const auto k = v.get("draft_tokens")) p.k = static_cast<int64_t>(*k);
    p.acceptance = v.get("spec_acceptance");
    p.mean_accepted_length = v.get("spec_mean_accepted_length");
    p.draft_share = v.get("spec_draft_share");
    p.verify_share = v.get("spec_verify_share");
    p.by_position = acceptance_by_position(v);
    p.reason = v.text_of("spec_reason");
    p.speedup = v.get("spec_speedup");
    p.speedup_p95 = v.get("spec_speedup_p95");
    p.speedup_reason = v.text_of("spec_speedup_reason");
    if (!p.speedup && p.speedup_reason.empty()) p.speedup_reason = "not stored (no reason recorded)";
    p.ttft_p50_ms = v.get("ttft_p50_ms");
    p.tpot_p50_ms = v.get("tpot_p50_ms");
    p.tpot_p95_ms = v.get("tpot_p95_ms");
    p.tpot_mean_ms = v.get("tpot_mean_ms");
    const std::string build = build_of(v);
    auto it = std::find_if(sp.series.begin(), sp.series.end(), [&](const SpecSeries& s) {
      return s.run_id == v.run_id && s.build == build && s.drafter == d;
    });
    if (it == sp.series.end()) {
      SpecSeries s;
      s.run_id = v.run_id;
      s.build = build;
      s.drafter = d;
      sp.series.push_back(std::move(s));
      it = std::prev(sp.series.end());
    }
    it->points.push_back(std::move(p));
  }
  if (sp.series.empty() && failed.empty()) return sp;
  // Series by run, build (as the variants were run), then drafter; points by k.
  std::map<std::pair<int64_t, std::string>, int64_t> build_order;
  for (const Variant& v : all) build_order.emplace(std::make_pair(v.run_id, build_of(v)), v.variant_index);
  std::stable_sort(sp.series.begin(), sp.series.end(), [&](const SpecSeries& a, const SpecSeries& b) {
    return std::make_tuple(a.run_id, build_order[{a.run_id, a.build}], a.drafter) <
           std::make_tuple(b.run_id, build_order[{b.run_id, b.build}], b.drafter);
  });
  for (SpecSeries& s : sp.series)
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const SpecPoint& a, const SpecPoint& b) { return a.k.value_or(0) < b.k.value_or(0); });
  std::set<std::string> builds;
  for (const SpecSeries& s : sp.series) builds.insert(s.build);
  for (const auto& [v, why] : failed) builds.insert(build_of(*v));
  sp.several_builds = builds.size() > 1;
  const auto name_of = [&](int64_t run, const std::string& build, const std::string& drafter) {
    return str(run_ids.size() > 1 ? str("run ", run, ": ") : std::string(), drafter_name(drafter),
               sp.several_builds ? " (" + build + ")" : std::string());
  };
  for (SpecSeries& s : sp.series) s.name = name_of(s.run_id, s.build, s.drafter);
  // What the speed-up chart leaves out, and the rows that failed.
  std::vector<std::string> unplotted;
  for (const SpecSeries& s : sp.series)
    for (const SpecPoint& p : s.points) {
      if (!p.speedup) unplotted.push_back(str(s.name, " ", p.k_text(), ": speed-up not measured: ", p.speedup_reason));
      if (!p.acceptance)
        unplotted.push_back(str(s.name, " ", p.k_text(), ": acceptance not measured: ",
                                p.reason.empty() ? std::string("no reason recorded") : p.reason));
    }
  for (const auto& [v, why] : failed) {
    const auto k = v->get("draft_tokens");
    unplotted.push_back(str(name_of(v->run_id, build_of(*v), drafter_of(*v)), " ",
                            k ? "k=" + std::to_string(static_cast<int64_t>(*k)) : std::string("k=?"), ": ", why));
  }
  unplotted.insert(unplotted.end(), sp.unplotted.begin(), sp.unplotted.end());  // failed off rows
  sp.unplotted = std::move(unplotted);
  // The lowest TPOT p95 of each run's build.
  for (size_t i = 0; i < sp.series.size(); ++i) {
    const SpecSeries& s = sp.series[i];
    const SpecPoint* b = s.best();
    if (!b) continue;
    const size_t pi = static_cast<size_t>(b - s.points.data());
    auto it = std::find_if(sp.best.begin(), sp.best.end(),
                           [&](const SpecBest& x) { return x.run_id == s.run_id && x.build == s.build; });
    if (it == sp.best.end()) {
      sp.best.push_back({s.run_id, s.build, i, pi, std::nullopt, ""});
    } else if (*b->tpot_p95_ms < *sp.at(*it).tpot_p95_ms) {
      it->series = i, it->point = pi;
    }
  }
  for (SpecBest& b : sp.best) {
    const SpecSeries& s = sp.series[b.series];
    const SpecPoint& p = sp.at(b);
    const SpecBaseline* base = sp.baseline_of(s);
    if (base) b.baseline = static_cast<size_t>(base - sp.baselines.data());
    b.text = str("lowest TPOT p95: ", drafter_name(s.drafter), " ", p.k_text(), ", ", fmt_num(*p.tpot_p95_ms), " ms");
    if (base && base->tpot_p95_ms) {
      const double ratio = p.speedup_p95 ? *p.speedup_p95 : *base->tpot_p95_ms / *p.tpot_p95_ms;
      b.text += str(" (speed-up ", fmt_num(ratio, 3), "x at p95 over the off variant's ", fmt_num(*base->tpot_p95_ms), " ms");
      if (*base->tpot_p95_ms < *p.tpot_p95_ms) b.text += ": no drafter beats speculation off here";
      b.text += ")";
    } else {
      b.text += " (no off variant's TPOT p95 to compare with)";
    }
  }
  return sp;
}

}  // namespace cibench::reports
