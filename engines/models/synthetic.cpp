// synthetic:NAME[@seed] — Llama-shaped models of the published shapes, generated from a seed
// with no files. Values are generated row by row on demand (counter-based), so a model can be
// packed straight into a compact format without ever materialising its f32 form.
#include <cmath>
#include <cstring>

#include "engines/core/error.h"
#include "engines/models/llama_config.h"
#include "engines/models/synthetic.h"

#include "engines/core/splitmix.h"

namespace cibench {
namespace {

// Uniform values in [-scale, scale] for rows [r0, r0+n) of a tensor; a pure function of
// (seed, tensor name, row, column).
TensorSource random_tensor(uint64_t seed, const std::string& name, int64_t rows, int64_t cols,
                           float scale) {
  const uint64_t base = splitmix64(seed ^ fnv1a64_name(name));
  TensorSource t;
  t.rows = rows;
  t.cols = cols;
  t.read = [base, cols, scale](int64_t r0, int64_t n, float* dst) {
    for (int64_t r = 0; r < n; ++r) {
      uint64_t state = splitmix64(base + static_cast<uint64_t>(r0 + r) * 0x632be59bd9b4e019ull);
      float* row = dst + r * cols;
      for (int64_t c = 0; c < cols; c += 2) {
        state = splitmix64(state);
        const float a = static_cast<float>(static_cast<uint32_t>(state) >> 8) * (1.0f / 8388608.0f);
        const float b = static_cast<float>(static_cast<uint32_t>(state >> 32) >> 8) * (1.0f / 8388608.0f);
        row[c] = (a - 1.0f) * scale;
        if (c + 1 < cols) row[c + 1] = (b - 1.0f) * scale;
      }
    }
  };
  return t;
}

TensorSource constant_tensor(int64_t cols, float value) {
  TensorSource t;
  t.rows = 1;
  t.cols = cols;
  t.read = [cols, value](int64_t, int64_t n, float* dst) {
    for (int64_t i = 0; i < n * cols; ++i) dst[i] = value;
  };
  return t;
}

// A Llama 2-style config of the given shape (the family knobs at their defaults).
LlamaConfig shape(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int ctx, float eps, float theta,
                  bool tied, int bos, int eos) {
  LlamaConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.vocab_size = vocab;
  c.seq_len = ctx;
  c.norm_eps = eps;
  c.rope_theta = theta;
  c.tied_output = tied;
  c.bos_id = bos;
  c.eos_id = eos;
  return c;
}

}  // namespace

const std::vector<SyntheticPreset>& synthetic_presets() {
  // Shapes as published (config.json of each model): llama2.c's TinyStories models,
  // TinyLlama-1.1B, Llama-2-7B, Llama-3.2-1B, Qwen2.5-0.5B, Qwen3-0.6B, SmolLM2-360M, Gemma-2-2B,
  // Gemma-3-1B.
  static const std::vector<SyntheticPreset> p = [] {
    LlamaConfig llama32 = shape(2048, 8192, 16, 32, 8, 128256, 131072, 1e-5f, 500000.f, true, 128000, 128001);
    llama32.rope_scaling.type = "llama3";
    llama32.rope_scaling.factor = 32.0;
    llama32.rope_scaling.low_freq_factor = 1.0;
    llama32.rope_scaling.high_freq_factor = 4.0;
    llama32.rope_scaling.original_max_position = 8192;
    LlamaConfig qwen25 = shape(896, 4864, 24, 14, 2, 151936, 32768, 1e-6f, 1000000.f, true, 151643, 151643);
    qwen25.qkv_bias = true;
    qwen25.family = "qwen2";
    LlamaConfig qwen3 = shape(1024, 3072, 28, 16, 8, 151936, 40960, 1e-6f, 1000000.f, true, 151643, 151645);
    qwen3.head_size = 128;
    qwen3.qk_norm = true;
    qwen3.family = "qwen3";
    const LlamaConfig smollm2 = shape(960, 2560, 32, 15, 5, 49152, 8192, 1e-5f, 100000.f, true, 0, 0);
    // Gemma 2 2B: window 4096 in the even layers, soft-caps 50 / 30; Gemma 3 1B: window 512 in five
    // layers of six (local RoPE base 1e4), q/k norms, no soft-caps.
    auto gemma = [](LlamaConfig c, const char* family) {
      c.family = family;
      c.head_size = 256;
      c.embed_scale = std::sqrt(static_cast<float>(c.dim));
      c.ffn_act = "gelu_tanh";
      c.post_norms = true;
      c.query_pre_attn_scalar = 256.0f;
      return c;
    };
    LlamaConfig gemma2 = gemma(shape(2304, 9216, 26, 8, 4, 256000, 8192, 1e-6f, 10000.f, true, 2, 1), "gemma2");
    gemma2.attn_softcap = 50.0f;
    gemma2.final_softcap = 30.0f;
    for (int l = 0; l < gemma2.n_layers; ++l) gemma2.attn_window.push_back(l % 2 == 0 ? 4096 : 0);
    LlamaConfig gemma3 = gemma(shape(1152, 6912, 26, 4, 1, 262144, 32768, 1e-6f, 1000000.f, true, 2, 1), "gemma3_text");
    gemma3.qk_norm = true;
    gemma3.rope_local_theta = 10000.0f;
    for (int l = 0; l < gemma3.n_layers; ++l) gemma3.attn_window.push_back((l + 1) % 6 != 0 ? 512 : 0);
    return std::vector<SyntheticPreset>{
        {"stories260k", "llama2.c stories260K shape", shape(64, 172, 5, 8, 4, 512, 512, 1e-5f, 10000.f, true, 1, 2)},
        {"tinystories-15m", "llama2.c stories15M shape", shape(288, 768, 6, 6, 6, 32000, 256, 1e-5f, 10000.f, true, 1, 2)},
        {"tinystories-42m", "llama2.c stories42M shape", shape(512, 1376, 8, 8, 8, 32000, 1024, 1e-5f, 10000.f, true, 1, 2)},
        {"tinystories-110m", "llama2.c stories110M shape", shape(768, 2048, 12, 12, 12, 32000, 1024, 1e-5f, 10000.f, true, 1, 2)},
        {"tinyllama-1.1b", "TinyLlama-1.1B shape (GQA 32/4)", shape(2048, 5632, 22, 32, 4, 32000, 2048, 1e-5f, 10000.f, false, 1, 2)},
        {"llama2-7b", "Llama-2-7B shape", shape(4096, 11008, 32, 32, 32, 32000, 4096, 1e-5f, 10000.f, false, 1, 2)},
        {"llama3.2-1b", "Llama-3.2-1B shape (GQA 32/8, llama3 RoPE scaling x32)", llama32},
        {"qwen2.5-0.5b", "Qwen2.5-0.5B shape (GQA 14/2, q/k/v biases)", qwen25},
        {"qwen3-0.6b", "Qwen3-0.6B shape (GQA 16/8, head_dim 128, q/k norms)", qwen3},
        {"smollm2-360m", "SmolLM2-360M shape (GQA 15/5)", smollm2},
        {"gemma2-2b", "Gemma-2-2B shape (GQA 8/4, head_dim 256, sliding window 4096 in every other layer, soft-caps)", gemma2},
        {"gemma3-1b", "Gemma-3-1B shape (MQA 4/1, head_dim 256, q/k norms, sliding window 512 in 5 of 6 layers)", gemma3},
    };
  }();
  return p;
}

LlamaSource synthetic_llama_source(const std::string& spec) {
  std::string rest = spec.rfind("synthetic:", 0) == 0 ? spec.substr(10) : spec;
  uint64_t seed = 1234;
  if (auto at = rest.find('@'); at != std::string::npos) {
    const std::string s = rest.substr(at + 1);
    char* end = nullptr;
    seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') throw Error(str("synthetic model '", spec, "': seed '", s, "' is not a number"));
    rest = rest.substr(0, at);
  }
  const SyntheticPreset* preset = nullptr;
  std::string known;
  for (const SyntheticPreset& p : synthetic_presets()) {
    if (rest == p.name) preset = &p;
    known += known.empty() ? "" : ", ";
    known += p.name;
  }
  if (!preset) throw Error(str("unknown synthetic model '", rest, "' (known: ", known, ")"));

  LlamaSource src;
  src.config = preset->config;
  src.origin = "synthetic:" + rest + "@" + std::to_string(seed);
  src.container = "synthetic";
  src.content_hash = str("synthetic:", rest, "@", seed);
  const LlamaConfig& c = src.config;
  const int64_t d = c.dim, h = c.hidden_dim, qd = c.q_dim(), kv = c.kv_dim();
  auto w = [&](const std::string& n, int64_t rows, int64_t cols) {
    src.tensors[n] = random_tensor(seed, n, rows, cols, 1.0f / std::sqrt(static_cast<float>(cols)));
  };
  src.tensors["tok_embeddings"] = random_tensor(seed, "tok_embeddings", c.vocab_size, d, 1.0f);
  src.tensors["norm"] = constant_tensor(d, 1.0f);
  if (!c.tied_output) w("output", c.vocab_size, d);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    src.tensors[p + "attention_norm"] = constant_tensor(d, 1.0f);
    src.tensors[p + "ffn_norm"] = constant_tensor(d, 1.0f);
    w(p + "wq", qd, d);
    w(p + "wk", kv, d);
    w(p + "wv", kv, d);
    w(p + "wo", d, qd);
    w(p + "w1", h, d);
    w(p + "w2", d, h);
    w(p + "w3", h, d);
    // Biases of a tenth of a weight's scale; the q/k norm weights 1 (as initialised).
    if (c.qkv_bias) {
      src.tensors[p + "bq"] = random_tensor(seed, p + "bq", 1, qd, 0.1f);
      src.tensors[p + "bk"] = random_tensor(seed, p + "bk", 1, kv, 0.1f);
      src.tensors[p + "bv"] = random_tensor(seed, p + "bv", 1, kv, 0.1f);
    }
    if (c.o_bias) src.tensors[p + "bo"] = random_tensor(seed, p + "bo", 1, d, 0.1f);
    if (c.qk_norm) {
      src.tensors[p + "q_norm"] = constant_tensor(c.head_dim(), 1.0f);
      src.tensors[p + "k_norm"] = constant_tensor(c.head_dim(), 1.0f);
    }
    if (c.post_norms) {
      src.tensors[p + "post_attention_norm"] = constant_tensor(d, 1.0f);
      src.tensors[p + "post_ffn_norm"] = constant_tensor(d, 1.0f);
    }
  }
  return src;
}

}  // namespace cibench
