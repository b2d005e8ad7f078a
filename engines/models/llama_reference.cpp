// Reference Llama forward pass, after llama2.c's run.c: read it top to bottom.
#include "engines/models/llama_reference.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"

namespace cibench {
namespace {

// ----------------------------------------------------------------------------------------------
// the three building blocks

template <typename Real>
void rmsnorm(Real* out, const Real* x, const Real* w, int n, Real eps) {
  Real ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  ss = Real(1) / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; i++) out[i] = w[i] * (ss * x[i]);
}

template <typename Real>
void softmax(Real* x, int n) {
  Real max_val = x[0];
  for (int i = 1; i < n; i++)
    if (x[i] > max_val) max_val = x[i];
  Real sum = 0;
  for (int i = 0; i < n; i++) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  for (int i = 0; i < n; i++) x[i] /= sum;
}

// out (d) = W (d, n) @ x (n)
template <typename Real>
void matmul(Real* out, const Real* x, const Real* w, int n, int d) {
  for (int i = 0; i < d; i++) {
    Real val = 0;
    for (int j = 0; j < n; j++) val += w[i * n + j] * x[j];
    out[i] = val;
  }
}

template <typename Real>
std::vector<Real> read(const LlamaSource& src, const std::string& name) {
  const std::vector<float> f = src.tensor(name).read_all();
  return std::vector<Real>(f.begin(), f.end());
}

}  // namespace

// ----------------------------------------------------------------------------------------------
// loading: every tensor read whole as f32

template <typename Real>
LlamaReferenceT<Real>::LlamaReferenceT(const LlamaSource& src, int max_context)
    : c_(src.config), max_context_(max_context > 0 ? max_context : src.config.seq_len) {
  tok_embeddings = read<Real>(src, "tok_embeddings");
  for (int l = 0; l < c_.n_layers; l++) {
    const std::string p = "layers." + std::to_string(l) + ".";
    attention_norm.push_back(read<Real>(src, p + "attention_norm"));
    ffn_norm.push_back(read<Real>(src, p + "ffn_norm"));
    wq.push_back(read<Real>(src, p + "wq"));
    wk.push_back(read<Real>(src, p + "wk"));
    wv.push_back(read<Real>(src, p + "wv"));
    wo.push_back(read<Real>(src, p + "wo"));
    w1.push_back(read<Real>(src, p + "w1"));
    w2.push_back(read<Real>(src, p + "w2"));
    w3.push_back(read<Real>(src, p + "w3"));
    if (c_.qkv_bias) {
      bq.push_back(read<Real>(src, p + "bq"));
      bk.push_back(read<Real>(src, p + "bk"));
      bv.push_back(read<Real>(src, p + "bv"));
    }
    if (c_.o_bias) bo.push_back(read<Real>(src, p + "bo"));
    if (c_.qk_norm) {
      q_norm.push_back(read<Real>(src, p + "q_norm"));
      k_norm.push_back(read<Real>(src, p + "k_norm"));
    }
    if (c_.post_norms) {
      post_attention_norm.push_back(read<Real>(src, p + "post_attention_norm"));
      post_ffn_norm.push_back(read<Real>(src, p + "post_ffn_norm"));
    }
  }
  final_norm = read<Real>(src, "norm");
  output = c_.tied_output ? tok_embeddings : read<Real>(src, "output");

  const size_t kv = static_cast<size_t>(c_.n_layers) * max_context_ * c_.kv_dim();
  key_cache.assign(kv, Real(0));
  value_cache.assign(kv, Real(0));
  x.resize(c_.dim);
  xb.resize(c_.dim);
  xb2.resize(c_.dim);
  q.resize(c_.q_dim());
  att_out.resize(c_.q_dim());
  k.resize(c_.kv_dim());
  v.resize(c_.kv_dim());
  hb.resize(c_.hidden_dim);
  hb2.resize(c_.hidden_dim);
  att.resize(max_context_);
  logits.resize(c_.vocab_size);
}

// ----------------------------------------------------------------------------------------------
// the forward pass of one token

