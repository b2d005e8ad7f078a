#include "reports/analysis/counters.h"

#include <algorithm>
#include <set>
#include "engines/core/error.h"

namespace cibench::reports {
// ---- counters --------------------------------------------------------------------------------

const std::vector<std::string>& software_counter_names() {
  static const std::vector<std::string> n{"task_clock_ms", "context_switches", "page_faults", "cpu_migrations"};
  return n;
}

const std::vector<std::string>& counter_names() {
  static const std::vector<std::string> n{"ipc",         "l1d_mpki", "l2_mpki",
                                          "l3_mpki",     "branch_mpki", "energy_j",
                                          "energy_per_request_j"};
  return n;
}

std::string counter_title(const std::string& name) {
  if (name == "ipc") return "IPC";
  if (name == "l1d_mpki") return "L1D misses / 1000 instr";
  if (name == "l2_mpki") return "L2 misses / 1000 instr";
  if (name == "l3_mpki") return "L3 misses / 1000 instr";
  if (name == "branch_mpki") return "branch misses / 1000 instr";
  if (name == "energy_j") return "energy (J)";
  if (name == "energy_per_request_j") return "energy per request (J)";
  if (name == "task_clock_ms") return "task clock (ms)";
  if (name == "context_switches") return "context switches";
  if (name == "page_faults") return "page faults";
  if (name == "cpu_migrations") return "CPU migrations";
  return name;
}

namespace {

// "1-3, 5, 7-8" for sorted distinct numbers.
std::string ranges_text(const std::vector<int64_t>& n) {
  std::string out;
  for (size_t i = 0; i < n.size();) {
    size_t j = i;
    while (j + 1 < n.size() && n[j + 1] == n[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(n[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(n[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string variant_set_text(const std::vector<Variant>& subset, const std::vector<Variant>& all) {
  // Per run: the run's variants (1 + the highest index) and each variant's steps, from `all`
  // (and `subset`, should it hold rows `all` lacks).
  std::map<int64_t, int64_t> total;
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> steps, chosen;
  for (const auto* list : {&all, &subset})
    for (const Variant& v : *list) {
      total[v.run_id] = std::max(total[v.run_id], v.variant_index + 1);
      steps[{v.run_id, v.variant_index}].insert(v.step_index);
    }
  for (const Variant& v : subset) chosen[{v.run_id, v.variant_index}].insert(v.step_index);
  std::vector<std::string> parts;
  bool every_run_all = true;
  int64_t all_count = 0;
  for (const auto& [run, n] : total) {
    std::vector<int64_t> whole;
    std::vector<std::string> partial;
    for (int64_t i = 0; i < n; ++i) {
      auto c = chosen.find({run, i});
      if (c == chosen.end()) continue;
      const std::set<int64_t>& of = steps.at({run, i});
      if (c->second.size() == of.size()) {
        whole.push_back(i + 1);
        continue;
      }
      std::vector<int64_t> st;
      for (int64_t k : c->second) st.push_back(k + 1);
      partial.push_back(str("variant ", i + 1, " (step", st.size() == 1 ? " " : "s ", ranges_text(st), " of ",
                            *of.rbegin() + 1, ")"));
    }
    if (whole.empty() && partial.empty()) continue;
    // Every variant of the run stored (a missing index has no row: it is not "all").
    int64_t stored = 0;
    for (int64_t i = 0; i < n; ++i) stored += steps.count({run, i});
    const bool all_of_run = partial.empty() && static_cast<int64_t>(whole.size()) == n && stored == n;
    every_run_all &= all_of_run;
    all_count += n;
    std::string t;
    if (all_of_run) {
      t = n == 1 ? std::string("the only variant") : str("all ", n, " variants");
    } else {
      if (!whole.empty()) t = str(whole.size() == 1 ? "variant " : "variants ", ranges_text(whole));
      for (const auto& p : partial) t += (t.empty() ? "" : ", ") + p;
      t += str(" of ", n);
    }
    parts.push_back(total.size() > 1 ? str("run ", run, ": ", t) : t);
  }
  if (parts.empty()) return "no variant";
  // Every variant of every run (of those with one here): one phrase.
  size_t runs_here = parts.size();
  if (every_run_all && runs_here > 1 && runs_here == total.size())
    return str("all ", all_count, " variants of ", runs_here, " runs");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string CounterGap::text() const {
  std::string out;
  for (const Group& g : groups) {
    std::string names;
    for (const auto& c : g.counters) names += (names.empty() ? "" : ", ") + c;
    out += (out.empty() ? "" : "; ") + names + " (" + g.variants + ")";
  }
  return out + ": " + reason;
}

std::vector<CounterGap> counter_gaps(const std::vector<CounterSummary>& rows, const std::vector<Variant>& all) {
  std::vector<std::string> names = counter_names();
  names.insert(names.end(), software_counter_names().begin(), software_counter_names().end());
  // reason -> counter -> the rows lacking it for that reason (variant ids, in row order)
  std::vector<std::string> reasons;
  std::map<std::string, std::vector<std::pair<std::string, std::vector<int64_t>>>> lacking;
  std::map<int64_t, const Variant*> by_id;
  for (const auto& cs : rows) by_id[cs.v.variant_id] = &cs.v;
  for (const auto& n : names)
    for (const auto& cs : rows) {
      auto it = cs.values.find(n);
      if (it == cs.values.end() || it->second.value) continue;
      const std::string& why = it->second.reason;
      auto [at, fresh] = lacking.try_emplace(why);
      if (fresh) reasons.push_back(why);
      if (at->second.empty() || at->second.back().first != n) at->second.emplace_back(n, std::vector<int64_t>{});
      at->second.back().second.push_back(cs.v.variant_id);
    }
  std::vector<CounterGap> out;
  for (const auto& why : reasons) {
    CounterGap g;
    g.reason = why;
    std::vector<std::vector<int64_t>> sets;  // one per group, in the order first met
    for (const auto& [counter, ids] : lacking.at(why)) {
      auto at = std::find(sets.begin(), sets.end(), ids);
      if (at == sets.end()) {
        sets.push_back(ids);
        std::vector<Variant> vs;
        for (int64_t id : ids) vs.push_back(*by_id.at(id));
        g.groups.push_back({{}, variant_set_text(vs, all)});
        at = sets.end() - 1;
      }
      g.groups[static_cast<size_t>(at - sets.begin())].counters.push_back(counter_title(counter));
    }
    out.push_back(std::move(g));
  }
  return out;
}
std::vector<CounterSummary> counters(Db& db, const std::vector<int64_t>& run_ids) {
  std::vector<CounterSummary> out;
  if (run_ids.empty()) return out;
  std::map<int64_t, std::map<std::string, CounterValue>> by_variant;
  for (const CounterRow& row : db.counter_rows(run_ids)) {
    CounterValue cv;
    cv.value = row.value;
    cv.unit = row.unit;
    cv.source = row.source;
    cv.reason = row.reason;
    if (!cv.value && cv.reason.empty()) cv.reason = "not measured";
    by_variant[row.variant_id][row.name] = cv;
  }
  for (const Variant& v : db.variants(run_ids)) {
    auto it = by_variant.find(v.variant_id);
    if (it == by_variant.end() && v.status != "ok") continue;
    CounterSummary s;
    s.v = v;
    s.mode = v.text_of("counters_mode");
    std::vector<std::string> names = counter_names();
    names.insert(names.end(), software_counter_names().begin(), software_counter_names().end());
    for (const std::string& name : names) {
      if (name == "energy_per_request_j") continue;
      CounterValue cv;
      if (it != by_variant.end() && it->second.count(name)) cv = it->second.at(name);
      else cv.reason = "not recorded for this variant (counters off or not run)";
      s.values[name] = cv;
    }
    // Energy per request: the counted pass's energy over the queries it ran.
    CounterValue per;
    per.unit = "J";
    per.source = "derived";
    const CounterValue& e = s.values["energy_j"];
    const auto n = s.mode == "separate" ? v.get("counters_queries") : v.get("queries");
    if (!e.value) per.reason = "needs energy: " + e.reason;
    else if (!n || *n <= 0) per.reason = "the number of counted queries was not recorded";
    else per.value = *e.value / *n;
    s.values["energy_per_request_j"] = per;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cibench::reports
