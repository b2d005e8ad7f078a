#pragma once
// The kernels of one instruction-set level. Kernels take raw pointers and sizes; they never
// allocate, log or throw (front ends in engines/core/ops.h validate shapes first).
//
// Every table entry has a generic twin (kernels_generic.cpp) that is the oracle in the tests.
// Each level's table lives in its own source file, in a target region of that level
// (isa_target.h), and is reached through kernels_for() only.
#include <cstddef>
#include <cmath>
#include <cstdint>

#include "engines/core/cpu.h"

namespace cibench {

// Feed-forward activations of the encoders: exact (erf) GELU, tanh-approximated GELU, ReLU; `none`
// adds the bias alone (the sessions' q/k/v projections; no loader gives it to a model).
enum class Activation { gelu, gelu_tanh, relu, none };

struct KernelTable {
  Isa isa;
  // y[r] = dot(W[r, :K], x) for r in [0, rows); W rows are `ldw` floats apart.
  void (*matvec_f32)(const float* w, int64_t ldw, const float* x, float* y, int64_t rows,
                     int64_t k);
  // Y[m, n] = dot(X[m, :K], W[n, :K]) for m < M, n < N  (Y = X W^T, row-major).
  void (*matmul_f32)(const float* w, int64_t ldw, const float* x, int64_t ldx, float* y,
                     int64_t ldy, int64_t m, int64_t n, int64_t k);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  // y[i] += a * x[i]
  void (*axpy_f32)(float a, const float* x, float* y, int64_t n);
  // out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]
  void (*rmsnorm)(const float* x, const float* w, float* out, int64_t n, float eps);
  // in place, numerically stable (max subtracted)
  void (*softmax)(float* x, int64_t n);
  // out[i] = silu(gate[i]) * up[i]
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  // Rotary embedding on interleaved pairs (v[2i], v[2i+1]) of each head, given per-pair
  // cos/sin tables for this position (head_dim / 2 entries each).
  void (*rope)(float* v, int64_t n_heads, int64_t head_dim, const float* cos_tab,
               const float* sin_tab);
  // One query head over positions [first, n_pos) of a KV cache (first > 0: a sliding window):
  //   s[t] = dot(q, k[t]) * scale, soft-capped to softcap * tanh(s[t] / softcap) when softcap > 0;
  //   att[t] = softmax_t(s[t]);  out = sum_t att[t] * v[t]
  // k[t] = k_cache + t * kv_stride (likewise v). `att` is scratch of n_pos floats (indexed by t).
  // The SIMD levels score 8 positions per step (groups start at multiples of 8 whatever `first`
  // is, so a position's score does not depend on the window) with one shared horizontal
  // reduction, and add 8 weighted value rows per pass over `out`.
  void (*attention)(const float* q, const float* k_cache, const float* v_cache, int64_t first, int64_t n_pos,
                    int64_t head_dim, int64_t kv_stride, float scale, float softcap, float* att, float* out);
  // The same over a cache of IEEE halves (uint16 bit patterns), widened in registers.
  void (*attention_f16)(const float* q, const uint16_t* k_cache, const uint16_t* v_cache, int64_t first,
                        int64_t n_pos, int64_t head_dim, int64_t kv_stride, float scale, float softcap,
                        float* att, float* out);
  // The per-position form (one dot with its own horizontal sum, then one axpy, per position):
  // what `attention` replaced, kept as the baseline the microbenchmark compares against.
  void (*attention_rowwise)(const float* q, const float* k_cache, const float* v_cache,
                            int64_t n_pos, int64_t head_dim, int64_t kv_stride, float scale,
                            float* att, float* out);
  // y[i] = half(x[i]), round to nearest even (bit-identical at every level); and back (exact).
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  // The encoder's element-wise numerics (encoder_math.h; the same values at every level):
  // x[i] = act(x[i] + bias[i]);
  void (*bias_activation)(float* x, const float* bias, int64_t n, Activation act);
  // x = LayerNorm(x + a + bias) with gamma w, beta b (a and bias may be null); with out2, also
  // out2 = the same normalised values with gamma w2 and beta b2 (a folded second output);
  void (*add_layer_norm)(float* x, const float* a, const float* bias, const float* w, const float* b,
                         int64_t n, float eps, float* out2, const float* w2, const float* b2);
  // softmax in place over the n scores times `scale` (each product rounded once), mask[j] = 0
  // entries get probability 0 (mask may be null; all masked: uniform).
  void (*masked_softmax)(float* s, const uint8_t* mask, int64_t n, float scale);
  // `attention` over a paged cache (engines/runtime/kv_pool.h): position t's row is
  //   base + blocks[t / block_tokens] * block_stride + (t % block_tokens) * head_dim
  // (k and v alike), block_tokens a multiple of 8. The same arithmetic as `attention` over the
  // same rows with kv_stride = head_dim, so the two agree bit for bit at every level.
  void (*attention_paged)(const float* q, const float* k_base, const float* v_base,
                          const int32_t* blocks, int64_t block_tokens, int64_t block_stride, int64_t first,
                          int64_t n_pos, int64_t head_dim, float scale, float softcap, float* att, float* out);
  // The same over a cache of IEEE halves (bit-identical to `attention_f16`).
  void (*attention_paged_f16)(const float* q, const uint16_t* k_base, const uint16_t* v_base,
                              const int32_t* blocks, int64_t block_tokens, int64_t block_stride, int64_t first,
                              int64_t n_pos, int64_t head_dim, float scale, float softcap, float* att,
                              float* out);
  // `attention` for two queries over the same cache rows (a prefill's consecutive tokens of one
  // head), each with its own window [first_j, n_j), scratch att_j and output out_j: each
  // query's results bit for bit those of `attention` alone; the whole blocks of 8 positions both
  // queries take are read once for the two (at the levels with 512-bit vectors).
  void (*attention2)(const float* q0, const float* q1, const float* k_cache, const float* v_cache, int64_t first0,
                     int64_t n0, int64_t first1, int64_t n1, int64_t head_dim, int64_t kv_stride, float scale,
                     float softcap, float* att0, float* att1, float* out0, float* out1);
  // The same over a cache of IEEE halves (each query bit-identical to `attention_f16`).
  void (*attention2_f16)(const float* q0, const float* q1, const uint16_t* k_cache, const uint16_t* v_cache,
                         int64_t first0, int64_t n0, int64_t first1, int64_t n1, int64_t head_dim, int64_t kv_stride,
                         float scale, float softcap, float* att0, float* att1, float* out0, float* out1);
  // dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (data movement only: the same
  // bits at every level; 8 x 8 blocks in registers at the SIMD levels).
  void (*transpose_f32)(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd);
};

// Soft-capping (Gemma 2's attention scores and logits): x[i] = cap * tanh(x[i] / cap) in binary32,
// the same at every level; cap <= 0 leaves x alone.
inline void soft_cap(float* x, int64_t n, float cap) {
  if (cap <= 0) return;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

// The table for a level (levels without a file of their own run the next lower one's); throws
// Error when the level is not supported (the CPU lacks it, or CIBENCH_ISA caps below it). The
// gate to the tables of the levels above the baseline (isa_entries.cpp).
const KernelTable& kernels_for(Isa isa);
// The table for active_isa().
const KernelTable& active_kernels();

// The generic table, baseline code (kernels_generic.cpp): the oracle of the others.
const KernelTable& kernels_generic();

}  // namespace cibench
