#include "reports/analysis/labels.h"

#include <sstream>
#include "engines/core/error.h"
#include "reports/format.h"

namespace cibench::reports {
namespace {

// Variant columns that describe the configuration (shown in hover text and tables).
const std::vector<std::string>& config_columns() {
  static const std::vector<std::string> c{
      "format", "sparsity", "threads", "workers", "kv_mode", "isa_requested", "isa_used", "pinning",
      "pattern", "offered_qps", "clients", "counters_mode", "shape", "pad_to", "max_batch", "max_wait_ms",
      "cache_enabled", "cache_limit_entries", "cache_limit_bytes", "cache_hits", "cache_misses",
      "cache_hit_rate", "cache_peak_bytes", "traffic", "duplicate_rate"};
  return c;
}

}  // namespace

std::string compact_label(const std::string& label) {
  std::string s = label;
  for (const char* d : {" kv=preallocated", " isa=auto"}) {
    const size_t at = s.find(d);
    if (at != std::string::npos) s.erase(at, std::string(d).size());
  }
  return s;
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

}  // namespace cibench::reports
