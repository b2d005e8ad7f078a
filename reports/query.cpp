#include "reports/query.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <iterator>
#include <tuple>
#include <variant>

#include "engines/core/splitmix.h"
#include "harness/schema/run_ref.h"
#include "harness/schema/sql_value.h"
#include "harness/schema/sqlite_error.h"
#include "harness/schema/stats.h"

namespace cibench::reports {
namespace {


std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_ci(const std::string& hay, const std::string& needle) {
  return needle.empty() || lower(hay).find(lower(needle)) != std::string::npos;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string as_text(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt_num(*d, 6);
  return std::get<std::string>(v);
}

std::optional<double> as_num(const SqlValue& v) { return sql_number(v); }

int64_t as_int(const SqlValue& v, int64_t dflt = 0) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  return dflt;
}

std::string in_list(size_t n) {
  std::string s = "(";
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s + ")";
}

// The columns read by this file, per table (a database lacking one is too old for it).
const std::vector<std::pair<std::string, std::vector<std::string>>>& required_columns() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> r{
      {"runs", {"run_id", "status", "started_utc", "finished_utc", "error", "scenario_name",
                "scenario_toml", "question", "pattern", "model_spec", "hostname", "cpu_model",
                "isa_active", "cibench_commit"}},
      {"variants", {"variant_id", "run_id", "variant_index", "step_index", "label", "status", "error",
                    "format", "sparsity", "threads", "workers", "offered_qps", "achieved_qps",
                    "queries", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "counters_mode",
                    "counters_queries", "top1_agreement", "kl_mean", "ppl_ratio", "task_accuracy",
                    "knee_qps", "slo_met"}},
      {"counters", {"variant_id", "name", "phase", "scope", "value", "unit", "source",
                    "unavailable_reason"}},
      {"requests", {"variant_id", "ok", "latency_ms"}},
      {"histograms", {"variant_id", "metric", "bucket_low_ns", "bucket_high_ns", "count"}},
  };
  return r;
}

// Variant columns that describe the configuration (shown in hover text and tables).
const std::vector<std::string>& config_columns() {
  static const std::vector<std::string> c{
      "format", "sparsity", "threads", "workers", "kv_mode", "isa_requested", "isa_used", "pinning",
      "pattern", "offered_qps", "clients", "counters_mode", "shape", "pad_to", "max_batch", "max_wait_ms",
      "cache_enabled", "cache_limit_entries", "cache_limit_bytes", "cache_hits", "cache_misses",
      "cache_hit_rate", "cache_peak_bytes", "traffic", "duplicate_rate"};
  return c;
}

// Accuracy columns: measured once per variant, possibly on one step only.
bool is_accuracy_column(const std::string& c) {
  static const std::set<std::string> a{"acc_kind", "acc_eval_set", "acc_tokens", "kl_mean", "kl_p99",
                                       "top1_agreement", "ppl", "ppl_ref", "ppl_ratio", "task_accuracy",
                                       "quality_verdict", "quality_reasons", "acc_unavailable_reason",
                                       "macro_f1", "ref_task_accuracy", "accuracy_delta", "accuracy_delta_lo",
                                       "accuracy_delta_hi", "bootstrap_resamples"};
  return a.count(c) > 0 || c.rfind("acc_", 0) == 0 || c.rfind("task_", 0) == 0;
}

}  // namespace

// ---- formatting ------------------------------------------------------------------------------

std::string fmt_num(double v, int significant) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[64];
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e7 || a < 1e-4)) std::snprintf(buf, sizeof buf, "%.*e", significant - 1, v);
  else if (a >= std::pow(10.0, significant)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

std::string compact_label(const std::string& label) {
  std::string s = label;
  for (const char* d : {" kv=preallocated", " isa=auto"}) {
    const size_t at = s.find(d);
    if (at != std::string::npos) s.erase(at, std::string(d).size());
  }
  return s;
}

std::string fmt_opt(const std::optional<double>& v, int significant) {
  return v ? fmt_num(*v, significant) : "n/a";
}

// ---- variants -------------------------------------------------------------------------------

std::optional<double> Variant::get(const std::string& column) const {
  auto it = num.find(column);
  if (it == num.end()) return std::nullopt;
  return it->second;
}

std::string Variant::text_of(const std::string& column) const {
  auto it = text.find(column);
  if (it != text.end()) return it->second;
  auto n = num.find(column);
  if (n != num.end()) return fmt_num(n->second, 6);
  return "";
}

std::string RunInfo::origin() const {
  if (kind == "scenario") return "scenario " + scenario_name;
  return command.empty() ? "cibench " + kind : command;
}

std::string Variant::short_name(bool with_rate) const {
  std::string s = format.empty() ? label : format;
  const std::string recipe = text_of("recipe");  // schema 2; "" when none
  if (!recipe.empty()) s += " " + recipe;
  if (sparsity && *sparsity > 0) s += " sp" + fmt_num(*sparsity, 3);
  if (threads) s += " t" + std::to_string(*threads);
  if (workers) s += " w" + std::to_string(*workers);
  const std::string kv = text_of("kv_mode");
  if (!kv.empty() && kv != "preallocated") s += " kv=" + kv;
  const std::string isa = text_of("isa_requested");
  if (!isa.empty() && isa != "auto") s += " isa=" + isa;
  // Classifier serving (schema 3): shape, batch and cache, so cache off/on are told apart.
  const std::string shape = text_of("shape");
  if (!shape.empty() && shape != "dynamic") s += " " + shape;
  if (auto b = get("max_batch"); b && *b > 1) s += " b" + fmt_num(*b, 3);
  if (auto c = get("cache_enabled"); c && *c > 0) s += " cache";
  // Decoder batching (schema 8): static and continuous batching of the same engine told apart.
  if (const std::string b = text_of("batching"); !b.empty() && b != "none") s += " batching=" + b;
  if (auto p = get("prefix_cache"); p && *p > 0) s += " prefix-cache";  // schema 9
  if (with_rate && (step_index > 0 || text_of("pattern") == "stepped")) {
    auto q = get("offered_qps");
    s += q ? " @" + fmt_num(*q, 3) + "qps" : " step" + std::to_string(step_index);
  }
  return s;
}

std::string Variant::config() const {
  std::ostringstream os;
  os << "run " << run_id << ", variant " << variant_index + 1;  // numbered from 1, as everywhere shown
  if (step_index > 0) os << ", step " << step_index + 1;
  os << "\nlabel: " << label << "\nstatus: " << status;
  if (!error.empty()) os << " (" << error << ")";
  for (const auto& c : config_columns()) {
    const std::string t = text_of(c);
    if (!t.empty()) os << "\n" << c << ": " << t;
  }
  return os.str();
}

// ---- axes and frontier ---------------------------------------------------------------------

std::string Axis::title() const { return unit.empty() ? label : label + " (" + unit + ")"; }

const std::vector<Axis>& x_axes() {
  static const double mib = 1.0 / (1024.0 * 1024.0);
  static const std::vector<Axis> a{
      {"latency_p50_ms", "latency p50", "ms", false, 1},
      {"latency_p90_ms", "latency p90", "ms", false, 1},
      {"latency_p95_ms", "latency p95", "ms", false, 1},
      {"latency_p99_ms", "latency p99", "ms", false, 1},
      {"latency_p999_ms", "latency p99.9", "ms", false, 1},
      {"ttft_p95_ms", "time to first token p95", "ms", false, 1},
      {"tpot_p95_ms", "time per output token p95", "ms", false, 1},
      {"achieved_qps", "throughput", "queries/s", true, 1},
      {"tokens_per_s", "throughput", "tokens/s", true, 1},
      {"decode_tokens_per_s", "decode rate (bench)", "tokens/s", true, 1},
      {"prefill_tokens_per_s", "prefill rate (bench)", "tokens/s", true, 1},
      {"peak_rss_bytes", "peak memory (RSS)", "MiB", false, mib},
      {"weight_bytes", "weight memory", "MiB", false, mib},
  };
  return a;
}

const std::vector<Axis>& y_axes() {
  static const std::vector<Axis> a{
      {"top1_agreement", "top-1 agreement with the reference", "", true, 1},
      {"task_accuracy", "task accuracy", "", true, 1},
      {"accuracy_delta", "task accuracy delta vs the reference", "", true, 1},
      {"kl_mean", "KL divergence, mean", "nats", false, 1},
      {"kl_p99", "KL divergence, p99", "nats", false, 1},
      {"ppl_ratio", "perplexity ratio to the reference", "", false, 1},
      {"ppl", "perplexity", "", false, 1},
      // Runs without accuracy: throughput against the SLO latency.
      {"tokens_per_s", "throughput", "tokens/s", true, 1},
      {"achieved_qps", "throughput", "queries/s", true, 1},
  };
  return a;
}

bool is_quality_axis(const std::string& key) {
  for (const Axis& a : y_axes())
    if (a.key == key) return a.key != "tokens_per_s" && a.key != "achieved_qps";
  return false;
}

Axis find_axis(const std::string& key) {
  for (const auto* list : {&x_axes(), &y_axes()})
    for (const Axis& a : *list)
      if (a.key == key) return a;
  // Any column an SLO can bound: "ttft_p99_ms", "queue_max_ms".
  for (const std::string& m : slo_metrics())
    if (key.rfind(m + "_", 0) == 0) {
      const std::string rest = key.substr(m.size() + 1);
      if (auto slo = parse_slo_key(rest); slo && slo->metric == "latency") {
        const std::string p = slo->percentile == 100 ? "max" : "p" + fmt_num(slo->percentile, 3);
        const std::string name = m == "latency" ? "latency" : m == "ttft" ? "time to first token"
                                 : m == "tpot" ? "time per output token" : m == "queue" ? "queue wait" : "service time";
        return Axis{key, name + " " + p, "ms", false, 1};
      }
    }
  throw DbError(str("unknown axis '", key, "' (expected one of the listed axes or a percentile column such as ttft_p99_ms)"));
}

std::vector<size_t> pareto_frontier(const std::vector<Point>& pts, bool x_higher_better,
                                    bool y_higher_better) {
  // Work in "smaller is better" on both axes.
  auto key = [&](size_t i) {
    return std::pair<double, double>{x_higher_better ? -pts[i].x : pts[i].x,
                                      y_higher_better ? -pts[i].y : pts[i].y};
  };
  std::vector<size_t> idx(pts.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  // Sweep by x (best first): a point is on the frontier when its y beats every y seen so far,
  // or ties the last frontier point exactly (duplicates).
  std::vector<size_t> out;
  double best_y = INFINITY;
  std::pair<double, double> last{NAN, NAN};
  for (size_t i : idx) {
    const auto k = key(i);
    if (k.second < best_y) {
      out.push_back(i);
      best_y = k.second;
      last = k;
    } else if (!out.empty() && k == last) {
      out.push_back(i);
    }
  }
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) {
    return pts[a].x != pts[b].x ? pts[a].x < pts[b].x : a < b;
  });
  return out;
}

