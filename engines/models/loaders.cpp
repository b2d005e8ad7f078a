// open_llama_source: llama2.c legacy .bin, Hugging Face folders (config.json + safetensors) and
// GGUF files, each delivered as f32 rows in the canonical layout of llama_config.h.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "engines/core/buffer.h"
#include "engines/core/format.h"
#include "engines/core/error.h"
#include "engines/models/hf_config.h"
#include "engines/models/ggml_quants.h"
#include "engines/models/gguf.h"
#include "engines/models/llama_config.h"
#include "engines/models/synthetic.h"
#include "engines/models/safetensors.h"

namespace cibench {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}


// ---------------------------------------------------------------------------------------------
// XXH64 (xxHash, seed 0), streaming. content_hash = "xxh64:" + 16 hex digits; for a single file
// it equals `xxhsum -H64 FILE`.

class Xxh64 {
 public:
  void update(const uint8_t* p, size_t n) {
    total_ += n;
    if (buf_len_ > 0) {
      const size_t take = std::min(n, size_t{32} - buf_len_);
      std::memcpy(buf_ + buf_len_, p, take);
      buf_len_ += take;
      p += take;
      n -= take;
      if (buf_len_ < 32) return;
      stripe(buf_);
      buf_len_ = 0;
    }
    for (; n >= 32; p += 32, n -= 32) stripe(p);
    std::memcpy(buf_, p, n);
    buf_len_ = n;
  }

  uint64_t digest() const {
    uint64_t h;
    if (total_ >= 32) {
      h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
      for (uint64_t v : v_) h = (h ^ round(0, v)) * kP1 + kP4;
    } else {
      h = kP5;
    }
    h += total_;
    const uint8_t* p = buf_;
    size_t n = buf_len_;
    for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, read64(p)), 27) * kP1 + kP4;
    if (n >= 4) {
      uint32_t w;
      std::memcpy(&w, p, 4);
      h = rotl(h ^ (uint64_t{w} * kP1), 23) * kP2 + kP3;
      p += 4;
      n -= 4;
    }
    for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
  }

  std::string label() const {
    static const char* hex = "0123456789abcdef";
    std::string s = "xxh64:";
    const uint64_t d = digest();
    for (int i = 60; i >= 0; i -= 4) s += hex[(d >> i) & 0xf];
    return s;
  }

 private:
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                            kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                            kP5 = 0x27D4EB2F165667C5ull;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t read64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static uint64_t round(uint64_t acc, uint64_t in) { return rotl(acc + in * kP2, 31) * kP1; }
  void stripe(const uint8_t* p) {
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(p + 8 * i));
  }

  uint64_t v_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint8_t buf_[32] = {};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

void check_rows(const std::string& name, int64_t rows, int64_t r0, int64_t n) {
  if (r0 < 0 || n < 0 || r0 > rows || n > rows - r0)
    throw Error(str("tensor '", name, "': rows [", r0, ", ", r0 + n, ") are outside its ", rows,
                    " rows"));
}

// Keeps every mapped file of a source alive for as long as any reader may run.
std::shared_ptr<const void> keep(std::vector<std::shared_ptr<const void>> v) {
  return std::make_shared<const std::vector<std::shared_ptr<const void>>>(std::move(v));
}

// f32 little-endian rows at `base` (rows x cols), in a file kept alive by `owner`.
TensorSource f32_rows(std::shared_ptr<const void> owner, const std::string& name,
                      const uint8_t* base, int64_t rows, int64_t cols) {
  TensorSource t;
  t.rows = rows;
  t.cols = cols;
  t.read = [owner = std::move(owner), name, base, rows, cols](int64_t r0, int64_t n, float* dst) {
    check_rows(name, rows, r0, n);
    std::memcpy(dst, base + static_cast<size_t>(r0 * cols) * 4, static_cast<size_t>(n * cols) * 4);
  };
  return t;
}

// Hugging Face stores q/k rows per head as [first halves of the RoPE pairs; second halves]
// (rotate-half over the first `rot` dims of the head); llama2.c interleaves the pairs. Canonical
// dim h*hd + 2j + t (2j + t < rot) is HF dim h*hd + t*rot/2 + j; dims past `rot` stay in place.
int64_t rotate_half_index(int64_t i, int head_dim, int rot) {
  const int64_t h = i / head_dim, r = i % head_dim;
  if (r >= rot) return i;
  return h * head_dim + (r % 2) * (rot / 2) + r / 2;
}

// Rows of a projection (wq, wk) in rotate-half order, read in canonical order.
TensorSource unpermute_rotary(TensorSource hf, int head_dim, int rot) {
  TensorSource t;
  t.rows = hf.rows;
  t.cols = hf.cols;
  const int64_t cols = hf.cols, rows = hf.rows;
  // A row permutation: the stored type and the stored rows (moved whole) carry over.
  t.stored_type = hf.stored_type;
  t.native_format = hf.native_format;
  if (hf.read_native) {
    const size_t rb = format_by_name(hf.native_format).row_bytes(cols);
    t.read_native = [nat = hf.read_native, head_dim, rot, rows, rb](int64_t r0, int64_t n, uint8_t* dst) {
      check_rows("rotary projection", rows, r0, n);
      for (int64_t r = r0; r < r0 + n; ++r) nat(rotate_half_index(r, head_dim, rot), 1, dst + (r - r0) * rb);
    };
  }
  t.read = [hf = std::move(hf), head_dim, rot, cols, rows](int64_t r0, int64_t n, float* dst) {
    check_rows("rotary projection", rows, r0, n);
    for (int64_t r = r0; r < r0 + n; ++r) hf.read(rotate_half_index(r, head_dim, rot), 1, dst + (r - r0) * cols);
  };
  return t;
}

// A vector (one row: a q/k bias, a q/k norm weight) in rotate-half order, read in canonical order.
TensorSource unpermute_rotary_vector(TensorSource hf, int head_dim, int rot) {
  TensorSource t;
  t.rows = hf.rows;
  t.cols = hf.cols;
  const int64_t cols = hf.cols;
  t.read = [hf = std::move(hf), head_dim, rot, cols](int64_t r0, int64_t n, float* dst) {
    check_rows("rotary vector", 1, r0, n);
    if (n == 0) return;
    std::vector<float> row(static_cast<size_t>(cols));
    hf.read(0, 1, row.data());
    for (int64_t i = 0; i < cols; ++i) dst[i] = row[static_cast<size_t>(rotate_half_index(i, head_dim, rot))];
  };
  return t;
}

// Rows [first, first + rows) of a tensor (a part of a fused projection: Phi-3's qkv and gate_up).
TensorSource row_slice(TensorSource whole, int64_t first, int64_t rows) {
  TensorSource t;
  t.rows = rows;
  t.cols = whole.cols;
  t.stored_type = whole.stored_type;
  t.native_format = whole.native_format;
  if (whole.read_native)
    t.read_native = [nat = whole.read_native, first, rows](int64_t r0, int64_t n, uint8_t* dst) {
      check_rows("fused projection part", rows, r0, n);
      nat(first + r0, n, dst);
    };
  t.read = [whole = std::move(whole), first, rows](int64_t r0, int64_t n, float* dst) {
    check_rows("fused projection part", rows, r0, n);
    whole.read(first + r0, n, dst);
  };
  return t;
}

// A norm weight stored as an offset from 1 (Gemma's RMSNorm multiplies by 1 + w), read as the
// multiplier itself.
TensorSource plus_one(TensorSource w) {
  TensorSource t;
  t.rows = w.rows;
  t.cols = w.cols;
  const int64_t cols = w.cols;
  t.read = [w = std::move(w), cols](int64_t r0, int64_t n, float* dst) {
    w.read(r0, n, dst);
    for (int64_t i = 0; i < n * cols; ++i) dst[i] += 1.0f;
  };
  return t;
}

