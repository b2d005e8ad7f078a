// Batched decode: the paged attention kernel against the contiguous one, the KV block pool's
// accounting, and LlamaBatch (sequences of ragged prompts joining and leaving a shared pool)
// against one LlamaSession per sequence on the real stories260K and stories5M, per ISA level and
// weight format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/kernels/half.h"
#include "engines/kernels/kernels.h"
#include "engines/models/llama.h"
#include "engines/models/llama_reference.h"
#include "engines/models/synthetic.h"
#include "engines/runtime/batch.h"
#include "engines/runtime/sampler.h"
#include "engines/runtime/session.h"
#include "pair_tolerance.h"
#include "test_support.h"

namespace cibench {
namespace {

// ---- The paged attention kernel ------------------------------------------------------------------
// attention_paged reads row t from blocks[t / P] and must compute exactly what attention computes
// over the same rows laid out contiguously (same sums in the same order), at every level.

class PagedAttention : public ::testing::TestWithParam<Isa> {};

TEST_P(PagedAttention, BitIdenticalToTheContiguousKernel) {
  CIBENCH_REQUIRE_ISA(GetParam());
  const KernelTable& K = kernels_for(GetParam());
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int hd : {8, 20, 64})
    for (int P : {8, 16, 32})
      for (int n_pos : {1, 7, 8, 9, 16, 17, 40, 61}) {
        const int heads = 2;  // a second head in every block: rows are block_tokens * hd apart per head
        const int n_blocks = (n_pos + P - 1) / P, pool_blocks = n_blocks + 3;
        const size_t block_elems = static_cast<size_t>(heads) * P * hd;
        std::vector<int32_t> table(pool_blocks);
        std::iota(table.begin(), table.end(), 0);
        std::shuffle(table.begin(), table.end(), rng);
        table.resize(n_blocks);
        std::vector<float> q(hd), kc(static_cast<size_t>(n_pos) * hd), vc(kc.size());
        for (float& f : q) f = nd(rng);
        for (float& f : kc) f = nd(rng);
        for (float& f : vc) f = nd(rng);
        std::vector<float> kp(pool_blocks * block_elems, NAN), vp(kp.size(), NAN);
        std::vector<uint16_t> kch(kc.size()), vch(vc.size()), kph(kp.size(), 0x7e00), vph(kp.size(), 0x7e00);
        K.f32_to_f16(kc.data(), kch.data(), static_cast<int64_t>(kc.size()));
        K.f32_to_f16(vc.data(), vch.data(), static_cast<int64_t>(vc.size()));
        const int head = 1;
        for (int t = 0; t < n_pos; ++t) {
          const size_t at = table[t / P] * block_elems + static_cast<size_t>(head) * P * hd +
                            static_cast<size_t>(t % P) * hd;
          std::copy_n(kc.begin() + static_cast<size_t>(t) * hd, hd, kp.begin() + at);
          std::copy_n(vc.begin() + static_cast<size_t>(t) * hd, hd, vp.begin() + at);
          std::copy_n(kch.begin() + static_cast<size_t>(t) * hd, hd, kph.begin() + at);
          std::copy_n(vch.begin() + static_cast<size_t>(t) * hd, hd, vph.begin() + at);
        }
        const float scale = 1.f / std::sqrt(static_cast<float>(hd));
        std::vector<float> att_a(n_pos), att_b(n_pos), out_a(hd), out_b(hd);
        const size_t head_off = static_cast<size_t>(head) * P * hd;
        // Full attention, and sliding windows starting inside a block and off the 8-position
        // groups, with and without soft-capped scores.
        for (int first : {0, n_pos / 2, n_pos - 1, (n_pos * 2) / 3 + 1})
          for (float cap : {0.0f, 1.5f}) {
            if (first >= n_pos) continue;
            K.attention(q.data(), kc.data(), vc.data(), first, n_pos, hd, hd, scale, cap, att_a.data(), out_a.data());
            K.attention_paged(q.data(), kp.data() + head_off, vp.data() + head_off, table.data(), P,
                              static_cast<int64_t>(block_elems), first, n_pos, hd, scale, cap, att_b.data(),
                              out_b.data());
            ASSERT_EQ(0, std::memcmp(out_a.data(), out_b.data(), hd * sizeof(float)))
                << "f32, head_dim " << hd << ", block " << P << ", " << n_pos << " positions from " << first;
            K.attention_f16(q.data(), kch.data(), vch.data(), first, n_pos, hd, hd, scale, cap, att_a.data(),
                            out_a.data());
            K.attention_paged_f16(q.data(), kph.data() + head_off, vph.data() + head_off, table.data(), P,
                                  static_cast<int64_t>(block_elems), first, n_pos, hd, scale, cap, att_b.data(),
                                  out_b.data());
            ASSERT_EQ(0, std::memcmp(out_a.data(), out_b.data(), hd * sizeof(float)))
                << "f16, head_dim " << hd << ", block " << P << ", " << n_pos << " positions from " << first;
          }
        for (float f : out_b) ASSERT_TRUE(std::isfinite(f));  // no row of another head or block was read
      }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, PagedAttention, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// ---- The block pool --------------------------------------------------------------------------

LlamaConfig small_config() {
  LlamaConfig c;
  c.dim = 64;
  c.hidden_dim = 172;
  c.n_layers = 2;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 512;
  c.seq_len = 512;
  return c;
}

TEST(KvPool, BlockAccountingExhaustionAndReuse) {
  const LlamaConfig c = small_config();
  KvPoolOptions o;
  o.token_budget = 100;  // 7 blocks of 16
  o.block_tokens = 16;
  KvBlockPool pool(c, o);
  EXPECT_EQ(pool.total_blocks(), 7);
  EXPECT_EQ(pool.token_capacity(), 112);
  EXPECT_EQ(pool.free_blocks(), 7);
  EXPECT_EQ(pool.block_elements(), 4u * 16 * 8);
  EXPECT_EQ(pool.bytes(), 2u * 2 * 7 * 4 * 16 * 8 * sizeof(float));
  EXPECT_EQ(pool.bytes(), KvBlockPool::estimate_bytes(c, o));

  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.allocate(3, a));
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.used_blocks(), 3);
  EXPECT_FALSE(pool.allocate(5, b));  // 4 free: all or nothing
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.free_blocks(), 4);
  ASSERT_TRUE(pool.allocate(4, b));
  EXPECT_EQ(pool.free_blocks(), 0);
  std::vector<int32_t> none;
  EXPECT_FALSE(pool.allocate(1, none));
  EXPECT_TRUE(pool.allocate(0, none));

  // Freed blocks are handed out again.
  const int32_t back[] = {a[1], a[2]};
  pool.release(back, 2);
  EXPECT_EQ(pool.free_blocks(), 2);
  EXPECT_FALSE(pool.in_use(a[1]));
  std::vector<int32_t> again;
  ASSERT_TRUE(pool.allocate(2, again));
  EXPECT_EQ(std::set<int32_t>(again.begin(), again.end()), (std::set<int32_t>{a[1], a[2]}));

  // A double free, a repeated id and an id outside the pool are errors that release nothing.
  pool.release(&again[0], 1);
  EXPECT_THROW(pool.release(&again[0], 1), Error);
  EXPECT_EQ(pool.free_blocks(), 1);
  const int32_t twice[] = {again[1], again[1]};
  EXPECT_THROW(pool.release(twice, 2), Error);
  EXPECT_TRUE(pool.in_use(again[1]));
  EXPECT_EQ(pool.free_blocks(), 1);
  const int32_t outside[] = {b[0], 7};
  EXPECT_THROW(pool.release(outside, 2), Error);
  EXPECT_TRUE(pool.in_use(b[0]));
}

