#include "engines/models/gguf_writer.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <vector>

#include "engines/core/error.h"
#include "engines/core/output_file.h"
#include "engines/kernels/half.h"
#include "engines/models/ggml_quants.h"
#include "engines/models/gguf.h"

namespace cibench {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kAlignment = 32;

struct TypeRow {
  GgufWeightType type;
  const char* name;
  uint32_t ggml_type;
  uint32_t file_type;
  int64_t block;        // values per block
  uint64_t block_bytes;
  // The cibench format whose rows are this type's rows byte for byte (nullptr: none). A source
  // tensor stored in it (TensorSource::native_format, a GGUF Q8_0 or Q4_0 tensor) is written by
  // copying its rows, not by re-quantising its values: a scale or code another quantiser chose
  // (an importance matrix) stays as it was.
  const char* native = nullptr;
};

// Formats are table rows (ggml-common.h / llama.h numbering).
constexpr TypeRow kTypes[] = {
    {GgufWeightType::f32, "f32", 0, 0, 1, 4},
    {GgufWeightType::f16, "f16", 1, 1, 1, 2},
    {GgufWeightType::bf16, "bf16", 30, 32, 1, 2},
    {GgufWeightType::q8_0, "q8_0", 8, 7, kGgmlBlock, kQ8_0BlockBytes, "int8_g32_a8"},
    {GgufWeightType::q4_0, "q4_0", 2, 2, kGgmlBlock, kQ4_0BlockBytes, "int4_g32"},
};

const TypeRow& row_of(GgufWeightType t) {
  for (const TypeRow& r : kTypes)
    if (r.type == t) return r;
  throw Error("unknown GGUF weight type");
}

// ---------------------------------------------------------------------------------------------
// Little-endian GGUF encoding of metadata.

class Bytes {
 public:
  template <typename T>
  void pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
  }
  void string(const std::string& s) {
    pod(uint64_t{s.size()});
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void key(const std::string& k, GgufType t) {
    string(k);
    pod(static_cast<uint32_t>(t));
    ++count_;
  }
  void kv_u32(const std::string& k, uint32_t v) { key(k, GgufType::u32); pod(v); }
  void kv_f32(const std::string& k, float v) { key(k, GgufType::f32); pod(v); }
  void kv_str(const std::string& k, const std::string& v) { key(k, GgufType::string); string(v); }
  void kv_array_header(const std::string& k, GgufType et, uint64_t n) {
    key(k, GgufType::array);
    pod(static_cast<uint32_t>(et));
    pod(n);
  }
  void pad_to(uint64_t alignment) {
    while (b_.size() % alignment) b_.push_back(0);
  }
  const std::vector<uint8_t>& bytes() const { return b_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<uint8_t> b_;
  uint64_t count_ = 0;
};

struct PlannedTensor {
  std::string gguf_name;
  const TensorSource* source = nullptr;
  // Rotate-half archs (qwen2, qwen3): rows (or, for a vector, values) are written in Hugging
  // Face's rotate-half order, read from the canonical interleaved one; head width and rotary width.
  int permute_head = 0, permute_rot = 0;
  bool one_d = false;
  const TypeRow* type = nullptr;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t nbytes = 0;
};

void check_u32(const char* what, int64_t v) {
  if (v < 0 || v > UINT32_MAX) throw Error(str(what, " = ", v, " does not fit a GGUF u32"));
}

// One row block of a tensor in its GGUF type, appended to `out`.
void encode_rows(const PlannedTensor& t, const float* x, int64_t rows, std::vector<uint8_t>& out) {
  const int64_t cols = t.source->cols, n = rows * cols;
  const size_t at = out.size();
  switch (t.type->type) {
    case GgufWeightType::f32:
      out.resize(at + static_cast<size_t>(n) * 4);
      std::memcpy(out.data() + at, x, static_cast<size_t>(n) * 4);
      return;
    case GgufWeightType::f16:
    case GgufWeightType::bf16: {
      out.resize(at + static_cast<size_t>(n) * 2);
      uint8_t* p = out.data() + at;
      const bool half = t.type->type == GgufWeightType::f16;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        if (half) {
          h = half_from_float(x[i]);
          if ((h & 0x7c00u) == 0x7c00u)
            throw Error(str("tensor '", t.gguf_name, "': value ", x[i], " at column ", i % cols,
                            " overflows f16 (largest finite 65504)"));
        } else {
          uint32_t u;
          std::memcpy(&u, &x[i], 4);
          u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even (finite values only)
          h = static_cast<uint16_t>(u >> 16);
          if ((h & 0x7f80u) == 0x7f80u)
            throw Error(str("tensor '", t.gguf_name, "': value ", x[i], " at column ", i % cols,
                            " overflows bf16"));
        }
        p[2 * i] = static_cast<uint8_t>(h & 0xff);
        p[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      }
      return;
    }
    case GgufWeightType::q8_0:
    case GgufWeightType::q4_0: {
      const uint64_t row_bytes = static_cast<uint64_t>(cols / kGgmlBlock) * t.type->block_bytes;
      out.resize(at + static_cast<size_t>(row_bytes * rows));
      for (int64_t r = 0; r < rows; ++r) {
        uint8_t* dst = out.data() + at + static_cast<size_t>(row_bytes * r);
        const float* src = x + r * cols;
        if (t.type->type == GgufWeightType::q8_0) quantize_q8_0(src, cols, dst);
        else quantize_q4_0(src, cols, dst);
        // The scale is stored as f16: a block whose d overflows it cannot be written.
        for (uint64_t b = 0; b < row_bytes; b += t.type->block_bytes)
          if ((dst[b + 1] & 0x7c) == 0x7c)
            throw Error(str("tensor '", t.gguf_name, "': the block scale of columns [",
                            b / t.type->block_bytes * kGgmlBlock, ", +32) overflows f16"));
      }
      return;
    }
  }
}

// The canonical index that rotate-half index i holds: HF dim h*hd + t*rot/2 + j is canonical
// dim h*hd + 2j + t (dims past rot in place).
int64_t canonical_of_rotate_half(int64_t i, int head_dim, int rot) {
  const int64_t h = i / head_dim, r = i % head_dim;
  if (r >= rot) return i;
  const int64_t t = r / (rot / 2), j = r % (rot / 2);
  return h * head_dim + 2 * j + t;
}

// Rows [r0, r0 + n) of a planned tensor as f32, in the order the file stores them.
void read_planned(const PlannedTensor& t, int64_t r0, int64_t n, std::vector<float>& out) {
  const int64_t cols = t.source->cols;
  out.resize(static_cast<size_t>(n * cols));
  if (t.permute_head == 0) {
    t.source->read(r0, n, out.data());
  } else if (t.source->rows == 1) {  // a vector: permute its values
    std::vector<float> v(static_cast<size_t>(cols));
    t.source->read(0, 1, v.data());
    for (int64_t i = 0; i < cols; ++i)
      out[static_cast<size_t>(i)] = v[static_cast<size_t>(canonical_of_rotate_half(i, t.permute_head, t.permute_rot))];
  } else {
    for (int64_t r = 0; r < n; ++r)
      t.source->read(canonical_of_rotate_half(r0 + r, t.permute_head, t.permute_rot), 1, out.data() + r * cols);
  }
}

// Whether the planned tensor's rows are copied from its source's stored rows (TypeRow::native).
bool copies_native(const PlannedTensor& t) {
  return t.type->native && !t.one_d && t.source->read_native && t.source->native_format == t.type->native;
}

// Rows [r0, r0 + n) of such a tensor, in the order the file stores them, appended to `out`.
void read_planned_native(const PlannedTensor& t, int64_t r0, int64_t n, std::vector<uint8_t>& out) {
  const size_t rb = static_cast<size_t>(t.source->cols / t.type->block) * t.type->block_bytes;
  const size_t at = out.size();
  out.resize(at + rb * static_cast<size_t>(n));
  if (t.permute_head == 0) {
    t.source->read_native(r0, n, out.data() + at);
  } else {
    for (int64_t r = 0; r < n; ++r)
      t.source->read_native(canonical_of_rotate_half(r0 + r, t.permute_head, t.permute_rot), 1,
                            out.data() + at + rb * static_cast<size_t>(r));
  }
}

// A projection's rows in rotate-half order (for a fused tensor whose parts need it).
TensorSource rotate_half_rows(const TensorSource& canonical, int head_dim, int rot) {
  TensorSource t;
  t.rows = canonical.rows;
  t.cols = canonical.cols;
  const int64_t cols = canonical.cols;
  t.read = [&canonical, head_dim, rot, cols](int64_t r0, int64_t n, float* dst) {
    for (int64_t r = 0; r < n; ++r) canonical.read(canonical_of_rotate_half(r0 + r, head_dim, rot), 1, dst + r * cols);
  };
  return t;
}

// Sources of equal width stacked row-wise (Phi-3's fused attn_qkv and ffn_up).
TensorSource concat_rows(std::vector<TensorSource> parts) {
  TensorSource t;
  t.cols = parts.front().cols;
  for (const TensorSource& p : parts) t.rows += p.rows;
  const int64_t cols = t.cols;
  t.read = [parts = std::move(parts), cols](int64_t r0, int64_t n, float* dst) {
    int64_t first = 0;
    for (const TensorSource& p : parts) {
      const int64_t b = std::max(r0, first), e = std::min(r0 + n, first + p.rows);
      if (b < e) p.read(b - first, e - b, dst + (b - r0) * cols);
      first += p.rows;
    }
  };
  return t;
}

// A 1 x n source of constant storage (the rope_freqs values).
TensorSource vector_source(std::vector<float> v) {
  TensorSource t;
  t.rows = 1;
  t.cols = static_cast<int64_t>(v.size());
  t.read = [v = std::move(v)](int64_t, int64_t n, float* dst) {
    if (n > 0) std::memcpy(dst, v.data(), v.size() * sizeof(float));
  };
  return t;
}

}  // namespace

std::string gguf_architecture_for(const LlamaConfig& c) {
  const bool rope_everywhere = std::all_of(c.rope_layers.begin(), c.rope_layers.end(), [](uint8_t r) { return r != 0; });
  if (!rope_everywhere)
    throw Error("layers without RoPE (NoPE) have no GGUF architecture cibench writes");
  if (c.rope_scaling.type == "dynamic")
    throw Error("dynamic NTK RoPE scaling has no GGUF form (llama.cpp reads none, linear, yarn and rope_freqs)");
  const bool head_split = c.q_dim() != c.dim;
  if (c.family == "gemma3_text")
    throw Error("Gemma 3 has no GGUF architecture cibench writes (the llama.cpp convention it follows predates gemma3)");
  if (c.family == "gemma2") {
    // llama.cpp's gemma2: windows in the even layers, both soft-caps, and the query scale it derives
    // from the layer count (1 / sqrt(n_embd / n_head) at 46 layers, else 1 / sqrt(head_dim)).
    bool pattern = !c.attn_window.empty();
    for (int l = 0; pattern && l < c.n_layers; ++l)
      pattern = (l % 2 == 0) == (c.window(l) > 0) && (c.window(l) == 0 || c.window(l) == c.window(0));
    const float qpas = static_cast<float>(c.n_layers == 46 ? c.dim / c.n_heads : c.head_dim());
    if (c.ffn_act != "gelu_tanh" || c.embed_scale != std::sqrt(static_cast<float>(c.dim)) || !c.tied_output ||
        c.qkv_bias || c.o_bias || c.qk_norm || c.rot_dim() != c.head_dim() || !c.post_norms || !pattern ||
        !(c.attn_softcap > 0) || !(c.final_softcap > 0) || c.rope_local_theta > 0 ||
        (c.query_pre_attn_scalar > 0 && c.query_pre_attn_scalar != qpas))
      throw Error(str("a gemma2-family config that differs from Gemma 2's as llama.cpp holds it (GeGLU, embeddings x "
                      "sqrt(dim), tied head, no biases or q/k norms, full rotary, post norms, both soft-caps, one "
                      "window in the even layers, query_pre_attn_scalar ", qpas, ") has no GGUF architecture"));
    return "gemma2";
  }
  if (c.post_norms || c.attn_softcap > 0 || c.final_softcap > 0 || c.rope_local_theta > 0 ||
      c.query_pre_attn_scalar > 0)
    throw Error("post norms, soft-capping, a local RoPE base or query_pre_attn_scalar outside gemma2 have no GGUF "
                "architecture");
  if (c.family == "gemma") {
    if (c.ffn_act != "gelu_tanh" || c.embed_scale != std::sqrt(static_cast<float>(c.dim)) || !c.tied_output ||
        c.qkv_bias || c.o_bias || c.qk_norm || c.rot_dim() != c.head_dim())
      throw Error("a gemma-family config that differs from Gemma's (GeGLU, embeddings x sqrt(dim), tied head, no "
                  "biases or q/k norms, full rotary) has no GGUF architecture");
    return "gemma";
  }
  if (c.ffn_act != "silu" || c.embed_scale > 0)
    throw Error("a GeGLU feed-forward or scaled embeddings outside the gemma family have no GGUF architecture");
  if (c.family == "phi3") {
    if (c.qkv_bias || c.o_bias || c.qk_norm || head_split || c.tied_output)
      throw Error("a phi3-family config with biases, q/k norms, a head width apart from dim / heads or a tied head "
                  "has no GGUF architecture");
    return "phi3";
  }
  if (c.family == "qwen3" || c.qk_norm) {
    if (c.qkv_bias || c.o_bias) throw Error("q/k norms together with attention biases have no GGUF architecture");
    return "qwen3";
  }
  if (c.family == "qwen2" && c.qkv_bias && !c.o_bias && !head_split) return "qwen2";
  if (c.rot_dim() != c.head_dim())
    throw Error(str("RoPE over ", c.rot_dim(), " of ", c.head_dim(), " head dims has no GGUF form outside phi3, qwen2 "
                    "and qwen3 (llama.cpp's llama requires full rotary)"));
  if (c.qkv_bias && head_split)
    throw Error(str("attention biases with head_dim ", c.head_dim(), " x ", c.n_heads, " heads != dim ", c.dim,
                    " have no GGUF architecture (llama.cpp's llama biases are dim wide)"));
  if (c.qkv_bias != c.o_bias && c.family != "qwen2")
    throw Error("q/k/v biases without an output bias (or the reverse) outside qwen2 have no GGUF architecture");
  return "llama";
}

std::string gguf_default_name(const LlamaSource& src) {
  if (src.origin.rfind("synthetic:", 0) == 0) return src.origin.substr(10);
  fs::path p(src.origin);
  if (p.filename().empty()) p = p.parent_path();
  std::error_code ec;
  return fs::is_directory(p, ec) ? p.filename().string() : p.stem().string();
}

// ---------------------------------------------------------------------------------------------

GgufWeightType parse_gguf_weight_type(const std::string& name) {
  std::string known;
  for (const TypeRow& r : kTypes) {
    if (name == r.name) return r.type;
    known += known.empty() ? "" : ", ";
    known += r.name;
  }
  throw Error(str("unknown GGUF weight type '", name, "' (known: ", known, ")"));
}

const char* gguf_weight_type_name(GgufWeightType t) { return row_of(t).name; }
uint32_t ggml_type_of(GgufWeightType t) { return row_of(t).ggml_type; }
uint32_t gguf_file_type_of(GgufWeightType t) { return row_of(t).file_type; }

VocabPieces placeholder_vocab(int vocab_size) {
  VocabPieces v;
  auto add = [&](std::string t, float score, int32_t type) {
    if (static_cast<int>(v.tokens.size()) >= vocab_size) return;
    v.tokens.push_back(std::move(t));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, 2);
  add("<s>", 0.0f, 3);
  add("</s>", 0.0f, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0.0f, 6);
  }
  for (int i = static_cast<int>(v.tokens.size()); i < vocab_size; ++i)
    add("\xE2\x96\x81t" + std::to_string(i), -static_cast<float>(i), 1);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

VocabPieces vocab_for_export(const LlamaSource& src, const std::string& tokenizer_path,
                             std::string* origin) {
  const int n = src.config.vocab_size;
  std::string path = tokenizer_path;
  std::error_code ec;
  if (path.empty()) {
    const fs::path o(src.origin);
    if (src.container == "gguf") {
      const GgufFile g(src.origin);
      if (g.has("tokenizer.ggml.model")) {
        if (origin) *origin = src.origin;
        return tokenizer_from_gguf(g)->pieces();
      }
    } else if (src.container == "hf-safetensors") {
      if (fs::exists(o / "tokenizer.model", ec)) path = (o / "tokenizer.model").string();
    } else if (src.container == "llama2c") {
      for (const std::string& name : {std::string("tokenizer.bin"), str("tok", n, ".bin")})
        if (fs::exists(o.parent_path() / name, ec)) {
          path = (o.parent_path() / name).string();
          break;
        }
    }
  }
  if (path.empty()) {
    if (origin) *origin = "placeholder";
    return placeholder_vocab(n);
  }
  const auto tok = open_tokenizer(path, n);
  if (tok->vocab_size() != n)
    throw FileError(path, str("tokenizer has ", tok->vocab_size(), " pieces but the model's vocabulary is ", n));
  if (origin) *origin = path;
  return tok->pieces();
}

GgufExportSummary write_llama_gguf(const LlamaSource& src, const VocabPieces& vocab,
                                   GgufWeightType type, const std::string& name,
                                   const std::string& path) {
  const LlamaConfig& c = src.config;
  c.validate(src.origin);
  const TypeRow& wt = row_of(type);
  const TypeRow& f32 = row_of(GgufWeightType::f32);
  const size_t nv = vocab.tokens.size();
  if (nv != static_cast<size_t>(c.vocab_size) || vocab.scores.size() != nv || vocab.types.size() != nv)
    throw Error(str("the vocabulary has ", nv, " tokens, ", vocab.scores.size(), " scores and ",
                    vocab.types.size(), " types; the model's vocabulary is ", c.vocab_size));
  const bool bpe = vocab.model == "gpt2";  // byte-level BPE: no unknown token needed
  if (bpe && vocab.pre.empty())
    throw Error("the byte-level BPE vocabulary has no GGUF pre-tokenizer name (tokenizer.ggml.pre) to write");
  for (const auto& [what, id] : {std::pair<const char*, int>{"BOS", c.bos_id}, {"EOS", c.eos_id},
                                 {"unknown", vocab.unk_id}})
    if ((id >= 0 || !bpe || std::string(what) != "unknown") && (id < 0 || id >= c.vocab_size))
      throw Error(str("the ", what, " token id ", id, " is outside the vocabulary [0, ", c.vocab_size, ")"));
  for (size_t i = 0; i < nv; ++i)
    if (!std::isfinite(vocab.scores[i])) throw Error(str("vocabulary score ", i, " is not finite"));

  const std::string arch = gguf_architecture_for(c);
  const bool rotate_half = arch != "llama";
  const std::string A = arch + ".";
  // llama3 RoPE scaling travels as llama.cpp's converter writes it: the per-pair factors as the
  // F32 tensor rope_freqs.weight (and no scaling type); a GGUF source's own factors likewise.
  TensorSource rope_freqs;
  if (c.rope_scaling.type == "llama3" || c.rope_scaling.type == "factors")
    rope_freqs = vector_source(c.rope_scaling.type == "llama3" ? llama3_rope_factors(c) : c.rope_scaling.freq_factors);
  // longrope (Phi-3 128k) as the converter writes it: rope_factors_long/short.weight, F32.
  TensorSource rope_long, rope_short;
  if (c.rope_scaling.type == "longrope") {
    if (arch != "phi3") throw Error(str("longrope RoPE scaling has a GGUF form in llama.cpp's phi3 only, not ", arch));
    if (c.rot_dim() != c.head_dim())
      throw Error(str("longrope over ", c.rot_dim(), " of ", c.head_dim(), " head dims has no GGUF form: llama.cpp's phi3 "
                      "reads rope factors for the whole head"));
    rope_long = vector_source(c.rope_scaling.long_factor);
    rope_short = vector_source(c.rope_scaling.short_factor);
  }

  // The tensors, in llama.cpp's order, with their place in the data section.
  std::vector<PlannedTensor> plan;
  auto add_source = [&](const std::string& gguf_name, const TensorSource* source, const std::string& what,
                        bool one_d, bool permute) {
    PlannedTensor t;
    t.gguf_name = gguf_name;
    t.source = source;
    t.one_d = one_d;
    t.type = one_d ? &f32 : &wt;
    if (permute && rotate_half) {
      t.permute_head = c.head_dim();
      t.permute_rot = c.rot_dim();
    }
    if (t.source->cols % t.type->block != 0)
      throw Error(str("tensor '", gguf_name, "' (", what, ", ", t.source->rows, " x ", t.source->cols,
                      "): ", t.source->cols, " columns are not a multiple of ", t.type->block, ", the ",
                      t.type->name, " block size; choose f32, f16 or bf16"));
    const uint64_t rows = static_cast<uint64_t>(t.source->rows);
    t.nbytes = rows * static_cast<uint64_t>(t.source->cols / t.type->block) * t.type->block_bytes;
    t.offset = plan.empty() ? 0 : (plan.back().offset + plan.back().nbytes + kAlignment - 1) / kAlignment * kAlignment;
    plan.push_back(std::move(t));
  };
  auto add = [&](const std::string& gguf_name, const std::string& canonical, bool one_d, bool permute = false) {
    add_source(gguf_name, &src.tensor(canonical), canonical, one_d, permute);
  };
  add("token_embd.weight", "tok_embeddings", false);
  if (rope_freqs.read) add_source("rope_freqs.weight", &rope_freqs, "RoPE frequency factors", true, false);
  if (rope_long.read) {
    add_source("rope_factors_long.weight", &rope_long, "longrope long factors", true, false);
    add_source("rope_factors_short.weight", &rope_short, "longrope short factors", true, false);
  }
  std::deque<TensorSource> fused;  // Phi-3's fused tensors (the plan points into it)
  for (int l = 0; l < c.n_layers && arch == "phi3"; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".", q = "layers." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", q + "attention_norm", true);
    fused.push_back(concat_rows({rotate_half_rows(src.tensor(q + "wq"), c.head_dim(), c.rot_dim()),
                                 rotate_half_rows(src.tensor(q + "wk"), c.head_dim(), c.rot_dim()), src.tensor(q + "wv")}));
    add_source(b + "attn_qkv.weight", &fused.back(), q + "wq|wk|wv", false, false);
    add(b + "attn_output.weight", q + "wo", false);
    add(b + "ffn_norm.weight", q + "ffn_norm", true);
    fused.push_back(concat_rows({src.tensor(q + "w1"), src.tensor(q + "w3")}));
    add_source(b + "ffn_up.weight", &fused.back(), q + "w1|w3", false, false);
    add(b + "ffn_down.weight", q + "w2", false);
  }
  for (int l = 0; l < c.n_layers && arch != "phi3"; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".", q = "layers." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", q + "attention_norm", true);
    add(b + "attn_q.weight", q + "wq", false, true);
    if (c.qkv_bias) add(b + "attn_q.bias", q + "bq", true, true);
    add(b + "attn_k.weight", q + "wk", false, true);
    if (c.qkv_bias) add(b + "attn_k.bias", q + "bk", true, true);
    add(b + "attn_v.weight", q + "wv", false);
    if (c.qkv_bias) add(b + "attn_v.bias", q + "bv", true);
    add(b + "attn_output.weight", q + "wo", false);
    if (c.o_bias) add(b + "attn_output.bias", q + "bo", true);
    if (c.qk_norm) {
      add(b + "attn_q_norm.weight", q + "q_norm", true, true);
      add(b + "attn_k_norm.weight", q + "k_norm", true, true);
    }
    if (c.post_norms) add(b + "post_attention_norm.weight", q + "post_attention_norm", true);
    add(b + "ffn_norm.weight", q + "ffn_norm", true);
    add(b + "ffn_gate.weight", q + "w1", false);
    add(b + "ffn_up.weight", q + "w3", false);
    add(b + "ffn_down.weight", q + "w2", false);
    if (c.post_norms) add(b + "post_ffw_norm.weight", q + "post_ffn_norm", true);
  }
  add("output_norm.weight", "norm", true);
  if (!c.tied_output) add("output.weight", "output", false);

  // Metadata.
  Bytes kv;
  kv.kv_str("general.architecture", arch);
  kv.kv_str("general.name", name);
  kv.kv_u32("general.alignment", static_cast<uint32_t>(kAlignment));
  kv.kv_u32("general.file_type", wt.file_type);
  if (wt.block > 1) kv.kv_u32("general.quantization_version", 2);  // ggml's GGML_QNT_VERSION
  // llama.cpp's phi3 and gemma2 mask a sliding window; its other architectures attend globally,
  // which equals a window no shorter than the context: the context is capped at the narrowest
  // window (the model the file describes within that context is the source's).
  int narrowest = 0;
  for (int w : c.attn_window)
    if (w > 0 && (narrowest == 0 || w < narrowest)) narrowest = w;
  const bool writes_window = arch == "phi3" || arch == "gemma2";
  const int context = !writes_window && narrowest > 0 ? std::min(c.seq_len, narrowest) : c.seq_len;
  if (arch == "phi3" && narrowest > 0 && std::any_of(c.attn_window.begin(), c.attn_window.end(), [&](int w) { return w != narrowest; }))
    throw Error("a phi3 config with global layers or windows that differ between layers has no GGUF form (llama.cpp's "
                "phi3 has one window for every layer)");
  check_u32("context_length", context);
  kv.kv_u32(A + "context_length", static_cast<uint32_t>(context));
  kv.kv_u32(A + "embedding_length", static_cast<uint32_t>(c.dim));
  kv.kv_u32(A + "block_count", static_cast<uint32_t>(c.n_layers));
  kv.kv_u32(A + "feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  kv.kv_u32(A + "attention.head_count", static_cast<uint32_t>(c.n_heads));
  kv.kv_u32(A + "attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  kv.kv_f32(A + "attention.layer_norm_rms_epsilon", c.norm_eps);
  // The window (llama.cpp's phi3 requires one: without a window, the context itself).
  if (arch == "phi3")
    kv.kv_u32(A + "attention.sliding_window", static_cast<uint32_t>(narrowest > 0 ? narrowest : c.seq_len));
  if (arch == "gemma2") {
    kv.kv_f32(A + "attn_logit_softcapping", c.attn_softcap);
    kv.kv_f32(A + "final_logit_softcapping", c.final_softcap);
    kv.kv_u32(A + "attention.sliding_window", static_cast<uint32_t>(c.window(0)));
  }
  if (c.head_size > 0 || arch == "qwen3" || arch == "gemma2") {
    kv.kv_u32(A + "attention.key_length", static_cast<uint32_t>(c.head_dim()));
    kv.kv_u32(A + "attention.value_length", static_cast<uint32_t>(c.head_dim()));
  }
  kv.kv_u32(A + "rope.dimension_count", static_cast<uint32_t>(c.rot_dim()));
  kv.kv_f32(A + "rope.freq_base", c.rope_theta);
  if (c.rope_scaling.type == "linear" || c.rope_scaling.type == "yarn") {
    const RopeScaling& r = c.rope_scaling;
    if (r.type == "yarn" && (r.attention_factor > 0 || r.mscale > 0 || r.beta_fast != 32.0 || r.beta_slow != 1.0 ||
                             !r.truncate))
      throw Error("yarn RoPE scaling with attention_factor, mscale or non-default betas has no GGUF form cibench writes");
    kv.kv_str(A + "rope.scaling.type", r.type);
    kv.kv_f32(A + "rope.scaling.factor", static_cast<float>(r.factor));
    if (r.original_max_position > 0)
      kv.kv_u32(A + "rope.scaling.original_context_length", static_cast<uint32_t>(r.original_max_position));
  }
  if (c.rope_scaling.type == "longrope") {
    kv.kv_u32(A + "rope.scaling.original_context_length", static_cast<uint32_t>(c.rope_scaling.original_max_position));
    kv.kv_f32(A + "rope.scaling.attn_factor", static_cast<float>(rope_attention_factor(c)));
  }
  kv.kv_u32(A + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  kv.kv_str("tokenizer.ggml.model", bpe ? "gpt2" : "llama");
  kv.kv_str("tokenizer.ggml.pre", bpe ? vocab.pre : "default");
  if (bpe) {
    kv.kv_array_header("tokenizer.ggml.merges", GgufType::string, vocab.merges.size());
    for (const std::string& m : vocab.merges) kv.string(m);
  }
  kv.kv_array_header("tokenizer.ggml.tokens", GgufType::string, nv);
  for (const std::string& t : vocab.tokens) kv.string(t);
  kv.kv_array_header("tokenizer.ggml.scores", GgufType::f32, nv);
  for (float s : vocab.scores) kv.pod(s);
  kv.kv_array_header("tokenizer.ggml.token_type", GgufType::i32, nv);
  for (int32_t t : vocab.types) kv.pod(t);
  kv.kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(c.bos_id));
  kv.kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_id));
  if (vocab.unk_id >= 0) kv.kv_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(vocab.unk_id));