// The decoder families cibench reads: Hugging Face model_type and architectures entry.
struct Family {
  const char* model_type;
  const char* architecture;
};
constexpr Family kFamilies[] = {
    {"llama", "LlamaForCausalLM"},   {"mistral", "MistralForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"},
    {"qwen3", "Qwen3ForCausalLM"},   {"smollm3", "SmolLM3ForCausalLM"}, {"gemma", "GemmaForCausalLM"},
    {"gemma2", "Gemma2ForCausalLM"}, {"gemma3_text", "Gemma3ForCausalLM"}, {"phi3", "Phi3ForCausalLM"},
};

// The Gemma generations: GeGLU (tanh GELU), embeddings x sqrt(hidden_size), norms stored as
// offsets from 1.
bool gemma_family(const std::string& fam) { return fam == "gemma" || fam == "gemma2" || fam == "gemma3_text"; }

// A soft-cap key of a Gemma config: absent = the family's default, null = none, else positive.
float hf_softcap(const nlohmann::json& j, const char* key, const std::string& cfg, float fallback) {
  if (!j.contains(key)) return fallback;
  const nlohmann::json& v = j[key];
  if (v.is_null()) return 0.0f;
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    throw FileError(cfg, str("'", key, "' = ", v.dump(), " is not supported (a soft-cap is a positive number, or null "
                             "for none)"));
  return static_cast<float>(v.get<double>());
}

// The sliding-window attention a config.json declares, as c.attn_window (c.n_layers set; empty
// when every layer is global). `swa`: the family attends through its sliding_window (Mistral,
// Phi-3, Gemma 2/3, or use_sliding_window). Which layers slide: an explicit layer_types list
// ("sliding_attention" / "full_attention"), else the family's rule: Gemma 2 the even layers,
// Gemma 3 all but every sliding_window_pattern-th, Qwen2/3 those from max_window_layers on,
// the others all.
void parse_hf_sliding_window(const nlohmann::json& j, const std::string& cfg, const std::string& fam, bool swa,
                             LlamaConfig& c) {
  const nlohmann::json* types = hf::field(j, "layer_types");
  int w = 0;
  if (swa) {
    const int gemma_default = 4096;  // Gemma2Config / Gemma3TextConfig
    if (fam == "gemma2" || fam == "gemma3_text") w = hf::get_int(j, "sliding_window", cfg, &gemma_default);
    else if (hf::field(j, "sliding_window")) w = hf::get_int(j, "sliding_window", cfg);
    if (hf::field(j, "sliding_window") && w <= 0)
      throw FileError(cfg, str("'sliding_window' = ", w, " must be positive (or null for none)"));
  }
  std::vector<int> win(static_cast<size_t>(c.n_layers), 0);
  if (types) {
    if (!types->is_array() || types->size() != static_cast<size_t>(c.n_layers))
      throw FileError(cfg, str("'layer_types' = ", types->dump(), " is not a list of ", c.n_layers, " layer types"));
    for (int l = 0; l < c.n_layers; ++l) {
      const nlohmann::json& t = (*types)[static_cast<size_t>(l)];
      const std::string name = t.is_string() ? t.get<std::string>() : t.dump();
      if (name == "sliding_attention") {
        if (w <= 0) throw FileError(cfg, str("'layer_types[", l, "]' = \"sliding_attention\" without a sliding_window"));
        win[static_cast<size_t>(l)] = w;
      } else if (name != "full_attention") {
        throw FileError(cfg, str("'layer_types[", l, "]' = ", t.dump(),
                                 " is not supported (sliding_attention, full_attention)"));
      }
    }
  } else if (w > 0) {
    const int six = 6, qwen_default = 28;  // Gemma3TextConfig's pattern, Qwen2Config's max_window_layers
    // (newer transformers save the pattern as _sliding_window_pattern beside layer_types)
    const char* pattern_key = hf::field(j, "sliding_window_pattern") || !hf::field(j, "_sliding_window_pattern")
                                  ? "sliding_window_pattern"
                                  : "_sliding_window_pattern";
    const int pattern = fam == "gemma3_text" ? hf::get_int(j, pattern_key, cfg, &six) : 0;
    if (fam == "gemma3_text" && pattern <= 0)
      throw FileError(cfg, str("'", pattern_key, "' = ", pattern, " must be positive"));
    const int from = fam == "qwen2" || fam == "qwen3" ? hf::get_int(j, "max_window_layers", cfg, &qwen_default) : 0;
    for (int l = 0; l < c.n_layers; ++l) {
      bool sliding = true;
      if (fam == "gemma2") sliding = l % 2 == 0;
      else if (fam == "gemma3_text") sliding = (l + 1) % pattern != 0;
      else if (fam == "qwen2" || fam == "qwen3") sliding = l >= from;
      win[static_cast<size_t>(l)] = sliding ? w : 0;
    }
  }
  if (std::any_of(win.begin(), win.end(), [](int x) { return x > 0; })) c.attn_window = std::move(win);
}

// longrope (Phi-3/3.5; "su" in older configs), as transformers' _compute_longrope_parameters reads
// it: long_factor and short_factor per rotary pair; the original context is the top-level
// original_max_position_embeddings (then factor = max_position_embeddings / it) or, without one,
// max_position_embeddings (then factor is rope_scaling.factor).
void parse_hf_longrope(const nlohmann::json& rs, const nlohmann::json& root, const std::string& cfg, LlamaConfig& c) {
  RopeScaling& r = c.rope_scaling;
  r.type = "longrope";
  for (const auto& [key, value] : rs.items()) {
    static const char* const known[] = {"rope_type", "type", "long_factor", "short_factor", "factor",
                                        "attention_factor", "original_max_position_embeddings"};
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key == k; }) == std::end(known))
      throw FileError(cfg, str("'rope_scaling.", key, "' = ", value.dump(), " is not supported for rope type longrope"));
  }
  auto factors = [&](const char* key) {
    const nlohmann::json* f = hf::field(rs, key);
    if (!f || !f->is_array()) throw FileError(cfg, str("'rope_scaling.", key, "' must be an array of numbers (longrope)"));
    std::vector<float> v;
    for (const auto& e : *f) {
      if (!e.is_number()) throw FileError(cfg, str("'rope_scaling.", key, "' entry ", e.dump(), " is not a number"));
      v.push_back(e.get<float>());
    }
    return v;
  };
  r.long_factor = factors("long_factor");
  r.short_factor = factors("short_factor");
  auto positions = [&](const nlohmann::json& obj, const char* key, const std::string& shown) -> int {
    const nlohmann::json* f = hf::field(obj, key);
    if (!f) return 0;
    if (!f->is_number_integer() || f->get<int64_t>() <= 0 || f->get<int64_t>() > INT_MAX)
      throw FileError(cfg, str("'", shown, "' = ", f->dump(), " is not a position count"));
    return static_cast<int>(f->get<int64_t>());
  };
  const int max_pos = positions(root, "max_position_embeddings", "max_position_embeddings");
  int orig = positions(root, "original_max_position_embeddings", "original_max_position_embeddings");
  if (orig == 0) orig = positions(rs, "original_max_position_embeddings", "rope_scaling.original_max_position_embeddings");
  if (orig > 0) {
    if (max_pos == 0) throw FileError(cfg, "longrope: 'original_max_position_embeddings' without 'max_position_embeddings'");
    r.original_max_position = orig;
    r.factor = static_cast<double>(max_pos) / orig;
  } else {
    r.original_max_position = max_pos;
    const nlohmann::json* f = hf::field(rs, "factor");
    if (!f || !f->is_number())
      throw FileError(cfg, "'rope_scaling' of type longrope has neither a top-level 'original_max_position_embeddings' nor a numeric 'factor'");
    r.factor = f->get<double>();
  }
  if (const nlohmann::json* a = hf::field(rs, "attention_factor"); a && !a->is_null()) {
    if (!a->is_number() || !(a->get<double>() > 0))
      throw FileError(cfg, str("'rope_scaling.attention_factor' = ", a->dump(), " must be a positive number"));
    r.attention_factor = a->get<double>();
  }
}