TEST(KvPool, BadOptionsAreErrorsNamingTheOption) {
  const LlamaConfig c = small_config();
  auto message = [&](KvPoolOptions o) {
    try {
      KvBlockPool p(c, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  KvPoolOptions o;
  o.token_budget = 64;
  o.block_tokens = 12;
  EXPECT_NE(message(o).find("block_tokens must be a positive multiple of 8, got 12"), std::string::npos);
  o.block_tokens = 16;
  o.token_budget = 0;
  EXPECT_NE(message(o).find("token_budget must be > 0"), std::string::npos);
  o.token_budget = 64;
  o.kv_mode = KvMode::none;
  EXPECT_NE(message(o).find("cannot be pooled"), std::string::npos);
  o.kv_mode = KvMode::preallocated_f16;
  KvBlockPool half(c, o);
  EXPECT_EQ(half.element_bytes(), 2u);
  EXPECT_EQ(half.bytes(), KvBlockPool::estimate_bytes(c, o));
}

// ---- LlamaBatch: blocks follow the sequences; errors change nothing ---------------------------

TEST(LlamaBatch, BlocksFollowTheSequencesAndExhaustionChangesNothing) {
  const LlamaSource src = synthetic_llama_source("synthetic:stories260k@3");
  const LlamaModel model = build_llama(src);
  BatchOptions o;
  o.pool.token_budget = 64;  // 4 blocks of 16
  o.max_step_tokens = 40;
  o.max_step_sequences = 4;
  LlamaBatch batch(model, o);
  EXPECT_EQ(batch.pool().bytes(), KvBlockPool::estimate_bytes(model.config, o.pool));
  EXPECT_EQ(batch.pool().total_blocks(), 4);
  std::vector<int> toks(40);
  for (int i = 0; i < 40; ++i) toks[i] = (i * 37 + 11) % 512;

  const SeqId a = batch.add_sequence(), b = batch.add_sequence();
  EXPECT_EQ(batch.active_sequences(), 2);
  EXPECT_EQ(batch.blocks_needed(a, 10), 1);
  batch.step({{a, toks.data(), 10, true}});
  EXPECT_EQ(batch.position(a), 10);
  EXPECT_EQ(batch.blocks(a).size(), 1u);
  EXPECT_NE(batch.logits(0), nullptr);
  batch.step({{a, toks.data() + 10, 1, true}, {b, toks.data(), 20, false}});
  EXPECT_EQ(batch.position(a), 11);
  EXPECT_EQ(batch.position(b), 20);
  EXPECT_EQ(batch.blocks(a).size(), 1u);
  EXPECT_EQ(batch.blocks(b).size(), 2u);
  EXPECT_EQ(batch.logits(1), nullptr);
  EXPECT_EQ(batch.pool().free_blocks(), 1);

  // a: 11 -> 17 crosses into a second block; b: 20 -> 33 into a third: 2 needed, 1 free.
  const std::vector<int32_t> a_blocks = batch.blocks(a), b_blocks = batch.blocks(b);
  try {
    batch.step({{a, toks.data(), 6, true}, {b, toks.data(), 13, true}});
    FAIL() << "expected KvPoolExhausted";
  } catch (const KvPoolExhausted& e) {
    EXPECT_EQ(e.needed_blocks(), 2);
    EXPECT_EQ(e.free_blocks(), 1);
  }
  EXPECT_EQ(batch.position(a), 11);
  EXPECT_EQ(batch.position(b), 20);
  EXPECT_EQ(batch.blocks(a), a_blocks);
  EXPECT_EQ(batch.blocks(b), b_blocks);
  EXPECT_EQ(batch.pool().free_blocks(), 1);

  // Other bad steps: nothing changes either.
  EXPECT_THROW(batch.step({{a, toks.data(), 1, true}, {a, toks.data(), 1, true}}), Error);
  EXPECT_THROW(batch.step({{a, toks.data(), 0, true}}), Error);
  EXPECT_THROW(batch.step({{12345, toks.data(), 1, true}}), Error);
  const int bad = 512;
  EXPECT_THROW(batch.step({{a, &bad, 1, true}}), Error);
  std::vector<int> many(41, 3);
  EXPECT_THROW(batch.step({{a, many.data(), 41, true}}), Error);  // > max_step_tokens
  EXPECT_EQ(batch.position(a), 11);
  EXPECT_EQ(batch.pool().free_blocks(), 1);

  // Reserving ahead: all or nothing.
  EXPECT_EQ(batch.blocks_needed(a, 6), 1);
  EXPECT_TRUE(batch.reserve(a, 6));
  EXPECT_EQ(batch.blocks_needed(a, 6), 0);
  EXPECT_EQ(batch.pool().free_blocks(), 0);
  EXPECT_FALSE(batch.reserve(b, 13));
  EXPECT_EQ(batch.blocks(b), b_blocks);

  // Freeing b returns its blocks, and a's next blocks are b's.
  batch.free_sequence(b);
  EXPECT_FALSE(batch.has_sequence(b));
  EXPECT_THROW(batch.free_sequence(b), Error);
  EXPECT_EQ(batch.pool().free_blocks(), 2);
  batch.step({{a, toks.data(), 30, true}});  // 11 -> 41: 3 blocks
  EXPECT_EQ(batch.blocks(a).size(), 3u);
  EXPECT_TRUE(std::find(b_blocks.begin(), b_blocks.end(), batch.blocks(a)[2]) != b_blocks.end());
  batch.free_sequence(a);
  EXPECT_EQ(batch.pool().free_blocks(), batch.pool().total_blocks());
  EXPECT_EQ(batch.active_sequences(), 0);
}

TEST(LlamaBatch, ContextOverflowIsAnError) {
  const LlamaModel model = build_llama(synthetic_llama_source("synthetic:stories260k@3"));
  BatchOptions o;
  o.max_context = 24;
  o.pool.token_budget = 256;
  LlamaBatch batch(model, o);
  const SeqId a = batch.add_sequence();
  std::vector<int> toks(25, 5);
  EXPECT_THROW(batch.step({{a, toks.data(), 25, true}}), Error);
  batch.step({{a, toks.data(), 24, true}});
  EXPECT_THROW(batch.step({{a, toks.data(), 1, true}}), Error);
  EXPECT_EQ(batch.position(a), 24);
}

TEST(KvPool, PrefixCachePublishesFindsSharesAndEvictsLeastRecentlyReleased) {
  const LlamaConfig c = small_config();
  KvPoolOptions o;
  o.token_budget = 4 * 8;  // 4 blocks of 8
  o.block_tokens = 8;
  KvBlockPool pool(c, o);
  std::vector<int> t1(8), t2(8), t3(8);
  std::iota(t1.begin(), t1.end(), 10);
  std::iota(t2.begin(), t2.end(), 20);
  std::iota(t3.begin(), t3.end(), 30);

  // A sequence of two full blocks publishes them as a chain.
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.allocate(2, a));
  EXPECT_EQ(pool.find_cached(-1, t1.data()), -1);
  ASSERT_TRUE(pool.publish(a[0], -1, t1.data()));
  ASSERT_TRUE(pool.publish(a[1], a[0], t2.data()));
  EXPECT_EQ(pool.cached_blocks(), 2);
  EXPECT_EQ(pool.find_cached(-1, t1.data()), a[0]);
  EXPECT_EQ(pool.find_cached(a[0], t2.data()), a[1]);
  EXPECT_EQ(pool.find_cached(-1, t2.data()), -1) << "same tokens, other parent";
  EXPECT_EQ(pool.find_cached(a[0], t3.data()), -1);
  std::vector<int> t1x = t1;
  t1x[7] = 99;
  EXPECT_EQ(pool.find_cached(-1, t1x.data()), -1) << "one token differs";
  // The same content under another block is not published twice; bad publishes are errors.
  std::vector<int32_t> dup;
  ASSERT_TRUE(pool.allocate(1, dup));
  EXPECT_FALSE(pool.publish(dup[0], -1, t1.data()));
  EXPECT_FALSE(pool.is_cached(dup[0]));
  EXPECT_THROW(pool.publish(a[0], -1, t3.data()), Error);   // published twice
  EXPECT_THROW(pool.publish(dup[0], dup[0], t3.data()), Error);  // parent not cached
  EXPECT_THROW(pool.publish(3, -1, t3.data()), Error);       // not held
  pool.release(dup.data(), 1);

  // A second holder shares the blocks; released by both, they stay cached and count as free.
  pool.acquire(a[0]);
  pool.acquire(a[1]);
  EXPECT_EQ(pool.holders(a[0]), 2);
  EXPECT_EQ(pool.used_blocks(), 2);
  pool.release(a.data(), 2);
  EXPECT_EQ(pool.used_blocks(), 2);
  const int32_t back[] = {a[1], a[0]};  // a sequence releases its last block first
  pool.release(back, 2);
  EXPECT_EQ(pool.used_blocks(), 0);
  EXPECT_EQ(pool.free_blocks(), 4);
  EXPECT_EQ(pool.evictable_blocks(), 2);
  EXPECT_EQ(pool.find_cached(a[0], t2.data()), a[1]);
  EXPECT_THROW(pool.release(&a[0], 1), Error) << "released more often than held";

  // Never-used blocks go first; then the least recently released cached block (a[1], released
  // before a[0]) is evicted, and with it goes its content.
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.allocate(2, b));
  EXPECT_EQ(pool.evictions(), 0);
  EXPECT_EQ(std::set<int32_t>(b.begin(), b.end()).count(a[0]), 0u);
  std::vector<int32_t> c1;
  ASSERT_TRUE(pool.allocate(1, c1));
  EXPECT_EQ(c1[0], a[1]);
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_EQ(pool.find_cached(a[0], t2.data()), -1);
  EXPECT_EQ(pool.find_cached(-1, t1.data()), a[0]);
  // Acquiring an evictable block takes it out of the eviction order.
  pool.acquire(a[0]);
  EXPECT_EQ(pool.free_blocks(), 0);
  std::vector<int32_t> none;
  EXPECT_FALSE(pool.allocate(1, none));

  // Evicting a parent invalidates its children even when the parent's id is reused for a block
  // published with other content: the child names the parent's generation.
  pool.release(&c1[0], 1);
  ASSERT_TRUE(pool.allocate(1, c1));  // a[1] again (never published now)
  ASSERT_TRUE(pool.publish(c1[0], a[0], t3.data()));
  EXPECT_EQ(pool.find_cached(a[0], t3.data()), c1[0]);
  const int32_t child = c1[0];
  pool.release(&c1[0], 1);  // child evictable
  pool.release(&a[0], 1);   // parent evictable, released after the child
  pool.release(b.data(), 2);
  // Evict: the child first (released first), then b's, then the parent.
  std::vector<int32_t> all;
  ASSERT_TRUE(pool.allocate(4, all));
  EXPECT_EQ(all[2], child);
  EXPECT_EQ(all[3], a[0]);
  EXPECT_EQ(pool.cached_blocks(), 0);
  ASSERT_TRUE(pool.publish(all[3], -1, t1.data()));  // the parent's id, same content again
  EXPECT_EQ(pool.find_cached(all[3], t3.data()), -1) << "a stale child was found through a reused parent id";
}

// ---- LlamaBatch against one LlamaSession per sequence -----------------------------------------
// A scripted run: sequences with ragged prompts join at different steps, read their prompt in
// chunks of 8 mixed with the decode rows of the others, decode greedily and leave when done. The
// pool holds fewer blocks than all sequences together need, so later sequences run in blocks the
// earlier ones freed, and a sequence is admitted only when the free blocks hold its whole life
// (a conservative scheduler, so no running sequence is ever refused a block).
//
// Expected: every sequence's tokens exactly those of a LlamaSession decoding it alone, and its
// logits (after the prompt and after every decoded token):
//  - bit-identical for the formats with int8 activations (w8a8, int4_g128_a8, ...): their matrix
//    kernels compute each output as an exact int32 sum times one float expression, whatever the
//    number of rows, and everything else a row goes through (RMSNorm, RoPE, the paged attention,
//    SwiGLU) is per row and bit-identical to the session's;
//  - for formats with f32 activations, within twice tolerance_vs_exact below: the session's
//    decode (matvec) and the batched rows (matmul) evaluate the same network in binary32 with
//    their sums in different orders, each within the forward-error bounds the FP32 reference
//    realises on the same tokens (see test_llama.cpp), so they are within the sum of two (the
//    f32 model's reference error stands for the quantised and pruned ones: networks of the same
//    widths and magnitudes, whose binary32 evaluations realise the same bounds). With a
//    half-precision cache, a cached value the two orders put on either side of a rounding tie
//    lands one half ulp apart (twice the at most half an ulp by which rounding moves it), so
//    twice the whole cache's measured effect on the logits (f16_cache_effect) is added.
//    Likewise for kernels that round their activations to bf16 (bf16 at avx512_vnni): an
//    activation the two orders put on either side of a rounding tie lands one bf16 step apart,
//    so twice the measured effect of that rounding on the logits (bf16_act_effect) is added.

struct Plan {
  int prompt, generate, join;  // prompt tokens, greedy tokens, the step it arrives at
};
const std::vector<Plan> kPlans = {{1, 12, 0}, {5, 7, 0},  {12, 20, 1}, {23, 5, 3},
                                  {3, 15, 4}, {17, 9, 6}, {9, 11, 8},  {30, 6, 9}};
constexpr int kChunk = 8;

std::vector<int> prompt_of(size_t i, int n, int vocab) {
  std::vector<int> p = {1};  // BOS
  for (int t = 1; t < n; ++t) p.push_back(static_cast<int>((t * 37 + 11 + 53 * i) % vocab));
  return p;
}

struct Trace {
  std::vector<int> tokens;      // generated
  std::vector<float> logits;    // generate x vocab: after the prompt, then after each generated token but the last
};

std::vector<Trace> run_sessions(const LlamaModel& model, KvMode kv, Isa isa) {
  const int V = model.config.vocab_size;
  std::vector<Trace> out;
  for (size_t i = 0; i < kPlans.size(); ++i) {
    SessionOptions so;
    so.isa = static_cast<int>(isa);
    so.kv_mode = kv;
    LlamaSession s(model, so);
    const std::vector<int> p = prompt_of(i, kPlans[i].prompt, V);
    Trace t;
    const float* l = s.prefill(p.data(), static_cast<int>(p.size()));
    for (int g = 0; g < kPlans[i].generate; ++g) {
      t.logits.insert(t.logits.end(), l, l + V);
      t.tokens.push_back(Sampler::argmax(l, V));
      if (g + 1 < kPlans[i].generate) l = s.step(t.tokens.back());
    }
    out.push_back(std::move(t));
  }
  return out;
}

struct BatchRun {
  std::vector<Trace> traces;
  int64_t blocks_allocated = 0;  // over the run (> total_blocks: freed blocks were reused)
  int deferred = 0;              // admissions postponed for lack of blocks
  int max_rows = 0;              // the largest step
};

BatchRun run_batch(const LlamaModel& model, KvMode kv, Isa isa, int threads) {
  const int V = model.config.vocab_size;
  const int P = 16;
  BatchOptions o;
  o.isa = static_cast<int>(isa);
  o.threads = threads;
  o.pool.kv_mode = kv;
  o.pool.block_tokens = P;
  o.pool.token_budget = 8 * P;  // 8 blocks: less than the sequences need together
  o.max_step_tokens = 96;
  LlamaBatch batch(model, o);

  struct Live {
    size_t plan;
    SeqId id;
    std::vector<int> prompt;
    int fed = 0;  // prompt tokens fed
  };
  BatchRun r;
  r.traces.resize(kPlans.size());
  std::vector<Live> live;
  std::vector<size_t> waiting;
  size_t next_plan = 0;
  for (int step = 0; next_plan < kPlans.size() || !waiting.empty() || !live.empty(); ++step) {
    if (step > 1000) {
      ADD_FAILURE() << "the scripted run does not finish";
      break;
    }
    while (next_plan < kPlans.size() && kPlans[next_plan].join <= step) waiting.push_back(next_plan++);
    // Admit in arrival order while the free blocks hold a whole life (blocks of the running
    // sequences' remaining lives counted as taken).
    int32_t committed = 0;
    for (const Live& l : live) {
      const Plan& p = kPlans[l.plan];
      committed += batch.blocks_needed(l.id, p.prompt + p.generate - 1 - batch.position(l.id));
    }
    while (!waiting.empty()) {
      const Plan& p = kPlans[waiting.front()];
      const int32_t need = KvBlockPool::blocks_for(p.prompt + p.generate - 1, P);
      if (need > batch.pool().free_blocks() - committed) {
        ++r.deferred;
        break;
      }
      committed += need;
      live.push_back({waiting.front(), batch.add_sequence(), prompt_of(waiting.front(), p.prompt, V)});
      waiting.erase(waiting.begin());
    }
    if (live.empty()) continue;

    std::vector<BatchItem> items;
    for (Live& l : live) {
      Trace& t = r.traces[l.plan];
      if (l.fed < static_cast<int>(l.prompt.size())) {
        const int n = std::min(kChunk, static_cast<int>(l.prompt.size()) - l.fed);
        items.push_back({l.id, l.prompt.data() + l.fed, n, l.fed + n == static_cast<int>(l.prompt.size())});
        l.fed += n;
      } else {
        items.push_back({l.id, &t.tokens.back(), 1, true});
      }
    }
    r.max_rows = std::max(r.max_rows, [&] {
      int n = 0;
      for (const BatchItem& it : items) n += it.n_tokens;
      return n;
    }());
    batch.step(items);
    for (size_t j = 0; j < items.size(); ++j) {
      const float* l = batch.logits(static_cast<int>(j));
      if (!l) continue;
      Trace& t = r.traces[live[j].plan];
      t.logits.insert(t.logits.end(), l, l + V);
      t.tokens.push_back(Sampler::argmax(l, V));
    }
    for (size_t j = live.size(); j-- > 0;) {
      if (static_cast<int>(r.traces[live[j].plan].tokens.size()) == kPlans[live[j].plan].generate) {
        r.blocks_allocated += static_cast<int64_t>(batch.blocks(live[j].id).size());
        batch.free_sequence(live[j].id);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
      }
    }
  }
  EXPECT_EQ(batch.pool().free_blocks(), batch.pool().total_blocks());
  EXPECT_GT(r.blocks_allocated, batch.pool().total_blocks()) << "no block was reused";
  return r;
}

// How far the half-precision cache moves the logits of these sequences from the f32 cache: the
// largest difference between sessions with each cache, teacher-forced on every sequence's prompt
// and generated tokens.
double f16_cache_effect(const LlamaModel& model, Isa isa, const std::vector<Trace>& ref) {
  const int V = model.config.vocab_size;
  double worst = 0;
  for (size_t i = 0; i < kPlans.size(); ++i) {
    std::vector<int> toks = prompt_of(i, kPlans[i].prompt, V);
    toks.insert(toks.end(), ref[i].tokens.begin(), ref[i].tokens.end() - 1);
    const int n = static_cast<int>(toks.size());
    std::vector<float> a(static_cast<size_t>(n) * V), b(a.size());
    SessionOptions so;
    so.isa = static_cast<int>(isa);
    LlamaSession s32(model, so);
    so.kv_mode = KvMode::preallocated_f16;
    LlamaSession s16(model, so);
    s32.forward_all(toks.data(), n, a.data());
    s16.forward_all(toks.data(), n, b.data());
    for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, std::fabs(static_cast<double>(a[j]) - b[j]));
  }
  return worst;
}

