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
        K.attention(q.data(), kc.data(), vc.data(), n_pos, hd, hd, scale, att_a.data(), out_a.data());
        K.attention_paged(q.data(), kp.data() + head_off, vp.data() + head_off, table.data(), P,
                          static_cast<int64_t>(block_elems), n_pos, hd, scale, att_b.data(), out_b.data());
        ASSERT_EQ(0, std::memcmp(out_a.data(), out_b.data(), hd * sizeof(float)))
            << "f32, head_dim " << hd << ", block " << P << ", " << n_pos << " positions";
        K.attention_f16(q.data(), kch.data(), vch.data(), n_pos, hd, hd, scale, att_a.data(), out_a.data());
        K.attention_paged_f16(q.data(), kph.data() + head_off, vph.data() + head_off, table.data(), P,
                              static_cast<int64_t>(block_elems), n_pos, hd, scale, att_b.data(),
                              out_b.data());
        ASSERT_EQ(0, std::memcmp(out_a.data(), out_b.data(), hd * sizeof(float)))
            << "f16, head_dim " << hd << ", block " << P << ", " << n_pos << " positions";
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

// The FP32 reference's largest error against the exact (binary64) reference over a sequence's
// tokens, and the largest |exact logit| (test_llama.cpp's tolerance_vs_exact).
double pair_tolerance(const LlamaSource& src, const std::vector<int>& toks) {
  LlamaReference r32(src);
  LlamaReference64 r64(src);
  double err = 0, mx = 0;
  for (size_t p = 0; p < toks.size(); ++p) {
    const auto& a = r32.forward(toks[p], static_cast<int>(p));
    const auto& b = r64.forward(toks[p], static_cast<int>(p));
    for (size_t i = 0; i < a.size(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
      mx = std::max(mx, std::fabs(b[i]));
    }
  }
  const double to_exact = 4.0 * err + 4.0 * test::kF32U * mx;
  return 2.0 * to_exact;
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
      tol = pair_tolerance(src, toks);
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
      EXPECT_LE(worst, bound);
    }
    std::printf("[ %s %s %s kv %s ] max |logit difference| %.3g, %d deferred admission(s), largest step %d rows\n",
                c.model.c_str(), isa_name(c.isa), v.format.c_str(), kv_mode_name(v.kv), worst,
                got.deferred, got.max_rows);
  }
}

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