// config.json's "rope_scaling" into `c.rope_scaling` (c.seq_len already set). Unknown types and
// keys of the wrong type are FileErrors naming the file, the key and the value.
void parse_hf_rope_scaling(const nlohmann::json& rs, const nlohmann::json& root, const std::string& cfg, LlamaConfig& c) {
  if (!rs.is_object()) throw FileError(cfg, str("'rope_scaling' must be an object, got ", rs.dump()));
  const nlohmann::json* type = hf::field(rs, "rope_type");
  const char* type_key = "rope_scaling.rope_type";
  if (!type) {
    type = hf::field(rs, "type");
    type_key = "rope_scaling.type";
  }
  if (!type || !type->is_string())
    throw FileError(cfg, str("'rope_scaling' ", rs.dump(), " has no string 'rope_type' (or 'type')"));
  const std::string t = type->get<std::string>();
  RopeScaling& r = c.rope_scaling;
  if (t == "default") {
    r.type = "none";
    return;
  }
  if (t == "longrope" || t == "su") {
    parse_hf_longrope(rs, root, cfg, c);
    return;
  }
  if (t != "linear" && t != "dynamic" && t != "llama3" && t != "yarn")
    throw FileError(cfg, str("'", type_key, "' = \"", t, "\" is not supported (cibench implements default, "
                             "linear, dynamic, llama3, yarn and longrope)"));
  r.type = t;
  for (const auto& [key, value] : rs.items()) {
    static const char* const known[] = {"rope_type", "type", "factor", "original_max_position_embeddings",
                                        "low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow",
                                        "attention_factor", "mscale", "mscale_all_dim", "truncate"};
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key == k; }) == std::end(known))
      throw FileError(cfg, str("'rope_scaling.", key, "' = ", value.dump(), " is not supported for rope type ", t));
  }
  auto number = [&](const char* key, double fallback) {
    const nlohmann::json* f = hf::field(rs, key);
    if (!f) return fallback;
    if (!f->is_number()) throw FileError(cfg, str("'rope_scaling.", key, "' must be a number, got ", f->dump()));
    return f->get<double>();
  };
  if (!hf::field(rs, "factor")) throw FileError(cfg, str("'rope_scaling' of type ", t, " has no 'factor'"));
  r.factor = number("factor", 1.0);
  const double omp = number("original_max_position_embeddings", 0.0);
  if (omp < 0 || omp > INT_MAX || omp != std::floor(omp))
    throw FileError(cfg, str("'rope_scaling.original_max_position_embeddings' = ", omp, " is not a position count"));
  r.original_max_position = static_cast<int>(omp);
  if (t == "llama3" && r.original_max_position == 0)
    throw FileError(cfg, "'rope_scaling' of type llama3 has no 'original_max_position_embeddings'");
  r.low_freq_factor = number("low_freq_factor", 1.0);
  r.high_freq_factor = number("high_freq_factor", 4.0);
  r.beta_fast = number("beta_fast", 32.0);
  r.beta_slow = number("beta_slow", 1.0);
  r.attention_factor = number("attention_factor", 0.0);
  r.mscale = number("mscale", 0.0);
  r.mscale_all_dim = number("mscale_all_dim", 0.0);
  if (const nlohmann::json* tr = hf::field(rs, "truncate")) {
    if (!tr->is_boolean()) throw FileError(cfg, str("'rope_scaling.truncate' must be true or false, got ", tr->dump()));
    r.truncate = tr->get<bool>();
  }
}

// ---------------------------------------------------------------------------------------------
// llama2.c legacy .bin

LlamaSource open_llama2c(const std::string& path) {
  auto file = std::make_shared<const MappedFile>(path);
  const size_t size = file->size();
  constexpr size_t kHeader = 7 * sizeof(int32_t);
  if (size < kHeader)
    throw FileError(path, str("file too short for a llama2.c header: ", size,
                              " bytes, the header alone is ", kHeader));
  int32_t h[7];
  std::memcpy(h, file->data(), sizeof h);
  if (static_cast<uint32_t>(h[0]) == 0x616b3432u)
    throw FileError(path, str("llama2.c export version ", h[1],
                              " (magic 'ak42') is not supported; cibench reads the legacy "
                              "(version 0) .bin written by export.py --version 0"));
  if (h[5] == INT32_MIN) throw FileError(path, "invalid llama2.c header: vocab_size is INT32_MIN");

  LlamaSource src;
  src.origin = path;
  src.container = "llama2c";
  LlamaConfig& c = src.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.tied_output = h[5] > 0;
  c.vocab_size = std::abs(h[5]);
  c.seq_len = h[6];
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.validate(path);  // sizes positive and bounded, so the products below cannot overflow

  const int64_t d = c.dim, hd = c.hidden_dim, L = c.n_layers, kv = c.kv_dim(), v = c.vocab_size;
  const int64_t rope_table = int64_t{c.seq_len} * (c.head_dim() / 2);
  // Offsets (in floats) of each tensor, in file order.
  int64_t at = 0;
  auto next = [&](int64_t count) {
    const int64_t o = at;
    at += count;
    return o;
  };
  const int64_t o_emb = next(v * d), o_rms_att = next(L * d), o_wq = next(L * d * d),
                o_wk = next(L * kv * d), o_wv = next(L * kv * d), o_wo = next(L * d * d),
                o_rms_ffn = next(L * d), o_w1 = next(L * hd * d), o_w2 = next(L * d * hd),
                o_w3 = next(L * hd * d), o_norm = next(d);
  next(2 * rope_table);  // freq_cis_real, freq_cis_imag: legacy RoPE tables, not used
  const int64_t o_out = c.tied_output ? -1 : next(v * d);
  const uint64_t expected = kHeader + static_cast<uint64_t>(at) * 4;
  const std::string dims =
      str("dim=", c.dim, " hidden_dim=", c.hidden_dim, " n_layers=", c.n_layers, " n_heads=",
          c.n_heads, " n_kv_heads=", c.n_kv_heads, " vocab_size=", h[5], " seq_len=", c.seq_len);
  if (size < expected)
    throw FileError(path, str("file is truncated or its header is wrong: the header (", dims,
                              ") implies ", expected, " bytes but the file has ", size, " bytes"));
  if (size > expected) {
    std::string hint;
    if (c.tied_output && size - expected == static_cast<uint64_t>(v * d) * 4)
      hint = " (exactly one [vocab_size, dim] classifier more: an untied classifier needs a "
             "negative vocab_size in the header)";
    throw FileError(path, str("the header (", dims, ") implies ", expected,
                              " bytes but the file has ", size, " bytes, ", size - expected,
                              " more", hint));
  }

  Xxh64 hash;
  hash.update(file->data(), size);
  src.content_hash = hash.label();

  const uint8_t* base = file->data() + kHeader;
  auto add = [&](const std::string& name, int64_t off, int64_t rows, int64_t cols) {
    src.tensors[name] = f32_rows(file, name, base + static_cast<size_t>(off) * 4, rows, cols);
  };
  add("tok_embeddings", o_emb, v, d);
  add("norm", o_norm, 1, d);
  if (!c.tied_output) add("output", o_out, v, d);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "attention_norm", o_rms_att + l * d, 1, d);
    add(p + "ffn_norm", o_rms_ffn + l * d, 1, d);
    add(p + "wq", o_wq + l * d * d, d, d);
    add(p + "wk", o_wk + l * kv * d, kv, d);
    add(p + "wv", o_wv + l * kv * d, kv, d);
    add(p + "wo", o_wo + l * d * d, d, d);
    add(p + "w1", o_w1 + l * hd * d, hd, d);
    add(p + "w2", o_w2 + l * d * hd, d, hd);
    add(p + "w3", o_w3 + l * hd * d, hd, d);
  }
  src.keepalive = keep({file});
  return src;
}

