#pragma once
// The per-row pieces of the decoder's attention block that LlamaSession and LlamaBatch share, so
// the two fast paths cannot drift apart: the family extras between the q/k/v projections and the
// KV cache (biases, per-head q/k RMSNorm, RoPE over the rotary width) and the RoPE tables.
#include <cmath>
#include <cstring>
#include <vector>

#include "engines/kernels/kernels.h"
#include "engines/models/llama.h"

namespace cibench {

// RoPE tables for positions [0, max_context): pair i of a head turns by pos * rope_inv_freq(c,
// pos)[i], times rope_attention_factor(c); cos and sin are [max_context][rot_dim / 2].
void rope_tables(const LlamaConfig& c, int max_context, std::vector<float>& cos, std::vector<float>& sin);

// The RoPE tables of `c`'s sliding-window layers when they have their own base
// (LlamaConfig::rope_local_theta; empty otherwise).
inline void local_rope_tables(const LlamaConfig& c, int max_context, std::vector<float>& cos, std::vector<float>& sin) {
  cos.clear();
  sin.clear();
  if (c.rope_local_theta > 0) rope_tables(c.local_rope_config(), max_context, cos, sin);
}

// The number of RoPE tables (cos and sin, global and local) a session or batch holds.
inline int rope_table_count(const LlamaConfig& c) { return c.rope_local_theta > 0 ? 4 : 2; }

// The first position a query at `pos` attends in layer l: pos - W + 1 in a layer with a sliding
// window of W (transformers keeps the keys with pos - k < W), else 0.
inline int attention_first(const LlamaConfig& c, int l, int pos) {
  const int w = c.window(l);
  return w > 0 && pos - w + 1 > 0 ? pos - w + 1 : 0;
}

// The attention score scale: query_pre_attn_scalar^-1/2 where the family sets it, else head_dim^-1/2.
inline float attention_scale(const LlamaConfig& c) {
  return 1.0f / std::sqrt(static_cast<float>(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : c.head_dim()));
}

// One row's q (q_dim), k and v (kv_dim) as the projections left them, made ready for the cache:
// biases added, q and k RMS-normalised per head, q and k rotated with this position's tables
// (unless layer l has no RoPE).
inline void attention_inputs(const KernelTable& K, const LlamaConfig& c, int l, const LlamaLayer& L, float* q,
                             float* k, float* v, const float* cos, const float* sin) {
  const int hd = c.head_dim(), rot = c.rot_dim();
  if (c.qkv_bias) {
    K.axpy_f32(1.0f, L.bq.data(), q, c.q_dim());
    K.axpy_f32(1.0f, L.bk.data(), k, c.kv_dim());
    K.axpy_f32(1.0f, L.bv.data(), v, c.kv_dim());
  }
  if (c.qk_norm) {
    for (int h = 0; h < c.n_heads; ++h) K.rmsnorm(q + h * hd, L.q_norm.data(), q + h * hd, hd, c.norm_eps);
    for (int h = 0; h < c.n_kv_heads; ++h) K.rmsnorm(k + h * hd, L.k_norm.data(), k + h * hd, hd, c.norm_eps);
  }
  if (!c.layer_rope(l)) return;
  if (rot == hd) {
    K.rope(q, c.n_heads, hd, cos, sin);
    K.rope(k, c.n_kv_heads, hd, cos, sin);
  } else {
    for (int h = 0; h < c.n_heads; ++h) K.rope(q + h * hd, 1, rot, cos, sin);
    for (int h = 0; h < c.n_kv_heads; ++h) K.rope(k + h * hd, 1, rot, cos, sin);
  }
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in binary32 (the same
// expression as the FP32 reference's, at every ISA level).
inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// The gated feed-forward's element-wise step on `rows` rows of n: gate = act(gate) * up (the
// activation chosen once, not per row).
inline void ffn_gate(const KernelTable& K, const LlamaConfig& c, float* gate, const float* up, int rows, int n) {
  const int64_t total = static_cast<int64_t>(rows) * n;
  if (c.ffn_act == "silu") {
    K.swiglu(gate, up, gate, total);
  } else {
    for (int64_t i = 0; i < total; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
  }
}

// One token's embedding row into x (scaled when the config says so).
inline void embed(const LlamaModel& m, int token, float* x) {
  const int dim = m.config.dim;
  const float* e = m.tok_embeddings.data() + static_cast<size_t>(token) * dim;
  if (m.config.embed_scale > 0) {
    for (int i = 0; i < dim; ++i) x[i] = e[i] * m.config.embed_scale;
  } else {
    std::memcpy(x, e, static_cast<size_t>(dim) * sizeof(float));
  }
}

}  // namespace cibench
