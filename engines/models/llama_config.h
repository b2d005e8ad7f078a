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

  int head_dim() const { return dim / n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  // Number of weights (embeddings, norms, projections and untied head).
  int64_t parameter_count() const;
  // Throws FileError(origin, ...) when the shape is impossible (non-positive sizes, dim not a
  // multiple of n_heads, n_heads not a multiple of n_kv_heads, odd head_dim, absurd sizes).
  void validate(const std::string& origin) const;
};

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
  // int4_g32 rows): that format's name and a reader of the raw rows (row_bytes(cols) each), so
  // packing into any format with that row layout copies them instead of re-quantising.
  std::string native_format;
  std::function<void(int64_t row_begin, int64_t n_rows, uint8_t* dst)> read_native;

  std::vector<float> read_all() const;
};

// Canonical tensor names (wq/wk rows use llama2.c's interleaved RoPE pairs; loaders of
// rotate-half layouts such as Hugging Face's un-permute them):
//   tok_embeddings [vocab, dim]     norm [dim]        output [vocab, dim] (absent when tied)
//   layers.{i}.attention_norm [dim] layers.{i}.ffn_norm [dim]
//   layers.{i}.wq [dim, dim]  layers.{i}.wk [kv_dim, dim]  layers.{i}.wv [kv_dim, dim]
//   layers.{i}.wo [dim, dim]  layers.{i}.w1 [hidden, dim] (gate)  layers.{i}.w2 [dim, hidden]
//   layers.{i}.w3 [hidden, dim] (up)
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