template <typename Real>
const std::vector<Real>& LlamaReferenceT<Real>::forward(int token, int pos) {
  CIBENCH_CHECK(token >= 0 && token < c_.vocab_size, "token ", token, " outside vocabulary of ",
                c_.vocab_size);
  CIBENCH_CHECK(pos >= 0 && pos < max_context_, "position ", pos, " outside context of ",
                max_context_);
  const int dim = c_.dim, q_dim = c_.q_dim(), kv_dim = c_.kv_dim(), hidden_dim = c_.hidden_dim;
  const int head_size = c_.head_dim(), rot = c_.rot_dim();
  const int kv_mul = c_.n_heads / c_.n_kv_heads;  // query heads per key/value head

  // this position's RoPE frequencies (after any scaling) and the yarn attention factor; and those
  // of the sliding-window layers when they have their own base (Gemma 3)
  const std::vector<double> global_inv_freq = rope_inv_freq(c_, pos);
  const double global_rope_mag = rope_attention_factor(c_);
  const LlamaConfig local = c_.local_rope_config();
  const std::vector<double> local_inv_freq = rope_inv_freq(local, pos);
  const double local_rope_mag = rope_attention_factor(local);
  // attention scores are scaled by head_dim^-1/2, or query_pre_attn_scalar^-1/2 where the family sets it
  const Real score_div = std::sqrt(static_cast<Real>(c_.query_pre_attn_scalar > 0 ? c_.query_pre_attn_scalar : head_size));
  const Real att_cap = static_cast<Real>(c_.attn_softcap);

  // the token embedding (scaled for families that scale it: Gemma by sqrt(dim), in binary32)
  const Real embed_scale = c_.embed_scale > 0 ? static_cast<Real>(c_.embed_scale) : Real(1);
  for (int i = 0; i < dim; i++) x[i] = tok_embeddings[static_cast<size_t>(token) * dim + i] * embed_scale;

  for (int l = 0; l < c_.n_layers; l++) {
    // attention rmsnorm
    rmsnorm(xb.data(), x.data(), attention_norm[l].data(), dim, static_cast<Real>(c_.norm_eps));

    // q, k, v for this position (plus their biases)
    matmul(q.data(), xb.data(), wq[l].data(), dim, q_dim);
    matmul(k.data(), xb.data(), wk[l].data(), dim, kv_dim);
    matmul(v.data(), xb.data(), wv[l].data(), dim, kv_dim);
    if (c_.qkv_bias) {
      for (int i = 0; i < q_dim; i++) q[i] += bq[l][i];
      for (int i = 0; i < kv_dim; i++) k[i] += bk[l][i];
      for (int i = 0; i < kv_dim; i++) v[i] += bv[l][i];
    }

    // per-head rmsnorm of q and k
    if (c_.qk_norm) {
      for (int h = 0; h < c_.n_heads; h++)
        rmsnorm(q.data() + h * head_size, q.data() + h * head_size, q_norm[l].data(), head_size,
                static_cast<Real>(c_.norm_eps));
      for (int h = 0; h < c_.n_kv_heads; h++)
        rmsnorm(k.data() + h * head_size, k.data() + h * head_size, k_norm[l].data(), head_size,
                static_cast<Real>(c_.norm_eps));
    }

    // RoPE (unless this layer has none): rotate each (even, odd) pair among the first rot dims
    // of every head by pos * inv_freq[pair]; the rest of the head passes unrotated
    const std::vector<double>& inv_freq = c_.layer_local_rope(l) ? local_inv_freq : global_inv_freq;
    const double rope_mag = c_.layer_local_rope(l) ? local_rope_mag : global_rope_mag;
    for (int h = 0; h < c_.n_heads && c_.layer_rope(l); h++) {
      for (int i = 0; i < rot; i += 2) {
        const double val = pos * inv_freq[i / 2];
        const Real fcr = static_cast<Real>(std::cos(val) * rope_mag);
        const Real fci = static_cast<Real>(std::sin(val) * rope_mag);
        const int rotn = h < c_.n_kv_heads ? 2 : 1;  // rotate q and k, or only q
        for (int r = 0; r < rotn; r++) {
          Real* vec = (r == 0 ? q.data() : k.data()) + h * head_size;
          const Real v0 = vec[i], v1 = vec[i + 1];
          vec[i] = v0 * fcr - v1 * fci;
          vec[i + 1] = v0 * fci + v1 * fcr;
        }
      }
    }

    // store this position's key and value in the cache
    const size_t loff = static_cast<size_t>(l) * max_context_ * kv_dim;
    for (int i = 0; i < kv_dim; i++) {
      key_cache[loff + static_cast<size_t>(pos) * kv_dim + i] = k[i];
      value_cache[loff + static_cast<size_t>(pos) * kv_dim + i] = v[i];
    }

    // multi-head attention over positions first..pos: all of them, or the last W in a layer with
    // a sliding window of W; scores soft-capped to cap * tanh(score / cap) when the family caps them
    const int first = c_.window(l) > 0 ? std::max(0, pos - c_.window(l) + 1) : 0;
    for (int h = 0; h < c_.n_heads; h++) {
      const Real* qh = q.data() + h * head_size;
      for (int t = first; t <= pos; t++) {
        const Real* kt =
            key_cache.data() + loff + static_cast<size_t>(t) * kv_dim + (h / kv_mul) * head_size;
        Real score = 0;
        for (int i = 0; i < head_size; i++) score += qh[i] * kt[i];
        score /= score_div;
        if (att_cap > 0) score = att_cap * std::tanh(score / att_cap);
        att[t] = score;
      }
      softmax(att.data() + first, pos + 1 - first);
      Real* out = att_out.data() + h * head_size;
      for (int i = 0; i < head_size; i++) out[i] = 0;
      for (int t = first; t <= pos; t++) {
        const Real* vt =
            value_cache.data() + loff + static_cast<size_t>(t) * kv_dim + (h / kv_mul) * head_size;
        for (int i = 0; i < head_size; i++) out[i] += att[t] * vt[i];
      }
    }

    // attention output projection and residual
    // (Gemma 2/3 normalise the attention output before the residual add)
    matmul(xb2.data(), att_out.data(), wo[l].data(), q_dim, dim);
    if (c_.o_bias)
      for (int i = 0; i < dim; i++) xb2[i] += bo[l][i];
    if (c_.post_norms)
      rmsnorm(xb2.data(), xb2.data(), post_attention_norm[l].data(), dim, static_cast<Real>(c_.norm_eps));
    for (int i = 0; i < dim; i++) x[i] += xb2[i];

    // feed-forward: w2(act(w1(x)) * w3(x)) and residual, act = silu or the tanh form of GELU
    rmsnorm(xb.data(), x.data(), ffn_norm[l].data(), dim, static_cast<Real>(c_.norm_eps));
    matmul(hb.data(), xb.data(), w1[l].data(), dim, hidden_dim);
    matmul(hb2.data(), xb.data(), w3[l].data(), dim, hidden_dim);
    for (int i = 0; i < hidden_dim; i++) {
      const Real val = hb[i];
      if (c_.ffn_act == "silu")
        hb[i] = val * (Real(1) / (Real(1) + std::exp(-val))) * hb2[i];
      else
        hb[i] = Real(0.5) * val *
                (Real(1) + std::tanh(static_cast<Real>(0.7978845608028654) * (val + Real(0.044715) * val * val * val))) *
                hb2[i];
    }
    matmul(xb.data(), hb.data(), w2[l].data(), hidden_dim, dim);
    if (c_.post_norms)
      rmsnorm(xb.data(), xb.data(), post_ffn_norm[l].data(), dim, static_cast<Real>(c_.norm_eps));
    for (int i = 0; i < dim; i++) x[i] += xb[i];
  }

  // final rmsnorm and the classifier into logits (soft-capped when the family caps them)
  rmsnorm(x.data(), x.data(), final_norm.data(), dim, static_cast<Real>(c_.norm_eps));
  matmul(logits.data(), x.data(), output.data(), dim, c_.vocab_size);
  if (c_.final_softcap > 0) {
    const Real cap = static_cast<Real>(c_.final_softcap);
    for (int i = 0; i < c_.vocab_size; i++) logits[i] = cap * std::tanh(logits[i] / cap);
  }
  return logits;
}

template class LlamaReferenceT<float>;
template class LlamaReferenceT<double>;

}  // namespace cibench