// How far rounding the activations to bf16 (the kernels of `model`'s format at `isa`) moves the
// logits of these sequences: the largest difference between sessions at `isa` and at the highest
// level below it whose kernels take f32 activations, teacher-forced as above.
double bf16_act_effect(const LlamaModel& model, Isa isa, const std::vector<Trace>& ref) {
  const FormatRow& f = *model.layers[0].wq.format;
  Isa below = Isa::generic;
  for (Isa l : supported_isas())
    if (static_cast<int>(l) < static_cast<int>(isa) && f.act_at(l) == ActType::f32) below = l;
  const int V = model.config.vocab_size;
  double worst = 0;
  for (size_t i = 0; i < kPlans.size(); ++i) {
    std::vector<int> toks = prompt_of(i, kPlans[i].prompt, V);
    toks.insert(toks.end(), ref[i].tokens.begin(), ref[i].tokens.end() - 1);
    const int n = static_cast<int>(toks.size());
    std::vector<float> a(static_cast<size_t>(n) * V), b(a.size());
    SessionOptions so;
    so.isa = static_cast<int>(isa);
    LlamaSession sb(model, so);
    so.isa = static_cast<int>(below);
    LlamaSession sf(model, so);
    sb.forward_all(toks.data(), n, a.data());
    sf.forward_all(toks.data(), n, b.data());
    for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, std::fabs(static_cast<double>(a[j]) - b[j]));
  }
  return worst;
}

