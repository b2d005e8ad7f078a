#pragma once
// Shape and hyper-parameters of a Llama-family decoder, and the source of its weights as the
// loaders deliver them (f32 rows in the engine's canonical layout), before packing into formats.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/core/error.h"

namespace cibench {

// RoPE frequency scaling, as Hugging Face transformers' modeling_rope_utils defines it (the
// config.json "rope_scaling" object). Pair i of a head of rotary width r turns by
// pos * inv_freq[i] with inv_freq[i] = theta^(-2i / r) before scaling:
//   linear:  inv_freq / factor
//   dynamic: (dynamic NTK) for pos >= original_max_position, theta grows to
//            theta * (factor * (pos + 1) / original_max_position - (factor - 1))^(r / (r - 2))
//            (the value transformers computes when it decodes that position one token at a time)
//   llama3:  inv_freq / f[i] with f[i] = 1 for wavelengths shorter than
//            original_max_position / high_freq_factor, factor for those longer than
//            original_max_position / low_freq_factor, and the smooth interpolation between
//            (f[i] rounded to binary32, as llama.cpp's converter stores them in rope_freqs)
//   yarn:    interpolation / extrapolation blended by a ramp over the correction range of
//            beta_fast, beta_slow; cos and sin scaled by attention_factor
//            (0 = 0.1 ln(factor) + 1, or the mscale / mscale_all_dim ratio)
//   factors: inv_freq / freq_factors[i] (a GGUF rope_freqs tensor: llama.cpp's form of llama3)
//   longrope: (Phi-3/3.5 128k; "su") inv_freq / short_factor[i] for positions within
//            original_max_position (pos + 1 <= it), / long_factor[i] beyond (what transformers
//            computes decoding one token at a time); cos and sin scaled by attention_factor
//            (0 = sqrt(1 + ln(factor) / ln(original_max_position)), 1 when factor <= 1)
struct RopeScaling {
  std::string type = "none";  // none, linear, dynamic, llama3, yarn, factors, longrope
  double factor = 1.0;
  int original_max_position = 0;  // original_max_position_embeddings (0 = seq_len)
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;                // yarn
  double attention_factor = 0.0;                          // yarn (0 = derived from factor)
  double mscale = 0.0, mscale_all_dim = 0.0;              // yarn (0 = absent)
  bool truncate = true;                                   // yarn: integral correction range
  std::vector<float> freq_factors;                        // factors: one per rotary pair
  std::vector<float> long_factor, short_factor;           // longrope: one per rotary pair each
};

struct LlamaConfig {
  int dim = 0;          // model width (d_model)
  int hidden_dim = 0;   // feed-forward width
  int n_layers = 0;
  int n_heads = 0;      // query heads
  int n_kv_heads = 0;   // key/value heads (grouped-query attention when < n_heads)
  int vocab_size = 0;
  int seq_len = 0;      // maximum context
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  bool tied_output = true;  // output head shares the token embeddings
  int bos_id = 1;
  int eos_id = 2;
  // The family knobs (defaults: Llama 2). Each is configuration of the one decoder, implemented
  // by the reference and the fast paths alike.
  int head_size = 0;      // per-head width; 0 = dim / n_heads (Qwen3 and others set it apart)
  int rotary_dim = 0;     // leading dims of a head that RoPE turns; 0 = all (partial rotary)
  RopeScaling rope_scaling;
  bool qkv_bias = false;  // q, k, v projections carry biases (Qwen2/2.5)
  bool o_bias = false;    // the output projection carries a bias
  bool qk_norm = false;   // per-head RMSNorm of q and k before RoPE (Qwen3)
  std::vector<uint8_t> rope_layers;  // per layer, 0 = no RoPE in that layer (SmolLM3's NoPE); empty = all
  float embed_scale = 0.0f;  // token embeddings multiplied by this on lookup (Gemma: sqrt(dim)); 0 = 1
  std::string ffn_act = "silu";  // feed-forward gate: silu (SwiGLU) or gelu_tanh (Gemma's GeGLU)
  std::string family = "llama";  // the family the source declared (llama, mistral, qwen2, qwen3, smollm3, gemma, gemma2, gemma3_text, phi3)
  // Sliding-window attention: per layer, the window W of that layer (a query at position p attends
  // the keys at positions max(0, p - W + 1) .. p, as transformers' mask keeps p - k < W); 0 =
  // global attention. Empty = every layer global.
  std::vector<int> attn_window;
  // RoPE base of the sliding-window layers, unscaled (Gemma 3's rope_local_base_freq); the global
  // layers keep rope_theta and rope_scaling. 0 = every layer as the global ones.
  float rope_local_theta = 0.0f;
  bool post_norms = false;       // RMSNorm of the attention and feed-forward outputs before each residual add (Gemma 2/3)
  float attn_softcap = 0.0f;     // attention scores become cap * tanh(score / cap) (Gemma 2); 0 = none
  float final_softcap = 0.0f;    // logits become cap * tanh(logit / cap) (Gemma 2); 0 = none
  float query_pre_attn_scalar = 0.0f;  // scores are scaled by this^-1/2 (Gemma 2/3); 0 = head_dim