bool meets_floor(const Axis& y, double value, double floor) {
  return y.higher_is_better ? value >= floor : value <= floor;
}

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

// ---- bootstrap -----------------------------------------------------------------------------

// ---- TOML scalars ----------------------------------------------------------------------------

std::map<std::string, std::string> scan_toml_scalars(const std::string& toml) {
  std::map<std::string, std::string> out;
  std::istringstream in(toml);
  std::string line, section;
  int depth = 0;  // open brackets of a multi-line array or inline table being skipped
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (depth > 0) {
      for (char c : t) depth += (c == '[' || c == '{') ? 1 : (c == ']' || c == '}') ? -1 : 0;
      continue;
    }
    if (t.empty() || t[0] == '#') continue;
    if (t[0] == '[') {
      if (t.size() > 1 && t[1] == '[') { section = ""; continue; }  // arrays of tables: not read
      const size_t e = t.find(']');
      section = trim(t.substr(1, e == std::string::npos ? std::string::npos : e - 1));
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(t.substr(0, eq));
    if (key.size() >= 2 && (key[0] == '"' || key[0] == '\'')) key = key.substr(1, key.size() - 2);
    std::string val = trim(t.substr(eq + 1));
    if (val.empty()) continue;
    if (val[0] == '[' || val[0] == '{') {
      for (char c : val) depth += (c == '[' || c == '{') ? 1 : (c == ']' || c == '}') ? -1 : 0;
      continue;
    }
    if (val[0] == '"' || val[0] == '\'') {
      const size_t close = val.find(val[0], 1);
      val = val.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    } else {
      const size_t hash = val.find('#');
      if (hash != std::string::npos) val = trim(val.substr(0, hash));
    }
    out[section.empty() ? key : section + "." + key] = val;
  }
  return out;
}

// ---- the database ----------------------------------------------------------------------------

struct Db::Rows {
  std::vector<std::string> cols;
  std::vector<std::vector<SqlValue>> rows;
  int col(const std::string& name) const {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return static_cast<int>(i);
    return -1;
  }
};

namespace {
struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() { sqlite3_finalize(st); }
};
}  // namespace

Db::Rows Db::select(const std::string& sql, const std::vector<std::string>& params) {
  Stmt s;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.st, nullptr);
  if (rc != SQLITE_OK) throw DbError(str(path_, ": ", sqlite_error_text(db_, path_), " (in: ", sql.substr(0, 60), ")"));
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& p = params[i];
    // Integers are bound as integers so that comparisons with INTEGER columns are exact.
    char* end = nullptr;
    const long long v = std::strtoll(p.c_str(), &end, 10);
    if (!p.empty() && *end == '\0' && p.find_first_not_of("-0123456789") == std::string::npos)
      sqlite3_bind_int64(s.st, static_cast<int>(i + 1), v);
    else
      sqlite3_bind_text(s.st, static_cast<int>(i + 1), p.data(), static_cast<int>(p.size()), SQLITE_TRANSIENT);
  }
  Rows r;
  const int nc = sqlite3_column_count(s.st);
  for (int i = 0; i < nc; ++i) r.cols.emplace_back(sqlite3_column_name(s.st, i));
  while ((rc = sqlite3_step(s.st)) == SQLITE_ROW) r.rows.push_back(sqlite_row(s.st));
  if (rc != SQLITE_DONE) throw DbError(str(path_, ": ", sqlite_error_text(db_, path_)));
  return r;
}