// ---------------------------------------------------------------------------------------------
// Hugging Face folder: config.json + model.safetensors (or sharded with an index)


// A tensor found in one of the weight files.
struct HfTensor {
  std::shared_ptr<const SafetensorsFile> file;
  const SafetensorInfo* info = nullptr;
};

LlamaSource open_hf(const std::string& spec) {
  const hf::Folder folder = hf::open_folder(spec);
  // Named references, not a structured binding: lambdas below use them (clang 14 cannot
  // capture a binding).
  const std::filesystem::path& spec_path = folder.spec;
  const bool spec_is_dir = folder.spec_is_dir;
  const std::filesystem::path& dir = folder.dir;
  const std::string& dir_s = folder.dir_s;
  const std::string& cfg = folder.cfg;
  const std::string& cfg_text = folder.cfg_text;
  const nlohmann::json& j = folder.config;

  // Architecture: one of the families (model_type or architectures), without features the
  // engine lacks.
  const Family* family = nullptr;
  const std::string model_type = hf::get_string(j, "model_type", cfg, "");
  // Gemma 3's multimodal checkpoint nests the text decoder's config (text_config) and weights
  // (language_model.*) beside a vision tower: not read.
  bool multimodal_gemma3 = model_type == "gemma3";
  if (const auto* ar = hf::field(j, "architectures"); ar && ar->is_array())
    for (const auto& a : *ar) multimodal_gemma3 = multimodal_gemma3 || a == "Gemma3ForConditionalGeneration";
  if (multimodal_gemma3)
    throw FileError(cfg, str("'model_type' = ", hf::field(j, "model_type") ? j["model_type"].dump() : "absent",
                             ", 'architectures' = ", hf::field(j, "architectures") ? j["architectures"].dump() : "absent",
                             ": the multimodal Gemma 3 (Gemma3ForConditionalGeneration) is not supported; cibench "
                             "reads its text decoder as Gemma3ForCausalLM (model_type gemma3_text)"));
  for (const Family& f : kFamilies)
    if (model_type == f.model_type) family = &f;
  if (const auto* ar = hf::field(j, "architectures"); ar && ar->is_array())
    for (const auto& a : *ar)
      for (const Family& f : kFamilies)
        if (!family && a.is_string() && a.get<std::string>() == f.architecture) family = &f;
  if (!family) {
    std::string known;
    for (const Family& f : kFamilies) known += str(known.empty() ? "" : ", ", f.architecture, " (", f.model_type, ")");
    throw FileError(cfg, str("not a supported decoder (model_type ",
                             hf::field(j, "model_type") ? j["model_type"].dump() : "absent",
                             ", architectures ",
                             hf::field(j, "architectures") ? j["architectures"].dump() : "absent",
                             "); cibench's decoder reads ", known));
  }
  const std::string fam = family->model_type;
  if (gemma_family(fam)) {
    // Gemma's MLP is GeGLU with the tanh form of GELU (transformers takes it whatever hidden_act
    // says unless hidden_activation names another).
    if (const auto* act = hf::field(j, "hidden_activation");
        act && !(act->is_string() && act->get<std::string>() == "gelu_pytorch_tanh"))
      throw FileError(cfg, str("'hidden_activation' = ", act->dump(), " is not supported (only gelu_pytorch_tanh)"));
  } else if (const auto* act = hf::field(j, "hidden_act");
             act && !(act->is_string() && act->get<std::string>() == "silu")) {
    throw FileError(cfg, str("'hidden_act' = ", act->dump(), " is not supported (only silu)"));
  }
  if (const auto* b = hf::field(j, "mlp_bias"); b && !(b->is_boolean() && !b->get<bool>()))
    throw FileError(cfg, str("'mlp_bias' = ", b->dump(), " is not supported (no feed-forward biases)"));
  auto flag = [&](const char* key, bool fallback) {
    const auto* f = hf::field(j, key);
    if (!f) return fallback;
    if (!f->is_boolean()) throw FileError(cfg, str("'", key, "' must be true or false, got ", f->dump()));
    return f->get<bool>();
  };

  LlamaSource src;
  src.origin = dir_s;
  src.container = "hf-safetensors";
  LlamaConfig& c = src.config;
  c.family = fam;
  c.dim = hf::get_int(j, "hidden_size", cfg);
  c.hidden_dim = hf::get_int(j, "intermediate_size", cfg);
  c.n_layers = hf::get_int(j, "num_hidden_layers", cfg);
  c.n_heads = hf::get_int(j, "num_attention_heads", cfg);
  c.n_kv_heads = hf::get_int(j, "num_key_value_heads", cfg, &c.n_heads);
  c.vocab_size = hf::get_int(j, "vocab_size", cfg);
  // transformers' defaults: LlamaConfig's context 2048, Gemma2Config's 8192 and Gemma3TextConfig's
  // 131072, its RoPE base 1e6; head_dim 128 in Qwen3Config, 256 in Gemma2/3
  const int default_ctx = fam == "gemma2" ? 8192 : fam == "gemma3_text" ? 131072 : 2048;
  c.seq_len = hf::get_int(j, "max_position_embeddings", cfg, &default_ctx);
  c.norm_eps = static_cast<float>(hf::get_number(j, "rms_norm_eps", cfg, 1e-6));
  c.rope_theta = static_cast<float>(hf::get_number(j, "rope_theta", cfg, fam == "gemma3_text" ? 1000000.0 : 10000.0));
  if (hf::field(j, "head_dim")) c.head_size = hf::get_int(j, "head_dim", cfg);
  if (fam == "qwen3" && !hf::field(j, "head_dim")) c.head_size = 128;
  if ((fam == "gemma2" || fam == "gemma3_text") && !hf::field(j, "head_dim")) c.head_size = 256;
  // Biases: Llama-style attention_bias puts them on q, k, v and o; Qwen2's attention has them on
  // q, k and v always.
  if (fam == "qwen2") {
    c.qkv_bias = true;
  } else {
    c.qkv_bias = c.o_bias = flag("attention_bias", false);
  }
  c.qk_norm = fam == "qwen3" || fam == "gemma3_text";
  if (gemma_family(fam)) {
    c.embed_scale = std::sqrt(static_cast<float>(c.dim));  // Gemma scales the embeddings by sqrt(hidden_size)
    c.ffn_act = "gelu_tanh";
  }
  if (fam == "gemma2" || fam == "gemma3_text") {
    // Gemma 2/3: norms after attention and after the feed-forward, scores scaled by
    // query_pre_attn_scalar^-1/2, soft-capping (Gemma 2's defaults 50 and 30; none in Gemma 3)
    c.post_norms = true;
    const double qpas = hf::get_number(j, "query_pre_attn_scalar", cfg, 256.0);
    if (!(qpas > 0) || !std::isfinite(qpas))
      throw FileError(cfg, str("'query_pre_attn_scalar' = ", j["query_pre_attn_scalar"].dump(), " must be positive"));
    c.query_pre_attn_scalar = static_cast<float>(qpas);
    const bool g2 = fam == "gemma2";
    c.attn_softcap = hf_softcap(j, "attn_logit_softcapping", cfg, g2 ? 50.0f : 0.0f);
    c.final_softcap = hf_softcap(j, "final_logit_softcapping", cfg, g2 ? 30.0f : 0.0f);
  }
  // Sliding-window attention: a per-layer window (the KV cache stays as long as the context).
  const bool swa = fam == "mistral" || fam == "phi3" || fam == "gemma2" || fam == "gemma3_text" ||
                   flag("use_sliding_window", false);
  parse_hf_sliding_window(j, cfg, fam, swa, c);
  if (fam == "gemma3_text") {
    // The sliding layers turn q and k with their own base, unscaled; the global ones with
    // rope_theta and rope_scaling.
    const double local = hf::get_number(j, "rope_local_base_freq", cfg, 10000.0);
    if (!(local > 0) || !std::isfinite(local))
      throw FileError(cfg, str("'rope_local_base_freq' = ", j["rope_local_base_freq"].dump(), " must be positive"));
    if (!c.attn_window.empty()) c.rope_local_theta = static_cast<float>(local);
  }
  if (fam == "smollm3") {
    // SmolLM3 leaves RoPE out of some layers (NoPE): no_rope_layers[l] = 1 keeps it.
    if (const auto* nr = hf::field(j, "no_rope_layers")) {
      if (!nr->is_array())
        throw FileError(cfg, str("'no_rope_layers' must be an array of 0/1, got ", nr->dump()));
      for (const auto& e : *nr) {
        if (!e.is_number_integer() || (e.get<int64_t>() != 0 && e.get<int64_t>() != 1))
          throw FileError(cfg, str("'no_rope_layers' entry ", e.dump(), " is not 0 or 1"));
        c.rope_layers.push_back(static_cast<uint8_t>(e.get<int64_t>()));
      }
    }
  }
  bool tie = fam == "smollm3" || gemma_family(fam);  // transformers' defaults (SmolLM3Config, Gemma*Config tie)
  tie = flag("tie_word_embeddings", tie);
  const int default_bos = 1, default_eos = 2;
  c.bos_id = hf::get_int(j, "bos_token_id", cfg, &default_bos);
  if (const auto* e = hf::field(j, "eos_token_id"); e && e->is_array()) {
    if (e->empty() || !(*e)[0].is_number_integer())
      throw FileError(cfg, str("'eos_token_id' ", e->dump(), " has no integer id"));
    const nlohmann::json first = {{"eos_token_id", (*e)[0]}};
    c.eos_id = hf::get_int(first, "eos_token_id", cfg);
  } else {
    c.eos_id = hf::get_int(j, "eos_token_id", cfg, &default_eos);
  }
  c.validate(cfg);
  if (const auto* pr = hf::field(j, "partial_rotary_factor")) {
    if (!pr->is_number() || !(pr->get<double>() > 0 && pr->get<double>() <= 1))
      throw FileError(cfg, str("'partial_rotary_factor' = ", pr->dump(), " must be in (0, 1]"));
    c.rotary_dim = static_cast<int>(c.head_dim() * pr->get<double>());
    if (c.rotary_dim == c.head_dim()) c.rotary_dim = 0;
    c.validate(cfg);
  }
  // After the rotary width: longrope's factors are one per rotary pair.
  if (const auto* rs = hf::field(j, "rope_scaling")) {
    parse_hf_rope_scaling(*rs, j, cfg, c);
    c.validate(cfg);
  }
  if (!c.rope_layers.empty() && c.rope_layers.size() != static_cast<size_t>(c.n_layers))
    throw FileError(cfg, str("'no_rope_layers' has ", c.rope_layers.size(), " entries for ", c.n_layers, " layers"));

  // Weight files: the one named, model.safetensors, or the shards of an index.
  std::vector<std::string> weight_files;
  const std::string single = (dir / "model.safetensors").string();
  const std::string index = (dir / "model.safetensors.index.json").string();
  if (!spec_is_dir && spec_path.extension() == ".safetensors") {
    weight_files.push_back(spec);
  } else if (fs::exists(single)) {
    weight_files.push_back(single);
  } else if (fs::exists(index)) {
    nlohmann::json ij;
    try {
      ij = nlohmann::json::parse(read_file(index));
    } catch (const nlohmann::json::exception& e) {
      throw FileError(index, str("not valid JSON (", e.what(), ")"));
    }
    const nlohmann::json* wm = ij.is_object() ? hf::field(ij, "weight_map") : nullptr;
    if (!wm || !wm->is_object()) throw FileError(index, "no 'weight_map' object");
    std::vector<std::string> shards;
    for (const auto& [name, shard] : wm->items()) {
      if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos)
        throw FileError(index, str("weight_map entry '", name, "' is not a file name in the folder"));
      shards.push_back(shard.get<std::string>());
    }
    std::sort(shards.begin(), shards.end());
    shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
    for (const auto& s : shards) weight_files.push_back((dir / s).string());
  } else {
    throw FileError(dir_s, "no model.safetensors (or model.safetensors.index.json) beside "
                           "config.json");
  }

  std::map<std::string, HfTensor> by_name;
  std::vector<std::shared_ptr<const void>> owners;
  Xxh64 hash;
  hash.update(reinterpret_cast<const uint8_t*>(cfg_text.data()), cfg_text.size());
  for (const auto& wf : weight_files) {
    if (!fs::exists(wf)) throw FileError(wf, "no such file (named by the model folder)");
    auto st = std::make_shared<const SafetensorsFile>(wf);
    hash.update(st->file()->data(), st->file()->size());
    for (const auto& [name, info] : st->tensors()) {
      if (!by_name.emplace(name, HfTensor{st, &info}).second)
        throw FileError(wf, str("tensor '", name, "' appears in more than one weight file"));
    }
    owners.push_back(st);
  }
  src.content_hash = hash.label();
  const std::string weights_desc = weight_files.size() == 1 ? weight_files[0] : dir_s;

  // One canonical tensor from an HF tensor of shape [rows, cols] (or [cols] when rows is 0).
  std::set<std::string> used;
  auto take = [&](const std::string& hf_name, int64_t rows, int64_t cols) -> TensorSource {
    auto it = by_name.find(hf_name);
    if (it == by_name.end())
      throw FileError(weights_desc, str("missing tensor '", hf_name, "'"));
    used.insert(hf_name);
    const HfTensor ht = it->second;
    const SafetensorInfo& info = *ht.info;
    if (info.dtype != "F32" && info.dtype != "F16" && info.dtype != "BF16")
      throw FileError(ht.file->path(), str("tensor '", hf_name, "' has dtype ", info.dtype,
                                           "; cibench reads F32/F16/BF16 safetensors"));
    const std::vector<int64_t> want =
        rows == 0 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
    if (info.shape != want)
      throw FileError(ht.file->path(),
                      str("tensor '", hf_name, "' has shape ", shape_str(info.shape), " but ", cfg,
                          " implies ", shape_str(want)));
    TensorSource t;
    t.rows = rows == 0 ? 1 : rows;
    t.cols = cols;
    const int64_t t_rows = t.rows;
    // A 1-D safetensor reads as one element per row.
    const bool one_d = rows == 0;
    t.read = [ht, hf_name, t_rows, cols, one_d](int64_t r0, int64_t n, float* dst) {
      check_rows(hf_name, t_rows, r0, n);
      if (one_d) ht.info->read_rows_f32(r0 * cols, n * cols, dst);
      else ht.info->read_rows_f32(r0, n, dst);
    };
    return t;
  };

  const int64_t d = c.dim, hd = c.hidden_dim, qd = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  const int head = c.head_dim(), rot = c.rot_dim();
  // Gemma's norms multiply by 1 + w: the engine's norm weight is that multiplier.
  auto norm = [&](TensorSource t) { return gemma_family(fam) ? plus_one(std::move(t)) : t; };
  src.tensors["tok_embeddings"] = take("model.embed_tokens.weight", v, d);
  src.tensors["norm"] = norm(take("model.norm.weight", 0, d));
  if (by_name.count("lm_head.weight")) {
    c.tied_output = false;
    src.tensors["output"] = take("lm_head.weight", v, d);
  } else if (tie) {
    c.tied_output = true;
  } else {
    throw FileError(weights_desc, str("missing tensor 'lm_head.weight' while ", cfg,
                                      " says tie_word_embeddings is false"));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string q = "layers." + std::to_string(l) + ".";
    src.tensors[q + "attention_norm"] = norm(take(p + "input_layernorm.weight", 0, d));
    if (c.post_norms) {
      // Gemma 2/3: post_attention_layernorm normalises the attention output (before the residual
      // add); pre_feedforward_layernorm is the feed-forward's input norm.
      src.tensors[q + "post_attention_norm"] = norm(take(p + "post_attention_layernorm.weight", 0, d));
      src.tensors[q + "ffn_norm"] = norm(take(p + "pre_feedforward_layernorm.weight", 0, d));
      src.tensors[q + "post_ffn_norm"] = norm(take(p + "post_feedforward_layernorm.weight", 0, d));
    } else {
      src.tensors[q + "ffn_norm"] = norm(take(p + "post_attention_layernorm.weight", 0, d));
    }
    if (fam == "phi3") {
      // Phi-3 fuses q, k, v into one projection and gate, up into another: split at load.
      const TensorSource qkv = take(p + "self_attn.qkv_proj.weight", qd + 2 * kv, d);
      src.tensors[q + "wq"] = unpermute_rotary(row_slice(qkv, 0, qd), head, rot);
      src.tensors[q + "wk"] = unpermute_rotary(row_slice(qkv, qd, kv), head, rot);
      src.tensors[q + "wv"] = row_slice(qkv, qd + kv, kv);
      const TensorSource gate_up = take(p + "mlp.gate_up_proj.weight", 2 * hd, d);
      src.tensors[q + "w1"] = row_slice(gate_up, 0, hd);
      src.tensors[q + "w3"] = row_slice(gate_up, hd, hd);
    } else {
      src.tensors[q + "wq"] = unpermute_rotary(take(p + "self_attn.q_proj.weight", qd, d), head, rot);
      src.tensors[q + "wk"] = unpermute_rotary(take(p + "self_attn.k_proj.weight", kv, d), head, rot);
      src.tensors[q + "wv"] = take(p + "self_attn.v_proj.weight", kv, d);
      src.tensors[q + "w1"] = take(p + "mlp.gate_proj.weight", hd, d);
      src.tensors[q + "w3"] = take(p + "mlp.up_proj.weight", hd, d);
    }
    src.tensors[q + "wo"] = take(p + "self_attn.o_proj.weight", d, qd);
    src.tensors[q + "w2"] = take(p + "mlp.down_proj.weight", d, hd);
    if (c.qkv_bias) {
      src.tensors[q + "bq"] = unpermute_rotary_vector(take(p + "self_attn.q_proj.bias", 0, qd), head, rot);
      src.tensors[q + "bk"] = unpermute_rotary_vector(take(p + "self_attn.k_proj.bias", 0, kv), head, rot);
      src.tensors[q + "bv"] = take(p + "self_attn.v_proj.bias", 0, kv);
    }
    if (c.o_bias) src.tensors[q + "bo"] = take(p + "self_attn.o_proj.bias", 0, d);
    if (c.qk_norm) {
      src.tensors[q + "q_norm"] = unpermute_rotary_vector(norm(take(p + "self_attn.q_norm.weight", 0, head)), head, rot);
      src.tensors[q + "k_norm"] = unpermute_rotary_vector(norm(take(p + "self_attn.k_norm.weight", 0, head)), head, rot);
    }
  }
  // A tensor the config does not account for (a layer beyond num_hidden_layers, a module the
  // engine lacks) means the config and the weights disagree: running the rest would be silently
  // wrong. Rotary inverse frequencies (a derived buffer some checkpoints store) are ignored.
  std::vector<std::string> unused;
  for (const auto& [name, t] : by_name)
    if (!used.count(name) && !ends_with(name, "rotary_emb.inv_freq")) unused.push_back(name);
  if (!unused.empty()) throw unaccounted_tensors(weights_desc, str(cfg, " (", c.n_layers, " layers)"), unused);
  src.keepalive = keep(std::move(owners));
  return src;
}

