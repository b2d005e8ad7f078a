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
  std::vector<float> post_attention_norm, post_ffn_norm;  // (dim): config.post_norms

  size_t vector_bytes() const;        // norms, biases, q/k norms
};

// How far the packed weights of one tensor class are from the values the source stores, measured
// when the source holds quantised tensors (GGUF blocks, which the chosen format re-quantises).
struct WeightConversion {
  std::string format;                     // the cibench format the class was packed in
  std::vector<std::string> stored_types;  // the source's types ("Q4_K", "Q6_K"; "float" = F32/F16/BF16)
  int tensors = 0;
  int copied = 0;        // tensors whose stored rows were copied byte for byte (a native layout)
  double err_sq = 0.0;   // sum over the class of (packed - stored)^2
  double ref_sq = 0.0;   // sum of stored^2
  // sqrt(err_sq / ref_sq): the relative RMS error of the conversion (0 when the layout is
  // equivalent); 0 for an all-zero class.
  double relative_rms() const;
  void add(const WeightConversion& o);  // sums of both, the union of their types
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
  // Per tensor class ("attention", "ffn", "output"): the conversion of the source's quantised
  // weights into the chosen formats. Empty when no weight the engine packs is stored quantised.
  // Embeddings and norms are kept as f32, exactly the stored values.
  std::map<std::string, WeightConversion> conversion;

  // Bytes of all weights as stored (packed matrices + f32 embeddings and norms).
  size_t weight_bytes() const;
  // Bytes the kernels laid out again beside the packed matrices so far (AMX tiles, the 16-row
  // decode layout: WeightMatrix::repacked_bytes), made by the first matmul / matvec that takes them.
  size_t repacked_bytes() const;
  // Bytes of the matrices a decode step streams (all layers' projections + the head).
  size_t streamed_bytes_per_token() const;
  // All classes together (empty `tensors` when `conversion` is empty).
  WeightConversion conversion_overall() const;
  // One line for users: "attention Q4_K,Q6_K -> int8 0.69 %, ffn ..., overall 0.71 %"; empty when
  // `conversion` is.
  std::string conversion_summary() const;
};

LlamaModel build_llama(const LlamaSource& src, const LlamaBuildOptions& opts = {});
// The bytes build_llama would hold for this config and these options (weight_bytes() of the
// result, dense rows for sparse formats: an upper bound), plus the largest f32 tensor it reads
// at once, computed without reading or allocating anything.
size_t estimate_llama_build_bytes(const LlamaConfig& c, const LlamaBuildOptions& opts = {});

}  // namespace cibench