struct BatchCase {
  std::string model;  // stories260K / stories5M
  Isa isa;
};

class BatchedDecode : public ::testing::TestWithParam<BatchCase> {};

TEST_P(BatchedDecode, TokensOfSeparateSessionsAndLogitsIdenticalOrWithinRounding) {
  const BatchCase& c = GetParam();
  const std::string dir = "models/" + c.model;
  CIBENCH_REQUIRE_SHARED(dir);
  CIBENCH_REQUIRE_ISA(c.isa);
  test::IsaScope at(c.isa);
  const LlamaSource src = open_llama_source(test::shared_path(dir + "/" + c.model + ".bin"));
  const bool small = c.model == "stories260K";
  const int threads = small ? 1 : 2;
  struct Variant {
    std::string format;
    KvMode kv;
    bool bit_identical;
    double sparsity = 0.0;
  };
  std::vector<Variant> variants = {{"w8a8", KvMode::preallocated, true},
                                   {"int4_g128_a8", KvMode::preallocated, true},
                                   {"w8a8", KvMode::preallocated_f16, true},
                                   {"f32", KvMode::preallocated, false},
                                   {"bf16", KvMode::preallocated, false}};
  if (small) {
    variants.push_back({"int4_g32_a8", KvMode::preallocated, true});
    variants.push_back({"int8_g32_a8", KvMode::preallocated, true});
    variants.push_back({"int8", KvMode::preallocated, false});
    variants.push_back({"int4_g32", KvMode::preallocated, false});
    variants.push_back({"f32", KvMode::preallocated_f16, false});
    variants.push_back({"int8_sparse", KvMode::preallocated, false, 0.5});  // half the weights pruned
  }
  double tol = -1;
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.format + " kv " + kv_mode_name(v.kv));
    LlamaBuildOptions bo;
    bo.format = v.format;
    bo.sparsity = v.sparsity;
    const LlamaModel model = build_llama(src, bo);
    const int V = model.config.vocab_size;
    const std::vector<Trace> ref = run_sessions(model, v.kv, c.isa);
    const BatchRun got = run_batch(model, v.kv, c.isa, threads);
    EXPECT_GT(got.deferred, 0) << "the pool never made a sequence wait";
    EXPECT_GT(got.max_rows, kChunk) << "no step mixed a prefill chunk with other rows";
    if (!v.bit_identical && tol < 0) {
      std::vector<int> toks = prompt_of(2, kPlans[2].prompt, V);
      toks.insert(toks.end(), ref[2].tokens.begin(), ref[2].tokens.end() - 1);
      tol = test::pair_tolerance(src, toks);
      std::printf("[ %s %s ] f32-activation formats: logits tolerance %.3g\n", c.model.c_str(),
                  isa_name(c.isa), tol);
    }
    double worst = 0;
    for (size_t i = 0; i < kPlans.size(); ++i) {
      ASSERT_EQ(got.traces[i].tokens, ref[i].tokens) << "sequence " << i;
      ASSERT_EQ(got.traces[i].logits.size(), ref[i].logits.size());
      if (v.bit_identical) {
        EXPECT_EQ(0, std::memcmp(got.traces[i].logits.data(), ref[i].logits.data(),
                                 ref[i].logits.size() * sizeof(float)))
            << "sequence " << i << ": logits not bit-identical";
      }
      for (size_t j = 0; j < ref[i].logits.size(); ++j)
        worst = std::max(worst, std::fabs(static_cast<double>(got.traces[i].logits[j]) - ref[i].logits[j]));
    }
    if (!v.bit_identical) {
      double bound = tol;
      if (v.kv == KvMode::preallocated_f16) {
        const double effect = f16_cache_effect(model, c.isa, ref);
        bound += 2.0 * effect;
        std::printf("[ %s %s %s ] half cache's effect on the logits %.3g\n", c.model.c_str(),
                    isa_name(c.isa), v.format.c_str(), effect);
      }
      if (format_by_name(v.format).act_at(c.isa) == ActType::bf16) {
        const double effect = bf16_act_effect(model, c.isa, ref);
        bound += 2.0 * effect;
        std::printf("[ %s %s %s ] bf16 activations' effect on the logits %.3g\n", c.model.c_str(),
                    isa_name(c.isa), v.format.c_str(), effect);
      }
      EXPECT_LE(worst, bound);
    }
    std::printf("[ %s %s %s kv %s ] max |logit difference| %.3g, %d deferred admission(s), largest step %d rows\n",
                c.model.c_str(), isa_name(c.isa), v.format.c_str(), kv_mode_name(v.kv), worst,
                got.deferred, got.max_rows);
  }
}

