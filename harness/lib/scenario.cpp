#include "harness/lib/scenario.h"

#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "engines/core/cpu.h"
#include "engines/core/format.h"
#include "engines/quant/calibration.h"
#include "engines/quant/recipe.h"
#include "engines/quant/recipe_grid.h"

namespace cibench {

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::single_stream: return "single_stream";
    case Pattern::server: return "server";
    case Pattern::offline: return "offline";
    case Pattern::closed_loop: return "closed_loop";
    case Pattern::stepped: return "stepped";
  }
  return "?";
}

std::string SourcePos::message(const std::string& what) const {
  return str(file, ":", line, ":", column, ": key '", key, "': ", what);
}

const char* shape_name(Shape s) { return s == Shape::padded ? "padded" : "dynamic"; }

Shape parse_shape(const std::string& name) {
  if (name == "dynamic") return Shape::dynamic;
  if (name == "padded") return Shape::padded;
  throw Error(str("unknown shape '", name, "' (dynamic: each request at its own length; padded: padded to classifier.pad_to)"));
}

std::string Variant::label() const {
  std::string s = format_name();
  if (!recipe.empty()) s += " " + recipe;
  s += str(" t", threads, " w", workers);
  if (sparsity > 0) s += str(" sparsity=", sparsity);
  if (kv_mode != KvMode::preallocated) s += std::string(" kv=") + kv_mode_name(kv_mode);
  if (isa) s += std::string(" isa=") + isa_name(*isa);
  if (pin_threads) s += " pinned";
  if (shape != Shape::dynamic) s += std::string(" ") + shape_name(shape);
  if (max_batch > 1) s += str(" b", max_batch);
  if (cache) s += cache_entries > 0 ? str(" cache=", cache_entries) : std::string(" cache");
  if (batching != BatchingMode::none) {
    s += str(" ", batching_name(batching), " tok", max_tokens_per_step);
    if (kv_pool_tokens > 0) s += str(" kv", kv_pool_tokens);
    if (batching == BatchingMode::continuous) s += str(" ", kv_policy_name(kv_policy));
    if (batching == BatchingMode::static_batch && batch_timeout_ms > 0) s += str(" wait", batch_timeout_ms, "ms");
    if (prefix_cache) s += " prefix-cache";
  }
  if (speculative()) {
    // A draft model by its file name (the stored `speculative` column keeps the whole path).
    const std::string d = drafter.kind == DrafterSpec::Kind::draft && drafter.model.rfind("synthetic:", 0) != 0
                              ? "draft:" + std::filesystem::path(drafter.model).filename().string()
                              : drafter.text();
    s += str(" spec=", d, " k", draft_tokens);
  }
  return s;
}

SourcePos Scenario::pos(const std::string& key) const {
  auto it = key_pos.find(key);
  if (it != key_pos.end()) return it->second;
  return SourcePos{path, 1, 1, key};
}

std::string recipe_skip_reason(const std::string& recipe, const FormatRow& row, bool quantized_source) {
  const std::string format = row.name;
  if (recipe.empty()) {
    if (!quantized_source && row.quantize_act_static)
      return str(format, " needs activation scales calibrated by a recipe (rtn, smoothquant, awq, gptq) "
                 "or a .cbq written by cibench quantize");
    return "";
  }
  const std::string name = recipe.substr(0, recipe.find(':'));
  if (!QuantGrid::supports(format))
    return str("recipes target int8, w8a8, w8a8_static, int8_sparse, int8_bs, int8_24 and "
               "int4_g{32,64,128}[_asym]; ", format, " is not one of them");
  if (name == "smoothquant" && row.act == ActType::f32)
    return str("smoothquant moves activation outliers into the weights for int8-activation "
               "formats (w8a8, w8a8_static); ", format, " keeps f32 activations");
  return "";
}

std::vector<std::string> Scenario::skipped() const {
  std::vector<std::string> out;
  for (const auto& f : formats)
    for (const auto& rc : recipes) {
      const std::string why = recipe_skip_reason(rc, *f, is_quantized_model_path(model));
      if (!why.empty()) out.push_back(str(rc.empty() ? "none" : rc, " x ", f->name, ": ", why));
    }
  return out;
}

std::vector<Variant> Scenario::variants() const {
  std::vector<Variant> out;
  std::vector<std::pair<int, int>> tw;  // (threads, workers) in nesting order
  if (layouts.empty()) {
    for (int t : threads)
      for (int w : workers) tw.emplace_back(t, w);
  } else {
    for (auto [w, t] : layouts) tw.emplace_back(t, w);
  }
  for (const auto& f : formats)
   for (const auto& rc : recipes)
    for (double sp : sparsities)
      for (auto [t, w] : tw)
          for (const auto& kv : kv_modes)
            for (const auto& isa : isas)
              for (bool pin : pin_threads)
               for (const auto& shape : shapes)
                for (int mb : max_batches)
                 for (int64_t cache : caches)
                  for (BatchingMode bm : batchings)
                   for (size_t ti = 0; ti < max_tokens_per_steps.size(); ++ti)
                    for (size_t ki = 0; ki < kv_pool_tokens.size(); ++ki)
                     for (size_t pi = 0; pi < kv_policies.size(); ++pi)
                      for (size_t wi = 0; wi < batch_timeouts_ms.size(); ++wi)
                       for (size_t ci = 0; ci < prefix_caches.size(); ++ci)
                        for (const DrafterSpec& ds : drafters)
                         for (size_t di = 0; di < draft_tokens.size(); ++di) {
                if (!recipe_skip_reason(rc, *f, is_quantized_model_path(model)).empty()) continue;
                // Keys the variant's batching mode does not read are not crossed with it.
                if (bm == BatchingMode::none && (ti || ki || pi || wi || ci)) continue;
                if (bm == BatchingMode::static_batch && pi) continue;
                if (bm == BatchingMode::continuous && wi) continue;
                if (bm == BatchingMode::none && batching_given && mb != max_batches.front()) continue;
                if (ds.kind == DrafterSpec::Kind::off && di) continue;  // plain decoding drafts nothing
                Variant v;
                v.index = static_cast<int>(out.size());
                v.format = f;
                v.recipe = rc;
                v.sparsity = sp;
                v.threads = t;
                v.workers = w;
                v.kv_mode = kv;
                v.isa = isa;
                v.pin_threads = pin;
                v.shape = shape;
                v.max_batch = mb;
                v.cache = cache != 0;
                v.cache_entries = cache > 0 ? cache : cache < 0 ? classifier.cache_entries : 0;
                v.cache_bytes = cache != 0 ? classifier.cache_bytes : 0;
                v.batching = bm;
                if (bm == BatchingMode::none && batching_given) v.max_batch = 1;
                if (bm != BatchingMode::none) {
                  v.max_tokens_per_step = max_tokens_per_steps[ti];
                  v.kv_pool_tokens = kv_pool_tokens[ki];
                  v.kv_policy = kv_policies[pi];
                  v.batch_timeout_ms = batch_timeouts_ms[wi];
                  v.prefix_cache = prefix_caches[ci];
                }
                v.drafter = ds;
                v.draft_tokens = ds.kind == DrafterSpec::Kind::off ? 0 : draft_tokens[di];
                out.push_back(v);
              }
  // Each speculative variant's reference: the same point of the matrix without speculation.
  for (Variant& v : out) {
    if (!v.speculative()) continue;
    Variant plain = v;
    plain.drafter = DrafterSpec{};
    plain.draft_tokens = 0;
    const std::string want = plain.label();
    for (const Variant& u : out)
      if (!u.speculative() && u.label() == want) v.spec_baseline = u.index;
  }
  return out;
}

