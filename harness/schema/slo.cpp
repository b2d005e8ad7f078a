#include "harness/schema/slo.h"

#include <iomanip>
#include <regex>
#include <sstream>

#include "engines/core/error.h"

namespace cibench {

const std::vector<std::string>& slo_metrics() {
  static const std::vector<std::string> m{"latency", "ttft", "tpot", "queue", "service"};
  return m;
}

const char* slo_key_grammar() {
  return "[metric_]pNN_ms or [metric_]max_ms; metric: latency, ttft, tpot, queue, service; pNN: p50 "
         "p90 p95 p99 p999 max";
}

std::optional<Slo> parse_slo_key(const std::string& key) {
  static const std::regex re(
      R"(^(?:(latency|ttft|tpot|queue|service)_)?(p50|p90|p95|p99|p99_9|p999|max)_ms$)");
  std::smatch m;
  if (!std::regex_match(key, m, re)) return std::nullopt;
  Slo s;
  s.key = key;
  s.metric = m[1].matched ? m[1].str() : "latency";
  const std::string p = m[2].str();
  s.percentile = p == "max" ? 100 : (p == "p99_9" || p == "p999") ? 99.9 : std::stod(p.substr(1));
  return s;
}

std::string Slo::column() const {
  std::string p;
  if (percentile == 100) p = "max";
  else if (percentile == 99.9) p = "p999";
  else p = "p" + std::to_string(static_cast<int>(percentile));
  return metric + "_" + p + "_ms";
}

SloVerdict judge_slos(const std::vector<Slo>& slos,
                      const std::function<std::optional<double>(const Slo&)>& value_ms) {
  SloVerdict v;
  bool any_fail = false;
  for (const Slo& s : slos) {
    std::ostringstream line;
    line << std::setprecision(4);
    const std::optional<double> x = value_ms(s);
    if (!x) {
      v.unmeasured.push_back(s.key);
      line << s.key << ": " << s.metric << " not measured (no data)";
    } else {
      const bool ok = s.met_by(*x);
      any_fail |= !ok;
      line << s.key << ": " << s.metric << " p" << s.percentile << " = " << *x << " ms "
           << (ok ? "<=" : ">") << " " << s.limit_ms << " ms " << (ok ? "(met)" : "(BROKEN)");
      if (!ok) {
        std::ostringstream m;
        m << std::setprecision(4) << s.key << " " << *x << " > " << s.limit_ms;
        v.missed.push_back(m.str());
      }
    }
    v.detail += (v.detail.empty() ? "" : "; ") + line.str();
  }
  if (slos.empty()) v.met = std::nullopt;
  else if (any_fail) v.met = false;
  else if (v.unmeasured.empty()) v.met = true;
  if (slos.empty()) v.detail = "no SLOs in the scenario";
  return v;
}

bool request_meets_slos(const std::vector<Slo>& slos,
                        const std::function<std::optional<double>(const std::string& metric)>& value_ms) {
  for (const Slo& s : slos) {
    const std::optional<double> x = value_ms(s.metric);
    if (x && !s.met_by(*x)) return false;
  }
  return true;
}

std::string SloVerdict::summary() const {
  auto join = [](const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!missed.empty()) return "missed: " + join(missed);
  if (met && *met) return "met";
  if (unmeasured.empty()) return "no SLO";
  return "not measured: " + join(unmeasured);
}

nlohmann::json slos_to_json(const std::vector<Slo>& slos) {
  nlohmann::json a = nlohmann::json::array();
  for (const Slo& s : slos)
    a.push_back({{"key", s.key}, {"metric", s.metric}, {"percentile", s.percentile},
                 {"limit_ms", s.limit_ms}, {"column", s.column()}});
  return a;
}

namespace {
template <typename T>
T field(const nlohmann::json& o, const char* name, const char* what) {
  if (!o.is_object() || !o.contains(name))
    throw Error(str(what, ": missing field '", name, "' in ", o.dump()));
  try {
    return o.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(str(what, ": field '", name, "' has the wrong type in ", o.dump()));
  }
}
}  // namespace

std::vector<Slo> slos_from_json(const nlohmann::json& j) {
  if (!j.is_array()) throw Error(str("stored SLOs: expected an array, got ", j.dump()));
  std::vector<Slo> out;
  for (const auto& o : j) {
    auto s = parse_slo_key(field<std::string>(o, "key", "stored SLO"));
    if (!s) throw Error(str("stored SLO: unknown key in ", o.dump(), " (", slo_key_grammar(), ")"));
    s->limit_ms = field<double>(o, "limit_ms", "stored SLO");
    out.push_back(*s);
  }
  return out;
}

const std::vector<FloorKind>& quality_floor_kinds() {
  static const std::vector<FloorKind> k{
      {"min_top1_agreement", "top1_agreement", true, 1},
      {"max_kl_mean", "kl_mean", false, 1},
      {"max_kl_p99", "kl_p99", false, 1},
      {"max_ppl_ratio", "ppl_ratio", false, 1},
      {"min_task_accuracy", "task_accuracy", true, 1},
      {"max_accuracy_drop", "accuracy_delta", true, -1},
  };
  return k;
}

const FloorKind* find_floor_kind(const std::string& key) {
  for (const FloorKind& k : quality_floor_kinds())
    if (key == k.key) return &k;
  return nullptr;
}

QualityFloor QualityFloor::make(const std::string& key, double value) {
  const FloorKind* k = find_floor_kind(key);
  if (!k) {
    std::string known;
    for (const FloorKind& f : quality_floor_kinds()) known += std::string(known.empty() ? "" : ", ") + f.key;
    throw Error(str("unknown quality floor '", key, "' (known: ", known, ")"));
  }
  QualityFloor f;
  f.key = key;
  f.value = value;
  f.column = k->column;
  f.is_minimum = k->is_minimum;
  f.bound = k->sign * value;
  return f;
}

std::string QualityFloor::describe() const {
  std::ostringstream os;
  os << column << (is_minimum ? " >= " : " <= ") << bound << " (" << key << " = " << value << ")";
  return os.str();
}

nlohmann::json floors_to_json(const std::vector<QualityFloor>& floors) {
  nlohmann::json a = nlohmann::json::array();
  for (const QualityFloor& f : floors)
    a.push_back({{"key", f.key}, {"value", f.value}, {"column", f.column},
                 {"is_minimum", f.is_minimum}, {"bound", f.bound}});
  return a;
}

std::vector<QualityFloor> floors_from_json(const nlohmann::json& j) {
  if (!j.is_array()) throw Error(str("stored quality floors: expected an array, got ", j.dump()));
  std::vector<QualityFloor> out;
  for (const auto& o : j)
    out.push_back(QualityFloor::make(field<std::string>(o, "key", "stored quality floor"),
                                     field<double>(o, "value", "stored quality floor")));
  return out;
}

Knee find_knee(const std::vector<KneeStep>& steps) {
  Knee k;
  for (const KneeStep& s : steps) {
    if (!s.slo_met.value_or(false)) {
      k.reached = true;
      break;
    }
    k.qps = s.rate_qps;
  }
  return k;
}

std::string Knee::describe() const {
  if (!qps) return reached ? "none (the lowest rate tried broke an SLO)" : "not measured (no step completed)";
  if (!reached) return str("not reached below the highest rate tried (", *qps, " qps)");
  return str(*qps, " qps");
}

std::string Knee::cell() const {
  if (!qps) return reached ? "none" : "-";
  return str(reached ? "" : ">= ", *qps);
}

}  // namespace cibench