// ---- Prefix caching ------------------------------------------------------------------------
// Sequences whose prompts start with the same 40-token "system prompt" (blocks of 16): the ones
// joining after the first attach its cached whole blocks (32 positions; a prompt of exactly 33
// attaches 32, of exactly 32 attaches 16: the last token is always computed) and compute only
// the rest. A long unrelated prompt then needs blocks the cache holds, evicting some, and a later
// sequence with the shared prefix still gets the right tokens. Every sequence's tokens and logits
// are compared with a LlamaSession decoding it alone (bit-identical for the int8-activation
// formats, within the rounding bound above for f32 activations).

struct PrefixPlan {
  std::vector<int> prompt;
  int generate, join;
};

std::vector<PrefixPlan> prefix_plans(int vocab) {
  std::vector<int> sys = {1};
  for (int t = 1; t < 40; ++t) sys.push_back((t * 29 + 7) % vocab);
  auto with = [&](int n_sys, int n_own, int salt) {
    std::vector<int> p(sys.begin(), sys.begin() + n_sys);
    for (int t = 0; t < n_own; ++t) p.push_back((t * 41 + 13 * salt + 3) % vocab);
    return p;
  };
  std::vector<int> unrelated = {1};
  for (int t = 1; t < 100; ++t) unrelated.push_back((t * 17 + 5) % vocab);
  return {{with(40, 5, 1), 6, 0},   // computes the prefix and publishes it
          {with(40, 9, 2), 5, 7},   // attaches 32 while the first decodes
          {with(33, 0, 0), 4, 8},   // attaches 32 (the 33rd token is computed)
          {with(32, 0, 0), 4, 9},   // attaches 16 (the 32nd token is computed)
          {unrelated, 10, 20},      // misses, and evicts cached blocks
          {with(40, 7, 3), 3, 60}};
}