Db::Db(const std::string& path) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw DbError(str(path, ": no such results database (`cibench run SCENARIO` creates it)"));
  if (fs::is_directory(path, ec)) throw DbError(str(path, ": is a folder, not a results database"));
  const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(str(path, ": cannot open: ", msg));
  }
  sqlite3_busy_timeout(db_, 5000);
  // A WAL store where no -shm can be made (a folder we may not write, a full disk) whose last
  // writer checkpointed it (no -wal left) is read as it stands: immutable, without locks.
  if (sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if ((code == SQLITE_IOERR || code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_FULL) &&
        (!fs::exists(path + "-wal", ec) || fs::file_size(path + "-wal", ec) == 0)) {
      sqlite3_close(db_);
      db_ = nullptr;
      if (sqlite3_open_v2(("file:" + path + "?immutable=1").c_str(), &db_,
                          SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
        const std::string msg = db_ ? sqlite_error_text(db_, path) : "cannot open";
        sqlite3_close(db_);
        db_ = nullptr;
        throw DbError(str(path, ": cannot open: ", msg));
      }
    }
  }
  try {
    std::set<std::string> tables;
    try {
      version_ = static_cast<int>(as_int(select("PRAGMA user_version").rows.at(0).at(0)));
      for (const auto& row : select("SELECT name FROM sqlite_master WHERE type='table'").rows)
        tables.insert(as_text(row[0]));
    } catch (const DbError&) {
      const int code = sqlite3_extended_errcode(db_) & 0xff;
      if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        throw DbError(str(path, ": not a readable SQLite database (", sqlite3_errmsg(db_),
                          "); is it a cibench results file?"));
      throw DbError(str(path, ": cannot read: ", sqlite_error_text(db_, path)));
    }
    if (tables.empty())
      throw DbError(str(path, ": the database is empty (no cibench tables); `cibench run SCENARIO --db ",
                        path, "` writes one"));
    if (!tables.count("runs") || !tables.count("variants"))
      throw DbError(str(path, ": not a cibench results database (no 'runs' and 'variants' tables)"));
    if (version_ < kReadsSchemaVersion)
      throw DbError(str(path, ": database schema version ", version_,
                        " is older than this cibench reads (", kReadsSchemaVersion, ")"));
    for (const auto& [table, cols] : required_columns()) {
      if (!tables.count(table))
        throw DbError(str(path, ": database schema version ", version_, " is older than this cibench reads (",
                          kReadsSchemaVersion, "): no table '", table, "'"));
      std::set<std::string> have;
      for (const auto& row : select("PRAGMA table_info(" + table + ")").rows) have.insert(as_text(row[1]));
      for (const auto& c : cols)
        if (!have.count(c))
          throw DbError(str(path, ": database schema version ", version_, " is older than this cibench reads (",
                            kReadsSchemaVersion, "): table '", table, "' has no column '", c, "'"));
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Db::~Db() { sqlite3_close(db_); }

int64_t Db::data_version() { return as_int(select("PRAGMA data_version").rows.at(0).at(0)); }

namespace {
RunInfo run_from(const std::vector<std::string>& cols, const std::vector<SqlValue>& row) {
  RunInfo r;
  auto get = [&](const char* name) -> const SqlValue* {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return &row[i];
    return nullptr;
  };
  auto text = [&](const char* name) { const SqlValue* v = get(name); return v ? as_text(*v) : std::string(); };
  r.run_id = get("run_id") ? as_int(*get("run_id")) : 0;
  r.status = text("status");
  r.started_utc = text("started_utc");
  r.finished_utc = text("finished_utc");
  r.error = text("error");
  r.scenario_name = text("scenario_name");
  r.question = text("question");
  r.pattern = text("pattern");
  r.model_spec = text("model_spec");
  r.hostname = text("hostname");
  r.cpu_model = text("cpu_model");
  r.isa_active = text("isa_active");
  r.cibench_commit = text("cibench_commit");
  r.kind = text("kind");
  if (r.kind.empty()) r.kind = "scenario";
  r.command = text("command");
  r.variants = get("n_variants") ? as_int(*get("n_variants")) : 0;
  return r;
}
// The runs columns RunInfo reads; kind and command exist from schema 5 (earlier runs are all
// scenario runs).
std::string run_columns(int version) {
  return str("r.run_id, r.status, r.started_utc, r.finished_utc, r.error, r.scenario_name, r.question, "
             "r.pattern, r.model_spec, r.hostname, r.cpu_model, r.isa_active, r.cibench_commit, ",
             version >= 5 ? "r.kind, r.command, " : "'scenario' AS kind, NULL AS command, ",
             "(SELECT COUNT(*) FROM variants v WHERE v.run_id = r.run_id) AS n_variants");
}
}  // namespace

std::vector<RunInfo> Db::runs(const RunFilter& f) {
  Rows rs = select(str("SELECT ", run_columns(version_), " FROM runs r ORDER BY r.run_id DESC"));
  std::vector<RunInfo> out;
  for (const auto& row : rs.rows) {
    RunInfo r = run_from(rs.cols, row);
    const std::string day = r.started_utc.substr(0, 10);
    if (!contains_ci(r.scenario_name, f.scenario)) continue;
    if (!f.host.empty() && !contains_ci(r.hostname, f.host) && !contains_ci(r.cpu_model, f.host)) continue;
    if (!contains_ci(r.model_spec, f.model)) continue;
    if (!f.date_from.empty() && day < f.date_from.substr(0, 10)) continue;
    if (!f.date_to.empty() && day > f.date_to.substr(0, 10)) continue;
    out.push_back(std::move(r));
  }
  return out;
}

RunInfo Db::run(int64_t run_id) {
  Rows rs = select(str("SELECT ", run_columns(version_), " FROM runs r WHERE r.run_id = ?"), {std::to_string(run_id)});
  if (rs.rows.empty()) throw DbError(str(path_, ": no run ", run_id));
  return run_from(rs.cols, rs.rows[0]);
}

int64_t Db::resolve_run(const std::string& ref) {
  RunRef r;
  try {
    r = RunRef::parse(ref);
  } catch (const Error& e) {
    throw DbError(e.what());
  }
  if (r.by_id()) {
    run(r.id);  // throws when absent
    return r.id;
  }
  Rows rs = select("SELECT run_id FROM runs ORDER BY run_id DESC LIMIT 1 OFFSET ?", {std::to_string(r.back)});
  if (rs.rows.empty()) throw DbError(str(path_, ": no run '", ref, "'"));
  return as_int(rs.rows[0][0]);
}

std::vector<std::pair<std::string, std::string>> Db::provenance(int64_t run_id) {
  Rows rs = select("SELECT * FROM runs WHERE run_id = ?", {std::to_string(run_id)});
  if (rs.rows.empty()) throw DbError(str(path_, ": no run ", run_id));
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < rs.cols.size(); ++i) {
    if (rs.cols[i] == "scenario_toml") continue;  // long; shown separately
    const std::string v = as_text(rs.rows[0][i]);
    if (!v.empty()) out.emplace_back(rs.cols[i], v);
  }
  return out;
}

std::string Db::scenario_toml(int64_t run_id) {
  Rows rs = select("SELECT scenario_toml FROM runs WHERE run_id = ?", {std::to_string(run_id)});
  return rs.rows.empty() ? std::string() : as_text(rs.rows[0][0]);
}

std::optional<nlohmann::json> Db::run_json(int64_t run_id, const char* column) {
  Rows rs = select("SELECT * FROM runs WHERE run_id = ?", {std::to_string(run_id)});
  if (rs.rows.empty()) throw DbError(str("no run ", run_id, " in ", path_));
  for (size_t i = 0; i < rs.cols.size(); ++i)
    if (rs.cols[i] == column) {
      const auto* t = std::get_if<std::string>(&rs.rows[0][i]);
      if (!t) return std::nullopt;
      try {
        return nlohmann::json::parse(*t);
      } catch (const nlohmann::json::exception& e) {
        throw DbError(str(path_, ": run ", run_id, ": runs.", column, " is not JSON: ", e.what()));
      }
    }
  return std::nullopt;  // a store older than schema 4
}

namespace {
// Decodes a stored JSON column with the schema's decoder, naming the run on a bad value.
template <typename T>
T decode_stored(const std::string& path, int64_t run_id, const nlohmann::json& j,
                T (*decode)(const nlohmann::json&)) {
  try {
    return decode(j);
  } catch (const Error& e) {
    throw DbError(str(path, ": run ", run_id, ": ", e.what()));
  }
}

double leading_number(const std::string& text, bool* ok) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  *ok = end != text.c_str();
  return v;
}
}  // namespace

std::vector<Slo> Db::slos(int64_t run_id) {
  if (auto j = run_json(run_id, "slos_json")) return decode_stored(path_, run_id, *j, &slos_from_json);
  // Runs written before schema 4: the stored scenario's [slo] keys, same grammar as the parser.
  std::vector<Slo> out;
  for (const auto& [k, text] : scan_toml_scalars(scenario_toml(run_id))) {
    if (k.rfind("slo.", 0) != 0) continue;
    auto s = parse_slo_key(k.substr(4));
    bool ok = false;
    if (s) s->limit_ms = leading_number(text, &ok);
    if (ok) out.push_back(*s);
  }
  return out;
}

std::vector<QualityFloor> Db::floors(int64_t run_id) {
  if (auto j = run_json(run_id, "floors_json")) return decode_stored(path_, run_id, *j, &floors_from_json);
  // Runs written before schema 4: the stored scenario's [accuracy] floor keys.
  std::vector<QualityFloor> out;
  const auto scalars = scan_toml_scalars(scenario_toml(run_id));
  for (const FloorKind& k : quality_floor_kinds()) {
    auto it = scalars.find(std::string("accuracy.") + k.key);
    bool ok = false;
    const double v = it == scalars.end() ? 0 : leading_number(it->second, &ok);
    if (ok) out.push_back(QualityFloor::make(k.key, v));
  }
  return out;
}

std::optional<std::pair<std::string, double>> Db::scenario_floor(int64_t run_id, const std::string& y_key) {
  for (const QualityFloor& f : floors(run_id))
    if (f.column == y_key) return std::pair<std::string, double>{f.key, f.bound};
  return std::nullopt;
}

std::vector<Variant> Db::variants(const std::vector<int64_t>& run_ids) {
  std::vector<Variant> out;
  if (run_ids.empty()) return out;
  std::vector<std::string> params;
  for (int64_t id : run_ids) params.push_back(std::to_string(id));
  Rows rs = select("SELECT * FROM variants WHERE run_id IN " + in_list(run_ids.size()) +
                       " ORDER BY run_id, variant_index, step_index",
                   params);
  for (const auto& row : rs.rows) {
    Variant v;
    for (size_t i = 0; i < rs.cols.size(); ++i) {
      const std::string& c = rs.cols[i];
      const SqlValue& val = row[i];
      if (auto n = as_num(val)) v.num[c] = *n;
      else if (auto* s = std::get_if<std::string>(&val)) v.text[c] = *s;
    }
    v.variant_id = static_cast<int64_t>(v.get("variant_id").value_or(0));
    v.run_id = static_cast<int64_t>(v.get("run_id").value_or(0));
    v.variant_index = static_cast<int64_t>(v.get("variant_index").value_or(0));
    v.step_index = static_cast<int64_t>(v.get("step_index").value_or(0));
    v.label = v.text_of("label");
    v.status = v.text_of("status");
    v.error = v.text_of("error");
    v.format = v.text_of("format");
    v.sparsity = v.get("sparsity");
    if (auto t = v.get("threads")) v.threads = static_cast<int64_t>(*t);
    if (auto w = v.get("workers")) v.workers = static_cast<int64_t>(*w);
    out.push_back(std::move(v));
  }
  return out;
}

namespace {
// One representative row per (run, variant_index): the first step, with accuracy columns filled
// from any step of the same variant.
std::vector<Variant> representatives(const std::vector<Variant>& all) {
  std::vector<Variant> reps;
  std::map<std::pair<int64_t, int64_t>, size_t> at;
  for (const Variant& v : all) {
    auto key = std::make_pair(v.run_id, v.variant_index);
    auto it = at.find(key);
    if (it == at.end()) {
      at[key] = reps.size();
      reps.push_back(v);
      continue;
    }
    Variant& r = reps[it->second];
    for (const auto& [c, x] : v.num)
      if (is_accuracy_column(c) && !r.num.count(c)) r.num[c] = x;
    for (const auto& [c, x] : v.text)
      if (is_accuracy_column(c) && !r.text.count(c)) r.text[c] = x;
  }
  return reps;
}

std::optional<double> axis_value(const Axis& a, const Variant& v, const std::vector<Variant>& reps) {
  if (a.key == "accuracy_delta") {
    if (auto d = v.get("accuracy_delta")) return d;
    // Rows without the stored delta: against the run's f32 dense variant.
    auto acc = v.get("task_accuracy");
    if (!acc) return std::nullopt;
    for (const Variant& r : reps)  // the reference: the run's f32 dense variant with an accuracy
      if (r.run_id == v.run_id && r.format == "f32" && r.sparsity.value_or(0) == 0 && r.get("task_accuracy"))
        return *acc - *r.get("task_accuracy");
    return std::nullopt;
  }
  auto x = v.get(a.key);
  if (!x) return std::nullopt;
  return *x * a.scale;
}
}  // namespace

std::pair<std::string, std::string> Db::default_axes(const std::vector<int64_t>& run_ids) {
  const auto reps = representatives(variants(run_ids));
  auto any = [&](const Axis& a) {
    for (const Variant& v : reps)
      if (axis_value(a, v, reps)) return true;
    return false;
  };
  // x: the latency the scenario's SLOs bound (end-to-end first, the highest percentile).
  std::string x;
  std::optional<Slo> best;
  for (int64_t id : run_ids) {
    for (const Slo& s : slos(id)) {
      if (!any(find_axis(s.column()))) continue;
      const bool lat = s.metric == "latency", best_lat = best && best->metric == "latency";
      if (!best || (lat && !best_lat) || (lat == best_lat && s.percentile > best->percentile)) best = s;
    }
    if (best) break;
  }
  if (best) x = best->column();
  else if (any(find_axis("latency_p95_ms"))) x = "latency_p95_ms";
  else {
    x = "latency_p95_ms";
    for (const Axis& a : x_axes())
      if (any(a)) { x = a.key; break; }
  }
  // y: the column a run's quality floor bounds (what the user said matters), when the variants have
  // it; otherwise the first quality axis any variant has; without accuracy, throughput.
  for (int64_t id : run_ids)
    for (const QualityFloor& f : floors(id))
      for (const Axis& a : y_axes())
        if (a.key == f.column && any(a)) return {x, a.key};
  // A quality measure that is the same for every variant (a stepped run of one build) says nothing
  // the throughput would not: the throughput is plotted instead.
  auto varies = [&](const Axis& a) {
    std::set<double> seen;
    for (const Variant& v : reps)
      if (auto y = axis_value(a, v, reps)) seen.insert(*y);
    return seen.size() > 1;
  };
  bool has_throughput = false;
  for (const char* k : {"tokens_per_s", "achieved_qps"}) has_throughput = has_throughput || (k != x && any(find_axis(k)));
  for (const Axis& a : y_axes())
    if (is_quality_axis(a.key) && any(a) && (varies(a) || !has_throughput)) return {x, a.key};
  for (const char* k : {"tokens_per_s", "achieved_qps"})
    if (k != x && any(find_axis(k))) return {x, k};
  return {x, "top1_agreement"};
}

std::string FloorsVerdict::summary() const {
  auto join = [](const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!broken.empty()) return "below: " + join(broken);
  if (met && *met) return "meets floors";
  if (unmeasured.empty()) return "no floor";
  return "not measured: " + join(unmeasured);
}

namespace {
FloorsVerdict judge_floors_on(const std::vector<QualityFloor>& floors, const Variant& v, const std::vector<Variant>& reps) {
  FloorsVerdict fv;
  bool broken = false;
  for (const QualityFloor& f : floors) {
    std::optional<double> x;
    if (f.column == "accuracy_delta") x = axis_value(find_axis("accuracy_delta"), v, reps);
    else x = v.get(f.column);
    if (!x) {
      fv.unmeasured.push_back(f.key);
      continue;
    }
    if (!f.met_by(*x)) {
      broken = true;
      fv.broken.push_back(str(f.column, " ", fmt_num(*x), f.is_minimum ? " < " : " > ", fmt_num(f.bound), " (", f.key,
                              " = ", fmt_num(f.value), ")"));
    }
  }
  if (broken) fv.met = false;
  else if (!floors.empty() && fv.unmeasured.empty()) fv.met = true;
  return fv;
}
}  // namespace

FloorsVerdict Db::judge_floors(const Variant& v) {
  const auto reps = representatives(variants({v.run_id}));
  Variant r = v;
  for (const Variant& x : reps)  // accuracy columns from any step of the same variant
    if (x.variant_index == v.variant_index)
      for (const auto& [c, val] : x.num)
        if (is_accuracy_column(c) && !r.num.count(c)) r.num[c] = val;
  return judge_floors_on(floors(v.run_id), r, reps);
}

Tradeoff Db::tradeoff(const std::vector<int64_t>& run_ids, const std::string& x_key,
                      const std::string& y_key, std::optional<double> floor, bool use_scenario_floor) {
  Tradeoff t;
  t.x = find_axis(x_key);
  t.y = find_axis(y_key);
  if (floor) {
    t.floor = floor;
    t.floor_source = "set by the user";
  } else if (use_scenario_floor) {
    for (int64_t id : run_ids)
      if (auto f = scenario_floor(id, y_key)) {
        t.floor = f->second;
        t.floor_source = "scenario: " + f->first;
        break;
      }
  }
  const auto all = variants(run_ids);
  const auto reps = representatives(all);
  // Stepped runs: every step is a point of its own (each offered rate judged), with the variant's
  // accuracy columns.
  std::vector<Variant> pts_of;
  std::map<int64_t, std::vector<QualityFloor>> run_floors;
  std::set<int64_t> stepped;
  for (int64_t id : run_ids) {
    run_floors[id] = use_scenario_floor ? floors(id) : std::vector<QualityFloor>{};
    if (run(id).pattern == "stepped") stepped.insert(id);
  }
  for (const Variant& v : all) {
    if (!stepped.count(v.run_id)) continue;
    t.per_step = true;
    Variant x = v;
    for (const Variant& r : reps)
      if (r.run_id == v.run_id && r.variant_index == v.variant_index)
        for (const auto& [c, val] : r.num)
          if (is_accuracy_column(c) && !x.num.count(c)) x.num[c] = val;
    pts_of.push_back(std::move(x));
  }
  for (const Variant& v : reps)
    if (!stepped.count(v.run_id)) pts_of.push_back(v);
  std::vector<Point> pass_pts;
  std::vector<size_t> pass_idx;
  for (const Variant& v : pts_of) {
    const auto x = axis_value(t.x, v, reps);
    const auto y = axis_value(t.y, v, reps);
    if (v.status != "ok") {
      t.unplotted.emplace_back(v, v.status + (v.error.empty() ? "" : ": " + v.error));
      continue;
    }
    if (!x || !y) {
      std::string why = str("no ", !x ? t.x.label : t.y.label, " measured");
      const std::string acc_why = v.text_of("acc_unavailable_reason");
      if (x && !acc_why.empty()) why += " (" + acc_why + ")";
      t.unplotted.emplace_back(v, why);
      continue;
    }
    TradeoffPoint p;
    p.v = v;
    p.x = *x;
    p.y = *y;
    p.floors = judge_floors_on(run_floors[v.run_id], v, reps);
    p.meets_floor = (!t.floor || meets_floor(t.y, *y, *t.floor)) && !(p.floors.met && !*p.floors.met);
    if (p.meets_floor) {
      pass_pts.push_back({p.x, p.y});
      pass_idx.push_back(t.points.size());
    }
    t.points.push_back(std::move(p));
  }
  for (size_t i : pareto_frontier(pass_pts, t.x.higher_is_better, t.y.higher_is_better)) {
    t.frontier.push_back(pass_idx[i]);
    t.points[pass_idx[i]].on_frontier = true;
  }
  return t;
}

std::vector<double> Db::request_latencies(int64_t variant_id, const std::string& metric) {
  static const std::set<std::string> ok{"latency", "queue", "service", "ttft", "tpot"};
  if (!ok.count(metric)) throw DbError(str("unknown latency metric '", metric, "'"));
  const std::string c = metric + "_ms";
  Rows rs = select(str("SELECT ", c, " FROM requests WHERE variant_id = ? AND ok = 1 AND ", c,
                       " IS NOT NULL ORDER BY ", c),
                   {std::to_string(variant_id)});
  std::vector<double> v;
  v.reserve(rs.rows.size());
  for (const auto& row : rs.rows)
    if (auto x = as_num(row[0])) v.push_back(*x);
  return v;
}

CdfSeries Db::latency_cdf(int64_t variant_id, const std::string& metric) {
  CdfSeries s;
  s.variant_id = variant_id;
  const std::vector<double> req = request_latencies(variant_id, metric);
  Rows h = select("SELECT bucket_low_ns, bucket_high_ns, count FROM histograms WHERE variant_id = ? "
                  "AND metric = ? AND count > 0 ORDER BY bucket_low_ns",
                  {std::to_string(variant_id), metric});
  int64_t hist_total = 0;
  for (const auto& row : h.rows) hist_total += as_int(row[2]);
  if (!req.empty() && static_cast<int64_t>(req.size()) >= hist_total) {
    // Every request: one step per distinct value (at most ~1000 points drawn).
    s.source = "requests";
    s.count = static_cast<int64_t>(req.size());
    const size_t n = req.size();
    const size_t stride = std::max<size_t>(1, n / 1000);
    for (size_t i = 0; i < n; ++i) {
      const bool last_of_value = i + 1 == n || req[i + 1] != req[i];
      if (last_of_value && ((i + 1) % stride == 0 || i + 1 == n))
        s.points.push_back({req[i], static_cast<double>(i + 1) / static_cast<double>(n)});
    }
  } else if (hist_total > 0) {
    s.source = "histogram";
    s.count = hist_total;
    int64_t cum = 0;
    for (const auto& row : h.rows) {
      cum += as_int(row[2]);
      s.points.push_back({static_cast<double>(as_int(row[1])) / 1e6,
                          static_cast<double>(cum) / static_cast<double>(hist_total)});
    }
  }
  return s;
}

// The run's own definition (harness/schema/slo.h find_knee) on the steps as judged here.
Knee LoadCurve::knee_of_steps() const {
  std::vector<KneeStep> ks;
  for (const Step& s : steps) ks.push_back({s.offered_qps, s.verdict.met});  // by offered rate, ascending
  return find_knee(ks);
}

std::optional<double> LoadCurve::knee() const { return knee_of_steps().qps; }

std::string LoadCurve::knee_text() const {
  if (steps.empty()) return "no step completed";
  bool any_slo = false;
  for (const Step& s : steps) any_slo = any_slo || s.verdict.met.has_value() || !s.verdict.unmeasured.empty();
  if (!any_slo) return "no SLO to judge the steps by";
  const Knee kn = knee_of_steps();
  const std::optional<double> k = kn.qps;
  const Step* next = nullptr;
  for (const Step& s : steps)
    if (!k || s.offered_qps > *k) {
      next = &s;
      break;
    }
  if (k && (!kn.reached || !next))
    return str("knee not reached below the highest rate tried (", fmt_num(steps.back().offered_qps), " qps): every step met every SLO");
  const std::string why = next->verdict.summary();
  if (!k) return str("no rate met every SLO (lowest tried: ", fmt_num(steps.front().offered_qps), " qps, ", why, ")");
  return str("knee ", fmt_num(*k), " qps: the highest offered rate meeting every SLO (the next, ", fmt_num(next->offered_qps),
             " qps, ", why, ")");
}

bool LoadSweep::has_steps() const {
  for (const auto& c : curves)
    if (c.steps.size() >= 2 || (pattern == "stepped" && !c.steps.empty())) return true;
  return false;
}

LoadSweep Db::load_sweep(int64_t run_id, const std::string& metric) {
  static const std::set<std::string> kMetrics{"latency", "ttft", "tpot", "queue", "service"};
  if (!kMetrics.count(metric))
    throw DbError(str("unknown metric '", metric, "' (expected latency, ttft, tpot, queue or service)"));
  LoadSweep ls;
  ls.metric = metric;
  ls.pattern = run(run_id).pattern;
  ls.slos = slos(run_id);
  std::map<int64_t, size_t> at;
  for (const Variant& v : variants({run_id})) {
    auto offered = v.get("offered_qps");
    if (!offered || *offered <= 0) continue;
    auto it = at.find(v.variant_index);
    if (it == at.end()) {
      it = at.emplace(v.variant_index, ls.curves.size()).first;
      LoadCurve c;
      c.variant_index = v.variant_index;
      c.name = v.short_name(false);
      ls.curves.push_back(c);
    }
    LoadCurve& c = ls.curves[it->second];
    if (v.status != "ok") continue;
    LoadCurve::Step s;
    s.offered_qps = *offered;
    s.achieved_qps = v.get("achieved_qps");
    s.p50_ms = v.get(metric + "_p50_ms");
    s.p95_ms = v.get(metric + "_p95_ms");
    s.p99_ms = v.get(metric + "_p99_ms");
    for (const auto& [suffix, pct] : std::vector<std::pair<const char*, double>>{
             {"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}, {"max", 100}})
      if (auto x = v.get(str(metric, "_", suffix, "_ms"))) s.percentiles[pct] = *x;
    if (auto m = v.get("slo_met")) s.slo_met = *m != 0;
    s.verdict = judge_slos(ls.slos, [&](const Slo& slo) { return v.get(slo.column()); });
    s.queries = static_cast<int64_t>(v.get("queries").value_or(0));
    c.steps.push_back(s);
    if (auto k = v.get("knee_qps")) c.knee_qps = k;
  }
  for (auto& c : ls.curves)
    std::sort(c.steps.begin(), c.steps.end(),
              [](const LoadCurve::Step& a, const LoadCurve::Step& b) { return a.offered_qps < b.offered_qps; });
  return ls;
}

std::vector<ScalingSeries> Db::scaling(const std::vector<int64_t>& run_ids) {
  std::vector<ScalingSeries> out;
  std::map<std::string, size_t> at;
  for (const Variant& v : variants(run_ids)) {
    if (v.step_index != 0 || v.status != "ok") continue;
    // Every setting but threads and workers, named as Variant::short_name names it, so that
    // variants differing in anything else (cache off and on, a batch size) are separate lines.
    // One line per worker count: W workers of T threads each use T x W cores, so 2x1 and 1x2
    // sit at the same x on two lines (the threads-or-workers question).
    std::string name = v.format.empty() ? "?" : v.format;
    if (!v.text_of("recipe").empty()) name += " " + v.text_of("recipe");
    if (v.sparsity && *v.sparsity > 0) name += " sp" + fmt_num(*v.sparsity, 3);
    name += " w" + std::to_string(v.workers.value_or(1));
    if (const std::string kv = v.text_of("kv_mode"); !kv.empty() && kv != "preallocated") name += " kv=" + kv;
    if (const std::string isa = v.text_of("isa_requested"); !isa.empty() && isa != "auto") name += " isa=" + isa;
    if (const std::string pin = v.text_of("pinning"); !pin.empty() && pin != "none" && pin != "0") name += " " + pin;
    if (const std::string shape = v.text_of("shape"); !shape.empty() && shape != "dynamic") name += " " + shape;
    if (auto b = v.get("max_batch"); b && *b > 1) name += " b" + fmt_num(*b, 3);
    if (auto c = v.get("cache_enabled"); c && *c > 0) name += " cache";
    if (run_ids.size() > 1) name = "run " + std::to_string(v.run_id) + ": " + name;
    auto it = at.find(name);
    if (it == at.end()) {
      it = at.emplace(name, out.size()).first;
      out.push_back({name, {}});
    }
    ScalingPoint p;
    p.variant_id = v.variant_id;
    p.threads = v.threads.value_or(1);
    p.workers = v.workers.value_or(1);
    p.achieved_qps = v.get("achieved_qps");
    p.tokens_per_s = v.get("tokens_per_s");
    p.p50_ms = v.get("latency_p50_ms");
    p.p95_ms = v.get("latency_p95_ms");
    p.decode_tokens_per_s = v.get("decode_tokens_per_s");
    out[it->second].points.push_back(p);
  }
  for (auto& s : out)
    std::sort(s.points.begin(), s.points.end(), [](const ScalingPoint& a, const ScalingPoint& b) {
      const int64_t ca = a.threads * a.workers, cb = b.threads * b.workers;
      return ca != cb ? ca < cb : a.workers < b.workers;
    });
  return out;
}

bool scaling_plots_decode(const std::vector<ScalingSeries>& series) {
  bool qps = false, decode = false;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      qps = qps || p.achieved_qps.has_value();
      decode = decode || p.decode_tokens_per_s.has_value();
    }
  return !qps && decode;
}

std::vector<CounterSummary> Db::counters(const std::vector<int64_t>& run_ids) {
  std::vector<CounterSummary> out;
  if (run_ids.empty()) return out;
  std::vector<std::string> params;
  for (int64_t id : run_ids) params.push_back(std::to_string(id));
  Rows rs = select("SELECT c.variant_id, c.name, c.value, c.unit, c.source, c.unavailable_reason "
                   "FROM counters c JOIN variants v ON v.variant_id = c.variant_id WHERE v.run_id IN " +
                       in_list(run_ids.size()) +
                       " AND c.phase = 'all' AND c.scope IN ('total', 'package')",
                   params);
  std::map<int64_t, std::map<std::string, CounterValue>> by_variant;
  for (const auto& row : rs.rows) {
    CounterValue cv;
    cv.value = as_num(row[2]);
    cv.unit = as_text(row[3]);
    cv.source = as_text(row[4]);
    cv.reason = as_text(row[5]);
    if (!cv.value && cv.reason.empty()) cv.reason = "not measured";
    by_variant[as_int(row[0])][as_text(row[1])] = cv;
  }
  for (const Variant& v : variants(run_ids)) {
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

std::optional<Goodput> Db::goodput_of(const Variant& v, const std::vector<Slo>& slos) {
  const auto queries = v.get("queries"), dur = v.get("duration_s");
  if (slos.empty() || !queries || !dur || *dur <= 0) return std::nullopt;
  Rows rs = select("SELECT ok, latency_ms, queue_ms, service_ms, ttft_ms, tpot_ms FROM requests WHERE variant_id = ?",
                   {std::to_string(v.variant_id)});
  if (static_cast<int64_t>(rs.rows.size()) != static_cast<int64_t>(*queries)) return std::nullopt;
  static const std::vector<std::string> kColumns{"latency", "queue", "service", "ttft", "tpot"};
  Goodput g;
  g.duration_s = *dur;
  for (const auto& row : rs.rows) {
    if (as_int(row[0]) != 1) continue;
    ++g.requests;
    const bool met = request_meets_slos(slos, [&](const std::string& m) -> std::optional<double> {
      const auto it = std::find(kColumns.begin(), kColumns.end(), m);
      return it == kColumns.end() ? std::nullopt : as_num(row[1 + static_cast<size_t>(it - kColumns.begin())]);
    });
    if (met) ++g.met;
  }
  if (g.requests == 0) return std::nullopt;
  return g;
}

std::optional<double> Db::goodput(const Variant& v, const std::vector<Slo>& slos) {
  // Stored by the run (schema 7): the value, or NULL with its reason.
  if (const auto g = v.get("goodput_qps")) return g;
  if (!v.text_of("goodput_reason").empty()) return std::nullopt;
  const auto g = goodput_of(v, slos);  // older rows: the same rule on the requests table
  return g ? std::optional<double>(g->per_s()) : std::nullopt;
}

std::optional<double> Db::slo_attainment(const Variant& v, const std::vector<Slo>& slos) {
  if (const auto a = v.get("slo_attainment")) return a;
  if (!v.text_of("goodput_reason").empty()) return std::nullopt;
  const auto g = goodput_of(v, slos);
  return g ? std::optional<double>(g->attainment()) : std::nullopt;
}

std::vector<double> Db::compare_samples(const Variant& v, const std::string& metric, bool* from_histogram) {
  // As cibench compare: the requests when every request was kept, else the histogram expanded
  // at bucket midpoints.
  Rows n = select("SELECT COUNT(*) FROM requests WHERE variant_id = ?", {std::to_string(v.variant_id)});
  const auto queries = v.get("queries");
  const bool all = queries && static_cast<int64_t>(*queries) == as_int(n.rows.at(0).at(0));
  *from_histogram = !all;
  if (all) return request_latencies(v.variant_id, metric);
  std::vector<double> out;
  Rows h = select("SELECT bucket_low_ns, bucket_high_ns, count FROM histograms WHERE variant_id = ? AND metric = ?",
                  {std::to_string(v.variant_id), metric});
  for (const auto& row : h.rows) {
    const double mid = (static_cast<double>(as_int(row[0])) + static_cast<double>(as_int(row[1]) - 1)) / 2 * 1e-6;
    out.insert(out.end(), static_cast<size_t>(std::max<int64_t>(0, as_int(row[2]))), mid);
  }
  return out;
}

namespace {
std::string status_text(const Variant& v) {
  return v.status + (v.error.empty() ? "" : " (" + v.error + ")");
}
}  // namespace

// ---- serving ---------------------------------------------------------------------------------

bool is_serving_row(const Variant& v) {
  const auto offered = v.get("offered_qps");
  if (v.status != "ok" || !offered || *offered <= 0) return false;
  if (!v.get("ttft_p50_ms") && !v.get("ttft_p99_ms") && !v.get("ttft_mean_ms")) return false;
  return !v.text_of("batching").empty() || v.get("engine_steps") || v.get("itl_count") || v.get("goodput_qps");
}

const ServingStep* ServingSeries::knee_step() const {
  const Knee kn = knee();
  if (!kn.qps) return nullptr;
  for (const ServingStep& s : steps)
    if (s.offered_qps == *kn.qps) return &s;
  return nullptr;
}

const ServingStep* ServingSeries::timeline_step() const {
  if (const ServingStep* k = knee_step()) return k;
  return steps.empty() ? nullptr : &steps.back();
}

std::string Serving::x_title() const {
  return x_achieved ? "achieved (completed req/s)" : "offered rate (req/s; achieved not measured)";
}

namespace {

std::string serving_metric_title(const std::string& column) {
  const auto slo = parse_slo_key(column);
  if (!slo) return column;
  const std::string m = slo->metric == "ttft"    ? "TTFT"
                        : slo->metric == "tpot"  ? "TPOT"
                        : slo->metric == "queue" ? "queue wait"
                        : slo->metric == "service" ? "service time"
                                                   : "latency";
  const std::string p = slo->percentile == 100 ? "max" : "p" + fmt_num(slo->percentile, 3);
  return m + " " + p;
}

}  // namespace

Serving Db::serving(const std::vector<int64_t>& run_ids) {
  Serving sv;
  sv.runs = run_ids;
  for (int64_t run : run_ids) {
    const std::vector<Variant> all = variants({run});
    if (std::none_of(all.begin(), all.end(), is_serving_row)) continue;
    const LoadSweep ls = load_sweep(run, "latency");
    for (const Slo& slo : ls.slos)
      if (std::none_of(sv.slos.begin(), sv.slos.end(), [&](const Slo& x) { return x.key == slo.key; })) sv.slos.push_back(slo);
    for (const LoadCurve& cv : ls.curves) {
      ServingSeries ss;
      ss.run_id = run;
      ss.variant_index = cv.variant_index;
      ss.curve = cv;
      std::set<int64_t> used;
      bool serving = false;
      for (const LoadCurve::Step& st : cv.steps) {
        const Variant* row = nullptr;
        for (const Variant& v : all)
          if (v.variant_index == cv.variant_index && v.status == "ok" && v.get("offered_qps") == st.offered_qps &&
              !used.count(v.variant_id)) {
            row = &v;
            break;
          }
        if (!row) continue;  // load_sweep took it from these rows: not reached
        used.insert(row->variant_id);
        serving = serving || is_serving_row(*row);
        ServingStep p;
        p.v = *row;
        p.offered_qps = st.offered_qps;
        p.achieved_qps = st.achieved_qps;
        p.goodput_qps = goodput(*row, ls.slos);
        p.slo_attainment = slo_attainment(*row, ls.slos);
        if (!p.goodput_qps) {
          p.goodput_reason = row->text_of("goodput_reason");
          if (p.goodput_reason.empty())
            p.goodput_reason = ls.slos.empty() ? "no SLO to judge the requests by"
                                               : "not stored, and not every request was kept to compute it";
        }
        p.verdict = st.verdict;
        ss.steps.push_back(std::move(p));
      }
      if (!serving) continue;
      ss.batching = ss.steps.front().v.text_of("batching");
      const Variant& first = ss.steps.front().v;
      ss.name = (first.format.empty() ? compact_label(first.label) : first.short_name(false)) +
                (ss.batching == "none" ? " batching=none" : "");
      sv.series.push_back(std::move(ss));
    }
  }
  if (sv.series.empty()) return sv;
  // Series of one run with the same name differ in a batching setting short_name leaves out: the
  // settings that differ among them are added to their names ("tok32", "kv1024", "preempt", "wait50ms").
  auto setting = [](const Variant& v, const std::string& col) {
    if (const auto x = v.get(col)) return fmt_num(*x);
    return v.text_of(col);
  };
  std::vector<std::string> extra(sv.series.size());
  for (size_t i = 0; i < sv.series.size(); ++i) {
    const ServingSeries& ss = sv.series[i];
    std::vector<const ServingSeries*> twins;
    for (const auto& o : sv.series)
      if (&o != &ss && o.run_id == ss.run_id && o.name == ss.name) twins.push_back(&o);
    if (twins.empty()) continue;
    const Variant& v = ss.steps.front().v;
    for (const auto& [col, prefix, unit] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"max_tokens_per_step", "tok", ""}, {"kv_pool_tokens", "kv", ""}, {"kv_policy", "", ""},
             {"batch_timeout_ms", "wait", "ms"}}) {
      const std::string mine = setting(v, col);
      const bool differs = std::any_of(twins.begin(), twins.end(),
                                       [&](const ServingSeries* o) { return setting(o->steps.front().v, col) != mine; });
      if (differs && !mine.empty()) extra[i] += " " + prefix + mine + unit;
    }
  }
  // Prefix cache off beside on (schema 9): short_name marks only "prefix-cache"; the other is
  // named too, rather than by the settings it shares with it.
  const auto prefix_of = [](const ServingSeries& ss) { return ss.steps.front().v.get("prefix_cache"); };
  const bool any_prefix = std::any_of(sv.series.begin(), sv.series.end(), [&](const ServingSeries& ss) {
    const auto p = prefix_of(ss);
    return p && *p > 0;
  });
  for (size_t i = 0; i < sv.series.size(); ++i)
    if (const auto p = prefix_of(sv.series[i]); any_prefix && p && *p == 0) extra[i] += " no-prefix-cache";
  for (size_t i = 0; i < sv.series.size(); ++i) sv.series[i].name += extra[i];
  // The settings every series shares are said once (Serving::common); the names keep what tells
  // the series apart ("batching=none", "b8 batching=continuous").
  auto words = [](const std::string& name) {
    std::vector<std::string> w;
    std::istringstream is(name);
    for (std::string x; is >> x;) w.push_back(x);
    return w;
  };
  std::vector<std::string> common = words(sv.series.front().name);
  for (const auto& ss : sv.series) {
    const auto w = words(ss.name);
    common.erase(std::remove_if(common.begin(), common.end(),
                                [&](const std::string& x) { return std::find(w.begin(), w.end(), x) == w.end(); }),
                 common.end());
  }
  for (auto& ss : sv.series) {
    std::string rest;
    for (const auto& x : words(ss.name))
      if (std::find(common.begin(), common.end(), x) == common.end()) rest += (rest.empty() ? "" : " ") + x;
    if (!rest.empty() && sv.series.size() > 1) ss.name = rest;
    if (run_ids.size() > 1) ss.name = "run " + std::to_string(ss.run_id) + ": " + ss.name;
    ss.curve.name = ss.name;
  }
  if (sv.series.size() > 1)
    for (const auto& x : common) sv.common += (sv.common.empty() ? "" : " ") + x;
  for (const Slo& slo : sv.slos) {
    const std::string col = slo.column();
    if (std::none_of(sv.metrics.begin(), sv.metrics.end(), [&](const ServingMetric& m) { return m.column == col; }))
      sv.metrics.push_back({col, serving_metric_title(col), slo});
  }
  if (sv.metrics.empty())
    for (const char* col : {"ttft_p99_ms", "tpot_p99_ms"}) sv.metrics.push_back({col, serving_metric_title(col), std::nullopt});
  // The first token first, then the time per token, then the rest (as they happen to a request).
  static const std::vector<std::string> kOrder{"queue", "ttft", "tpot", "service", "latency"};
  auto rank = [](const ServingMetric& m) {
    const auto slo = parse_slo_key(m.column);
    const auto it = std::find(kOrder.begin(), kOrder.end(), slo ? slo->metric : "");
    return std::make_pair(it - kOrder.begin(), slo ? slo->percentile : 0);
  };
  std::stable_sort(sv.metrics.begin(), sv.metrics.end(),
                   [&](const ServingMetric& a, const ServingMetric& b) { return rank(a) < rank(b); });
  bool tpot = false;
  for (const auto& ss : sv.series)
    for (const auto& st : ss.steps) {
      sv.x_achieved = sv.x_achieved && st.achieved_qps.has_value();
      tpot = tpot || st.v.get("tpot_p99_ms") || st.v.get("tpot_p50_ms");
    }
  sv.occupancy_metric = tpot ? "tpot" : "itl";
  return sv;
}

std::vector<std::string> Serving::notes() const {
  std::vector<std::string> out;
  if (empty()) return out;
  if (!common.empty()) out.push_back("Every series: " + common + ".");
  for (const auto& ss : series) out.push_back(ss.name + ": " + ss.curve.knee_text() + ".");
  if (!x_achieved) out.push_back("x = the offered rate: some step did not measure its achieved throughput.");
  // Unmeasured values, one line per (series, what, reason), with the rates it concerns.
  for (const auto& ss : series) {
    std::map<std::string, std::vector<std::string>> why;  // "what: reason" -> rates
    for (const auto& st : ss.steps) {
      const std::string at = fmt_num(st.offered_qps, 4);
      for (const auto& m : metrics)
        if (!st.v.get(m.column)) why[m.title + ": not measured"].push_back(at);
      if (!st.goodput_qps) why["goodput: " + st.goodput_reason].push_back(at);
      if (!st.v.get("batch_occupancy_mean")) {
        const std::string r = st.v.text_of("batching_reason");
        why["batch occupancy: " +
            (r.empty() ? std::string("not recorded (no decoder batching in this system under test, or a run before schema 8)") : r)]
            .push_back(at);
      }
      if (!st.v.get("itl_p99_ms") && !st.v.text_of("itl_reason").empty()) why["ITL: " + st.v.text_of("itl_reason")].push_back(at);
    }
    for (const auto& [what, rates] : why) {
      std::string r;
      for (const auto& x : rates) r += (r.empty() ? "" : ", ") + x;
      out.push_back(str(ss.name, ": ", what, " (", rates.size() == ss.steps.size() ? "every step" : "at " + r + " qps", ")."));
    }
  }
  return out;
}

std::vector<std::string> Timeline::notes() const {
  std::vector<std::string> out;
  size_t no_queue = 0, no_latency = 0, failed = 0;
  for (const auto& r : requests) no_queue += !r.queue_ms, no_latency += !r.latency_ms, failed += !r.ok;
  if (requests.empty()) out.push_back(str("Requests of ", name, ": ", coverage(), "."));
  if (no_queue)
    out.push_back(str("Requests of ", name, ": the queue wait of ", no_queue, " was not measured (their bar starts at the arrival)."));
  if (no_latency) out.push_back(str("Requests of ", name, ": the latency of ", no_latency, " was not measured (no bar past the first token)."));
  if (failed) out.push_back(str("Requests of ", name, ": ", failed, " of those shown failed."));
  return out;
}

std::optional<std::pair<double, double>> TimelineRequest::queued() const {
  if (!queue_ms) return std::nullopt;
  return std::make_pair(scheduled_ms, scheduled_ms + *queue_ms);
}

std::optional<std::pair<double, double>> TimelineRequest::to_first_token() const {
  if (!ttft_ms) return std::nullopt;
  // The first token is timed from the scheduled arrival, the queue wait included.
  const double from = queue_ms && *queue_ms <= *ttft_ms ? *queue_ms : 0;
  return std::make_pair(scheduled_ms + from, scheduled_ms + *ttft_ms);
}

std::optional<std::pair<double, double>> TimelineRequest::decode() const {
  if (!ttft_ms || !latency_ms) return std::nullopt;
  return std::make_pair(scheduled_ms + *ttft_ms, scheduled_ms + std::max(*ttft_ms, *latency_ms));
}

std::optional<std::pair<double, double>> TimelineRequest::service() const {
  if (ttft_ms || !latency_ms) return std::nullopt;
  const double from = queue_ms && *queue_ms <= *latency_ms ? *queue_ms : 0;
  return std::make_pair(scheduled_ms + from, scheduled_ms + *latency_ms);
}

std::string Timeline::coverage() const {
  if (stored == 0) return "no per-request rows stored";
  const int64_t shown = static_cast<int64_t>(requests.size());
  std::string s = shown < stored ? str("the first ", shown, " of ", stored, " requests by arrival")
                                 : str(shown == 1 ? "the only request" : str("all ", shown, " requests"));
  if (queries > stored) s += str(" (the store kept ", stored, " of the ", queries, " completed)");
  return s;
}

Timeline Db::timeline(const Variant& v, int max_requests) {
  Timeline t;
  t.v = v;
  t.name = v.short_name(true);
  t.queries = static_cast<int64_t>(v.get("queries").value_or(0));
  const std::string id = std::to_string(v.variant_id);
  t.stored = as_int(select("SELECT COUNT(*) FROM requests WHERE variant_id = ?", {id}).rows.at(0).at(0));
  Rows rs = select("SELECT query_index, seq, ok, scheduled_ms, queue_ms, service_ms, ttft_ms, latency_ms, prompt_tokens, "
                   "output_tokens FROM requests WHERE variant_id = ? ORDER BY scheduled_ms, query_index LIMIT ?",
                   {id, std::to_string(std::max(0, max_requests))});
  for (const auto& row : rs.rows) {
    TimelineRequest r;
    r.query_index = as_int(row[0]);
    r.seq = as_int(row[1]);
    r.ok = as_int(row[2]) == 1;
    r.scheduled_ms = as_num(row[3]).value_or(0);
    r.queue_ms = as_num(row[4]);
    r.service_ms = as_num(row[5]);
    r.ttft_ms = as_num(row[6]);
    r.latency_ms = as_num(row[7]);
    if (auto n = as_num(row[8])) r.prompt_tokens = static_cast<int64_t>(*n);
    if (auto n = as_num(row[9])) r.output_tokens = static_cast<int64_t>(*n);
    t.requests.push_back(r);
  }
  return t;
}

Comparison Db::compare(int64_t run_a, int64_t run_b, int resamples, uint64_t seed) {
  Comparison c;
  c.a = run(run_a);
  c.b = run(run_b);
  c.resamples = resamples;
  c.seed = seed;
  // What differs besides the configuration, said before any number.
  c.same_scenario = c.a.kind == c.b.kind && c.a.scenario_name == c.b.scenario_name;
  c.same_model = c.a.model_spec == c.b.model_spec;
  if (!c.same_scenario)
    c.warnings.push_back(str("different scenarios: A is ", c.a.origin(), ", B is ", c.b.origin(),
                             "; the differences mix the workloads, not only the builds"));
  if (!c.same_model)
    c.warnings.push_back(str("different models: A ran ", c.a.model_spec, ", B ran ", c.b.model_spec));
  if (c.same_scenario && c.a.question != c.b.question)
    c.warnings.push_back("the same scenario name with a different question: the scenario files differ");
  if (run_a == run_b) c.warnings.push_back(str("A and B are the same run (", run_a, "): every difference is 0"));
  if (c.a.status != "complete") c.warnings.push_back(str("run A (", run_a, ") is ", c.a.status));
  if (c.b.status != "complete") c.warnings.push_back(str("run B (", run_b, ") is ", c.b.status));

  const auto va = variants({run_a});
  const auto vb = variants({run_b});
  auto key = [](const Variant& v) { return v.label + (v.step_index ? " step " + std::to_string(v.step_index) : ""); };
  for (const auto* side : {&va, &vb})
    for (const Variant& v : *side)
      if (v.status != "ok") c.failed.push_back(str(side == &va ? "A" : "B", ": ", key(v), ": ", status_text(v)));
  std::map<std::string, const Variant*> in_b;
  for (const Variant& v : vb) in_b[key(v)] = &v;
  std::set<std::string> matched;
  auto change = [](CompareRow& r) {
    if (r.a && r.b) {
      r.diff = *r.b - *r.a;
      if (*r.a != 0) r.change_pct = 100.0 * *r.diff / *r.a;
    }
  };
  for (const Variant& a : va) {
    auto it = in_b.find(key(a));
    if (it == in_b.end()) {
      c.only_in_a.push_back(key(a) + (a.status == "ok" ? "" : " (" + a.status + ")"));
      continue;
    }
    const Variant& b = *it->second;
    matched.insert(key(a));
    if (a.status != "ok" || b.status != "ok") {
      CompareRow r;
      r.variant = key(a);
      r.metric = "-";
      r.note = "not compared: A " + status_text(a) + ", B " + status_text(b);
      c.rows.push_back(r);
      continue;
    }
    // The percentiles with bootstrap intervals.
    for (const char* metric : {"latency", "ttft", "tpot"}) {
      bool ha = false, hb = false;
      const auto sa = compare_samples(a, metric, &ha);
      const auto sb = compare_samples(b, metric, &hb);
      if (sa.empty() || sb.empty()) {
        if (std::string(metric) == "latency") {
          CompareRow r;
          r.variant = key(a);
          r.metric = "latency p95 (ms)";
          r.a = a.get("latency_p95_ms");
          r.b = b.get("latency_p95_ms");
          change(r);
          r.note = "per-request times and histogram not stored: no interval";
          c.rows.push_back(r);
        }
        continue;
      }
      for (double p : {50.0, 95.0}) {
        const PercentileDiff d = percentile_diff(sa, sb, p, resamples, seed, c.confidence);
        CompareRow r;
        r.variant = key(a);
        r.metric = str(metric, " p", static_cast<int>(p), " (ms)");
        r.a = d.a;
        r.b = d.b;
        r.diff = d.diff;
        r.change_pct = d.change_pct;
        r.ci_low = d.lo;
        r.ci_high = d.hi;
        r.n_a = static_cast<int64_t>(d.n_a);
        r.n_b = static_cast<int64_t>(d.n_b);
        r.warning = d.small_sample_warning();
        if (ha || hb) r.note = "from the histogram (bucket midpoints)";
        c.rows.push_back(r);
      }
    }
    // Single measurements per run: shown side by side, no interval.
    constexpr double kMiB = 1.0 / (1024.0 * 1024.0);
    for (const auto& [col, title, scale] : std::vector<std::tuple<const char*, const char*, double>>{
             {"achieved_qps", "throughput (queries/s)", 1}, {"tokens_per_s", "throughput (tokens/s)", 1},
             {"top1_agreement", "top-1 agreement", 1}, {"task_accuracy", "task accuracy", 1},
             {"peak_rss_bytes", "peak RSS (MiB)", kMiB}}) {
      CompareRow r;
      r.variant = key(a);
      r.metric = title;
      if (auto x = a.get(col)) r.a = *x * scale;
      if (auto x = b.get(col)) r.b = *x * scale;
      if (!r.a && !r.b) continue;
      change(r);
      r.note = "one measurement per run: no interval";
      c.rows.push_back(r);
    }
  }
  for (const Variant& b : vb)
    if (!matched.count(key(b))) c.only_in_b.push_back(key(b) + (b.status == "ok" ? "" : " (" + b.status + ")"));
  return c;
}

std::vector<int64_t> Db::comparable_runs(int64_t run_id) {
  const RunInfo r = run(run_id);
  std::vector<int64_t> out;
  for (const RunInfo& o : runs())
    if (o.run_id != run_id && o.kind == r.kind && o.scenario_name == r.scenario_name && o.model_spec == r.model_spec)
      out.push_back(o.run_id);
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json out;
  out["run_a"] = c.a.run_id;
  out["run_b"] = c.b.run_id;
  out["scenario_a"] = c.a.origin();
  out["scenario_b"] = c.b.origin();
  out["model_a"] = c.a.model_spec;
  out["model_b"] = c.b.model_spec;
  out["warnings"] = c.warnings;
  out["method"] = str("difference B - A of nearest-rank percentiles; ", static_cast<int>(c.confidence * 100),
                      "% percentile-bootstrap interval, ", c.resamples, " resamples, seed ", c.seed);
  out["rows"] = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const CompareRow& r : c.rows) {
    nlohmann::json j{{"variant", r.variant}, {"metric", r.metric}, {"a", opt(r.a)}, {"b", opt(r.b)},
                     {"diff", opt(r.diff)}, {"change_pct", opt(r.change_pct)}, {"ci_low", opt(r.ci_low)},
                     {"ci_high", opt(r.ci_high)}};
    if (r.n_a) j["n_a"] = *r.n_a;
    if (r.n_b) j["n_b"] = *r.n_b;
    if (r.ci_low) j["verdict"] = *r.ci_high < 0 ? "B lower" : *r.ci_low > 0 ? "B higher" : "no significant difference";
    if (!r.note.empty()) j["note"] = r.note;
    if (!r.warning.empty()) j["warning"] = r.warning;
    out["rows"].push_back(j);
  }
  out["failed"] = c.failed;
  nlohmann::json un = nlohmann::json::array();
  for (const auto& s : c.only_in_a) un.push_back(s + " (only in A)");
  for (const auto& s : c.only_in_b) un.push_back(s + " (only in B)");
  out["unmatched"] = un;
  return out;
}

// ---- speculative decoding ----------------------------------------------------------------------

std::string drafter_name(const std::string& speculative) {
  if (speculative.rfind("draft:", 0) != 0) return speculative;
  std::string file = speculative.substr(6);
  if (const size_t slash = file.find_last_of('/'); slash != std::string::npos && slash + 1 < file.size())
    file = file.substr(slash + 1);
  if (const size_t dot = file.find_last_of('.'); dot != std::string::npos && dot > 0) file = file.substr(0, dot);
  return "draft:" + file;
}

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

Speculative Db::speculative(const std::vector<int64_t>& run_ids) {
  Speculative sp;
  sp.runs = run_ids;
  const std::vector<Variant> all = variants(run_ids);
  const auto drafter_of = [](const Variant& v) { return v.text_of("speculative"); };
  if (std::none_of(all.begin(), all.end(), [&](const Variant& v) { return !drafter_of(v).empty() && drafter_of(v) != "off"; }))
    return sp;
  const auto build_of = [](const Variant& v) { return v.format.empty() ? compact_label(v.label) : v.short_name(true); };
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
