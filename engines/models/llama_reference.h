#pragma once
// The readable reference forward pass of the Llama decoder: plain scalar arithmetic, one token at
// a time, no threads, no kernels table, no packed formats. It is the oracle the fast paths are
// tested against; read it top to bottom.
//
// Real is the arithmetic: LlamaReference (binary32, sequential sums, as llama2.c's run.c) is what
// a straightforward FP32 implementation computes; LlamaReference64 (binary64 throughout, weights
// widened exactly) is the exact answer to within ~1e-13 relative, so a test can measure how far
// any binary32 evaluation, the fast paths or the FP32 reference, is from the true value.
#include <vector>

#include "engines/models/llama_config.h"

namespace cibench {

template <typename Real>
class LlamaReferenceT {
 public:
  explicit LlamaReferenceT(const LlamaSource& src, int max_context = 0);
  // Logits (vocab_size) after feeding `token` at position `pos` (positions must be fed in order).
  const std::vector<Real>& forward(int token, int pos);
  const LlamaConfig& config() const { return c_; }

 private:
  LlamaConfig c_;
  int max_context_;
  // Weights (read as f32, held as Real; row-major, shapes as in llama_config.h)
  std::vector<Real> tok_embeddings;  // (vocab, dim)
  std::vector<std::vector<Real>> attention_norm, ffn_norm;  // (layer)(dim)
  std::vector<std::vector<Real>> wq, wk, wv, wo;            // (layer)(out, in)
  std::vector<std::vector<Real>> w1, w2, w3;                // (layer)(out, in)
  std::vector<std::vector<Real>> bq, bk, bv, bo;            // (layer)(out) when the config has them
  std::vector<std::vector<Real>> q_norm, k_norm;            // (layer)(head_dim) when qk_norm
  std::vector<std::vector<Real>> post_attention_norm, post_ffn_norm;  // (layer)(dim) when post_norms
  std::vector<Real> final_norm;                             // (dim)
  std::vector<Real> output;                                 // (vocab, dim)
  // State
  std::vector<Real> key_cache, value_cache;  // (layer, max_context, kv_dim)
  std::vector<Real> x, xb, xb2, q, k, v, att_out, hb, hb2, att, logits;
};

extern template class LlamaReferenceT<float>;
extern template class LlamaReferenceT<double>;
using LlamaReference = LlamaReferenceT<float>;
using LlamaReference64 = LlamaReferenceT<double>;

}  // namespace cibench