bool is_quantized_model_path(const std::string& p) {
  return p.size() > 4 && p.compare(p.size() - 4, 4, ".cbq") == 0;
}

std::string resolve_slice_path(const std::string& spec) {
  if (std::filesystem::exists(spec)) return spec;
  const TextSlice t = TextSlice::parse(spec);
  return resolve_data_path(t.path) + spec.substr(t.path.size());
}

std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string shared_folder() {
  if (const char* e = std::getenv("CIBENCH_SHARED"); e && *e) return e;
  return CIBENCH_SHARED_DIR;
}

std::string resolve_data_path(const std::string& p) {
  namespace fs = std::filesystem;
  if (p.empty() || fs::path(p).is_absolute() || fs::exists(p)) return p;
  const std::string s = shared_folder() + "/" + p;
  return fs::exists(s) ? s : p;
}

namespace {

const char* type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

// Reads one table: typed getters that name file:line:column and the key on errors, and a
// finish() that rejects every key nobody asked for.
class Reader {
 public:
  // `positions`: where every key read is written down (the scenario's key_pos), or null.
  Reader(const toml::table* t, std::string prefix, std::string file,
         std::map<std::string, SourcePos>* positions = nullptr)
      : t_(t), prefix_(std::move(prefix)), file_(std::move(file)), positions_(positions) {}

  bool present() const { return t_ != nullptr; }

  SourcePos pos_of(const toml::node& n, const std::string& key) const {
    SourcePos p;
    const auto& src = n.source();
    p.file = src.path ? *src.path : file_;
    p.line = static_cast<int>(src.begin.line);
    p.column = static_cast<int>(src.begin.column);
    p.key = full(key);
    if (p.line == 0) {
      // A value merged in by --set has no place in the file: point at it in "key = value", the
      // text apply_override parsed.
      p.file = "--set";
      p.line = 1;
      p.column = static_cast<int>(p.key.size()) + 4;
    }
    return p;
  }
  SourcePos table_pos(const std::string& key) const {
    if (t_) {
      SourcePos p = pos_of(*t_, key);
      if (p.line == 0) p.line = p.column = 1;
      return p;
    }
    return SourcePos{file_, 1, 1, full(key)};
  }

  [[noreturn]] void fail(const toml::node& n, const std::string& key, const std::string& what) const {
    throw ScenarioError(pos_of(n, key).message(what));
  }

  const toml::node* node(const std::string& key) {
    seen_.insert(key);
    const toml::node* n = t_ ? t_->get(key) : nullptr;
    if (n && positions_) (*positions_)[full(key)] = pos_of(*n, key);
    return n;
  }