// ---------------------------------------------------------------------------------------------
// GGUF (general.architecture llama, qwen2, qwen3, gemma, gemma2, phi3)

LlamaSource open_gguf(const std::string& path) {
  auto g = std::make_shared<const GgufFile>(path);
  const std::string& arch = g->get("general.architecture").as_string("general.architecture", path);
  // llama (and Mistral, which llama.cpp's converter writes as llama) keeps q/k rows interleaved
  // as cibench does; qwen2 and qwen3 keep Hugging Face's rotate-half order (llama.cpp's NEOX
  // RoPE), so their q/k rows, biases and norms are un-permuted here.
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "gemma" && arch != "gemma2" && arch != "phi3")
    throw FileError(path, str("general.architecture is '", arch,
                              "'; cibench's decoder reads 'llama', 'qwen2', 'qwen3', 'gemma', 'gemma2' and 'phi3' GGUF files"));
  const bool rotate_half = arch != "llama";
  const std::string a = arch + ".";

  auto int_key = [&](const std::string& key, std::optional<int> fallback = std::nullopt) {
    if (!g->has(key)) {
      if (fallback) return *fallback;
      throw FileError(path, str("missing metadata key '", key, "'"));
    }
    const int64_t v = g->get(key).as_int(key, path);
    if (v < INT_MIN || v > INT_MAX)
      throw FileError(path, str("metadata '", key, "' = ", v, " is out of range"));
    return static_cast<int>(v);
  };
  auto float_key = [&](const std::string& key, double fallback) {
    return g->has(key) ? g->get(key).as_float(key, path) : fallback;
  };

  LlamaSource src;
  src.origin = path;
  src.container = "gguf";
  LlamaConfig& c = src.config;
  c.family = arch;
  c.dim = int_key(a + "embedding_length");
  c.hidden_dim = int_key(a + "feed_forward_length");
  c.n_layers = int_key(a + "block_count");
  c.n_heads = int_key(a + "attention.head_count");
  c.n_kv_heads = int_key(a + "attention.head_count_kv", c.n_heads);
  c.seq_len = int_key(a + "context_length");
  // Sliding-window attention: gemma2 in its even layers (llama.cpp's default window 4096), the
  // others in every layer.
  if (g->has(a + "attention.sliding_window") || arch == "gemma2") {
    const int w = int_key(a + "attention.sliding_window", 4096);
    if (w <= 0) throw FileError(path, str("metadata '", a, "attention.sliding_window' = ", w, " must be positive"));
    c.attn_window.assign(static_cast<size_t>(c.n_layers), w);
    if (arch == "gemma2")
      for (int l = 1; l < c.n_layers; l += 2) c.attn_window[static_cast<size_t>(l)] = 0;
  }
  c.norm_eps = static_cast<float>(float_key(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_theta = static_cast<float>(float_key(a + "rope.freq_base", 10000.0));
  if (g->has(a + "attention.key_length")) {
    c.head_size = int_key(a + "attention.key_length");
    const int vl = int_key(a + "attention.value_length", c.head_size);
    if (vl != c.head_size)
      throw FileError(path, str(a, "attention.value_length = ", vl, " differs from ", a, "attention.key_length = ",
                                c.head_size, " (not supported)"));
  }
  if (g->has("tokenizer.ggml.tokens") &&
      g->get("tokenizer.ggml.tokens").type == GgufType::array) {
    const size_t n = g->get("tokenizer.ggml.tokens").array.size();
    if (n > static_cast<size_t>(INT_MAX))
      throw FileError(path, str("tokenizer.ggml.tokens has ", n, " entries, too many"));
    c.vocab_size = static_cast<int>(n);
  } else if (g->has(a + "vocab_size")) {
    c.vocab_size = int_key(a + "vocab_size");
  } else if (const GgufTensorInfo* te = g->find_tensor("token_embd.weight");
             te && te->dims.size() >= 2 && te->dims[1] <= INT_MAX) {
    c.vocab_size = static_cast<int>(te->dims[1]);
  } else {
    throw FileError(path, str("no vocabulary size (neither tokenizer.ggml.tokens nor ", a,
                              "vocab_size nor a token_embd.weight tensor)"));
  }
  c.bos_id = int_key("tokenizer.ggml.bos_token_id", c.bos_id);
  c.eos_id = int_key("tokenizer.ggml.eos_token_id", c.eos_id);
  if (arch == "gemma" || arch == "gemma2") {
    // As llama.cpp: embeddings scaled by sqrt(n_embd), GeGLU (tanh GELU); the converter stored
    // the norms as 1 + w already.
    c.embed_scale = std::sqrt(static_cast<float>(c.dim));
    c.ffn_act = "gelu_tanh";
  }
  if (arch == "gemma2") {
    // llama.cpp's gemma2: post norms, soft-capping (defaults 50 and 30), and queries scaled by
    // 1 / sqrt(head_dim), or 1 / sqrt(n_embd / n_head) in the 46-layer (27B) model: the
    // query_pre_attn_scalar of the published checkpoints, which the file does not hold.
    c.post_norms = true;
    for (const auto& [key, fallback, cap] : {std::tuple<std::string, double, float*>{a + "attn_logit_softcapping", 50.0, &c.attn_softcap},
                                             {a + "final_logit_softcapping", 30.0, &c.final_softcap}}) {
      const double v = float_key(key, fallback);
      if (!(v > 0) || !std::isfinite(v)) throw FileError(path, str("metadata '", key, "' = ", v, " must be positive"));
      *cap = static_cast<float>(v);
    }
  }
  c.validate(path);
  if (arch == "gemma2") c.query_pre_attn_scalar = static_cast<float>(c.n_layers == 46 ? c.dim / c.n_heads : c.head_dim());
  if (g->has(a + "rope.dimension_count")) {
    const int rd = int_key(a + "rope.dimension_count");
    if (rd != c.head_dim()) c.rotary_dim = rd;
  }
  if (g->has(a + "rope.scaling.type")) {
    const std::string key = a + "rope.scaling.type";
    const std::string& st = g->get(key).as_string(key, path);
    if (st == "linear" || st == "yarn") {
      c.rope_scaling.type = st;
      c.rope_scaling.factor = float_key(a + "rope.scaling.factor", 0.0);
      c.rope_scaling.original_max_position = int_key(a + "rope.scaling.original_context_length", 0);
    } else if (st != "none") {
      throw FileError(path, str("metadata '", key, "' = '", st, "' is not supported (none, linear, yarn)"));
    }
  }
  if (const GgufTensorInfo* rf = g->find_tensor("rope_freqs.weight")) {
    if (c.rope_scaling.type != "none")
      throw FileError(path, str("tensor 'rope_freqs.weight' beside ", a, "rope.scaling.type '",
                                c.rope_scaling.type, "': two RoPE scalings"));
    if (rf->ggml_type != 0 || rf->dims.size() != 1 || rf->dims[0] != c.rot_dim() / 2)
      throw FileError(path, str("tensor 'rope_freqs.weight' must be F32 of ", c.rot_dim() / 2, " values (dims ",
                                shape_str(rf->dims), ", type ", GgufFile::ggml_type_name(rf->ggml_type), ")"));
    c.rope_scaling.type = "factors";
    c.rope_scaling.freq_factors.resize(static_cast<size_t>(c.rot_dim() / 2));
    std::memcpy(c.rope_scaling.freq_factors.data(), rf->data, c.rope_scaling.freq_factors.size() * 4);
  }
  // longrope as llama.cpp's converter writes Phi-3 128k: F32 tensors rope_factors_long/short, the
  // original context and the attention factor (llama.cpp's default 1 when absent).
  const GgufTensorInfo* long_f = g->find_tensor("rope_factors_long.weight");
  const GgufTensorInfo* short_f = g->find_tensor("rope_factors_short.weight");
  if (long_f || short_f) {
    if (!long_f || !short_f)
      throw FileError(path, str("tensor '", long_f ? "rope_factors_long.weight" : "rope_factors_short.weight",
                                "' without '", long_f ? "rope_factors_short.weight" : "rope_factors_long.weight",
                                "': longrope needs both"));
    if (c.rope_scaling.type != "none")
      throw FileError(path, str("tensors 'rope_factors_long/short.weight' beside RoPE scaling '", c.rope_scaling.type,
                                "': two RoPE scalings"));
    RopeScaling& r = c.rope_scaling;
    for (auto [info, dst, name] : {std::tuple{long_f, &r.long_factor, "rope_factors_long.weight"},
                                   std::tuple{short_f, &r.short_factor, "rope_factors_short.weight"}}) {
      if (info->ggml_type != 0 || info->dims.size() != 1 || info->dims[0] != c.rot_dim() / 2)
        throw FileError(path, str("tensor '", name, "' must be F32 of ", c.rot_dim() / 2, " values (dims ",
                                  shape_str(info->dims), ", type ", GgufFile::ggml_type_name(info->ggml_type), ")"));
      dst->resize(static_cast<size_t>(c.rot_dim() / 2));
      std::memcpy(dst->data(), info->data, dst->size() * 4);
    }
    r.type = "longrope";
    r.original_max_position = int_key(a + "rope.scaling.original_context_length");
    if (r.original_max_position <= 0)
      throw FileError(path, str("metadata '", a, "rope.scaling.original_context_length' = ", r.original_max_position,
                                " must be positive"));
    r.factor = static_cast<double>(int_key(a + "context_length")) / r.original_max_position;
    r.attention_factor = float_key(a + "rope.scaling.attn_factor", 1.0);
  }
  c.validate(path);

  Xxh64 hash;
  hash.update(g->file()->data(), g->file()->size());
  src.content_hash = hash.label();

  // One canonical tensor from a GGUF tensor with dims [cols, rows] (or [cols] when rows is 0).
  std::set<std::string> used;
  auto take = [&](const std::string& name, int64_t rows, int64_t cols) -> TensorSource {
    const GgufTensorInfo* ti = g->find_tensor(name);
    if (!ti) throw FileError(path, str("missing tensor '", name, "'"));
    used.insert(name);
    if (!ggml_type_readable(ti->ggml_type))
      throw FileError(path, str("tensor '", name, "' has type ", GgufFile::ggml_type_name(ti->ggml_type),
                                "; cibench reads ", ggml_readable_types(), " GGUF tensors"));
    std::vector<int64_t> dims = ti->dims;
    while (dims.size() > 1 && dims.back() == 1) dims.pop_back();
    const std::vector<int64_t> want =
        rows == 0 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows};
    if (dims != want)
      throw FileError(path, str("tensor '", name, "' has dims ", shape_str(ti->dims),
                                " (GGUF order, innermost first) but the metadata implies ",
                                shape_str(want)));
    TensorSource t;
    t.rows = rows == 0 ? 1 : rows;
    t.cols = cols;
    const int64_t t_rows = t.rows;
    const uint32_t type = ti->ggml_type;
    const uint8_t* base = ti->data;
    // The GGUF reader checked that a row is whole blocks, so row r0 starts a block.
    const size_t row_bytes = static_cast<size_t>(cols / ggml_block_values(type)) * ggml_block_bytes(type);
    t.read = [g, name, base, type, t_rows, cols, row_bytes](int64_t r0, int64_t n, float* dst) {
      check_rows(name, t_rows, r0, n);
      dequantize_ggml(type, base + static_cast<size_t>(r0) * row_bytes, n * cols, dst);
    };
    if (ggml_block_values(type) > 1) t.stored_type = GgufFile::ggml_type_name(type);
    // Q4_0 blocks are int4_g32 groups, Q8_0 blocks int8_g32_a8 blocks, byte for byte.
    if (type == kGgmlQ4_0 || type == kGgmlQ8_0) {
      t.native_format = type == kGgmlQ4_0 ? "int4_g32" : "int8_g32_a8";
      t.read_native = [g, name, base, t_rows, row_bytes](int64_t r0, int64_t n, uint8_t* dst) {
        check_rows(name, t_rows, r0, n);
        std::memcpy(dst, base + static_cast<size_t>(r0) * row_bytes, static_cast<size_t>(n) * row_bytes);
      };
    }
    return t;
  };

  const int64_t d = c.dim, hd = c.hidden_dim, qd = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  const int head = c.head_dim(), rot = c.rot_dim();
  auto rows = [&](TensorSource t) { return rotate_half ? unpermute_rotary(std::move(t), head, rot) : t; };
  auto vec = [&](TensorSource t) { return rotate_half ? unpermute_rotary_vector(std::move(t), head, rot) : t; };
  if (c.rope_scaling.type == "factors") used.insert("rope_freqs.weight");
  if (c.rope_scaling.type == "longrope") used.insert({"rope_factors_long.weight", "rope_factors_short.weight"});
  src.tensors["tok_embeddings"] = take("token_embd.weight", v, d);
  src.tensors["norm"] = take("output_norm.weight", 0, d);
  c.tied_output = g->find_tensor("output.weight") == nullptr;
  if (!c.tied_output) src.tensors["output"] = take("output.weight", v, d);
  // Optional tensors decide the knobs: q/k/v biases, an output bias, q/k norms (all layers alike).
  c.qkv_bias = g->find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = g->find_tensor("blk.0.attn_output.bias") != nullptr;
  c.qk_norm = g->find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  if (arch == "qwen2" && !c.qkv_bias) throw FileError(path, "qwen2 file without 'blk.0.attn_q.bias' (qwen2 has q/k/v biases)");
  if (arch == "qwen3" && !c.qk_norm) throw FileError(path, "qwen3 file without 'blk.0.attn_q_norm.weight'");
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::string q = "layers." + std::to_string(l) + ".";
    src.tensors[q + "attention_norm"] = take(p + "attn_norm.weight", 0, d);
    src.tensors[q + "ffn_norm"] = take(p + "ffn_norm.weight", 0, d);
    if (c.post_norms) {
      src.tensors[q + "post_attention_norm"] = take(p + "post_attention_norm.weight", 0, d);
      src.tensors[q + "post_ffn_norm"] = take(p + "post_ffw_norm.weight", 0, d);
    }
    if (arch == "phi3") {
      // Fused as in the Hugging Face checkpoint: attn_qkv rows q, k, v; ffn_up rows gate, up.
      const TensorSource qkv = take(p + "attn_qkv.weight", qd + 2 * kv, d);
      src.tensors[q + "wq"] = rows(row_slice(qkv, 0, qd));
      src.tensors[q + "wk"] = rows(row_slice(qkv, qd, kv));
      src.tensors[q + "wv"] = row_slice(qkv, qd + kv, kv);
      const TensorSource gate_up = take(p + "ffn_up.weight", 2 * hd, d);
      src.tensors[q + "w1"] = row_slice(gate_up, 0, hd);
      src.tensors[q + "w3"] = row_slice(gate_up, hd, hd);
    } else {
      src.tensors[q + "wq"] = rows(take(p + "attn_q.weight", qd, d));
      src.tensors[q + "wk"] = rows(take(p + "attn_k.weight", kv, d));
      src.tensors[q + "wv"] = take(p + "attn_v.weight", kv, d);
      src.tensors[q + "w1"] = take(p + "ffn_gate.weight", hd, d);
      src.tensors[q + "w3"] = take(p + "ffn_up.weight", hd, d);
    }
    src.tensors[q + "wo"] = take(p + "attn_output.weight", d, qd);
    src.tensors[q + "w2"] = take(p + "ffn_down.weight", d, hd);
    if (c.qkv_bias) {
      src.tensors[q + "bq"] = vec(take(p + "attn_q.bias", 0, qd));
      src.tensors[q + "bk"] = vec(take(p + "attn_k.bias", 0, kv));
      src.tensors[q + "bv"] = take(p + "attn_v.bias", 0, kv);
    }
    if (c.o_bias) src.tensors[q + "bo"] = take(p + "attn_output.bias", 0, d);
    if (c.qk_norm) {
      src.tensors[q + "q_norm"] = vec(take(p + "attn_q_norm.weight", 0, head));
      src.tensors[q + "k_norm"] = vec(take(p + "attn_k_norm.weight", 0, head));
    }
  }
  std::vector<std::string> unused;
  for (const GgufTensorInfo& ti : g->tensors())
    if (!used.count(ti.name)) unused.push_back(ti.name);
  if (!unused.empty()) throw unaccounted_tensors(path, str("its metadata (", a, "block_count ", c.n_layers, ")"), unused);
  src.keepalive = g;
  return src;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

