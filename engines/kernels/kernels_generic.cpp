// Generic (portable, scalar) kernels: the oracle every fast path is tested against.
// Compiled without any ISA flags; written for clarity first.
#include <cmath>

#include "engines/kernels/encoder_math.h"
#include "engines/kernels/half.h"
#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  float s = 0.f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void matvec_f32(const float* w, int64_t ldw, const float* x, float* y, int64_t rows, int64_t k) {
  for (int64_t r = 0; r < rows; ++r) y[r] = dot_f32(w + r * ldw, x, k);
}

void matmul_f32(const float* w, int64_t ldw, const float* x, int64_t ldx, float* y, int64_t ldy,
                int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) y[i * ldy + j] = dot_f32(x + i * ldx, w + j * ldw, k);
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps) {
  float ss = 0.f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * w[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void rope(float* v, int64_t n_heads, int64_t head_dim, const float* cos_tab,
          const float* sin_tab) {
  for (int64_t h = 0; h < n_heads; ++h) {
    float* p = v + h * head_dim;
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      const float a = p[2 * i], b = p[2 * i + 1];
      p[2 * i] = a * cos_tab[i] - b * sin_tab[i];
      p[2 * i + 1] = a * sin_tab[i] + b * cos_tab[i];
    }
  }
}

// Position t's cached row: rows `stride` apart, or paged (see KernelTable::attention_paged).
template <typename E>
struct StridedRows {
  const E* base;
  int64_t stride;
  const E* operator()(int64_t t) const { return base + t * stride; }
};
template <typename E>
struct PagedRows {
  const E* base;
  const int32_t* blocks;
  int64_t block_tokens, block_stride, head_dim;
  const E* operator()(int64_t t) const {
    return base + static_cast<int64_t>(blocks[t / block_tokens]) * block_stride +
           (t % block_tokens) * head_dim;
  }
};

template <typename Rows>
void attention_rows(const float* q, const Rows& krow, const Rows& vrow, int64_t first, int64_t n_pos,
                    int64_t head_dim, float scale, float softcap, float* att, float* out) {
  for (int64_t t = first; t < n_pos; ++t) att[t] = dot_f32(q, krow(t), head_dim) * scale;
  soft_cap(att + first, n_pos - first, softcap);
  softmax(att + first, n_pos - first);
  for (int64_t i = 0; i < head_dim; ++i) out[i] = 0.f;
  for (int64_t t = first; t < n_pos; ++t) axpy_f32(att[t], vrow(t), out, head_dim);
}

// The half-precision cache: each cached value widened exactly, then as attention above.
template <typename Rows>
void attention_rows_f16(const float* q, const Rows& krow, const Rows& vrow, int64_t first, int64_t n_pos,
                        int64_t head_dim, float scale, float softcap, float* att, float* out) {
  for (int64_t t = first; t < n_pos; ++t) {
    const uint16_t* k = krow(t);
    float s = 0.f;
    for (int64_t i = 0; i < head_dim; ++i) s += q[i] * half_to_float(k[i]);
    att[t] = s * scale;
  }
  soft_cap(att + first, n_pos - first, softcap);
  softmax(att + first, n_pos - first);
  for (int64_t i = 0; i < head_dim; ++i) out[i] = 0.f;
  for (int64_t t = first; t < n_pos; ++t) {
    const uint16_t* v = vrow(t);
    for (int64_t i = 0; i < head_dim; ++i) out[i] += att[t] * half_to_float(v[i]);
  }
}

void attention(const float* q, const float* k_cache, const float* v_cache, int64_t first, int64_t n_pos,
               int64_t head_dim, int64_t kv_stride, float scale, float softcap, float* att, float* out) {
  attention_rows(q, StridedRows<float>{k_cache, kv_stride}, StridedRows<float>{v_cache, kv_stride}, first,
                 n_pos, head_dim, scale, softcap, att, out);
}

void attention_f16(const float* q, const uint16_t* k_cache, const uint16_t* v_cache, int64_t first,
                   int64_t n_pos, int64_t head_dim, int64_t kv_stride, float scale, float softcap, float* att,
                   float* out) {
  attention_rows_f16(q, StridedRows<uint16_t>{k_cache, kv_stride},
                     StridedRows<uint16_t>{v_cache, kv_stride}, first, n_pos, head_dim, scale, softcap, att, out);
}

// The per-position baseline (KernelTable::attention_rowwise): every position, no soft-cap.
void attention_all(const float* q, const float* k_cache, const float* v_cache, int64_t n_pos,
                   int64_t head_dim, int64_t kv_stride, float scale, float* att, float* out) {
  attention(q, k_cache, v_cache, 0, n_pos, head_dim, kv_stride, scale, 0.0f, att, out);
}

void attention_paged(const float* q, const float* k_base, const float* v_base,
                     const int32_t* blocks, int64_t block_tokens, int64_t block_stride, int64_t first,
                     int64_t n_pos, int64_t head_dim, float scale, float softcap, float* att, float* out) {
  attention_rows(q, PagedRows<float>{k_base, blocks, block_tokens, block_stride, head_dim},
                 PagedRows<float>{v_base, blocks, block_tokens, block_stride, head_dim}, first, n_pos,
                 head_dim, scale, softcap, att, out);
}

void attention_paged_f16(const float* q, const uint16_t* k_base, const uint16_t* v_base,
                         const int32_t* blocks, int64_t block_tokens, int64_t block_stride, int64_t first,
                         int64_t n_pos, int64_t head_dim, float scale, float softcap, float* att, float* out) {
  attention_rows_f16(q, PagedRows<uint16_t>{k_base, blocks, block_tokens, block_stride, head_dim},
                     PagedRows<uint16_t>{v_base, blocks, block_tokens, block_stride, head_dim},
                     first, n_pos, head_dim, scale, softcap, att, out);
}

// Two queries (KernelTable::attention2): one after the other.
void attention2(const float* q0, const float* q1, const float* k_cache, const float* v_cache, int64_t first0,
                int64_t n0, int64_t first1, int64_t n1, int64_t head_dim, int64_t kv_stride, float scale,
                float softcap, float* att0, float* att1, float* out0, float* out1) {
  attention(q0, k_cache, v_cache, first0, n0, head_dim, kv_stride, scale, softcap, att0, out0);
  attention(q1, k_cache, v_cache, first1, n1, head_dim, kv_stride, scale, softcap, att1, out1);
}

void attention2_f16(const float* q0, const float* q1, const uint16_t* k_cache, const uint16_t* v_cache,
                    int64_t first0, int64_t n0, int64_t first1, int64_t n1, int64_t head_dim, int64_t kv_stride,
                    float scale, float softcap, float* att0, float* att1, float* out0, float* out1) {
  attention_f16(q0, k_cache, v_cache, first0, n0, head_dim, kv_stride, scale, softcap, att0, out0);
  attention_f16(q1, k_cache, v_cache, first1, n1, head_dim, kv_stride, scale, softcap, att1, out1);
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = half_from_float(x[i]);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = half_to_float(x[i]);
}

}  // namespace

void bias_activation(float* x, const float* bias, int64_t n, Activation act) {
  encoder::bias_activation_body(x, bias, n, act);
}

void add_layer_norm(float* x, const float* a, const float* bias, const float* w, const float* b, int64_t n,
                    float eps, float* out2, const float* w2, const float* b2) {
  encoder::add_layer_norm_body(x, a, bias, w, b, n, eps, out2, w2, b2);
}

void transpose_f32(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ldd + r] = src[r * lds + c];
}

void masked_softmax(float* s, const uint8_t* mask, int64_t n, float scale) {
  encoder::masked_softmax_body(s, mask, n, scale);
}

const KernelTable& kernels_generic() {
  static const KernelTable t{Isa::generic,    matvec_f32,     matmul_f32,    dot_f32,
                             axpy_f32,        rmsnorm,        softmax,       swiglu,
                             rope,            attention,      attention_f16, attention_all,
                             f32_to_f16,      f16_to_f32,     bias_activation, add_layer_norm,
                             masked_softmax,  attention_paged, attention_paged_f16, attention2,
                             attention2_f16,  transpose_f32};
  return t;
}

}  // namespace cibench