  std::optional<std::string> str_opt(const std::string& key) {
    const toml::node* n = node(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(*n, key, str("expected a string, got ", type_name(n->type())));
    return n->value<std::string>();
  }
  std::optional<int64_t> int_opt(const std::string& key, int64_t lo, int64_t hi) {
    const toml::node* n = node(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) fail(*n, key, str("expected an integer, got ", type_name(n->type())));
    const int64_t v = *n->value<int64_t>();
    if (v < lo || v > hi) fail(*n, key, str("must be in [", lo, ", ", hi, "], got ", v));
    return v;
  }
  std::optional<double> num_opt(const std::string& key, double lo, double hi) {
    const toml::node* n = node(key);
    if (!n) return std::nullopt;
    if (!n->is_number()) fail(*n, key, str("expected a number, got ", type_name(n->type())));
    const double v = *n->value<double>();
    if (!(v >= lo && v <= hi)) fail(*n, key, str("must be in [", lo, ", ", hi, "], got ", v));
    return v;
  }
  std::optional<bool> bool_opt(const std::string& key) {
    const toml::node* n = node(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) fail(*n, key, str("expected true or false, got ", type_name(n->type())));
    return n->value<bool>();
  }
  // A scalar or an array of scalars of one kind, checked element by element.
  template <typename T>
  std::optional<std::vector<T>> list_opt(const std::string& key,
                                         const std::function<T(const toml::node&)>& conv,
                                         bool allow_empty = false) {
    const toml::node* n = node(key);
    if (!n) return std::nullopt;
    std::vector<T> out;
    if (const toml::array* a = n->as_array()) {
      if (a->empty() && !allow_empty) fail(*n, key, "the list is empty");
      if (a->size() > static_cast<size_t>(kMaxListValues))
        fail(*n, key, str(a->size(), " values; a list holds at most ", kMaxListValues));
      for (const toml::node& e : *a) out.push_back(conv(e));
    } else {
      out.push_back(conv(*n));
    }
    return out;
  }
  const toml::table* sub(const std::string& key) {
    const toml::node* n = node(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(*n, key, str("expected a table, got ", type_name(n->type())));
    return n->as_table();
  }

  void finish() const {
    if (!t_) return;
    for (auto&& [k, v] : *t_) {
      if (seen_.count(std::string(k.str()))) continue;
      SourcePos p;
      p.file = k.source().path ? *k.source().path : file_;
      p.line = static_cast<int>(k.source().begin.line);
      p.column = static_cast<int>(k.source().begin.column);
      if (p.line == 0) p = pos_of(v, std::string(k.str()));
      p.key = full(std::string(k.str()));
      throw ScenarioError(p.message("unknown key" + known_list()));
    }
  }
  void known(std::vector<std::string> keys) { known_ = std::move(keys); }
  std::string full(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  const std::string& file() const { return file_; }
  std::map<std::string, SourcePos>* positions() const { return positions_; }

 private:
  std::string known_list() const {
    if (known_.empty()) return "";
    std::string s = " (known keys:";
    for (auto& k : known_) s += " " + k;
    return s + ")";
  }
  const toml::table* t_;
  std::string prefix_;
  std::string file_;
  std::map<std::string, SourcePos>* positions_ = nullptr;
  std::set<std::string> seen_;
  std::vector<std::string> known_;
};

LengthDist read_length(Reader& r, const std::string& key, const LengthDist& def) {
  const toml::node* n = r.node(key);
  if (!n) return def;
  LengthDist d;
  if (n->is_integer()) {
    d.dist = "fixed";
    d.value = *n->value<int64_t>();
    if (d.value < 1 || d.value > 1000000) r.fail(*n, key, str("must be in [1, 1000000], got ", d.value));
    d.min = d.max = d.value;
    return d;
  }
  if (!n->is_table())
    r.fail(*n, key, str("expected an integer or a table {dist = ...}, got ", type_name(n->type())));
  Reader t(n->as_table(), r.full(key), r.file(), r.positions());
  t.known({"dist", "value", "min", "max", "median", "sigma"});
  d.dist = t.str_opt("dist").value_or("fixed");
  if (d.dist == "fixed") {
    auto v = t.int_opt("value", 1, 1000000);
    if (!v) throw ScenarioError(t.table_pos("value").message("required for dist = \"fixed\""));
    d.value = d.min = d.max = *v;
  } else if (d.dist == "uniform" || d.dist == "lognormal") {
    auto lo = t.int_opt("min", 1, 1000000), hi = t.int_opt("max", 1, 1000000);
    if (!lo || !hi) throw ScenarioError(t.table_pos(lo ? "max" : "min").message(str("required for dist = \"", d.dist, "\"")));
    if (*lo > *hi) throw ScenarioError(t.table_pos("min").message(str("min ", *lo, " > max ", *hi)));
    d.min = *lo;
    d.max = *hi;
    if (d.dist == "lognormal") {
      auto med = t.num_opt("median", 1, 1e6);
      auto sg = t.num_opt("sigma", 0, 10);
      if (!med || !sg) throw ScenarioError(t.table_pos(med ? "sigma" : "median").message("required for dist = \"lognormal\""));
      d.median = *med;
      d.sigma = *sg;
    }
  } else {
    throw ScenarioError(t.pos_of(*n->as_table()->get("dist"), "dist")
                            .message(str("unknown distribution '", d.dist, "' (fixed, uniform, lognormal)")));
  }
  t.finish();
  return d;
}

}  // namespace

void check_toml_limits(const std::string& text, const std::string& origin) {
  if (text.size() > kMaxScenarioBytes)
    throw ScenarioError(str(origin, ": ", text.size(), " bytes; a scenario is at most ", kMaxScenarioBytes,
                            " bytes (they are a few KB)"));
  // One pass outside strings and comments: the segments of each key or table header, and the
  // nesting of arrays and inline tables. toml++ recurses on both (a header 40,000 segments deep
  // overflows the stack), so they are bounded here, before it parses.
  int line = 1, column = 0;
  int segments = 1;        // of the key or header being read
  bool in_key = true;      // reading a key: at a line's start, or after '{' or ',' in an inline table
  bool in_header = false;
  std::string open;        // the '[' and '{' of the value being read, innermost last
  auto fail = [&](const std::string& what) {
    throw ScenarioError(str(origin, ":", line, ":", column, ": ", what));
  };
  auto start_key = [&] {
    in_key = true;
    segments = 1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      if (open.empty()) {
        start_key();
        in_header = false;
      }
      continue;
    }
    if (c == '#') {  // comment: to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {  // strings, multi-line ones included; keys may be quoted too
      const bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      const size_t quote = multi ? 3 : 1;
      size_t j = i + quote;
      for (;; ++j) {
        if (j >= text.size()) return;  // unterminated: toml++ reports it with its position
        if (c == '"' && text[j] == '\\') {
          ++j;
          continue;
        }
        if (text[j] == '\n') {
          if (!multi) return;  // toml++ reports the unterminated string
          ++line;
          column = 0;
        }
        if (text.compare(j, quote, std::string(quote, c)) == 0) break;
      }
      column += static_cast<int>(j + quote - 1 - i);
      i = j + quote - 1;
      continue;
    }
    if (in_key) {  // keys of tables, headers and inline tables: count the dotted parts
      if (c == '.' && ++segments > kMaxKeySegments)
        fail(str("a key or table header of more than ", kMaxKeySegments, " dotted parts (scenario keys have two)"));
      if (open.empty() && c == '[') in_header = true;
      if (c == '=' || (c == ']' && in_header)) in_key = false;
      continue;
    }
    if (c == '[' || c == '{') {
      if (open.size() >= static_cast<size_t>(kMaxValueNesting))
        fail(str("arrays or inline tables nested more than ", kMaxValueNesting, " deep"));
      open += c;
      if (c == '{') start_key();
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    } else if (c == ',' && !open.empty() && open.back() == '{') {
      start_key();
    }
  }
}

namespace {

void apply_override(toml::table& root, const std::string& ov) {
  const auto eq = ov.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ScenarioError(str("--set '", ov, "': expected key=value (e.g. load.target_qps=4)"));
  const std::string key = ov.substr(0, eq), value = ov.substr(eq + 1);
  check_toml_limits(key + " = " + value, str("--set '", ov.substr(0, 80), ov.size() > 80 ? "...'" : "'"));
  toml::table t;
  try {
    t = toml::parse(key + " = " + value, std::string_view("--set"));
  } catch (const toml::parse_error&) {
    try {
      if (value.find('\'') != std::string::npos || value.find('\n') != std::string::npos) throw;
      t = toml::parse(key + " = '" + value + "'", std::string_view("--set"));
    } catch (const toml::parse_error& e) {
      throw ScenarioError(str("--set '", ov, "': ", e.description()));
    }
  }
  // Merge leaves (non-tables replace, tables merge).
  std::function<void(toml::table&, const toml::table&, const std::string&)> merge =
      [&](toml::table& dst, const toml::table& src, const std::string& path) {
        for (auto&& [k, v] : src) {
          const std::string name = path.empty() ? std::string(k.str()) : path + "." + std::string(k.str());
          if (const toml::table* st = v.as_table()) {
            toml::node* existing = dst.get(k.str());
            if (existing && !existing->is_table())
              throw ScenarioError(str("--set '", ov, "': '", name, "' is not a table in the scenario"));
            if (!existing) dst.insert(k, toml::table{});
            merge(*dst.get(k.str())->as_table(), *st, name);
          } else {
            dst.insert_or_assign(k, v);
          }
        }
      };
  merge(root, t, "");
}

Scenario parse_table(toml::table& root, const std::string& path, const std::vector<std::string>& overrides) {
  for (const auto& ov : overrides) apply_override(root, ov);

  Scenario s;
  s.path = path;
  s.overrides = overrides;
  Reader top(&root, "", path, &s.key_pos);
  top.known({"scenario", "model", "matrix", "workload", "load", "run", "seeds", "slo", "accuracy", "calibration", "counters", "classifier"});
  // Unknown top-level tables first, so a typo there is reported before anything else.
  for (const char* k : {"scenario", "model", "matrix", "workload", "load", "run", "seeds", "slo", "accuracy", "calibration", "counters", "classifier"})
    top.node(k);
  top.finish();

  {  // [scenario]
    Reader r(top.sub("scenario"), "scenario", path, &s.key_pos);
    r.known({"name", "description", "question"});
    s.name = r.str_opt("name").value_or(std::filesystem::path(path).stem().string());
    s.description = r.str_opt("description").value_or("");
    s.question = r.str_opt("question").value_or("");
    r.finish();
  }
  {  // [model]
    Reader r(top.sub("model"), "model", path, &s.key_pos);
    r.known({"source", "tokenizer", "source_model"});
    const toml::node* n = r.node("source");
    if (!n) throw ScenarioError(r.table_pos("source").message(
        "required: the model (a file or folder, synthetic:NAME[@seed], or sut:null / sut:sleep?ms=N)"));
    s.model_pos = r.pos_of(*n, "source");
    s.model = *r.str_opt("source");
    if (s.model.empty()) r.fail(*n, "source", "the model is empty");
    const bool special = s.model.rfind("synthetic:", 0) == 0 || s.model.rfind("sut:", 0) == 0;
    if (!special && !std::filesystem::exists(resolve_data_path(s.model)))
      r.fail(*n, "source", str("model '", s.model, "' not found (neither a file nor under ", shared_folder(), ")"));
    if (!special) s.model = resolve_data_path(s.model);
    s.tokenizer = r.str_opt("tokenizer").value_or("");
    if (!s.tokenizer.empty()) {
      if (!std::filesystem::exists(resolve_data_path(s.tokenizer)))
        r.fail(*r.node("tokenizer"), "tokenizer", str("tokenizer '", s.tokenizer, "' not found"));
      s.tokenizer = resolve_data_path(s.tokenizer);
    }
    s.source_model = r.str_opt("source_model").value_or("");
    const bool cbq = !special && is_quantized_model_path(s.model);
    if (cbq && s.source_model.empty())
      r.fail(*n, "source", "a quantised model file (.cbq) needs model.source_model: the FP32 model it "
                           "was made from (its content hash is checked, and it is the accuracy reference)");
    if (!s.source_model.empty()) {
      if (!cbq) r.fail(*r.node("source_model"), "source_model", "only meaningful when model.source is a quantised model file (.cbq)");
      if (!std::filesystem::exists(resolve_data_path(s.source_model)))
        r.fail(*r.node("source_model"), "source_model", str("model '", s.source_model, "' not found"));
      s.source_model = resolve_data_path(s.source_model);
    }
    r.finish();
  }
  {  // [matrix]
    Reader r(top.sub("matrix"), "matrix", path, &s.key_pos);
    r.known({"format", "recipe", "sparsity", "threads", "workers", "kv_mode", "isa", "pin_threads", "shapes", "max_batch", "cache", "layout",
             "batching", "max_tokens_per_step", "kv_pool_tokens", "kv_policy", "batch_timeout_ms",
             "prefix_cache", "speculative", "draft_tokens"});
    auto as_string = [&](const std::string& key) {
      return [&r, key](const toml::node& e) -> std::string {
        if (!e.is_string()) r.fail(e, key, str("expected a string, got ", type_name(e.type())));
        return *e.value<std::string>();
      };
    };
    auto as_int = [&](const std::string& key, int lo, int hi) {
      return [&r, key, lo, hi](const toml::node& e) -> int {
        if (!e.is_integer()) r.fail(e, key, str("expected an integer, got ", type_name(e.type())));
        const int64_t v = *e.value<int64_t>();
        if (v < lo || v > hi) r.fail(e, key, str("must be in [", lo, ", ", hi, "], got ", v));
        return static_cast<int>(v);
      };
    };
    if (auto v = r.list_opt<const FormatRow*>("format", [&](const toml::node& e) -> const FormatRow* {
          const std::string f = as_string("format")(e);
          try {
            return &format_by_name(f);
          } catch (const Error& err) {
            r.fail(e, "format", err.what());
          }
        }))
      s.formats = *v;
    if (auto v = r.list_opt<std::string>("recipe", [&](const toml::node& e) {
          std::string rc = as_string("recipe")(e);
          if (rc == "none") return std::string();
          try {  // "name[:param=value...]"
            RecipeSpec::parse(rc, "int8");
          } catch (const Error& err) {
            r.fail(e, "recipe", err.what());
          }
          return rc;
        }))
      s.recipes = *v;
    if (auto v = r.list_opt<double>("sparsity", [&](const toml::node& e) {
          if (!e.is_number()) r.fail(e, "sparsity", str("expected a number, got ", type_name(e.type())));
          const double x = *e.value<double>();
          if (!(x >= 0 && x < 1)) r.fail(e, "sparsity", str("must be in [0, 1), got ", x));
          return x;
        }))
      s.sparsities = *v;
    if (auto v = r.list_opt<int>("threads", as_int("threads", 1, 1024))) s.threads = *v;
    if (auto v = r.list_opt<int>("workers", as_int("workers", 1, 1024))) s.workers = *v;
    if (auto v = r.list_opt<KvMode>("kv_mode", [&](const toml::node& e) {
          const std::string name = as_string("kv_mode")(e);
          try {
            return parse_kv_mode(name);
          } catch (const Error& err) {
            r.fail(e, "kv_mode", err.what());
          }
        }))
      s.kv_modes = *v;
    if (auto v = r.list_opt<std::optional<Isa>>("isa", [&](const toml::node& e) -> std::optional<Isa> {
          const std::string name = as_string("isa")(e);
          if (name == "auto") return std::nullopt;
          try {
            return parse_isa(name);
          } catch (const Error& err) {
            r.fail(e, "isa", err.what());
          }
        }))
      s.isas = *v;
    if (auto v = r.list_opt<bool>("pin_threads", [&](const toml::node& e) {
          if (!e.is_boolean()) r.fail(e, "pin_threads", str("expected true or false, got ", type_name(e.type())));
          return *e.value<bool>();
        }))
      s.pin_threads = *v;
    if (auto v = r.list_opt<std::pair<int, int>>("layout", [&](const toml::node& e) {
          const std::string l = as_string("layout")(e);
          int w = 0, t = 0;
          char x = 0, extra = 0;
          if (std::sscanf(l.c_str(), "%d%c%d%c", &w, &x, &t, &extra) != 3 || x != 'x' || w < 1 || t < 1 || w > 1024 || t > 1024)
            r.fail(e, "layout", str("expected \"WxT\" (workers x threads per worker, e.g. \"2x1\"), got '", l, "'"));
          return std::make_pair(w, t);
        })) {
      if (r.node("threads") || r.node("workers"))
        r.fail(*r.node("layout"), "layout", "give either layout or threads/workers, not both");
      s.layouts = *v;
    }
    if (auto v = r.list_opt<Shape>("shapes", [&](const toml::node& e) {
          const std::string sh = as_string("shapes")(e);
          try {
            return parse_shape(sh);
          } catch (const Error& err) {
            r.fail(e, "shapes", err.what());
          }
        }))
      s.shapes = *v;
    if (auto v = r.list_opt<int>("max_batch", as_int("max_batch", 1, 1024))) s.max_batches = *v;
    if (auto v = r.list_opt<int64_t>("cache", [&](const toml::node& e) -> int64_t {
          if (e.is_boolean()) return *e.value<bool>() ? -1 : 0;
          if (e.is_integer()) {
            const int64_t x = *e.value<int64_t>();
            if (x < 0 || x > 1000000000) r.fail(e, "cache", str("an entry limit must be in [0, 1000000000], got ", x));
            return x;
          }
          r.fail(e, "cache", str("expected true, false or an entry limit (integer), got ", type_name(e.type())));
        }))
      s.caches = *v;
    if (auto v = r.list_opt<BatchingMode>("batching", [&](const toml::node& e) {
          const std::string name = as_string("batching")(e);
          try {
            return parse_batching(name);
          } catch (const Error& err) {
            r.fail(e, "batching", err.what());
          }
        })) {
      s.batchings = *v;
      s.batching_given = true;
    }
    if (auto v = r.list_opt<int>("max_tokens_per_step", as_int("max_tokens_per_step", 1, 65536))) s.max_tokens_per_steps = *v;
    if (auto v = r.list_opt<int64_t>("kv_pool_tokens", [&](const toml::node& e) -> int64_t {
          if (!e.is_integer()) r.fail(e, "kv_pool_tokens", str("expected an integer, got ", type_name(e.type())));
          const int64_t x = *e.value<int64_t>();
          if (x != 0 && (x < 16 || x > 16777216))
            r.fail(e, "kv_pool_tokens", str("must be 0 (max_batch x the context) or in [16, 16777216] positions, got ", x));
          return x;
        }))
      s.kv_pool_tokens = *v;
    if (auto v = r.list_opt<KvPolicy>("kv_policy", [&](const toml::node& e) {
          const std::string name = as_string("kv_policy")(e);
          try {
            return parse_kv_policy(name);
          } catch (const Error& err) {
            r.fail(e, "kv_policy", err.what());
          }
        }))
      s.kv_policies = *v;
    if (auto v = r.list_opt<double>("batch_timeout_ms", [&](const toml::node& e) {
          if (!e.is_number()) r.fail(e, "batch_timeout_ms", str("expected a number, got ", type_name(e.type())));
          const double x = *e.value<double>();
          if (!(x >= 0 && x <= 60000)) r.fail(e, "batch_timeout_ms", str("must be in [0, 60000] ms, got ", x));
          return x;
        }))
      s.batch_timeouts_ms = *v;
    if (auto v = r.list_opt<bool>("prefix_cache", [&](const toml::node& e) {
          if (!e.is_boolean()) r.fail(e, "prefix_cache", str("expected true or false, got ", type_name(e.type())));
          return *e.value<bool>();
        }))
      s.prefix_caches = *v;
    if (auto v = r.list_opt<DrafterSpec>("speculative", [&](const toml::node& e) {
          const std::string text = as_string("speculative")(e);
          try {
            DrafterSpec d = parse_drafter_spec(text);
            if (d.kind == DrafterSpec::Kind::draft) {
              if (!std::filesystem::exists(resolve_data_path(d.model)) && d.model.rfind("synthetic:", 0) != 0)
                r.fail(e, "speculative", str("draft model '", d.model, "' not found"));
              d.model = resolve_data_path(d.model);
            }
            return d;
          } catch (const Error& err) {
            r.fail(e, "speculative", err.what());
          }
        }))
      s.drafters = *v;
    if (auto v = r.list_opt<int>("draft_tokens", as_int("draft_tokens", 1, 64))) s.draft_tokens = *v;
    {
      bool any_spec = false;
      for (const DrafterSpec& d : s.drafters) any_spec |= d.kind != DrafterSpec::Kind::off;
      if (!any_spec && r.node("draft_tokens"))
        r.fail(*r.node("draft_tokens"), "draft_tokens", "only meaningful with a matrix.speculative drafter other than \"off\"");
      if (any_spec)
        for (BatchingMode m : s.batchings)
          if (m != BatchingMode::none)
            r.fail(*r.node("speculative"), "speculative",
                   str("speculative decoding runs with batching \"none\" (each worker's sequence verifies its drafts in "
                       "its own session); with batching \"", batching_name(m), "\" it is not implemented: the batch "
                       "engine has no multi-token verification or rewind per sequence yet. Put the speculative variants in "
                       "a scenario with matrix.batching = [\"none\"]"));
      if (any_spec)
        for (KvMode m : s.kv_modes)
          if (m == KvMode::none)
            r.fail(*r.node("speculative"), "speculative",
                   str("speculative decoding needs a KV cache to roll back; matrix.kv_mode has \"", kv_mode_name(m), "\""));
    }
    {
      bool has_static = false, has_cont = false;
      for (BatchingMode m : s.batchings) {
        has_static |= m == BatchingMode::static_batch;
        has_cont |= m == BatchingMode::continuous;
      }
      const char* need_any[] = {"max_tokens_per_step", "kv_pool_tokens", "prefix_cache"};
      for (const char* k : need_any)
        if (!has_static && !has_cont && r.node(k))
          r.fail(*r.node(k), k, "only meaningful with matrix.batching \"static\" or \"continuous\"");
      if (!has_cont && r.node("kv_policy"))
        r.fail(*r.node("kv_policy"), "kv_policy", "only meaningful with matrix.batching \"continuous\"");
      if (!has_static && r.node("batch_timeout_ms"))
        r.fail(*r.node("batch_timeout_ms"), "batch_timeout_ms", "only meaningful with matrix.batching \"static\"");
      if ((has_static || has_cont) && r.node("workers"))
        for (int w : s.workers)
          if (w != 1)
            r.fail(*r.node("workers"), "workers", str("static and continuous batching serve from one engine thread: workers must be 1, got ", w));
      if ((has_static || has_cont) && r.node("layout"))
        for (auto [w, t] : s.layouts)
          if (w != 1)
            r.fail(*r.node("layout"), "layout", str("static and continuous batching serve from one engine thread: workers must be 1, got ", w));
    }
    r.finish();
  }
  {  // [workload]
    Reader r(top.sub("workload"), "workload", path, &s.key_pos);
    r.known({"source", "eval_set", "samples", "prompt_tokens", "gen_tokens", "sampling", "zipf_s", "replay",
             "shared_prefix_tokens", "shared_prefixes", "prompt_repeat"});
    s.workload_source = r.str_opt("source").value_or("synthetic");
    if (s.workload_source != "synthetic" && s.workload_source != "eval")
      r.fail(*r.node("source"), "source", str("must be \"synthetic\" or \"eval\", got '", s.workload_source, "'"));
    s.eval_set = r.str_opt("eval_set").value_or("");
    if (s.workload_source == "eval") {
      if (s.eval_set.empty())
        throw ScenarioError(r.table_pos("eval_set").message("required when source = \"eval\""));
      if (!std::filesystem::exists(resolve_data_path(s.eval_set)))
        r.fail(*r.node("eval_set"), "eval_set", str("eval set '", s.eval_set, "' not found"));
      s.eval_set = resolve_data_path(s.eval_set);
    }
    s.synthetic_samples = r.int_opt("samples", 1, 100000000).value_or(1024);
    LengthDist def_prompt;
    def_prompt.value = def_prompt.min = def_prompt.max = 32;
    LengthDist def_gen;
    def_gen.value = def_gen.min = def_gen.max = 16;
    s.prompt_tokens = read_length(r, "prompt_tokens", def_prompt);
    s.gen_tokens = read_length(r, "gen_tokens", def_gen);
    s.shared_prefix_tokens = static_cast<int>(r.int_opt("shared_prefix_tokens", 0, 1000000).value_or(0));
    if (auto k = r.int_opt("shared_prefixes", 1, 1000000)) {
      if (s.shared_prefix_tokens == 0)
        r.fail(*r.node("shared_prefixes"), "shared_prefixes", "only meaningful with shared_prefix_tokens > 0");
      s.shared_prefixes = static_cast<int>(*k);
    }
    s.prompt_tokens.offset = s.shared_prefix_tokens;
    if (auto k = r.int_opt("prompt_repeat", 0, 1000000)) {
      if (s.workload_source != "synthetic")
        r.fail(*r.node("prompt_repeat"), "prompt_repeat", "only meaningful with source = \"synthetic\" (eval text is what it is)");
      s.prompt_repeat = static_cast<int>(*k);
    }
    s.sampling = r.str_opt("sampling").value_or("uniform");
    if (s.sampling != "uniform" && s.sampling != "zipf" && s.sampling != "replay")
      r.fail(*r.node("sampling"), "sampling", str("must be \"uniform\", \"zipf\" or \"replay\", got '", s.sampling, "'"));
    if (auto z = r.num_opt("zipf_s", 1e-6, 100)) {
      if (s.sampling != "zipf") r.fail(*r.node("zipf_s"), "zipf_s", "only meaningful with sampling = \"zipf\"");
      s.zipf_s = *z;
    }
    s.replay = r.str_opt("replay").value_or("");
    if (s.sampling == "replay") {
      if (s.replay.empty()) throw ScenarioError(r.table_pos("replay").message("required when sampling = \"replay\": a file of sample indices"));
      if (!std::filesystem::exists(resolve_data_path(s.replay)))
        r.fail(*r.node("replay"), "replay", str("replay file '", s.replay, "' not found"));
      s.replay = resolve_data_path(s.replay);
    } else if (!s.replay.empty()) {
      r.fail(*r.node("replay"), "replay", "only meaningful with sampling = \"replay\"");
    }
    r.finish();
  }
  {  // [load]
    Reader r(top.sub("load"), "load", path, &s.key_pos);
    r.known({"pattern", "target_qps", "clients", "rates_qps", "burstiness"});
    const std::string p = r.str_opt("pattern").value_or("single_stream");
    if (p == "single_stream") s.pattern = Pattern::single_stream;
    else if (p == "server") s.pattern = Pattern::server;
    else if (p == "offline") s.pattern = Pattern::offline;
    else if (p == "closed_loop") s.pattern = Pattern::closed_loop;
    else if (p == "stepped") s.pattern = Pattern::stepped;
    else r.fail(*r.node("pattern"), "pattern",
                str("unknown pattern '", p, "' (single_stream, server, offline, closed_loop, stepped)"));
    s.target_qps = r.num_opt("target_qps", 1e-6, 1e9).value_or(0);
    s.clients = static_cast<int>(r.int_opt("clients", 1, 100000).value_or(1));
    if (auto v = r.list_opt<double>("rates_qps", [&](const toml::node& e) {
          if (!e.is_number()) r.fail(e, "rates_qps", str("expected a number, got ", type_name(e.type())));
          const double x = *e.value<double>();
          if (!(x > 0)) r.fail(e, "rates_qps", str("must be > 0, got ", x));
          return x;
        }, /*allow_empty=*/true))  // [] drops a file's rates (--set load.pattern=server ...)
      s.rates_qps = *v;
    if (const toml::node* b = r.node("burstiness")) {
      if (!b->is_number()) r.fail(*b, "burstiness", str("expected a number, got ", type_name(b->type())));
      const double x = *b->value<double>();
      if (!(x >= kMinBurstiness && x <= kMaxBurstiness))
        r.fail(*b, "burstiness", str("must be in [", kMinBurstiness, ", ", kMaxBurstiness, "], got ", x,
                                     " (the shape of the Gamma gaps: 1 = Poisson, below 1 burstier, above 1 more even)"));
      if (s.pattern != Pattern::server && s.pattern != Pattern::stepped)
        r.fail(*b, "burstiness", str("shapes the gaps of drawn arrivals: only pattern = \"server\" or \"stepped\", not \"",
                                     p, "\""));
      s.burstiness = x;
    }
    r.finish();
    if (s.pattern == Pattern::server && s.target_qps <= 0)
      throw ScenarioError(r.table_pos("target_qps").message("required (> 0) for pattern = \"server\""));
    if (s.pattern == Pattern::stepped && s.rates_qps.empty())
      throw ScenarioError(r.table_pos("rates_qps").message("required for pattern = \"stepped\""));
    // Rates that would be ignored are refused: the run would not be the sweep its file describes.
    if (s.pattern != Pattern::stepped && !s.rates_qps.empty())
      throw ScenarioError(s.pos("load.rates_qps").message(str("only pattern = \"stepped\" sweeps rates; the pattern is \"",
                                                              p, "\" (give target_qps and rates_qps = [], or set pattern = \"stepped\")")));
  }
  {  // [run]
    Reader r(top.sub("run"), "run", path, &s.key_pos);
    r.known({"warmup_queries", "min_duration_ms", "min_queries", "max_duration_ms", "exact_sample_cap"});
    s.warmup_queries = r.int_opt("warmup_queries", 0, 1000000).value_or(2);
    s.min_duration_ms = r.int_opt("min_duration_ms", 0, 86400000).value_or(1000);
    s.min_queries = r.int_opt("min_queries", 1, 1000000000).value_or(16);
    s.max_duration_ms = r.int_opt("max_duration_ms", 1, 86400000).value_or(60000);
    s.exact_sample_cap = r.int_opt("exact_sample_cap", 0, 100000000).value_or(262144);
    if (s.max_duration_ms < s.min_duration_ms)
      throw ScenarioError(r.table_pos("max_duration_ms")
                              .message(str("max_duration_ms ", s.max_duration_ms, " < min_duration_ms ", s.min_duration_ms)));
    r.finish();
  }
  {  // [seeds]
    Reader r(top.sub("seeds"), "seeds", path, &s.key_pos);
    r.known({"arrivals", "samples", "lengths"});
    s.seed_arrivals = static_cast<uint64_t>(r.int_opt("arrivals", 0, INT64_MAX).value_or(1));
    s.seed_samples = static_cast<uint64_t>(r.int_opt("samples", 0, INT64_MAX).value_or(2));
    s.seed_lengths = static_cast<uint64_t>(r.int_opt("lengths", 0, INT64_MAX).value_or(3));
    r.finish();
  }
  {  // [slo]
    const toml::table* t = top.sub("slo");
    Reader r(t, "slo", path, &s.key_pos);
    if (t) {
      for (auto&& [k, v] : *t) {
        const std::string key(k.str());
        auto slo = parse_slo_key(key);
        if (!slo) r.fail(v, key, str("unknown SLO key (use ", slo_key_grammar(), ")"));
        slo->limit_ms = *r.num_opt(key, 0, 1e12);
        s.slos.push_back(*slo);
      }
    }
    r.finish();
  }
  {  // [accuracy]
    Reader r(top.sub("accuracy"), "accuracy", path, &s.key_pos);
    r.known({"enabled", "eval_set", "reference_format", "max_tokens", "window", "min_top1_agreement",
             "max_kl_mean", "max_kl_p99", "max_ppl_ratio", "max_accuracy_drop", "min_task_accuracy",
             "bootstrap_resamples", "bootstrap_seed", "task", "task_metric", "task_max_new_tokens", "task_limit"});
    AccuracySpec& a = s.accuracy;
    a.enabled = r.present() ? r.bool_opt("enabled").value_or(true) : false;
    a.eval_set = r.str_opt("eval_set").value_or("");
    if (!a.eval_set.empty()) {  // a file, or FILE:A-B (documents A .. B-1)
      try {
        a.eval_set = resolve_slice_path(a.eval_set);
        if (!std::filesystem::exists(TextSlice::parse(a.eval_set).path))
          r.fail(*r.node("eval_set"), "eval_set", str("eval set '", a.eval_set, "' not found"));
      } catch (const ScenarioError&) {
        throw;
      } catch (const Error& e) {
        r.fail(*r.node("eval_set"), "eval_set", e.what());
      }
    }
    a.reference_format = r.str_opt("reference_format").value_or("f32");
    a.max_tokens = static_cast<int>(r.int_opt("max_tokens", 2, 10000000).value_or(512));
    a.window = static_cast<int>(r.int_opt("window", 2, 1000000).value_or(128));
    a.min_top1_agreement = r.num_opt("min_top1_agreement", 0, 1);
    a.max_kl_mean = r.num_opt("max_kl_mean", 0, 1e9);
    a.max_kl_p99 = r.num_opt("max_kl_p99", 0, 1e9);
    a.max_ppl_ratio = r.num_opt("max_ppl_ratio", 0, 1e9);
    a.max_accuracy_drop = r.num_opt("max_accuracy_drop", 0, 1);  // a drop: a negative one is no floor
    a.min_task_accuracy = r.num_opt("min_task_accuracy", 0, 1);
    a.bootstrap_resamples = static_cast<int>(r.int_opt("bootstrap_resamples", 10, 1000000).value_or(1000));
    a.bootstrap_seed = static_cast<uint64_t>(r.int_opt("bootstrap_seed", 0, INT64_MAX).value_or(1));
    // A task file: as given (relative to the working folder), else beside the scenario file, else
    // in the shared folder; read and checked now, so a malformed one stores nothing.
    a.task = r.str_opt("task").value_or("");
    a.task_max_new_tokens = static_cast<int>(r.int_opt("task_max_new_tokens", 1, 100000).value_or(32));
    a.task_limit = static_cast<int>(r.int_opt("task_limit", 0, 100000000).value_or(0));
    const std::string metric = r.str_opt("task_metric").value_or("");
    if (!a.task.empty()) {
      namespace fs = std::filesystem;
      std::string found = a.task;
      if (!fs::exists(found) && fs::path(a.task).is_relative()) {
        const fs::path beside = fs::path(path).parent_path() / a.task;
        if (fs::exists(beside)) found = beside.string();
        else if (fs::exists(resolve_slice_path(a.task))) found = resolve_slice_path(a.task);
      }
      if (!fs::exists(found)) r.fail(*r.node("task"), "task", str("task file '", a.task, "' not found"));
      a.task = found;
      try {
        TaskSet ts = read_task_file(found);
        if (a.task_limit > 0 && static_cast<size_t>(a.task_limit) < ts.items.size())
          ts.items.resize(static_cast<size_t>(a.task_limit));
        const std::vector<std::string> metrics = task_metrics(ts.kind);
        a.task_metric = metric.empty() ? metrics.front() : metric;
        if (std::find(metrics.begin(), metrics.end(), a.task_metric) == metrics.end())
          r.fail(*r.node("task_metric"), "task_metric",
                 str("'", a.task_metric, "' is not a metric of a ", task_kind_name(ts.kind), " task (",
                     join_metrics(metrics), ")"));
        a.task_set = std::make_shared<const TaskSet>(std::move(ts));
      } catch (const TaskError& e) {
        r.fail(*r.node("task"), "task", e.what());
      }
    } else if (!metric.empty()) {
      r.fail(*r.node("task_metric"), "task_metric", "a task metric without a task file (accuracy.task)");
    }
    r.finish();
  }
  {  // [calibration]
    Reader r(top.sub("calibration"), "calibration", path, &s.key_pos);
    r.known({"slice", "samples", "seq_len", "seed"});
    CalibrationSpec& c = s.calibration;
    c.enabled = r.present();
    if (c.enabled) {
      const toml::node* n = r.node("slice");
      if (!n) throw ScenarioError(r.table_pos("slice").message("required: the calibration text, FILE:A-B (documents A .. B-1)"));
      try {
        c.slice = resolve_slice_path(*r.str_opt("slice"));
        if (!std::filesystem::exists(TextSlice::parse(c.slice).path))
          r.fail(*n, "slice", str("calibration text '", c.slice, "' not found"));
      } catch (const ScenarioError&) {
        throw;
      } catch (const Error& e) {
        r.fail(*n, "slice", e.what());
      }
      c.samples = static_cast<int>(r.int_opt("samples", 1, 1000000).value_or(64));
      c.seq_len = static_cast<int>(r.int_opt("seq_len", 2, 1000000).value_or(128));
      c.seed = static_cast<uint64_t>(r.int_opt("seed", 0, INT64_MAX).value_or(1234));
    }
    r.finish();
    bool needs = false;
    for (const auto& rc : s.recipes) {
      if (rc.empty()) continue;
      needs |= recipe_by_name(rc.substr(0, rc.find(':'))).needs_calibration;
      for (const FormatRow* f : s.formats) needs |= QuantGrid::supports(f->name) && f->quantize_act_static;
    }
    if (needs && !c.enabled)
      throw ScenarioError(s.pos("matrix.recipe").message(
          "these recipes (or w8a8_static) need calibration data: add a [calibration] table with slice = \"FILE:A-B\""));
  }
  {  // [classifier]
    Reader r(top.sub("classifier"), "classifier", path, &s.key_pos);
    r.known({"pad_to", "max_wait_ms", "cache_entries", "cache_bytes"});
    ClassifierSpec& c = s.classifier;
    c.pad_to = static_cast<int>(r.int_opt("pad_to", 2, 1000000).value_or(128));
    c.max_wait_ms = r.num_opt("max_wait_ms", 0, 60000).value_or(0);
    c.cache_entries = r.int_opt("cache_entries", 0, 1000000000).value_or(1024);
    c.cache_bytes = r.int_opt("cache_bytes", 0, INT64_MAX).value_or(0);
    if (c.cache_entries == 0 && c.cache_bytes == 0)
      throw ScenarioError(r.table_pos(r.node("cache_bytes") ? "cache_bytes" : "cache_entries")
                              .message("the result cache needs a limit: cache_entries or cache_bytes > 0"));
    r.finish();
    // Harness-formed batches: max_batch > 1 with batching "none" (static / continuous batch in the SUT).
    bool batching = false;
    for (int mb : s.max_batches) batching |= mb > 1;
    if (s.batching_given) batching = false;
    if (batching && s.pattern != Pattern::server && s.pattern != Pattern::stepped && s.pattern != Pattern::offline)
      throw ScenarioError(s.pos("matrix.max_batch").message(str("harness-formed batches need load.pattern server, stepped or offline, not ", pattern_name(s.pattern))));
  }
  {  // [counters]
    Reader r(top.sub("counters"), "counters", path, &s.key_pos);
    r.known({"enabled", "mode", "profile_queries"});
    s.counters_enabled = r.bool_opt("enabled").value_or(true);
    s.counters_mode = r.str_opt("mode").value_or("separate");
    if (s.counters_mode != "separate" && s.counters_mode != "same")
      r.fail(*r.node("mode"), "mode", str("must be \"separate\" (a profiling pass after the timed run) or \"same\" (counted during the timed run), got '", s.counters_mode, "'"));
    s.profile_queries = r.int_opt("profile_queries", 1, 1000000).value_or(4);
    r.finish();
  }
  top.finish();

  // The size of the suite, before anything runs: the matrix's cross product (and its steps).
  {
    const double layouts = s.layouts.empty() ? static_cast<double>(s.threads.size()) * s.workers.size()
                                             : static_cast<double>(s.layouts.size());
    const double n = static_cast<double>(s.formats.size()) * s.recipes.size() * s.sparsities.size() * layouts *
                     s.kv_modes.size() * s.isas.size() * s.pin_threads.size() * s.shapes.size() *
                     s.max_batches.size() * s.caches.size() * s.batchings.size() * s.max_tokens_per_steps.size() *
                     s.kv_pool_tokens.size() * s.kv_policies.size() * s.batch_timeouts_ms.size() *
                     s.prefix_caches.size() * s.drafters.size() * s.draft_tokens.size();
    const double steps = s.pattern == Pattern::stepped ? static_cast<double>(s.rates_qps.size()) : 1.0;
    // The schedule of a step is computed up front: an offered rate that would issue more than
    // kMaxScheduledQueries within max_duration_ms is refused (1e9 qps would allocate terabytes).
    double top_qps = s.target_qps;
    for (double r : s.rates_qps) top_qps = std::max(top_qps, r);
    if (top_qps * static_cast<double>(s.max_duration_ms) / 1000.0 > kMaxScheduledQueries)
      throw ScenarioError(s.pos(s.pattern == Pattern::stepped ? "load.rates_qps" : "load.target_qps").message(
          str(top_qps, " queries/s for up to run.max_duration_ms = ", s.max_duration_ms, " ms schedules more than ",
              kMaxScheduledQueries, " queries; lower the rate or the duration")));
    if (n * steps > kMaxSuiteSteps)
      throw ScenarioError(s.pos("matrix").message(
          str("the matrix expands to ", n, " variants", steps > 1 ? str(" x ", steps, " rates") : std::string(),
              "; a suite runs at most ", kMaxSuiteSteps, " (split it into several scenarios)")));
  }

  std::ostringstream os;
  os << root;
  s.canonical = os.str();
  s.hash = fnv1a_hex(s.canonical);
  return s;
}

}  // namespace

Scenario parse_scenario_text(const std::string& text, const std::string& path,
                             const std::vector<std::string>& overrides) {
  check_toml_limits(text, path);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& e) {
    throw ScenarioError(str(path, ":", e.source().begin.line, ":", e.source().begin.column, ": ",
                            e.description()));
  }
  return parse_table(root, path, overrides);
}

Scenario parse_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  // A FIFO or device would block the read forever, a folder is not a scenario: refuse what is
  // not a regular file, and a file too large to be one, before opening it.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw ScenarioError(str(path, ": not a regular file (", std::filesystem::is_directory(st) ? "a folder" : "a FIFO, socket or device",
                            "); a scenario is a .toml file"));
  if (!ec && std::filesystem::is_regular_file(st)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxScenarioBytes)
      throw ScenarioError(str(path, ": ", size, " bytes; a scenario is at most ", kMaxScenarioBytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(str(path, ": cannot open the scenario file"));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario_text(ss.str(), path, overrides);
}

std::vector<QualityFloor> AccuracySpec::floors() const {
  std::vector<QualityFloor> out;
  const std::pair<const char*, const std::optional<double>*> set[] = {
      {"min_top1_agreement", &min_top1_agreement}, {"max_kl_mean", &max_kl_mean},
      {"max_kl_p99", &max_kl_p99},                 {"max_ppl_ratio", &max_ppl_ratio},
      {"min_task_accuracy", &min_task_accuracy},   {"max_accuracy_drop", &max_accuracy_drop}};
  for (const auto& [key, value] : set)
    if (*value) out.push_back(QualityFloor::make(key, **value));
  return out;
}

}  // namespace cibench