struct PrefixRun {
  std::vector<Trace> traces;
  std::vector<int> attached;
  PrefixCacheStats stats;
};

PrefixRun run_prefix_batch(const LlamaModel& model, Isa isa, const std::vector<PrefixPlan>& plans) {
  const int V = model.config.vocab_size;
  BatchOptions o;
  o.isa = static_cast<int>(isa);
  o.pool.block_tokens = 16;
  o.pool.token_budget = 10 * 16;
  o.max_step_tokens = 64;
  o.prefix_cache = true;
  LlamaBatch batch(model, o);
  struct Live {
    size_t plan;
    SeqId id;
    int fed;
  };
  PrefixRun r;
  r.traces.resize(plans.size());
  r.attached.assign(plans.size(), -1);
  std::vector<Live> live;
  size_t next = 0;
  for (int step = 0; next < plans.size() || !live.empty(); ++step) {
    if (step > 500) {
      ADD_FAILURE() << "the scripted run does not finish";
      break;
    }
    while (next < plans.size() && plans[next].join <= step) {
      const PrefixPlan& p = plans[next];
      const SeqId id = batch.add_sequence();
      const int n = static_cast<int>(p.prompt.size());
      r.attached[next] = batch.attach_prefix(id, p.prompt.data(), n);
      EXPECT_EQ(batch.position(id), r.attached[next]);
      EXPECT_TRUE(batch.reserve(id, n + p.generate - 1 - r.attached[next])) << "plan " << next;
      live.push_back({next, id, r.attached[next]});
      ++next;
    }
    if (live.empty()) continue;
    std::vector<BatchItem> items;
    for (Live& l : live) {
      const PrefixPlan& p = plans[l.plan];
      const int np = static_cast<int>(p.prompt.size());
      if (l.fed < np) {
        const int n = std::min(kChunk, np - l.fed);
        items.push_back({l.id, p.prompt.data() + l.fed, n, l.fed + n == np});
        l.fed += n;
      } else {
        items.push_back({l.id, &r.traces[l.plan].tokens.back(), 1, true});
      }
    }
    batch.step(items);
    for (size_t j = 0; j < items.size(); ++j) {
      const float* l = batch.logits(static_cast<int>(j));
      if (!l) continue;
      Trace& t = r.traces[live[j].plan];
      t.logits.insert(t.logits.end(), l, l + V);
      t.tokens.push_back(Sampler::argmax(l, V));
    }
    for (size_t j = live.size(); j-- > 0;)
      if (static_cast<int>(r.traces[live[j].plan].tokens.size()) == plans[live[j].plan].generate) {
        batch.free_sequence(live[j].id);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
      }
  }
  r.stats = batch.prefix_stats();
  EXPECT_EQ(batch.pool().used_blocks(), 0);
  return r;
}