  int head_dim() const { return head_size > 0 ? head_size : dim / n_heads; }
  int q_dim() const { return head_dim() * n_heads; }  // rows of wq, columns of wo
  int kv_dim() const { return head_dim() * n_kv_heads; }
  int rot_dim() const { return rotary_dim > 0 ? rotary_dim : head_dim(); }
  bool layer_rope(int layer) const {
    return rope_layers.empty() || rope_layers[static_cast<size_t>(layer)] != 0;
  }
  int window(int layer) const {
    return attn_window.empty() ? 0 : attn_window[static_cast<size_t>(layer)];
  }
  // Whether layer l turns q and k with the local RoPE (rope_local_theta, no scaling).
  bool layer_local_rope(int layer) const { return rope_local_theta > 0 && window(layer) > 0; }
  // The configuration the local RoPE tables come from: rope_local_theta, no scaling.
  LlamaConfig local_rope_config() const;
  // The factor attention scores are multiplied by: query_pre_attn_scalar^-1/2, else head_dim^-1/2.
  double attention_scale() const;
  // Number of weights (embeddings, norms, projections, biases and untied head).
  int64_t parameter_count() const;
  // Throws FileError(origin, ...) when the shape is impossible (non-positive sizes, dim not a
  // multiple of n_heads without an explicit head_dim, n_heads not a multiple of n_kv_heads, odd
  // head_dim or rotary width, absurd sizes, an unknown or malformed RoPE scaling).
  void validate(const std::string& origin) const;
  // One line naming the knobs that differ from Llama 2's ("head_dim 128, qkv bias, rope llama3
  // x32"), empty for a plain Llama.
  std::string features() const;
};

// RoPE for position `pos`: the rot_dim / 2 inverse frequencies (radians per position) of the
// pairs of a head, after scaling; and the factor cos and sin are multiplied by (1 but for yarn).
// The reference and the fast paths both take their angles from here.
std::vector<double> rope_inv_freq(const LlamaConfig& c, int pos);
double rope_attention_factor(const LlamaConfig& c);
// llama3 scaling as per-pair factors (f[i] above, binary32): what llama.cpp's converter writes
// as the rope_freqs tensor.
std::vector<float> llama3_rope_factors(const LlamaConfig& c);

// The error for weight tensors a model's configuration does not account for (a layer beyond its
// layer count, a module the engine lacks): the config and the weights disagree, and running the
// part the config names would be silently wrong. `config` describes it ("config.json (5 layers)").
FileError unaccounted_tensors(const std::string& file, const std::string& config,
                              const std::vector<std::string>& names);

// One tensor of a source, read row block by row block as f32 (converted from F16/BF16 or
// generated as needed). A 1-D tensor of n values is 1 row of n columns.
struct TensorSource {
  int64_t rows = 0;
  int64_t cols = 0;
  std::function<void(int64_t row_begin, int64_t n_rows, float* dst)> read;
  // Set for tensors the file stores quantised (GGUF blocks: "Q4_K", "Q8_0", ...); `read` then
  // delivers the dequantised values. Empty for float tensors.
  std::string stored_type;
  // When the stored rows already are rows of a cibench format byte for byte (GGUF Q4_0 rows are
  // int4_g32 rows, Q8_0 rows int8_g32_a8 rows): that format's name and a reader of the raw rows (row_bytes(cols) each), so
  // packing into any format with that row layout copies them instead of re-quantising.
  std::string native_format;
  std::function<void(int64_t row_begin, int64_t n_rows, uint8_t* dst)> read_native;

  std::vector<float> read_all() const;
};

// Canonical tensor names (wq/wk rows, their biases and the q/k norm weights use llama2.c's
// interleaved RoPE pairs over the first rot_dim dims of each head; loaders of rotate-half
// layouts such as Hugging Face's un-permute them):
//   tok_embeddings [vocab, dim]     norm [dim]        output [vocab, dim] (absent when tied)
//   layers.{i}.attention_norm [dim] layers.{i}.ffn_norm [dim]
//   layers.{i}.wq [q_dim, dim]  layers.{i}.wk [kv_dim, dim]  layers.{i}.wv [kv_dim, dim]
//   layers.{i}.wo [dim, q_dim]  layers.{i}.w1 [hidden, dim] (gate)  layers.{i}.w2 [dim, hidden]
//   layers.{i}.w3 [hidden, dim] (up)
//   with qkv_bias: layers.{i}.bq [q_dim]  layers.{i}.bk [kv_dim]  layers.{i}.bv [kv_dim]
//   with o_bias:   layers.{i}.bo [dim]
//   with qk_norm:  layers.{i}.q_norm [head_dim]  layers.{i}.k_norm [head_dim]
//   with post_norms: layers.{i}.post_attention_norm [dim]  layers.{i}.post_ffn_norm [dim]
struct LlamaSource {
  LlamaConfig config;
  std::string origin;        // path or "synthetic:NAME"
  std::string container;     // "llama2c", "hf-safetensors", "gguf", "synthetic"
  std::string content_hash;  // hex digest identifying the weights (file hash or preset+seed)
  std::map<std::string, TensorSource> tensors;
  std::shared_ptr<const void> keepalive;  // mapped files the readers point into

  const TensorSource& tensor(const std::string& name) const;  // throws naming origin
};

// Opens a model: a llama2.c .bin, a Hugging Face folder (or its config.json/model.safetensors),
// a .gguf file, or "synthetic:NAME[@seed]". Throws FileError naming the file and the problem.
LlamaSource open_llama_source(const std::string& spec);

// Checks every tensor the decoder needs is present with the right shape, and that no weight is
// NaN or infinite. Throws FileError(origin, ...) naming the tensor.
void validate_llama_source(const LlamaSource& src, bool scan_values = true);

}  // namespace cibench
