// BERT-family encoders: loading Hugging Face folders (config.json + model.safetensors) and the
// synthetic presets (published shapes, seeded random weights), beside the Llama-family loaders
// (loaders.cpp). Packing and the session are in bert.cpp.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/core/splitmix.h"
#include "engines/models/bert.h"
#include "engines/models/hf_config.h"
#include "engines/models/safetensors.h"

namespace cibench {

namespace fs = std::filesystem;

namespace {

// ---- Loading helpers --------------------------------------------------------------------------------

// A 64-bit digest of bytes (multiply-xorshift over 8-byte words): identifies the weights.
struct Digest64 {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  void update(const uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      mix(w);
    }
    uint64_t tail = n;
    for (; i < n; ++i) tail = (tail << 8) | p[i];
    mix(tail);
  }
  void mix(uint64_t w) {
    h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  std::string label() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "mix64:%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};


BertActivation parse_activation(const std::string& name, const std::string& cfg, const char* key) {
  if (name == "gelu") return BertActivation::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return BertActivation::gelu_tanh;
  if (name == "relu") return BertActivation::relu;
  throw FileError(cfg, str("'", key, "' = \"", name,
                           "\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)"));
}

// ModernBertForSequenceClassification's names: query, key and value are row blocks of the
// fused attn.Wqkv (hf_fused_part), and only the tensors the config has are listed.
std::map<std::string, std::string> modernbert_hf_names(const BertConfig& c) {
  std::map<std::string, std::string> m;
  auto put = [&](const std::string& canon, const std::string& hf) {
    for (const char* wb : {".weight", ".bias"})
      if (bert_has_tensor(c, canon + wb)) m[canon + wb] = hf + wb;
  };
  m["embeddings.word"] = "model.embeddings.tok_embeddings.weight";
  put("embeddings.norm", "model.embeddings.norm");
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string q = "layers." + std::to_string(l) + ".", p = "model.layers." + std::to_string(l) + ".";
    for (const char* part : {"query", "key", "value"}) put(q + part, p + "attn.Wqkv");
    put(q + "attn_out", p + "attn.Wo");
    put(q + "attn_norm", p + "attn_norm");
    put(q + "ffn_norm", p + "mlp_norm");
    put(q + "ffn_in", p + "mlp.Wi");
    put(q + "ffn_out", p + "mlp.Wo");
  }
  put("final_norm", "model.final_norm");
  put("head.dense", "head.dense");
  put("head.norm", "head.norm");
  put("head.classifier", "classifier");
  return m;
}

// Which row block of a fused file tensor a canonical tensor is: {block, blocks} ({0, 1} when
// the tensor is stored alone). ModernBERT stores query, key and value stacked in attn.Wqkv.
std::pair<int, int> hf_fused_part(const BertConfig& c, const std::string& canon) {
  if (!c.modern()) return {0, 1};
  const char* parts[3] = {".query.", ".key.", ".value."};
  for (int i = 0; i < 3; ++i)
    if (canon.find(parts[i]) != std::string::npos) return {i, 3};
  return {0, 1};
}

// The encoder's sizes under the family's key names.
void read_sizes(const nlohmann::json& j, const std::string& cfg, BertConfig& c, const char* hidden,
                const char* layers, const char* heads, const char* intermediate) {
  c.hidden = hf::get_int(j, hidden, cfg);
  c.n_layers = hf::get_int(j, layers, cfg);
  c.n_heads = hf::get_int(j, heads, cfg);
  c.intermediate = hf::get_int(j, intermediate, cfg);
}

bool get_flag(const nlohmann::json& j, const char* key, const std::string& cfg, bool fallback) {
  const nlohmann::json* v = hf::field(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw FileError(cfg, str("'", key, "' must be true or false, got ", v->dump()));
  return v->get<bool>();
}

// ModernBertConfig's keys (defaults as Hugging Face's); a value that would change the
// arithmetic in a way cibench does not compute is a FileError naming the key and the value.
void read_modernbert_config(const nlohmann::json& j, const std::string& cfg, BertConfig& c) {
  c.arch = BertArch::modernbert;
  read_sizes(j, cfg, c, "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size");
  c.type_vocab_size = 0;
  c.layer_norm_eps = hf::get_number(j, "norm_eps", cfg, 1e-5);
  c.activation = parse_activation(hf::get_string(j, "hidden_activation", cfg, "gelu"), cfg, "hidden_activation");
  c.head_activation = parse_activation(hf::get_string(j, "classifier_activation", cfg, "gelu"), cfg, "classifier_activation");
  const std::string pooling = hf::get_string(j, "classifier_pooling", cfg, "cls");
  if (pooling != "cls" && pooling != "mean")
    throw FileError(cfg, str("'classifier_pooling' = \"", pooling, "\" is not supported (cls, mean)"));
  c.pooling = pooling == "cls" ? BertPooling::cls : BertPooling::mean;
  const int three = 3, window = 128;
  c.global_every = hf::get_int(j, "global_attn_every_n_layers", cfg, &three);
  c.local_window = hf::get_int(j, "local_attention", cfg, &window);
  if (c.global_every < 1)
    throw FileError(cfg, str("'global_attn_every_n_layers' = ", c.global_every, " must be >= 1"));
  if (c.local_window < 2)
    throw FileError(cfg, str("'local_attention' = ", c.local_window, " must be >= 2"));
  c.rope_theta_global = hf::get_number(j, "global_rope_theta", cfg, 160000.0);
  c.rope_theta_local = hf::get_number(j, "local_rope_theta", cfg, 10000.0);
  // Newer configs: rope_parameters per layer type, each a default (unscaled) rotary embedding.
  if (const nlohmann::json* rp = hf::field(j, "rope_parameters")) {
    if (!rp->is_object()) throw FileError(cfg, str("'rope_parameters' must be an object, got ", rp->dump()));
    for (const auto& [type, theta] : {std::pair<const char*, double*>{"full_attention", &c.rope_theta_global},
                                      std::pair<const char*, double*>{"sliding_attention", &c.rope_theta_local}}) {
      const nlohmann::json* p = hf::field(*rp, type);
      if (!p) continue;
      const std::string key = str("rope_parameters.", type);
      if (!p->is_object()) throw FileError(cfg, str("'", key, "' must be an object, got ", p->dump()));
      const std::string rope_type = hf::get_string(*p, "rope_type", cfg, "default");
      if (rope_type != "default")
        throw FileError(cfg, str("'", key, ".rope_type' = \"", rope_type, "\" is not supported (default)"));
      *theta = hf::get_number(*p, "rope_theta", cfg, *theta);
    }
  }
  if (const nlohmann::json* rs = hf::field(j, "rope_scaling"))
    throw FileError(cfg, str("'rope_scaling' = ", rs->dump(), " is not supported (unscaled rotary positions only)"));
  // layer_types, when given, must say what global_attn_every_n_layers says.
  if (const nlohmann::json* lt = hf::field(j, "layer_types")) {
    if (!lt->is_array() || static_cast<int>(lt->size()) != c.n_layers)
      throw FileError(cfg, str("'layer_types' must list the ", c.n_layers, " layers, got ", lt->dump()));
    for (int l = 0; l < c.n_layers; ++l) {
      const char* want = c.global_layer(l) ? "full_attention" : "sliding_attention";
      if ((*lt)[static_cast<size_t>(l)] != want)
        throw FileError(cfg, str("'layer_types'[", l, "] = ", (*lt)[static_cast<size_t>(l)].dump(), " but global_attn_every_n_layers ",
                                 c.global_every, " makes layer ", l, " ", want, " (other layouts are not supported)"));
    }
  }
  if (const nlohmann::json* hd = hf::field(j, "head_dim"); hd && c.n_heads > 0 &&
      !(hd->is_number_integer() && hd->get<int64_t>() * c.n_heads == c.hidden))
    throw FileError(cfg, str("'head_dim' = ", hd->dump(), " is not hidden_size / num_attention_heads (not supported)"));
  c.attention_bias = get_flag(j, "attention_bias", cfg, false);
  c.mlp_bias = get_flag(j, "mlp_bias", cfg, false);
  c.norm_bias = get_flag(j, "norm_bias", cfg, false);
  c.head_dense_bias = get_flag(j, "classifier_bias", cfg, false);
}

// Hugging Face tensor names of each canonical tensor.
std::map<std::string, std::string> hf_names(const BertConfig& c) {
  if (c.modern()) return modernbert_hf_names(c);
  std::map<std::string, std::string> m;
  // RoBERTa / XLM-R keep BERT's module names under "roberta."
  const bool bert = c.arch != BertArch::distilbert, roberta = c.arch == BertArch::roberta;
  const std::string root = roberta ? "roberta." : "bert.";
  const std::string e = bert ? root + "embeddings." : "distilbert.embeddings.";
  m["embeddings.word"] = e + "word_embeddings.weight";
  m["embeddings.position"] = e + "position_embeddings.weight";
  if (bert) m["embeddings.token_type"] = e + "token_type_embeddings.weight";
  m["embeddings.norm.weight"] = e + "LayerNorm.weight";
  m["embeddings.norm.bias"] = e + "LayerNorm.bias";
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string q = "layers." + std::to_string(l) + ".";
    std::map<std::string, std::string> parts;
    if (bert) {
      const std::string p = root + "encoder.layer." + std::to_string(l) + ".";
      parts = {{"query", p + "attention.self.query"},
               {"key", p + "attention.self.key"},
               {"value", p + "attention.self.value"},
               {"attn_out", p + "attention.output.dense"},
               {"attn_norm", p + "attention.output.LayerNorm"},
               {"ffn_in", p + "intermediate.dense"},
               {"ffn_out", p + "output.dense"},
               {"ffn_norm", p + "output.LayerNorm"}};
    } else {
      const std::string p = "distilbert.transformer.layer." + std::to_string(l) + ".";
      parts = {{"query", p + "attention.q_lin"},
               {"key", p + "attention.k_lin"},
               {"value", p + "attention.v_lin"},
               {"attn_out", p + "attention.out_lin"},
               {"attn_norm", p + "sa_layer_norm"},
               {"ffn_in", p + "ffn.lin1"},
               {"ffn_out", p + "ffn.lin2"},
               {"ffn_norm", p + "output_layer_norm"}};
    }
    for (const auto& [k, v] : parts) {
      m[q + k + ".weight"] = v + ".weight";
      m[q + k + ".bias"] = v + ".bias";
    }
  }
  const std::string hd = roberta ? "classifier.dense" : bert ? "bert.pooler.dense" : "pre_classifier";
  const std::string cl = roberta ? "classifier.out_proj" : "classifier";
  m["head.dense.weight"] = hd + ".weight";
  m["head.dense.bias"] = hd + ".bias";
  m["head.classifier.weight"] = cl + ".weight";
  m["head.classifier.bias"] = cl + ".bias";
  return m;
}

// The shape each canonical tensor must have: {rows, cols} for matrices, {n} for vectors.

std::string describe_config(const BertConfig& c) {
  if (c.modern())
    return str("hidden_size ", c.hidden, ", intermediate_size ", c.intermediate, ", vocab_size ", c.vocab_size,
               ", num_hidden_layers ", c.n_layers, ", attention_bias ", c.attention_bias, ", mlp_bias ",
               c.mlp_bias, ", norm_bias ", c.norm_bias, ", classifier_bias ", c.head_dense_bias, ", classifier_pooling ",
               bert_pooling_name(c.pooling), ", ", c.num_labels, " labels");
  return c.arch != BertArch::distilbert
             ? str("hidden_size ", c.hidden, ", intermediate_size ", c.intermediate,
                   ", vocab_size ", c.vocab_size, ", max_position_embeddings ", c.max_positions,
                   ", type_vocab_size ", c.type_vocab_size, ", ", c.num_labels, " labels")
             : str("dim ", c.hidden, ", hidden_dim ", c.intermediate, ", vocab_size ",
                   c.vocab_size, ", max_position_embeddings ", c.max_positions, ", ",
                   c.num_labels, " labels");
}

BertSource open_hf_bert(const std::string& spec) {
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

  BertSource src;
  src.origin = dir_s;
  src.container = "hf-safetensors";
  BertConfig& c = src.config;
  const std::string model_type = hf::get_string(j, "model_type", cfg, "");
  bool bert = model_type == "bert", distil = model_type == "distilbert";
  bool roberta = model_type == "roberta" || model_type == "xlm-roberta";
  bool modern = model_type == "modernbert";
  if (const auto* ar = hf::field(j, "architectures"); ar && ar->is_array())
    for (const auto& a : *ar) {
      if (!a.is_string()) continue;
      const std::string name = a.get<std::string>();
      bert = bert || name == "BertForSequenceClassification";
      distil = distil || name == "DistilBertForSequenceClassification";
      roberta = roberta || name == "RobertaForSequenceClassification" ||
                name == "XLMRobertaForSequenceClassification";
      modern = modern || name == "ModernBertForSequenceClassification";
    }
  if (int(bert) + int(distil) + int(roberta) + int(modern) != 1)
    throw FileError(cfg, str("not a BERT, DistilBERT, RoBERTa/XLM-R or ModernBERT classifier (model_type ",
                             hf::field(j, "model_type") ? j["model_type"].dump() : "absent",
                             ", architectures ",
                             hf::field(j, "architectures") ? j["architectures"].dump() : "absent",
                             ")"));
  const int d512 = 512, d8192 = 8192;
  if (modern) {
    read_modernbert_config(j, cfg, c);
  } else if (bert || roberta) {
    c.arch = roberta ? BertArch::roberta : BertArch::bert;
    read_sizes(j, cfg, c, "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size");
    const int two = 2;
    c.type_vocab_size = hf::get_int(j, "type_vocab_size", cfg, &two);
    if (const auto* eps = hf::field(j, "layer_norm_eps")) {
      if (!eps->is_number()) throw FileError(cfg, str("'layer_norm_eps' must be a number"));
      c.layer_norm_eps = eps->get<double>();
    }
    c.activation = parse_activation(hf::get_string(j, "hidden_act", cfg, "gelu"), cfg, "hidden_act");
    const std::string pos = hf::get_string(j, "position_embedding_type", cfg, "absolute");
    if (pos != "absolute")
      throw FileError(cfg, str("position_embedding_type \"", pos,
                               "\" is not supported (only absolute)"));
  } else {
    c.arch = BertArch::distilbert;
    read_sizes(j, cfg, c, "dim", "n_layers", "n_heads", "hidden_dim");
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12;  // fixed in DistilBERT
    c.activation = parse_activation(hf::get_string(j, "activation", cfg, "gelu"), cfg, "activation");
    // sinusoidal_pos_embds only changes how the (stored) position table was initialised.
  }
  c.vocab_size = hf::get_int(j, "vocab_size", cfg);
  c.max_positions = hf::get_int(j, "max_position_embeddings", cfg, modern ? &d8192 : &d512);
  const int zero = 0;
  c.pad_token_id = hf::get_int(j, "pad_token_id", cfg, roberta ? nullptr : &zero);
  // RoBERTa's position ids: padding_idx + 1 + t for real tokens (create_position_ids_from_input_ids
  // of the Hugging Face model, fairseq's make_positions).
  if (roberta) {
    if (c.pad_token_id < 0 || c.pad_token_id + 1 >= c.max_positions)
      throw FileError(cfg, str("'pad_token_id' = ", c.pad_token_id, " leaves no position of the ",
                               c.max_positions, " (max_position_embeddings) for a token"));
    c.position_offset = c.pad_token_id + 1;
  }
  // Labels: id2label when present ({"0": "negative", ...}), else the classifier's rows.
  if (const auto* id2 = hf::field(j, "id2label")) {
    if (!id2->is_object() || id2->empty())
      throw FileError(cfg, str("'id2label' must be a non-empty object, got ", id2->dump()));
    c.labels.assign(id2->size(), "");
    for (const auto& [k, v] : id2->items()) {
      char* end = nullptr;
      const long idx = std::strtol(k.c_str(), &end, 10);
      if (k.empty() || *end != '\0' || idx < 0 || idx >= static_cast<long>(id2->size()) ||
          !v.is_string() || !c.labels[idx].empty())
        throw FileError(cfg, str("'id2label' must map 0..", id2->size() - 1,
                                 " to names, got ", id2->dump()));
      c.labels[idx] = v.get<std::string>();
    }
    c.num_labels = static_cast<int>(c.labels.size());
  }

  // Weights: model.safetensors beside config.json (or the file named).
  std::string weights = (dir / "model.safetensors").string();
  if (!spec_is_dir && spec_path.extension() == ".safetensors") weights = spec;
  if (!fs::exists(weights))
    throw FileError(weights, "no such file (a Hugging Face BERT folder needs model.safetensors)");
  auto st = std::make_shared<const SafetensorsFile>(weights);
  src.weights_path = weights;
  if (c.num_labels == 0) {
    const std::string cls_name = roberta ? "classifier.out_proj.weight" : "classifier.weight";
    const SafetensorInfo* cls = st->find(cls_name);
    if (!cls) throw FileError(weights, str("missing tensor '", cls_name, "'"));
    if (cls->shape.size() != 2 || cls->shape[0] <= 0 || cls->shape[0] > (1 << 16))
      throw FileError(weights, str("tensor '", cls_name, "' has shape ",
                                   shape_str(cls->shape), "; expected [num_labels, hidden]"));
    c.num_labels = static_cast<int>(cls->shape[0]);
  }
  c.validate(cfg);

  Digest64 digest;
  digest.update(reinterpret_cast<const uint8_t*>(cfg_text.data()), cfg_text.size());
  digest.update(st->file()->data(), st->file()->size());
  src.content_hash = digest.label();

  for (const auto& [canon, hf] : hf_names(c)) {
    const SafetensorInfo* info = st->find(hf);
    if (!info) throw FileError(weights, str("missing tensor '", hf, "'"));
    if (info->dtype != "F32" && info->dtype != "F16" && info->dtype != "BF16")
      throw FileError(weights, str("tensor '", hf, "' has dtype ", info->dtype,
                                   "; cibench reads F32/F16/BF16 safetensors"));
    const std::vector<int64_t> want = bert_tensor_shape(c, canon);
    // A block of a fused tensor (ModernBERT's Wqkv): the file holds `blocks` of them stacked.
    const auto [block, blocks] = hf_fused_part(c, canon);
    std::vector<int64_t> stored = want;
    stored[0] *= blocks;
    if (info->shape != stored)
      throw FileError(weights, str("tensor '", hf, "' has shape ", shape_str(info->shape),
                                   " but ", cfg, " (", describe_config(c), ") implies ",
                                   shape_str(stored)));
    TensorSource t;
    t.rows = want.size() == 2 ? want[0] : 1;
    t.cols = want.back();
    const int64_t rows = t.rows, cols = t.cols;
    const bool one_d = want.size() == 1;
    const int64_t first = block * (one_d ? cols : rows);  // the block's first element / row
    t.read = [info, hf_name = hf, rows, cols, one_d, first](int64_t r0, int64_t n, float* dst) {
      CIBENCH_CHECK(r0 >= 0 && n >= 0 && r0 + n <= rows, "tensor '", hf_name, "': rows [", r0, ", ",
                    r0 + n, ") are outside its ", rows, " rows");
      if (one_d) info->read_rows_f32(first + r0 * cols, n * cols, dst);
      else info->read_rows_f32(first + r0, n, dst);
    };
    src.tensors[canon] = std::move(t);
    src.source_names[canon] = hf;
  }
  // A tensor the config does not account for (a layer beyond num_hidden_layers, a head the engine
  // lacks) means the config and the weights disagree: refuse rather than run a prefix of the
  // model. position_ids are an index buffer, not weights; a RoBERTa pooler (saved by some
  // conversions) is unused by RobertaForSequenceClassification, whose head reads <s> itself.
  std::vector<std::string> unused;
  std::set<std::string> mapped;
  for (const auto& [canon, hf] : src.source_names) mapped.insert(hf);
  for (const auto& [name, info] : st->tensors())
    if (!mapped.count(name) && name.find("position_ids") == std::string::npos &&
        !(roberta && name.rfind("roberta.pooler.", 0) == 0))
      unused.push_back(name);
  if (!unused.empty()) throw unaccounted_tensors(weights, str(cfg, " (", describe_config(c), ")"), unused);
  // Every value finite, as the Llama loaders check: a NaN would only show as wrong labels.
  std::vector<float> buf;
  for (const auto& [canon, t] : src.tensors) {
    const int64_t block = std::max<int64_t>(1, (1 << 18) / t.cols);
    for (int64_t r0 = 0; r0 < t.rows; r0 += block) {
      const int64_t n = std::min(block, t.rows - r0);
      buf.resize(static_cast<size_t>(n * t.cols));
      t.read(r0, n, buf.data());
      for (size_t i = 0; i < buf.size(); ++i)
        if (!std::isfinite(buf[i]))
          throw FileError(weights, str("tensor '", src.source_names[canon], "' has a non-finite value (", buf[i],
                                       ") at row ", r0 + static_cast<int64_t>(i) / t.cols, ", column ",
                                       static_cast<int64_t>(i) % t.cols));
    }
  }
  src.keepalive = st;
  return src;
}

// ---- Synthetic presets ----------------------------------------------------------------------------

// offset + uniform values in [-scale, scale]: a pure function of (seed, name, row, column), so
// any row block can be generated on its own (packing never materialises the f32 model).
TensorSource random_tensor(uint64_t seed, const std::string& name, int64_t rows, int64_t cols,
                           float scale, float offset = 0.0f) {
  const uint64_t base = splitmix64(seed ^ fnv1a64_name(name));
  TensorSource t;
  t.rows = rows;
  t.cols = cols;
  t.read = [base, cols, scale, offset](int64_t r0, int64_t n, float* dst) {
    for (int64_t r = 0; r < n; ++r) {
      uint64_t state = splitmix64(base + static_cast<uint64_t>(r0 + r) * 0x632be59bd9b4e019ull);
      float* row = dst + r * cols;
      for (int64_t col = 0; col < cols; ++col) {
        state = splitmix64(state);
        const float u = static_cast<float>(state >> 40) * (1.0f / 8388608.0f);  // [0, 2)
        row[col] = offset + (u - 1.0f) * scale;
      }
    }
  };
  return t;
}

BertConfig preset_config(BertArch arch, int hidden, int layers, int heads, int inter) {
  BertConfig c;
  c.arch = arch;
  c.hidden = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.intermediate = inter;
  c.vocab_size = 30522;
  c.max_positions = 512;
  c.type_vocab_size = arch == BertArch::bert ? 2 : arch == BertArch::roberta ? 1 : 0;
  if (arch == BertArch::roberta) {  // roberta-base's vocabulary, positions and LayerNorm eps
    c.vocab_size = 50265;
    c.max_positions = 514;
    c.pad_token_id = 1;
    c.position_offset = 2;
    c.layer_norm_eps = 1e-5;
  }
  if (arch == BertArch::modernbert) {  // ModernBERT-base's config.json (no biases, gelu, [CLS])
    c.type_vocab_size = 0;
    c.vocab_size = 50368;
    c.max_positions = 8192;
    c.pad_token_id = 50283;
    c.layer_norm_eps = 1e-5;
    c.global_every = 3;
    c.local_window = 128;
    c.rope_theta_global = 160000.0;
    c.rope_theta_local = 10000.0;
    c.attention_bias = c.mlp_bias = c.norm_bias = c.head_dense_bias = false;
    if (hidden < 768) {  // the small test shape: a window its sequences outgrow
      c.max_positions = 512;
      c.local_window = 16;
    }
  }
  c.num_labels = 2;
  c.labels = {"LABEL_0", "LABEL_1"};
  return c;
}

BertSource synthetic_bert_source(const std::string& spec) {
  std::string rest = spec.substr(std::strlen("synthetic:"));
  uint64_t seed = 1234;
  if (auto at = rest.find('@'); at != std::string::npos) {
    const std::string s = rest.substr(at + 1);
    char* end = nullptr;
    seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0')
      throw Error(str("synthetic model '", spec, "': seed '", s, "' is not a number"));
    rest = rest.substr(0, at);
  }
  const BertPreset* preset = nullptr;
  std::string known;
  for (const BertPreset& p : bert_presets()) {
    if (rest == p.name) preset = &p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  if (!preset) throw Error(str("unknown synthetic encoder '", rest, "' (known: ", known, ")"));

  BertSource src;
  src.config = preset->config;
  src.origin = str("synthetic:", rest, "@", seed);
  src.container = "synthetic";
  src.content_hash = src.origin;
  const BertConfig& c = src.config;
  c.validate(src.origin);
  // Weights uniform with standard deviation 1/sqrt(fan-in) (unit-scale activations), biases
  // and LayerNorm parameters near their trained values (bias ~0, gain ~1).
  for (const auto& [canon, hf] : hf_names(c)) {
    const std::vector<int64_t> shape = bert_tensor_shape(c, canon);
    const int64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
    const bool norm = canon.find("norm.") != std::string::npos;
    const bool bias = canon.size() > 5 && canon.compare(canon.size() - 5, 5, ".bias") == 0;
    float scale = std::sqrt(3.0f / static_cast<float>(cols)), offset = 0.0f;
    if (canon.rfind("embeddings.", 0) == 0 && !norm) scale = 0.5f;
    if (bias) scale = 0.05f;
    if (norm && !bias) {
      scale = 0.1f;
      offset = 1.0f;
    }
    src.tensors[canon] = random_tensor(seed, canon, rows, cols, scale, offset);
    src.source_names[canon] = canon;
  }
  return src;
}

}  // namespace

std::vector<int64_t> bert_tensor_shape(const BertConfig& c, const std::string& name) {
  const int64_t h = c.hidden, f = c.intermediate;
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  if (name == "embeddings.word") return {c.vocab_size, h};
  if (name == "embeddings.position") return {c.max_positions, h};
  if (name == "embeddings.token_type") return {c.type_vocab_size, h};
  if (name == "head.classifier.weight") return {c.num_labels, h};
  if (name == "head.classifier.bias") return {c.num_labels};
  const int64_t fi = c.modern() ? 2 * f : f;  // ModernBERT's Wi: input rows, then gate rows
  if (ends("ffn_in.weight")) return {fi, h};
  if (ends("ffn_in.bias")) return {fi};
  if (ends("ffn_out.weight")) return {h, f};
  if (ends(".weight") && !ends("norm.weight")) return {h, h};
  return {h};
}

bool bert_has_tensor(const BertConfig& c, const std::string& name) {
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  const bool model_level = name == "final_norm.weight" || name == "final_norm.bias" || name.rfind("head.norm.", 0) == 0;
  if (!c.modern()) {
    if (name == "embeddings.token_type") return c.type_vocab_size > 0;
    return !model_level;
  }
  if (name == "embeddings.position" || name == "embeddings.token_type") return false;
  if (name.rfind("layers.0.attn_norm.", 0) == 0) return false;  // the identity in layer 0
  if (!ends(".bias") || name == "head.classifier.bias") return true;
  if (ends("norm.bias")) return c.norm_bias;
  if (name == "head.dense.bias") return c.head_dense_bias;
  if (ends("ffn_in.bias") || ends("ffn_out.bias")) return c.mlp_bias;
  return c.attention_bias;  // query, key, value, attn_out
}

const std::vector<BertPreset>& bert_presets() {
  static const std::vector<BertPreset> p = {
      {"distilbert-base", "DistilBERT-base shape (768, 6 layers, 12 heads, FFN 3072)",
       preset_config(BertArch::distilbert, 768, 6, 12, 3072)},
      {"bert-base", "BERT-base shape (768, 12 layers, 12 heads, FFN 3072)",
       preset_config(BertArch::bert, 768, 12, 12, 3072)},
      {"bert-mini", "BERT-mini shape (256, 4 layers, 4 heads, FFN 1024)",
       preset_config(BertArch::bert, 256, 4, 4, 1024)},
      {"bert-tiny", "BERT-tiny shape (128, 2 layers, 2 heads, FFN 512)",
       preset_config(BertArch::bert, 128, 2, 2, 512)},
      {"distilbert-mini", "a small DistilBERT (256, 2 layers, 4 heads, FFN 1024) for tests",
       preset_config(BertArch::distilbert, 256, 2, 4, 1024)},
      {"roberta-base", "RoBERTa-base shape (768, 12 layers, 12 heads, FFN 3072, vocab 50265, positions from 2)",
       preset_config(BertArch::roberta, 768, 12, 12, 3072)},
      {"roberta-mini", "a small RoBERTa (256, 2 layers, 4 heads, FFN 1024, positions from 2) for tests",
       preset_config(BertArch::roberta, 256, 2, 4, 1024)},
      {"modernbert-base", "ModernBERT-base shape (768, 22 layers, 12 heads, gated FFN 1152, vocab 50368, "
       "global attention every 3rd layer, local window 128, 8192 positions)",
       preset_config(BertArch::modernbert, 768, 22, 12, 1152)},
      {"modernbert-large", "ModernBERT-large shape (1024, 28 layers, 16 heads, gated FFN 2624, vocab 50368, "
       "global attention every 3rd layer, local window 128, 8192 positions)",
       preset_config(BertArch::modernbert, 1024, 28, 16, 2624)},
      {"modernbert-mini", "a small ModernBERT (256, 4 layers, 4 heads, gated FFN 384, global every 3rd, "
       "local window 16, 512 positions) for tests",
       preset_config(BertArch::modernbert, 256, 4, 4, 384)},
  };
  return p;
}

bool is_bert_spec(const std::string& spec) {
  if (spec.rfind("synthetic:", 0) == 0) {
    std::string name = spec.substr(std::strlen("synthetic:"));
    name = name.substr(0, name.find('@'));
    for (const BertPreset& p : bert_presets())
      if (name == p.name) return true;
    return false;
  }
  std::error_code ec;
  const fs::path p(spec);
  const fs::path dir = fs::is_directory(p, ec) ? p : p.parent_path();
  const fs::path cfg = dir / "config.json";
  if (!fs::exists(cfg, ec)) return false;
  try {
    const auto j = nlohmann::json::parse(read_file(cfg.string()));
    const std::string mt = j.value("model_type", "");
    return mt == "bert" || mt == "distilbert" || mt == "roberta" || mt == "xlm-roberta" || mt == "modernbert";
  } catch (const std::exception&) {
    return false;
  }
}

BertSource open_bert_source(const std::string& spec) {
  if (spec.rfind("synthetic:", 0) == 0) return synthetic_bert_source(spec);
  return open_hf_bert(spec);
}


}  // namespace cibench