class PrefixCache : public ::testing::TestWithParam<BatchCase> {};

TEST_P(PrefixCache, SharedPrefixIsComputedOnceAndTokensMatchSeparateSessions) {
  const BatchCase& c = GetParam();
  const std::string dir = "models/" + c.model;
  CIBENCH_REQUIRE_SHARED(dir);
  CIBENCH_REQUIRE_ISA(c.isa);
  test::IsaScope at(c.isa);
  const LlamaSource src = open_llama_source(test::shared_path(dir + "/" + c.model + ".bin"));
  std::vector<std::pair<std::string, bool>> formats = {{"w8a8", true}, {"int4_g128_a8", true}};
  if (c.model == "stories260K") formats.push_back({"f32", false});
  for (const auto& [format, bit_identical] : formats) {
    SCOPED_TRACE(format);
    LlamaBuildOptions bo;
    bo.format = format;
    const LlamaModel model = build_llama(src, bo);
    const int V = model.config.vocab_size;
    const std::vector<PrefixPlan> plans = prefix_plans(V);
    const PrefixRun got = run_prefix_batch(model, c.isa, plans);
    EXPECT_EQ(got.attached[0], 0);
    EXPECT_EQ(got.attached[1], 32);
    EXPECT_EQ(got.attached[2], 32);
    EXPECT_EQ(got.attached[3], 16);
    EXPECT_EQ(got.attached[4], 0);
    EXPECT_EQ(got.stats.lookups, 6);
    EXPECT_EQ(got.stats.hits, 3 + (got.attached[5] > 0));
    EXPECT_EQ(got.stats.hit_tokens, 80 + got.attached[5]);
    EXPECT_GT(got.stats.evictions, 0) << "the unrelated prompt evicted no cached block";
    double tol = -1;
    for (size_t i = 0; i < plans.size(); ++i) {
      SessionOptions so;
      so.isa = static_cast<int>(c.isa);
      LlamaSession s(model, so);
      Trace ref;
      const float* l = s.prefill(plans[i].prompt.data(), static_cast<int>(plans[i].prompt.size()));
      for (int g = 0; g < plans[i].generate; ++g) {
        ref.logits.insert(ref.logits.end(), l, l + V);
        ref.tokens.push_back(Sampler::argmax(l, V));
        if (g + 1 < plans[i].generate) l = s.step(ref.tokens.back());
      }
      ASSERT_EQ(got.traces[i].tokens, ref.tokens) << "sequence " << i;
      ASSERT_EQ(got.traces[i].logits.size(), ref.logits.size());
      if (bit_identical) {
        EXPECT_EQ(0, std::memcmp(got.traces[i].logits.data(), ref.logits.data(), ref.logits.size() * sizeof(float)))
            << "sequence " << i << ": logits not bit-identical";
      } else {
        if (tol < 0) {
          std::vector<int> toks = plans[1].prompt;
          toks.insert(toks.end(), ref.tokens.begin(), ref.tokens.end() - 1);
          tol = test::pair_tolerance(src, toks);
        }
        double worst = 0;
        for (size_t j = 0; j < ref.logits.size(); ++j)
          worst = std::max(worst, std::fabs(static_cast<double>(got.traces[i].logits[j]) - ref.logits[j]));
        EXPECT_LE(worst, tol) << "sequence " << i;
      }
    }
  }
}

