#pragma once
// The Llama-family decoder: weights packed into the requested formats, ready for sessions.
// Weights are read-only after build, so many sessions (workers) can share one model.
#include <map>
#include <string>
#include <vector>

#include "engines/core/matrix.h"
#include "engines/models/llama_config.h"

namespace cibench {

// Which format each tensor class is packed in. Classes: "attention" (wq wk wv wo),
// "ffn" (w1 w2 w3), "output" (the head). Embeddings stay f32 (rows are gathered, not multiplied).
struct LlamaBuildOptions {
  std::string format = "f32";                       // default for every class
  std::map<std::string, std::string> class_format;  // per-class overrides
  double sparsity = 0.0;  // magnitude-prune attention and ffn projections (not the head)

  const std::string& format_for(const std::string& tensor_class) const;
  // "f32" or "attention=bf16,ffn=int8,output=f32" style summary.
  std::string describe() const;
};

struct LlamaLayer {
  std::vector<float> attention_norm;  // (dim)
  std::vector<float> ffn_norm;        // (dim)
  WeightMatrix wq;                    // (q_dim, dim)
  WeightMatrix wk;                    // (kv_dim, dim)
  WeightMatrix wv;                    // (kv_dim, dim)
  WeightMatrix wo;                    // (dim, q_dim)
  WeightMatrix w1;                    // (hidden_dim, dim)  gate
  WeightMatrix w2;                    // (dim, hidden_dim)  down
  WeightMatrix w3;                    // (hidden_dim, dim)  up
  // The family extras (f32 in every format; empty when the config has none):
  std::vector<float> bq, bk, bv;      // (q_dim), (kv_dim), (kv_dim): config.qkv_bias
  std::vector<float> bo;              // (dim): config.o_bias
  std::vector<float> q_norm, k_norm;  // (head_dim): config.qk_norm

  size_t vector_bytes() const;        // norms, biases, q/k norms
};

struct LlamaModel {
  LlamaConfig config;
  std::string origin;        // where it came from (path or synthetic:NAME)
  std::string container;     // llama2c / hf-safetensors / gguf / synthetic
  std::string content_hash;  // of the source weights
  LlamaBuildOptions build;
  std::vector<float> tok_embeddings;  // (vocab_size, dim)
  std::vector<LlamaLayer> layers;
  std::vector<float> final_norm;      // (dim)
  WeightMatrix output;                // (vocab_size, dim)

  // Bytes of all weights as stored (packed matrices + f32 embeddings and norms).
  size_t weight_bytes() const;
  // Bytes of the matrices a decode step streams (all layers' projections + the head).
  size_t streamed_bytes_per_token() const;
};

LlamaModel build_llama(const LlamaSource& src, const LlamaBuildOptions& opts = {});
// The bytes build_llama would hold for this config and these options (weight_bytes() of the
// result, dense rows for sparse formats: an upper bound), plus the largest f32 tensor it reads
// at once, computed without reading or allocating anything.
size_t estimate_llama_build_bytes(const LlamaConfig& c, const LlamaBuildOptions& opts = {});

}  // namespace cibench