  // Header, metadata, tensor directory, padding to the data section.
  Bytes head;
  head.pod(uint32_t{0x46554747});  // "GGUF"
  head.pod(uint32_t{3});
  head.pod(uint64_t{plan.size()});
  head.pod(kv.count());
  std::vector<uint8_t> bytes = head.bytes();
  bytes.insert(bytes.end(), kv.bytes().begin(), kv.bytes().end());
  Bytes dir;
  for (const PlannedTensor& t : plan) {
    dir.string(t.gguf_name);
    dir.pod(uint32_t{t.one_d ? 1u : 2u});
    dir.pod(static_cast<uint64_t>(t.source->cols));
    if (!t.one_d) dir.pod(static_cast<uint64_t>(t.source->rows));
    dir.pod(t.type->ggml_type);
    dir.pod(t.offset);
  }
  bytes.insert(bytes.end(), dir.bytes().begin(), dir.bytes().end());
  while (bytes.size() % kAlignment) bytes.push_back(0);

  GgufExportSummary summary;
  ReplacingFile file(path, "the GGUF file");
  std::ostream& out = file.stream();
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  uint64_t data_pos = 0;
  std::vector<float> rows_f32;
  std::vector<uint8_t> encoded;
  for (const PlannedTensor& t : plan) {
    static const char kZeros[kAlignment] = {};
    out.write(kZeros, static_cast<std::streamsize>(t.offset - data_pos));
    const int64_t cols = t.source->cols;
    const int64_t block = std::max<int64_t>(1, (int64_t{1} << 20) / cols);  // ~4 MiB of f32
    for (int64_t r = 0; r < t.source->rows; r += block) {
      const int64_t n = std::min(block, t.source->rows - r);
      encoded.clear();
      if (copies_native(t)) {
        read_planned_native(t, r, n, encoded);
        out.write(reinterpret_cast<const char*>(encoded.data()), static_cast<std::streamsize>(encoded.size()));
        continue;
      }
      read_planned(t, r, n, rows_f32);
      for (int64_t i = 0; i < n * cols; ++i)
        if (!std::isfinite(rows_f32[static_cast<size_t>(i)]))
          throw Error(str("tensor '", t.gguf_name, "' row ", r + i / cols, " column ", i % cols, " is ",
                          rows_f32[static_cast<size_t>(i)], " (not finite)"));
      encode_rows(t, rows_f32.data(), n, encoded);
      out.write(reinterpret_cast<const char*>(encoded.data()), static_cast<std::streamsize>(encoded.size()));
    }
    if (!out) throw FileError(path, str("cannot write the GGUF file (at tensor '", t.gguf_name, "')"));
    data_pos = t.offset + t.nbytes;
    summary.tensor_bytes += t.nbytes;
    ++summary.tensors;
  }
  file.commit();
  summary.file_bytes = bytes.size() + data_pos;
  return summary;
}

}  // namespace cibench