TEST(PrefixCache, AttachIsRefusedWhenOffOrOnAStartedSequence) {
  const LlamaModel model = build_llama(synthetic_llama_source("synthetic:stories260k@3"));
  BatchOptions o;
  o.pool.token_budget = 256;
  std::vector<int> p(20, 5);
  {
    LlamaBatch off(model, o);
    const SeqId s = off.add_sequence();
    EXPECT_THROW(off.attach_prefix(s, p.data(), 20), Error);
  }
  o.prefix_cache = true;
  LlamaBatch on(model, o);
  const SeqId a = on.add_sequence();
  BatchItem it{a, p.data(), 20, true};
  on.step(&it, 1);
  EXPECT_THROW(on.attach_prefix(a, p.data(), 20), Error);
  const SeqId b = on.add_sequence();
  EXPECT_EQ(on.attach_prefix(b, p.data(), 20), 16);
  EXPECT_EQ(on.pool().holders(on.blocks(b)[0]), 2);
  EXPECT_EQ(on.attach_prefix(on.add_sequence(), p.data(), 0), 0);
}

INSTANTIATE_TEST_SUITE_P(ModelsAllIsas, PrefixCache, ::testing::ValuesIn([] {
                           std::vector<BatchCase> v;
                           for (const char* m : {"stories260K", "stories5M"})
                             for (Isa isa : all_isas()) v.push_back({m, isa});
                           return v;
                         }()),
                         [](const ::testing::TestParamInfo<BatchCase>& p) {
                           return p.param.model + "_" + isa_name(p.param.isa);
                         });

std::vector<BatchCase> batch_cases() {
  std::vector<BatchCase> v;
  for (const char* m : {"stories260K", "stories5M"})
    for (Isa isa : all_isas()) v.push_back({m, isa});
  return v;
}

INSTANTIATE_TEST_SUITE_P(ModelsAllIsas, BatchedDecode, ::testing::ValuesIn(batch_cases()),
                         [](const ::testing::TestParamInfo<BatchCase>& p) {
                           return p.param.model + "_" + isa_name(p.param.isa);
                         });

}  // namespace
}  // namespace cibench
