#include "engines/runtime/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engines/core/error.h"
#include "engines/kernels/kernels.h"
#include "engines/runtime/decoder_rows.h"

namespace cibench {

const char* kv_mode_name(KvMode m) {
  switch (m) {
    case KvMode::preallocated: return "preallocated";
    case KvMode::none: return "none";
    case KvMode::preallocated_f16: return "preallocated-f16";
  }
  return "unknown";
}

const std::vector<KvMode>& all_kv_modes() {
  static const std::vector<KvMode> modes = {KvMode::preallocated, KvMode::none,
                                            KvMode::preallocated_f16};
  return modes;
}

std::string kv_mode_list() {
  std::string s;
  for (KvMode m : all_kv_modes()) s += (s.empty() ? "" : ", ") + std::string(kv_mode_name(m));
  return s;
}

KvMode parse_kv_mode(const std::string& s) {
  for (KvMode m : all_kv_modes())
    if (s == kv_mode_name(m)) return m;
  throw Error(str("unknown KV cache mode '", s, "' (known: ", kv_mode_list(), ")"));
}

namespace {

// The bytes of every buffer a session allocates: the constructor allocates these and
// estimate_bytes() adds them up, so the estimate cannot drift from the allocation.
struct SessionSizes {
  int context = 0, batch = 0;
  size_t kv_elem = 0;
  size_t kv = 0;                                // each of the key and value caches
  size_t act_dim = 0, act_q = 0, act_kv = 0, act_hidden = 0;  // one activation buffer of width dim / q_dim / kv_dim / hidden
  size_t scores = 0, logits = 0, rope = 0;      // attention scores (all threads), logits, cos or sin table
  size_t rope_tables = 2;                       // cos and sin, and the local ones
  SessionSizes(const LlamaConfig& c, const SessionOptions& o) {
    CIBENCH_CHECK(o.max_batch >= 1, "max_batch must be >= 1, got ", o.max_batch);
    context = o.max_context > 0 ? o.max_context : c.seq_len;
    batch = std::min(o.max_batch, context);
    kv_elem = o.kv_mode == KvMode::preallocated_f16 ? sizeof(uint16_t) : sizeof(float);
    kv = static_cast<size_t>(c.n_layers) * context * c.kv_dim() * kv_elem;
    const size_t B = static_cast<size_t>(batch);
    act_dim = B * c.dim * sizeof(float);
    act_q = B * c.q_dim() * sizeof(float);
    act_kv = B * c.kv_dim() * sizeof(float);
    act_hidden = B * c.hidden_dim * sizeof(float);
    scores = static_cast<size_t>(std::max(1, o.threads)) * 2 * context * sizeof(float);  // two queries a task
    logits = static_cast<size_t>(c.vocab_size) * sizeof(float);
    rope = static_cast<size_t>(context) * (c.rot_dim() / 2) * sizeof(float);
    rope_tables = static_cast<size_t>(rope_table_count(c));
  }
  size_t total() const {
    return 2 * kv + 2 * act_dim + 2 * act_q + 2 * act_kv + 2 * act_hidden + scores + logits + rope_tables * rope;
  }
};

}  // namespace

size_t LlamaSession::estimate_bytes(const LlamaConfig& c, const SessionOptions& opts) {
  return SessionSizes(c, opts).total();
}

LlamaSession::LlamaSession(const LlamaModel& model, const SessionOptions& opts)
    : model_(model), opts_(opts) {
  const LlamaConfig& c = model.config;
  isa_ = opts.isa < 0 ? active_isa() : static_cast<Isa>(opts.isa);
  if (!isa_supported(isa_)) set_active_isa(isa_);  // throws with the reason
  const SessionSizes z(c, opts);
  max_context_ = z.context;
  opts_.max_batch = z.batch;
  pool_ = std::make_unique<ThreadPool>(opts.threads, opts.pin_threads);
  mm_ = std::make_unique<MatmulRunner>(*pool_, isa_);
  mm_->reserve(opts_.max_batch, std::max({c.dim, c.hidden_dim, c.q_dim()}));

  kv_elem_bytes_ = z.kv_elem;
  key_cache_ = AlignedBuffer(z.kv);
  value_cache_ = AlignedBuffer(z.kv);
  x_ = AlignedBuffer(z.act_dim);
  xb_ = AlignedBuffer(z.act_dim);
  q_ = AlignedBuffer(z.act_q);
  k_ = AlignedBuffer(z.act_kv);
  v_ = AlignedBuffer(z.act_kv);
  att_out_ = AlignedBuffer(z.act_q);
  hb_ = AlignedBuffer(z.act_hidden);
  hb2_ = AlignedBuffer(z.act_hidden);
  att_scores_ = AlignedBuffer(z.scores);
  logits_ = AlignedBuffer(z.logits);

  rope_tables(c, max_context_, rope_cos_, rope_sin_);
  local_rope_tables(c, max_context_, rope_local_cos_, rope_local_sin_);
}

void rope_tables(const LlamaConfig& c, int max_context, std::vector<float>& cos, std::vector<float>& sin) {
  const int half = c.rot_dim() / 2;
  const double mag = rope_attention_factor(c);
  // dynamic changes the frequencies at every position past the original context, longrope once
  // (its long factors from the first position past it).
  const RopeScaling& r = c.rope_scaling;
  cos.assign(static_cast<size_t>(max_context) * half, 0.0f);
  sin.assign(cos.size(), 0.0f);
  std::vector<double> inv_freq = rope_inv_freq(c, 0);
  for (int p = 0; p < max_context; ++p) {
    if (r.type == "dynamic" || (r.type == "longrope" && p == r.original_max_position)) inv_freq = rope_inv_freq(c, p);
    for (int i = 0; i < half; ++i) {
      const double a = p * inv_freq[static_cast<size_t>(i)];
      cos[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(a) * mag);
      sin[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(a) * mag);
    }
  }
}

LlamaSession::~LlamaSession() = default;


void LlamaSession::reset() {
  pos_ = 0;
  history_.clear();
}

size_t LlamaSession::kv_cache_bytes() const { return key_cache_.size() + value_cache_.size(); }

void LlamaSession::kv_cache_row(bool value, int layer, int pos, void* out) const {
  const LlamaConfig& c = model_.config;
  CIBENCH_CHECK(layer >= 0 && layer < c.n_layers && pos >= 0 && pos < max_context_,
                "KV cache row (layer ", layer, ", position ", pos, ") out of range");
  const size_t hd_bytes = static_cast<size_t>(c.head_dim()) * kv_elem_bytes_;
  const uint8_t* cache = (value ? value_cache_ : key_cache_).data();
  for (int h = 0; h < c.n_kv_heads; ++h) {
    const size_t row = (static_cast<size_t>(layer) * c.n_kv_heads + h) * max_context_ + pos;
    std::memcpy(static_cast<uint8_t*>(out) + h * hd_bytes, cache + row * hd_bytes, hd_bytes);
  }
}

const float* LlamaSession::prefill(const int* tokens, int n) {
  CIBENCH_CHECK(n >= 1, "prefill needs at least one token");
  CIBENCH_CHECK(pos_ + n <= max_context_, "context overflow: position ", pos_, " + ", n,
                " tokens exceeds the context of ", max_context_);
  if (opts_.kv_mode == KvMode::none) {
    history_.insert(history_.end(), tokens, tokens + n);
    return recompute(history_.data(), static_cast<int>(history_.size()));
  }
  for (int done = 0; done < n;) {
    const int chunk = std::min(n - done, opts_.max_batch);
    forward_chunk(tokens + done, chunk, pos_, done + chunk == n);
    pos_ += chunk;
    done += chunk;
  }
  return logits_.as<float>();
}

// KvMode::none: the cache is scratch for one recomputation of the whole prefix.
const float* LlamaSession::recompute(const int* tokens, int n) {
  for (int done = 0; done < n;) {
    const int chunk = std::min(n - done, opts_.max_batch);
    forward_chunk(tokens + done, chunk, done, done + chunk == n);
    done += chunk;
  }
  pos_ = n;
  return logits_.as<float>();
}

const float* LlamaSession::verify(const int* tokens, int n) {
  CIBENCH_CHECK(n >= 1, "verify needs at least one token");
  CIBENCH_CHECK(opts_.kv_mode != KvMode::none, "verify needs a KV cache (KV mode '",
                kv_mode_name(opts_.kv_mode), "' keeps none)");
  CIBENCH_CHECK(pos_ + n <= max_context_, "context overflow: position ", pos_, " + ", n,
                " tokens exceeds the context of ", max_context_);
  const size_t vocab = static_cast<size_t>(model_.config.vocab_size);
  if (verify_logits_.size() < static_cast<size_t>(n) * vocab) verify_logits_.resize(static_cast<size_t>(n) * vocab);
  for (int done = 0; done < n;) {
    const int chunk = std::min(n - done, opts_.max_batch);
    forward_chunk(tokens + done, chunk, pos_, false, verify_logits_.data() + done * vocab);
    pos_ += chunk;
    done += chunk;
  }
  return verify_logits_.data();
}

void LlamaSession::rewind(int pos) {
  CIBENCH_CHECK(pos >= 0 && pos <= pos_, "cannot rewind to position ", pos,
                ": the context holds positions [0, ", pos_, ")");
  pos_ = pos;
  if (opts_.kv_mode == KvMode::none) history_.resize(static_cast<size_t>(pos));
}

void LlamaSession::forward_all(const int* tokens, int n, float* logits) {
  const int vocab = model_.config.vocab_size;
  for (int i = 0; i < n; ++i) {
    const float* l = step(tokens[i]);
    std::memcpy(logits + static_cast<size_t>(i) * vocab, l, vocab * sizeof(float));
  }
}

void LlamaSession::forward_chunk(const int* tokens, int n, int pos0, bool want_logits, float* all_logits) {
  const LlamaConfig& c = model_.config;
  const KernelTable& K = kernels_for(isa_);
  const int dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim, hd = c.head_dim();
  const int kv_mul = c.n_heads / c.n_kv_heads, half = c.rot_dim() / 2;
  const float scale = attention_scale(c);
  float* x = x_.as<float>();
  float* xb = xb_.as<float>();
  float* q = q_.as<float>();
  float* k = k_.as<float>();
  float* v = v_.as<float>();
  float* ao = att_out_.as<float>();
  float* hb = hb_.as<float>();
  float* hb2 = hb2_.as<float>();

  for (int i = 0; i < n; ++i) {
    CIBENCH_CHECK(tokens[i] >= 0 && tokens[i] < c.vocab_size, "token id ", tokens[i],
                  " outside the vocabulary of ", c.vocab_size);
    embed(model_, tokens[i], x + static_cast<size_t>(i) * dim);
  }
  // The per-token work between the matrix products (norms, RoPE and the cache writes, residuals,
  // the gate) split over the pool by tokens for a prefill chunk: each token's rows by the same
  // code on whichever thread, so bit for bit the serial loop (run serially, it held a second
  // thread idle for ~7 % of a two-thread prefill).
  constexpr int kParallelTokens = 8;
  auto per_token = [&](auto&& fn) {  // fn(i0, i1): tokens [i0, i1)
    if (n < kParallelTokens || pool_->size() < 2) {
      fn(0, n);
      return;
    }
    pool_->run([&](int t, int nt) {
      int64_t b, e;
      ThreadPool::split(n, t, nt, &b, &e);
      if (b < e) fn(static_cast<int>(b), static_cast<int>(e));
    });
  };

  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayer& L = model_.layers[l];
    per_token([&](int i0, int i1) {
      for (int i = i0; i < i1; ++i) K.rmsnorm(x + i * dim, L.attention_norm.data(), xb + i * dim, dim, c.norm_eps);
    });
    ActivationObserver* obs = opts_.observer;
    const std::string lp = obs ? "layers." + std::to_string(l) + "." : std::string();
    if (obs) {
      for (const char* w : {"wq", "wk", "wv"}) obs->observe(lp + w, xb, n, dim);
    }
    mm_->matmul_same_input({{&L.wq, q, q_dim}, {&L.wk, k, kv_dim}, {&L.wv, v, kv_dim}}, xb, dim, n);

    // Cache layout (n_layers, n_kv_heads, max_context, head_dim): the rows one head attends
    // over are contiguous, so they stream from memory instead of arriving kv_dim apart.
    const bool f16 = kv_elem_bytes_ == sizeof(uint16_t);
    const size_t head_span = static_cast<size_t>(max_context_) * hd;  // one head of one layer
    const size_t layer_off = static_cast<size_t>(l) * c.n_kv_heads * head_span;
    float* kc = key_cache_.as<float>() + (f16 ? 0 : layer_off);
    float* vc = value_cache_.as<float>() + (f16 ? 0 : layer_off);
    uint16_t* kh = key_cache_.as<uint16_t>() + (f16 ? layer_off : 0);
    uint16_t* vh = value_cache_.as<uint16_t>() + (f16 ? layer_off : 0);
    const bool local = c.layer_local_rope(l);
    const float* cos_tab = (local ? rope_local_cos_ : rope_cos_).data();
    const float* sin_tab = (local ? rope_local_sin_ : rope_sin_).data();
    per_token([&](int i0, int i1) {
      for (int i = i0; i < i1; ++i) {
        const float* cs = cos_tab + static_cast<size_t>(pos0 + i) * half;
        const float* sn = sin_tab + static_cast<size_t>(pos0 + i) * half;
        attention_inputs(K, c, l, L, q + static_cast<size_t>(i) * q_dim, k + static_cast<size_t>(i) * kv_dim,
                         v + static_cast<size_t>(i) * kv_dim, cs, sn);
        for (int h = 0; h < c.n_kv_heads; ++h) {
          const size_t at = h * head_span + static_cast<size_t>(pos0 + i) * hd;
          const float* kr = k + i * kv_dim + h * hd;
          const float* vr = v + i * kv_dim + h * hd;
          if (f16) {
            K.f32_to_f16(kr, kh + at, hd);
            K.f32_to_f16(vr, vh + at, hd);
          } else {
            std::memcpy(kc + at, kr, hd * sizeof(float));
            std::memcpy(vc + at, vr, hd * sizeof(float));
          }
        }
      }
    });

    // Attention: one task per (pair of consecutive tokens, query head), dealt round-robin over the
    // pool (the later tokens attend over more positions: ranges of tasks gave the thread with the
    // last tokens three quarters of the work). A pair's whole blocks of positions are read once
    // for both tokens (KernelTable::attention2); each token's result is that of `attention` alone.
    const int64_t pairs = (n + 1) / 2, tasks = pairs * c.n_heads;
    pool_->run([&](int t, int nt) {
      float* att0 = att_scores_.as<float>() + static_cast<size_t>(t) * 2 * max_context_;
      float* att1 = att0 + max_context_;
      for (int64_t task = t; task < tasks; task += nt) {
        const int i = static_cast<int>(task / c.n_heads) * 2, h = static_cast<int>(task % c.n_heads);
        const size_t at = (h / kv_mul) * head_span;
        const float* q0 = q + i * q_dim + h * hd;
        float* o0 = ao + i * q_dim + h * hd;
        const int first0 = attention_first(c, l, pos0 + i);
        if (i + 1 < n) {
          const int first1 = attention_first(c, l, pos0 + i + 1);
          if (f16)
            K.attention2_f16(q0, q0 + q_dim, kh + at, vh + at, first0, pos0 + i + 1, first1, pos0 + i + 2, hd, hd,
                             scale, c.attn_softcap, att0, att1, o0, o0 + q_dim);
          else
            K.attention2(q0, q0 + q_dim, kc + at, vc + at, first0, pos0 + i + 1, first1, pos0 + i + 2, hd, hd, scale,
                         c.attn_softcap, att0, att1, o0, o0 + q_dim);
        } else if (f16) {
          K.attention_f16(q0, kh + at, vh + at, first0, pos0 + i + 1, hd, hd, scale, c.attn_softcap, att0, o0);
        } else {
          K.attention(q0, kc + at, vc + at, first0, pos0 + i + 1, hd, hd, scale, c.attn_softcap, att0, o0);
        }
      }
    });

    if (obs) obs->observe(lp + "wo", ao, n, q_dim);
    mm_->matmul(L.wo, ao, q_dim, n, xb, dim);
    per_token([&](int i0, int i1) {
      for (int i = i0; i < i1; ++i) {
        if (c.o_bias) K.axpy_f32(1.0f, L.bo.data(), xb + i * dim, dim);
        if (c.post_norms) K.rmsnorm(xb + i * dim, L.post_attention_norm.data(), xb + i * dim, dim, c.norm_eps);
        K.axpy_f32(1.0f, xb + i * dim, x + i * dim, dim);
        K.rmsnorm(x + i * dim, L.ffn_norm.data(), xb + i * dim, dim, c.norm_eps);
      }
    });
    if (obs) {
      obs->observe(lp + "w1", xb, n, dim);
      obs->observe(lp + "w3", xb, n, dim);
    }
    mm_->matmul_same_input({{&L.w1, hb, hidden}, {&L.w3, hb2, hidden}}, xb, dim, n);
    per_token([&](int i0, int i1) {
      const size_t o = static_cast<size_t>(i0) * hidden;
      ffn_gate(K, c, hb + o, hb2 + o, i1 - i0, hidden);
    });
    if (obs) obs->observe(lp + "w2", hb, n, hidden);
    mm_->matmul(L.w2, hb, hidden, n, xb, dim);
    per_token([&](int i0, int i1) {
      for (int i = i0; i < i1; ++i) {
        if (c.post_norms) K.rmsnorm(xb + i * dim, L.post_ffn_norm.data(), xb + i * dim, dim, c.norm_eps);
        K.axpy_f32(1.0f, xb + i * dim, x + i * dim, dim);
      }
    });
  }

  if (all_logits) {
    // Every row through the head: the same per-row RMSNorm as below, then one matmul.
    for (int i = 0; i < n; ++i)
      K.rmsnorm(x + static_cast<size_t>(i) * dim, model_.final_norm.data(), xb + static_cast<size_t>(i) * dim,
                dim, c.norm_eps);
    if (opts_.observer) opts_.observer->observe("output", xb, n, dim);
    mm_->matmul(model_.output, xb, dim, n, all_logits, c.vocab_size);
    soft_cap(all_logits, static_cast<int64_t>(n) * c.vocab_size, c.final_softcap);
  }
  if (!want_logits) return;
  const float* last = x + static_cast<size_t>(n - 1) * dim;
  K.rmsnorm(last, model_.final_norm.data(), xb, dim, c.norm_eps);
  if (opts_.observer) opts_.observer->observe("output", xb, 1, dim);
  mm_->matvec(model_.output, xb, logits_.as<float>());
  soft_cap(logits_.as<float>(), c.vocab_size, c.final_softcap);
}

}  // namespace cibench
