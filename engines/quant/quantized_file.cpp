#include "engines/quant/quantized_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/core/output_file.h"
#include "engines/quant/calibration.h"
#include "engines/quant/recipe.h"

namespace cibench {
namespace {

constexpr char kMagic[8] = {'C', 'I', 'B', 'Q', 'U', 'A', 'N', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kAlign = 64;
constexpr uint64_t kMaxHeader = 64ull << 20;

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool is_projection(const std::string& name) {
  const auto dot = name.rfind('.');
  if (name.rfind("layers.", 0) != 0 || dot == std::string::npos) return false;
  const std::string w = name.substr(dot + 1);
  return w == "wq" || w == "wk" || w == "wv" || w == "wo" || w == "w1" || w == "w2" || w == "w3";
}

nlohmann::json config_json(const LlamaConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  return {{"dim", c.dim},           {"hidden_dim", c.hidden_dim}, {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},   {"n_kv_heads", c.n_kv_heads}, {"vocab_size", c.vocab_size},
          {"seq_len", c.seq_len},   {"norm_eps", c.norm_eps},     {"rope_theta", c.rope_theta},
          {"tied_output", c.tied_output}, {"bos_id", c.bos_id},   {"eos_id", c.eos_id},
          {"head_dim", c.head_size}, {"rotary_dim", c.rotary_dim}, {"qkv_bias", c.qkv_bias},
          {"o_bias", c.o_bias}, {"qk_norm", c.qk_norm}, {"family", c.family}, {"rope_layers", c.rope_layers},
          {"embed_scale", c.embed_scale}, {"ffn_act", c.ffn_act}, {"attn_window", c.attn_window},
          {"rope_local_theta", c.rope_local_theta}, {"post_norms", c.post_norms}, {"attn_softcap", c.attn_softcap},
          {"final_softcap", c.final_softcap}, {"query_pre_attn_scalar", c.query_pre_attn_scalar},
          {"rope_scaling", {{"type", r.type}, {"factor", r.factor},
                            {"original_max_position", r.original_max_position},
                            {"low_freq_factor", r.low_freq_factor}, {"high_freq_factor", r.high_freq_factor},
                            {"beta_fast", r.beta_fast}, {"beta_slow", r.beta_slow},
                            {"attention_factor", r.attention_factor}, {"mscale", r.mscale},
                            {"mscale_all_dim", r.mscale_all_dim}, {"truncate", r.truncate},
                            {"freq_factors", r.freq_factors}}}};
}

LlamaConfig config_from(const nlohmann::json& j) {
  LlamaConfig c;
  c.dim = j.at("dim");
  c.hidden_dim = j.at("hidden_dim");
  c.n_layers = j.at("n_layers");
  c.n_heads = j.at("n_heads");
  c.n_kv_heads = j.at("n_kv_heads");
  c.vocab_size = j.at("vocab_size");
  c.seq_len = j.at("seq_len");
  c.norm_eps = j.at("norm_eps");
  c.rope_theta = j.at("rope_theta");
  c.tied_output = j.at("tied_output");
  c.bos_id = j.at("bos_id");
  c.eos_id = j.at("eos_id");
  // The family knobs (absent from files written before they existed: Llama 2 defaults).
  c.head_size = j.value("head_dim", 0);
  c.rotary_dim = j.value("rotary_dim", 0);
  c.qkv_bias = j.value("qkv_bias", false);
  c.o_bias = j.value("o_bias", false);
  c.qk_norm = j.value("qk_norm", false);
  c.family = j.value("family", std::string("llama"));
  c.rope_layers = j.value("rope_layers", std::vector<uint8_t>{});
  c.embed_scale = j.value("embed_scale", 0.0f);
  c.ffn_act = j.value("ffn_act", std::string("silu"));
  c.attn_window = j.value("attn_window", std::vector<int>{});
  c.rope_local_theta = j.value("rope_local_theta", 0.0f);
  c.post_norms = j.value("post_norms", false);
  c.attn_softcap = j.value("attn_softcap", 0.0f);
  c.final_softcap = j.value("final_softcap", 0.0f);
  c.query_pre_attn_scalar = j.value("query_pre_attn_scalar", 0.0f);
  if (j.contains("rope_scaling")) {
    const nlohmann::json& r = j.at("rope_scaling");
    RopeScaling& s = c.rope_scaling;
    s.type = r.at("type");
    s.factor = r.at("factor");
    s.original_max_position = r.at("original_max_position");
    s.low_freq_factor = r.at("low_freq_factor");
    s.high_freq_factor = r.at("high_freq_factor");
    s.beta_fast = r.at("beta_fast");
    s.beta_slow = r.at("beta_slow");
    s.attention_factor = r.at("attention_factor");
    s.mscale = r.at("mscale");
    s.mscale_all_dim = r.at("mscale_all_dim");
    s.truncate = r.at("truncate");
    s.freq_factors = r.at("freq_factors").get<std::vector<float>>();
  }
  return c;
}

}  // namespace

QuantizedMeta quantized_meta(const RecipeOutput& out, const CalibrationSet* calib,
                             const std::string& eval_slice) {
  QuantizedMeta m;
  m.recipe = out.spec.recipe;
  m.recipe_spec = out.spec.describe();
  for (const RecipeParam& p : recipe_by_name(out.spec.recipe).params) m.params[p.name] = out.spec.param(p.name);
  m.sparsity = out.spec.sparsity;
  m.format = out.spec.format;
  m.build = out.build;
  m.source_hash = out.source_hash;
  m.source_origin = out.source_origin;
  m.source_container = out.source_container;
  if (calib) {
    m.calib_slice = calib->source.slice.spec();
    m.calib_docs = static_cast<int64_t>(calib->source.docs.size());
    m.calib_text_hash = calib->source.hash;
    m.calib_samples = calib->samples;
    m.calib_seq_len = calib->seq_len;
    m.calib_seed = calib->seed;
    m.calib_hash = calib->token_hash;
  }
  m.eval_slice = eval_slice;
  return m;
}

void write_quantized(const std::string& path, const LlamaSource& source, const QuantizedMeta& meta) {
  const FormatRow& fmt = format_by_name(meta.format);
  struct Blob {
    std::string name;
    bool packed;
    int64_t rows, cols;
    std::vector<uint8_t> bytes;
  };
  std::vector<Blob> blobs;
  for (const auto& [name, t] : source.tensors) {
    Blob b{name, is_projection(name), t.rows, t.cols, {}};
    if (b.packed) {
      const WeightMatrix w = pack_matrix(name, t.rows, t.cols, fmt, t.read);
      b.bytes.assign(w.data(), w.data() + w.bytes());
    } else {
      const std::vector<float> v = t.read_all();
      b.bytes.resize(v.size() * sizeof(float));
      std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
    }
    blobs.push_back(std::move(b));
  }
  nlohmann::json tensors = nlohmann::json::array();
  uint64_t at = 0, h = 0xcbf29ce484222325ull;
  std::vector<uint8_t> payload;
  for (const Blob& b : blobs) {
    at = align_up(at);
    payload.resize(at, 0);
    tensors.push_back({{"name", b.name}, {"kind", b.packed ? "packed" : "f32"},
                       {"format", b.packed ? meta.format : "f32"}, {"rows", b.rows},
                       {"cols", b.cols}, {"offset", at}, {"bytes", b.bytes.size()}});
    payload.insert(payload.end(), b.bytes.begin(), b.bytes.end());
    at = payload.size();
  }
  h = fnv1a64(payload.data(), payload.size(), h);
  nlohmann::json build = {{"format", meta.build.format}, {"class_format", meta.build.class_format}};
  nlohmann::json header = {
      {"cibench_quantized", 1},
      {"recipe", meta.recipe},
      {"recipe_spec", meta.recipe_spec},
      {"params", meta.params},
      {"sparsity", meta.sparsity},
      {"format", meta.format},
      {"build", build},
      {"source", {{"content_hash", meta.source_hash}, {"origin", meta.source_origin},
                  {"container", meta.source_container}}},
      {"calibration", {{"slice", meta.calib_slice}, {"docs", meta.calib_docs},
                       {"text_hash", meta.calib_text_hash}, {"samples", meta.calib_samples},
                       {"seq_len", meta.calib_seq_len}, {"seed", meta.calib_seed},
                       {"token_hash", meta.calib_hash}, {"eval_slice", meta.eval_slice}}},
      {"config", config_json(source.config)},
      {"tensors", tensors},
      {"payload_hash", hash_label(h)},
  };
  const std::string hs = header.dump(1);
  // Written beside and renamed over: an interrupted write never leaves a partial .cbq at PATH.
  ReplacingFile file(path, "the quantised model file");
  std::ostream& out = file.stream();
  const uint32_t version = kVersion, zero = 0;
  const uint64_t hlen = hs.size();
  out.write(kMagic, 8);
  out.write(reinterpret_cast<const char*>(&version), 4);
  out.write(reinterpret_cast<const char*>(&zero), 4);
  out.write(reinterpret_cast<const char*>(&hlen), 8);
  out.write(hs.data(), static_cast<std::streamsize>(hs.size()));
  const uint64_t pad = align_up(24 + hlen) - (24 + hlen);
  const std::vector<char> zeros(pad, 0);
  out.write(zeros.data(), static_cast<std::streamsize>(pad));
  out.write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(payload.size()));
  file.commit();
}

bool is_quantized_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // never open a FIFO to peek
  std::ifstream in(path, std::ios::binary);
  char m[8] = {};
  return in.read(m, 8) && std::memcmp(m, kMagic, 8) == 0;
}