LlamaSource open_llama_source(const std::string& spec) {
  if (spec.rfind("synthetic:", 0) == 0) return synthetic_llama_source(spec);

  std::error_code ec;
  const fs::path p(spec);
  if (spec.empty() || !fs::exists(p, ec)) throw FileError(spec, "no such file or directory");
  LlamaSource src;
  const std::string name = p.filename().string();
  if (fs::is_directory(p, ec) || name == "config.json" || ends_with(name, ".safetensors") ||
      name == "model.safetensors.index.json") {
    src = open_hf(spec);
  } else if (ends_with(name, ".gguf")) {
    src = open_gguf(spec);
  } else {
    auto f = std::make_shared<const MappedFile>(spec);
    const bool is_gguf = f->size() >= 4 && std::memcmp(f->data(), "GGUF", 4) == 0;
    // A cibench quantised model (engines/quant/quantized_file.h) is not an FP32 source: read as
    // llama2.c its magic would be taken for a dimension.
    if (f->size() >= 8 && std::memcmp(f->data(), "CIBQUANT", 8) == 0)
      throw FileError(spec, "a cibench quantised model (.cbq), not an FP32 source: scenarios take it as "
                            "[model] source and cibench generate runs it; recipes and quantize need the FP32 model");
    f.reset();
    src = is_gguf ? open_gguf(spec) : open_llama2c(spec);
  }
  validate_llama_source(src);
  return src;
}

}  // namespace cibench
