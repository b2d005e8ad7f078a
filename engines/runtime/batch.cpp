#include "engines/runtime/batch.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engines/core/error.h"
#include "engines/kernels/kernels.h"
#include "engines/runtime/decoder_rows.h"

namespace cibench {

namespace {

// The bytes of every buffer LlamaBatch allocates besides the pool: the constructor allocates
// these and estimate_bytes() adds them up, so the estimate cannot drift from the allocation.
struct BatchSizes {
  int context = 0;
  size_t act_dim = 0, act_q = 0, act_kv = 0, act_hidden = 0;  // one activation buffer of width dim / q_dim / kv_dim / hidden
  size_t scores = 0, logits = 0, rope = 0;         // attention scores (all threads), logits, cos or sin table
  size_t rope_tables = 2;                          // cos and sin, and the local ones
  BatchSizes(const LlamaConfig& c, const BatchOptions& o) {
    CIBENCH_CHECK(o.threads >= 1, "threads must be >= 1, got ", o.threads);
    CIBENCH_CHECK(o.max_step_tokens >= 1, "max_step_tokens must be >= 1, got ", o.max_step_tokens);
    CIBENCH_CHECK(o.max_step_sequences >= 1 && o.max_step_sequences <= o.max_step_tokens,
                  "max_step_sequences must be in [1, max_step_tokens = ", o.max_step_tokens,
                  "], got ", o.max_step_sequences);
    CIBENCH_CHECK(o.max_context >= 0, "max_context must be >= 0, got ", o.max_context);
    context = o.max_context > 0 ? o.max_context : c.seq_len;
    const size_t R = static_cast<size_t>(o.max_step_tokens);
    act_dim = R * c.dim * sizeof(float);
    act_q = R * c.q_dim() * sizeof(float);
    act_kv = R * c.kv_dim() * sizeof(float);
    act_hidden = R * c.hidden_dim * sizeof(float);
    scores = static_cast<size_t>(o.threads) * context * sizeof(float);
    logits = static_cast<size_t>(o.max_step_sequences) * c.vocab_size * sizeof(float);
    rope = static_cast<size_t>(context) * (c.rot_dim() / 2) * sizeof(float);
    rope_tables = static_cast<size_t>(rope_table_count(c));
  }
  size_t total() const {
    return 2 * act_dim + 2 * act_q + 2 * act_kv + 2 * act_hidden + scores + logits + rope_tables * rope;
  }
};

}  // namespace

size_t LlamaBatch::estimate_bytes(const LlamaConfig& c, const BatchOptions& o) {
  return BatchSizes(c, o).total() + KvBlockPool::estimate_bytes(c, o.pool);
}

LlamaBatch::LlamaBatch(const LlamaModel& model, const BatchOptions& o)
    : model_(model), opts_(o), pool_(model.config, o.pool) {
  const LlamaConfig& c = model.config;
  isa_ = o.isa < 0 ? active_isa() : static_cast<Isa>(o.isa);
  if (!isa_supported(isa_)) set_active_isa(isa_);  // throws with the reason
  const BatchSizes z(c, o);
  max_context_ = z.context;
  threads_ = std::make_unique<ThreadPool>(o.threads, o.pin_threads);
  mm_ = std::make_unique<MatmulRunner>(*threads_, isa_);
  mm_->reserve(o.max_step_tokens, std::max({c.dim, c.hidden_dim, c.q_dim()}));

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
  row_item_.reserve(o.max_step_tokens);
  row_pos_.reserve(o.max_step_tokens);
  item_logits_.reserve(o.max_step_sequences);
  step_seqs_.reserve(o.max_step_sequences);
  logit_rows_.reserve(o.max_step_sequences);

  rope_tables(c, max_context_, rope_cos_, rope_sin_);  // LlamaSession's tables, bit for bit
  local_rope_tables(c, max_context_, rope_local_cos_, rope_local_sin_);
}

LlamaBatch::~LlamaBatch() = default;

// ---- sequences ------------------------------------------------------------------------------

LlamaBatch::Sequence& LlamaBatch::seq(SeqId s) {
  auto it = seqs_.find(s);
  CIBENCH_CHECK(it != seqs_.end(), "unknown sequence id ", s);
  return it->second;
}

const LlamaBatch::Sequence& LlamaBatch::seq(SeqId s) const {
  auto it = seqs_.find(s);
  CIBENCH_CHECK(it != seqs_.end(), "unknown sequence id ", s);
  return it->second;
}

SeqId LlamaBatch::add_sequence() {
  const SeqId id = next_id_++;
  seqs_.emplace(id, Sequence{});
  return id;
}

void LlamaBatch::free_sequence(SeqId s) {
  Sequence& q = seq(s);
  // Last block first: with prefix caching, a sequence's later blocks become the least recently
  // released and are evicted before the prefix other prompts are likelier to share.
  std::reverse(q.blocks.begin(), q.blocks.end());
  pool_.release(q.blocks.data(), q.blocks.size());
  seqs_.erase(s);
}

int LlamaBatch::attach_prefix(SeqId s, const int* tokens, int n) {
  CIBENCH_CHECK(opts_.prefix_cache, "attach_prefix: prefix caching is off (BatchOptions::prefix_cache)");
  Sequence& q = seq(s);
  CIBENCH_CHECK(q.pos == 0 && q.blocks.empty(), "attach_prefix: sequence ", s, " is not empty (position ", q.pos,
                ", ", q.blocks.size(), " blocks)");
  CIBENCH_CHECK(n >= 0 && (n == 0 || tokens), "attach_prefix: bad token count ", n);
  const int bt = pool_.block_tokens();
  const int max_blocks = n > 0 ? std::min(n - 1, max_context_) / bt : 0;
  int32_t parent = -1;
  int j = 0;
  for (; j < max_blocks; ++j) {
    const int32_t id = pool_.find_cached(parent, tokens + static_cast<size_t>(j) * bt);
    if (id < 0) break;
    pool_.acquire(id);
    q.blocks.push_back(id);
    parent = id;
  }
  q.pos = j * bt;
  q.published = j;
  q.tokens.assign(tokens, tokens + q.pos);
  ++prefix_.lookups;
  prefix_.hits += j > 0;
  prefix_.lookup_tokens += n;
  prefix_.hit_tokens += q.pos;
  return q.pos;
}

PrefixCacheStats LlamaBatch::prefix_stats() const {
  PrefixCacheStats p = prefix_;
  p.evictions = pool_.evictions();
  p.cached_blocks = pool_.cached_blocks();
  return p;
}

void LlamaBatch::publish_full_blocks(Sequence& q) {
  const int bt = pool_.block_tokens();
  while (q.publishing && q.published < q.pos / bt) {
    const int j = q.published;
    const int32_t parent = j == 0 ? -1 : q.blocks[static_cast<size_t>(j) - 1];
    if (!pool_.publish(q.blocks[static_cast<size_t>(j)], parent, q.tokens.data() + static_cast<size_t>(j) * bt)) {
      q.publishing = false;
      break;
    }
    ++q.published;
    ++prefix_.published_blocks;
  }
}

int LlamaBatch::position(SeqId s) const { return seq(s).pos; }

const std::vector<int32_t>& LlamaBatch::blocks(SeqId s) const { return seq(s).blocks; }

int32_t LlamaBatch::blocks_needed(SeqId s, int n_tokens) const {
  const Sequence& q = seq(s);
  CIBENCH_CHECK(n_tokens >= 0, "blocks_needed: n_tokens must be >= 0, got ", n_tokens);
  const int32_t need = KvBlockPool::blocks_for(static_cast<int64_t>(q.pos) + n_tokens, pool_.block_tokens());
  return std::max<int32_t>(0, need - static_cast<int32_t>(q.blocks.size()));
}

bool LlamaBatch::reserve(SeqId s, int n_tokens) {
  const int32_t n = blocks_needed(s, n_tokens);
  return pool_.allocate(n, seq(s).blocks);
}

const float* LlamaBatch::logits(int item) const {
  CIBENCH_CHECK(item >= 0 && item < static_cast<int>(item_logits_.size()), "logits: item ", item,
                " outside the last step's ", item_logits_.size(), " items");
  const int slot = item_logits_[item];
  if (slot < 0) return nullptr;
  return logits_.as<float>() + static_cast<size_t>(slot) * model_.config.vocab_size;
}

// ---- the step -------------------------------------------------------------------------------

void LlamaBatch::step(const BatchItem* items, int n_items) {
  const LlamaConfig& c = model_.config;
  CIBENCH_CHECK(n_items >= 1, "a step needs at least one item");
  CIBENCH_CHECK(n_items <= opts_.max_step_sequences, "a step of ", n_items,
                " items exceeds max_step_sequences = ", opts_.max_step_sequences);
  // Validate everything before changing anything.
  int64_t rows = 0;
  int32_t new_blocks = 0;
  for (int i = 0; i < n_items; ++i) {
    const BatchItem& it = items[i];
    const Sequence& q = seq(it.seq);
    CIBENCH_CHECK(it.n_tokens >= 1 && it.tokens, "step item ", i, " (sequence ", it.seq,
                  ") has no tokens");
    for (int j = 0; j < i; ++j)
      CIBENCH_CHECK(items[j].seq != it.seq, "sequence ", it.seq, " appears twice in one step (items ",
                    j, " and ", i, ")");
    CIBENCH_CHECK(static_cast<int64_t>(q.pos) + it.n_tokens <= max_context_, "context overflow: sequence ",
                  it.seq, " at position ", q.pos, " + ", it.n_tokens, " tokens exceeds the context of ",
                  max_context_);
    for (int t = 0; t < it.n_tokens; ++t)
      CIBENCH_CHECK(it.tokens[t] >= 0 && it.tokens[t] < c.vocab_size, "token id ", it.tokens[t],
                    " (step item ", i, ", sequence ", it.seq, ") outside the vocabulary of ",
                    c.vocab_size);
    rows += it.n_tokens;
    new_blocks += blocks_needed(it.seq, it.n_tokens);
  }
  CIBENCH_CHECK(rows <= opts_.max_step_tokens, "a step of ", rows,
                " tokens exceeds max_step_tokens = ", opts_.max_step_tokens);
  if (new_blocks > pool_.free_blocks()) throw KvPoolExhausted(new_blocks, pool_.free_blocks());

  // Commit: blocks, the row map, the logits slots.
  row_item_.clear();
  row_pos_.clear();
  item_logits_.clear();
  step_seqs_.clear();
  logit_rows_.clear();
  for (int i = 0; i < n_items; ++i) {
    const BatchItem& it = items[i];
    Sequence& q = seq(it.seq);
    pool_.allocate(blocks_needed(it.seq, it.n_tokens), q.blocks);  // cannot fail: checked above
    step_seqs_.push_back(&q);
    float* x = x_.as<float>() + static_cast<size_t>(row_item_.size()) * c.dim;
    for (int t = 0; t < it.n_tokens; ++t) {
      row_item_.push_back(i);
      row_pos_.push_back(q.pos + t);
      embed(model_, it.tokens[t], x + static_cast<size_t>(t) * c.dim);
    }
    item_logits_.push_back(it.want_logits ? static_cast<int>(logit_rows_.size()) : -1);
    if (it.want_logits) logit_rows_.push_back(static_cast<int>(row_item_.size()) - 1);
  }
  forward(static_cast<int>(rows));
  for (int i = 0; i < n_items; ++i) {
    Sequence& q = *step_seqs_[i];
    q.pos += items[i].n_tokens;
    if (opts_.prefix_cache) {
      q.tokens.insert(q.tokens.end(), items[i].tokens, items[i].tokens + items[i].n_tokens);
      publish_full_blocks(q);
    }
  }
}

void LlamaBatch::forward(int n) {
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
  const bool f16 = pool_.element_bytes() == sizeof(uint16_t);
  const int P = pool_.block_tokens();
  const size_t block_elems = pool_.block_elements();
  const size_t head_block = static_cast<size_t>(P) * hd;  // one head of one block

  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayer& L = model_.layers[l];
    for (int i = 0; i < n; ++i)
      K.rmsnorm(x + static_cast<size_t>(i) * dim, L.attention_norm.data(), xb + static_cast<size_t>(i) * dim,
                dim, c.norm_eps);
    mm_->matmul_same_input({{&L.wq, q, q_dim}, {&L.wk, k, kv_dim}, {&L.wv, v, kv_dim}}, xb, dim, n);

    // RoPE, then each row's key and value into its sequence's block.
    uint8_t* kl = pool_.layer(false, l);
    uint8_t* vl = pool_.layer(true, l);
    const bool local = c.layer_local_rope(l);
    const float* cos_tab = (local ? rope_local_cos_ : rope_cos_).data();
    const float* sin_tab = (local ? rope_local_sin_ : rope_sin_).data();
    for (int i = 0; i < n; ++i) {
      const int pos = row_pos_[i];
      const float* cs = cos_tab + static_cast<size_t>(pos) * half;
      const float* sn = sin_tab + static_cast<size_t>(pos) * half;
      attention_inputs(K, c, l, L, q + static_cast<size_t>(i) * q_dim, k + static_cast<size_t>(i) * kv_dim,
                       v + static_cast<size_t>(i) * kv_dim, cs, sn);
      const Sequence& sq = *step_seqs_[row_item_[i]];
      const size_t blk = static_cast<size_t>(sq.blocks[pos / P]);
      for (int h = 0; h < c.n_kv_heads; ++h) {
        const size_t at = blk * block_elems + h * head_block + static_cast<size_t>(pos % P) * hd;
        const float* kr = k + static_cast<size_t>(i) * kv_dim + h * hd;
        const float* vr = v + static_cast<size_t>(i) * kv_dim + h * hd;
        if (f16) {
          K.f32_to_f16(kr, reinterpret_cast<uint16_t*>(kl) + at, hd);
          K.f32_to_f16(vr, reinterpret_cast<uint16_t*>(vl) + at, hd);
        } else {
          std::memcpy(reinterpret_cast<float*>(kl) + at, kr, hd * sizeof(float));
          std::memcpy(reinterpret_cast<float*>(vl) + at, vr, hd * sizeof(float));
        }
      }
    }

    // Attention: one task per (row, query head) over the row's sequence up to its position.
    const int64_t tasks = static_cast<int64_t>(n) * c.n_heads;
    threads_->run([&](int t, int nt) {
      int64_t b, e;
      ThreadPool::split(tasks, t, nt, &b, &e);
      float* att = att_scores_.as<float>() + static_cast<size_t>(t) * max_context_;
      for (int64_t task = b; task < e; ++task) {
        const int i = static_cast<int>(task / c.n_heads), h = static_cast<int>(task % c.n_heads);
        const size_t head_off = static_cast<size_t>(h / kv_mul) * head_block;
        const int32_t* table = step_seqs_[row_item_[i]]->blocks.data();
        const float* qi = q + static_cast<size_t>(i) * q_dim + h * hd;
        float* out = ao + static_cast<size_t>(i) * q_dim + h * hd;
        const int first = attention_first(c, l, row_pos_[i]);
        if (f16)
          K.attention_paged_f16(qi, reinterpret_cast<const uint16_t*>(kl) + head_off,
                                reinterpret_cast<const uint16_t*>(vl) + head_off, table, P,
                                static_cast<int64_t>(block_elems), first, row_pos_[i] + 1, hd, scale,
                                c.attn_softcap, att, out);
        else
          K.attention_paged(qi, reinterpret_cast<const float*>(kl) + head_off,
                            reinterpret_cast<const float*>(vl) + head_off, table, P,
                            static_cast<int64_t>(block_elems), first, row_pos_[i] + 1, hd, scale, c.attn_softcap,
                            att, out);
      }
    });

    mm_->matmul(L.wo, ao, q_dim, n, xb, dim);
    for (int i = 0; i < n; ++i) {
      float* o = xb + static_cast<size_t>(i) * dim;
      if (c.o_bias) K.axpy_f32(1.0f, L.bo.data(), o, dim);
      if (c.post_norms) K.rmsnorm(o, L.post_attention_norm.data(), o, dim, c.norm_eps);
      K.axpy_f32(1.0f, o, x + static_cast<size_t>(i) * dim, dim);
    }

    for (int i = 0; i < n; ++i)
      K.rmsnorm(x + static_cast<size_t>(i) * dim, L.ffn_norm.data(), xb + static_cast<size_t>(i) * dim, dim,
                c.norm_eps);
    mm_->matmul_same_input({{&L.w1, hb, hidden}, {&L.w3, hb2, hidden}}, xb, dim, n);
    ffn_gate(K, c, hb, hb2, n, hidden);
    mm_->matmul(L.w2, hb, hidden, n, xb, dim);
    for (int i = 0; i < n; ++i) {
      float* o = xb + static_cast<size_t>(i) * dim;
      if (c.post_norms) K.rmsnorm(o, L.post_ffn_norm.data(), o, dim, c.norm_eps);
      K.axpy_f32(1.0f, o, x + static_cast<size_t>(i) * dim, dim);
    }
  }

  // The head, one matrix product over the rows whose logits were asked for.
  const int m = static_cast<int>(logit_rows_.size());
  if (m == 0) return;
  for (int j = 0; j < m; ++j)
    K.rmsnorm(x + static_cast<size_t>(logit_rows_[j]) * dim, model_.final_norm.data(),
              xb + static_cast<size_t>(j) * dim, dim, c.norm_eps);
  mm_->matmul(model_.output, xb, dim, m, logits_.as<float>(), c.vocab_size);
  soft_cap(logits_.as<float>(), static_cast<int64_t>(m) * c.vocab_size, c.final_softcap);
}

}  // namespace cibench
