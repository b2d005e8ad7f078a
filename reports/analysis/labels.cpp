#include "reports/analysis/labels.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include "engines/core/error.h"
#include "reports/format.h"

namespace cibench::reports {
namespace {

// Appends `word` to a space-separated name.
void add_word(std::string& s, const std::string& word) {
  if (!s.empty()) s += ' ';
  s += word;
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

}  // namespace

std::string compact_label(const std::string& label) {
  std::string s = label;
  for (const char* d : {" kv=preallocated", " isa=auto"}) {
    const size_t at = s.find(d);
    if (at != std::string::npos) s.erase(at, std::string(d).size());
  }
  return s;
}
std::string drafter_name(const std::string& speculative) {
  if (speculative.rfind("draft:", 0) != 0) return speculative;
  std::string file = speculative.substr(6);
  if (const size_t slash = file.find_last_of('/'); slash != std::string::npos && slash + 1 < file.size())
    file = file.substr(slash + 1);
  if (const size_t dot = file.find_last_of('.'); dot != std::string::npos && dot > 0) file = file.substr(0, dot);
  return "draft:" + file;
}

std::vector<NamePart> name_parts(const Variant& v, bool with_rate) {
  std::vector<NamePart> p;
  p.push_back({"format", v.format.empty() ? v.label : v.format});
  const std::string recipe = v.text_of("recipe");  // schema 2; "" when none
  if (!recipe.empty()) p.push_back({"recipe", recipe});
  if (v.sparsity && *v.sparsity > 0) p.push_back({"sparsity", str("sp", fmt_num(*v.sparsity, 3))});
  if (v.threads) p.push_back({"threads", str("t", *v.threads)});
  if (v.workers) p.push_back({"workers", str("w", *v.workers)});
  const std::string kv = v.text_of("kv_mode");
  if (!kv.empty() && kv != "preallocated") p.push_back({"kv_mode", str("kv=", kv)});
  const std::string isa = v.text_of("isa_requested");
  if (!isa.empty() && isa != "auto") p.push_back({"isa_requested", str("isa=", isa)});
  // Classifier serving (schema 3): shape, batch and cache, so cache off/on are told apart.
  const std::string shape = v.text_of("shape");
  if (!shape.empty() && shape != "dynamic") p.push_back({"shape", shape});
  if (auto b = v.get("max_batch"); b && *b > 1) p.push_back({"max_batch", str("b", fmt_num(*b, 3))});
  if (auto c = v.get("cache_enabled"); c && *c > 0) p.push_back({"cache_enabled", "cache"});
  // Decoder batching (schema 8): static and continuous batching of the same engine told apart.
  if (const std::string b = v.text_of("batching"); !b.empty() && b != "none") p.push_back({"batching", str("batching=", b)});
  if (auto c = v.get("prefix_cache"); c && *c > 0) p.push_back({"prefix_cache", "prefix-cache"});  // schema 9
  // Speculative decoding (schema 10): the drafter and its draft length; "spec=off" is the baseline.
  if (const std::string d = v.text_of("speculative"); !d.empty()) {
    p.push_back({"speculative", str("spec=", drafter_name(d)), d == "off"});
    if (auto k = v.get("draft_tokens")) p.push_back({"draft_tokens", str("k=", fmt_num(*k, 3))});
  }
  if (const std::string e = v.text_of("peer_engine"); !e.empty()) p.push_back({"peer_engine", str("peer=", e)});  // schema 11
  if (with_rate && (v.step_index > 0 || v.text_of("pattern") == "stepped")) {
    auto q = v.get("offered_qps");
    p.push_back({"offered_qps", q ? str("@", fmt_num(*q, 3), "qps") : str("step", v.step_index)});
  }
  return p;
}

std::string Variant::short_name(bool with_rate) const {
  std::string s;
  for (const auto& part : name_parts(*this, with_rate))
    if (!part.implicit) add_word(s, part.text);
  return s;
}

std::string name_without(const Variant& v, const std::vector<std::string>& keys, bool with_rate) {
  std::string s;
  for (const auto& part : name_parts(v, with_rate))
    if (!part.implicit && std::find(keys.begin(), keys.end(), part.key) == keys.end()) add_word(s, part.text);
  return s;
}

namespace {

// The parts of each variant whose setting differs somewhere in the set, in name_parts' order;
// `skip` names settings left out (those shown another way). A setting a variant lacks counts as
// a value of its own ("cache" beside no cache differs).
std::vector<std::string> varying_names(const std::vector<const Variant*>& vs, bool with_rate,
                                       const std::set<std::string>& skip) {
  std::vector<std::vector<NamePart>> parts;
  for (const Variant* v : vs) parts.push_back(name_parts(*v, with_rate));
  std::map<std::string, std::set<std::string>> values;  // key -> the texts seen ("" for absent)
  std::vector<std::string> order;                       // keys in first-seen order
  for (const auto& ps : parts)
    for (const auto& p : ps)
      if (!values.count(p.key)) values[p.key], order.push_back(p.key);
  for (const auto& ps : parts)
    for (const auto& key : order) {
      auto it = std::find_if(ps.begin(), ps.end(), [&](const NamePart& p) { return p.key == key; });
      values[key].insert(it == ps.end() ? std::string() : it->text);
    }
  std::vector<std::string> names;
  for (const auto& ps : parts) {
    std::string s;
    for (const auto& p : ps)
      if (!skip.count(p.key) && values[p.key].size() > 1) add_word(s, p.text);
    names.push_back(s);
  }
  return names;
}

}  // namespace

std::vector<std::string> colour_keys(const std::vector<const Variant*>& vs) {
  std::set<std::string> formats;
  for (const Variant* v : vs) formats.insert(name_parts(*v, false).front().text);
  std::vector<std::string> keys;
  if (formats.size() > 1) {
    for (const Variant* v : vs) keys.push_back(name_parts(*v, false).front().text);
    return keys;
  }
  // One format: what else varies, but sparsity and cache (drawn as shape and hollow marker).
  keys = varying_names(vs, false, {"format", "sparsity", "cache_enabled"});
  for (size_t i = 0; i < vs.size(); ++i)
    if (keys[i].empty()) keys[i] = name_parts(*vs[i], false).front().text;
  return keys;
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
