#pragma once
// The readable reference forward pass of the Llama decoder: plain scalar FP32, one token at a
// time, no threads, no kernels table, no packed formats. It is the oracle the fast paths are
// tested against; read it top to bottom.
#include <vector>

#include "engines/models/llama_config.h"

namespace cibench {

class LlamaReference {
 public:
  explicit LlamaReference(const LlamaSource& src, int max_context = 0);
  // Logits (vocab_size) after feeding `token` at position `pos` (positions must be fed in order).
  const std::vector<float>& forward(int token, int pos);
  const LlamaConfig& config() const { return c_; }

 private:
  LlamaConfig c_;
  int max_context_;
  // Weights (all f32, row-major, shapes as in llama_config.h)
  std::vector<float> tok_embeddings;  // (vocab, dim)
  std::vector<std::vector<float>> attention_norm, ffn_norm;  // (layer)(dim)
  std::vector<std::vector<float>> wq, wk, wv, wo;            // (layer)(out, in)
  std::vector<std::vector<float>> w1, w2, w3;                // (layer)(out, in)
  std::vector<float> final_norm;                             // (dim)
  std::vector<float> output;                                 // (vocab, dim)
  // State
  std::vector<float> key_cache, value_cache;  // (layer, max_context, kv_dim)
  std::vector<float> x, xb, xb2, q, k, v, hb, hb2, att, logits;
};

}  // namespace cibench