QuantizedModelFile load_quantized(const std::string& path, const std::string& expected_source_hash) {
  const std::string data = read_file(path);
  if (data.size() < 24 || std::memcmp(data.data(), kMagic, 8) != 0)
    throw FileError(path, "not a cibench quantised model file (missing CIBQUANT magic)");
  uint32_t version;
  uint64_t hlen;
  std::memcpy(&version, data.data() + 8, 4);
  std::memcpy(&hlen, data.data() + 16, 8);
  if (version != kVersion)
    throw FileError(path, str("quantised model file version ", version, " is not supported (expected ", kVersion, ")"));
  if (hlen > kMaxHeader || 24 + hlen > data.size())
    throw FileError(path, str("header length ", hlen, " exceeds the file size ", data.size()));
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(data.substr(24, hlen));
  } catch (const std::exception& e) {
    throw FileError(path, str("header is not valid JSON: ", e.what()));
  }
  const uint64_t base = align_up(24 + hlen);
  if (base > data.size()) throw FileError(path, "truncated before the payload");
  const uint8_t* payload = reinterpret_cast<const uint8_t*>(data.data()) + base;
  const uint64_t payload_size = data.size() - base;

  QuantizedModelFile f;
  f.path = path;
  std::map<std::string, MemTensor> tensors;
  try {
    QuantizedMeta& m = f.meta;
    m.recipe = h.at("recipe");
    m.recipe_spec = h.at("recipe_spec");
    m.params = h.at("params").get<std::map<std::string, double>>();
    m.sparsity = h.at("sparsity");
    m.format = h.at("format");
    m.build.format = h.at("build").at("format");
    m.build.class_format = h.at("build").at("class_format").get<std::map<std::string, std::string>>();
    m.source_hash = h.at("source").at("content_hash");
    m.source_origin = h.at("source").at("origin");
    m.source_container = h.at("source").at("container");
    const auto& c = h.at("calibration");
    m.calib_slice = c.at("slice");
    m.calib_docs = c.at("docs");
    m.calib_text_hash = c.at("text_hash");
    m.calib_samples = c.at("samples");
    m.calib_seq_len = c.at("seq_len");
    m.calib_seed = c.at("seed");
    m.calib_hash = c.at("token_hash");
    m.eval_slice = c.at("eval_slice");
    const std::string want = h.at("payload_hash");
    if (hash_label(fnv1a64(payload, payload_size)) != want)
      throw FileError(path, str("payload hash ", hash_label(fnv1a64(payload, payload_size)),
                                " does not match the header's ", want, " (file corrupt or truncated)"));
    if (!expected_source_hash.empty() && expected_source_hash != m.source_hash)
      throw FileError(path, str("was quantised from a model with content hash ", m.source_hash,
                                " (", m.source_origin, "), but the model named here has content hash ",
                                expected_source_hash, "; re-run cibench quantize on that model or name "
                                "the model this file was made from"));
    const LlamaConfig cfg = config_from(h.at("config"));
    cfg.validate(path);
    const FormatRow& fmt = format_by_name(m.format);
    std::vector<ByteRange> ranges;
    for (const auto& t : h.at("tensors")) {
      const std::string name = t.at("name"), kind = t.at("kind");
      const int64_t rows = t.at("rows"), cols = t.at("cols");
      const uint64_t off = t.at("offset"), bytes = t.at("bytes");
      ranges.push_back({off, bytes, name});
      if (rows <= 0 || cols <= 0 || rows > (1 << 24) || cols > (1 << 24))
        throw FileError(path, str("tensor ", name, " has an impossible shape ", rows, " x ", cols));
      if (off > payload_size || bytes > payload_size - off)
        throw FileError(path, str("tensor ", name, " [", off, ", +", bytes, ") lies outside the payload of ",
                                  payload_size, " bytes"));
      MemTensor mt{rows, cols, std::vector<float>(static_cast<size_t>(rows * cols))};
      if (kind == "f32") {
        if (bytes != static_cast<uint64_t>(rows * cols) * 4)
          throw FileError(path, str("tensor ", name, ": ", bytes, " bytes for ", rows, " x ", cols, " f32"));
        std::memcpy(mt.data.data(), payload + off, bytes);
      } else if (kind == "packed") {
        if (t.at("format") != m.format)
          throw FileError(path, str("tensor ", name, " is in format ", t.at("format").get<std::string>(),
                                    ", the file's format is ", m.format));
        WeightMatrix w;
        w.name = name;
        w.rows = rows;
        w.cols = cols;
        w.format = &fmt;
        w.row_bytes = fmt.packed_row_bytes ? 0 : fmt.row_bytes(cols);
        if (w.row_bytes && bytes != static_cast<uint64_t>(rows) * w.row_bytes)
          throw FileError(path, str("tensor ", name, ": ", bytes, " bytes, expected ", rows, " rows of ",
                                    w.row_bytes));
        if (!w.row_bytes) {
          const uint64_t table = (static_cast<uint64_t>(rows) + 1) * 8;
          if (bytes < table) throw FileError(path, str("tensor ", name, ": row table truncated"));
          std::vector<uint64_t> o(static_cast<size_t>(rows) + 1);
          std::memcpy(o.data(), payload + off, table);
          for (int64_t r = 0; r < rows; ++r)
            if (o[r] < table || o[r] > o[r + 1] || o[r + 1] > bytes ||
                o[r + 1] - o[r] > fmt.row_bytes(cols))
              throw FileError(path, str("tensor ", name, ": row ", r, " offsets are inconsistent"));
          if (o[rows] != bytes) throw FileError(path, str("tensor ", name, ": row table does not end at the tensor's end"));
        }
        w.storage = AlignedBuffer(bytes);
        std::memcpy(w.storage.data(), payload + off, bytes);
        unpack_matrix(w, mt.data.data());
        f.packed.emplace(name, std::move(w));
      } else {
        throw FileError(path, str("tensor ", name, " has unknown kind '", kind, "'"));
      }
      tensors.emplace(name, std::move(mt));
    }
    // The header is outside the payload hash: two tensors pointing at the same bytes, or tensors
    // the config does not account for (layers beyond n_layers), would run with status ok.
    if (const auto o = first_overlap(std::move(ranges)))
      throw FileError(path, str("tensor ", o->second.name, " overlaps tensor ", o->first.name, " in the payload"));
    for (const auto& [name, t] : tensors) {
      // "layers.L.KIND" with L < n_layers, the embeddings, the final norm, an untied head, and
      // the static activation scale of any of them ("....act_scale").
      std::string stem = name.size() > 10 && name.compare(name.size() - 10, 10, ".act_scale") == 0
                             ? name.substr(0, name.size() - 10)
                             : name;
      bool known = stem == "tok_embeddings" || stem == "norm" || (stem == "output" && !cfg.tied_output);
      int layer = -1, used = 0;
      char kind[32] = {};
      if (std::sscanf(stem.c_str(), "layers.%d.%31s%n", &layer, kind, &used) == 2 &&
          used == static_cast<int>(stem.size()) && layer >= 0 && layer < cfg.n_layers)
        for (const char* k : {"attention_norm", "ffn_norm", "wq", "wk", "wv", "wo", "w1", "w2", "w3", "bq", "bk",
                              "bv", "bo", "q_norm", "k_norm", "post_attention_norm", "post_ffn_norm"})
          known = known || std::strcmp(kind, k) == 0;
      if (!known)
        throw FileError(path, str("tensor ", name, " is not part of the model its config describes (", cfg.n_layers,
                                  " layers): the header and the tensors disagree"));
    }
    f.source = memory_llama_source(cfg, path, "cbq", std::move(tensors));
  } catch (const FileError&) {
    throw;
  } catch (const std::exception& e) {
    throw FileError(path, str("malformed header: ", e.what()));
  }
  validate_llama_source(f.source);
  return f;
}

LlamaModel build_quantized(const QuantizedModelFile& f) {
  LlamaModel m = build_llama(f.source, f.meta.build);
  auto check = [&](const WeightMatrix& w) {
    auto it = f.packed.find(w.name);
    if (it == f.packed.end()) throw FileError(f.path, str("no packed tensor ", w.name));
    const WeightMatrix& s = it->second;
    if (w.format != s.format || w.bytes() != s.bytes() || std::memcmp(w.data(), s.data(), w.bytes()) != 0)
      throw FileError(f.path, str("tensor ", w.name, " does not re-pack to its stored bytes in ",
                                  s.format->name, " (the format's packing changed since the file was written?)"));
  };
  for (const LlamaLayer& L : m.layers)
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) check(*w);
  return m;
}

}  // namespace cibench
