// The decoder families as configuration of the one decoder: tiny random checkpoints of Llama 3
// (llama3 RoPE scaling, untied), a Llama with dynamic NTK scaling run past its trained context, Mistral, Qwen2 (q/k/v biases), Qwen3 (explicit head_dim, q/k
// norms), SmolLM2 (linear RoPE scaling), SmolLM3 (NoPE layers, yarn), Gemma (GeGLU, scaled
// embeddings, 1 + w norms, head_dim apart), Phi-3 (fused projections, partial rotary), Gemma 2
// (post norms, soft-capping, a sliding window shorter than the tokens in every other layer) and
// Gemma 3 (q/k norms, sliding layers with their own RoPE base, query_pre_attn_scalar) in
// tests/fixtures/families (written by tools/family_fixtures/make_fixtures.py; see DEVELOPERS.md),
// each as a Hugging Face folder and (but SmolLM3, dynamic and Gemma 3) as the GGUF file cibench
// export-gguf writes.
// Two independent implementations give the expected logits: a float64 NumPy forward pass in
// Hugging Face's own layout (rotate-half RoPE, HF's formulas), and llama.cpp (for the
// architectures its build knows: llama, qwen2, gemma, gemma2, phi3) on the GGUF file with an f32 KV cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/core/matrix.h"
#include "engines/models/gguf_writer.h"
#include "engines/models/llama.h"
#include "engines/models/llama_reference.h"
#include "engines/models/synthetic.h"
#include "engines/quant/quantized_file.h"
#include "engines/quant/recipe.h"
#include "engines/runtime/batch.h"
#include "engines/runtime/session.h"
#include "pair_tolerance.h"
#include "test_support.h"

namespace cibench {
namespace {

const char* const kFamilies[] = {"llama3", "mistral", "qwen2", "qwen3",   "smollm2", "smollm3",
                                 "gemma",  "phi3",    "dynamic", "gemma2", "gemma3"};
const char* const kGgufFamilies[] = {"llama3", "mistral", "qwen2", "qwen3", "smollm2", "gemma", "phi3", "gemma2"};
const char* const kFixtureName = "tiny family fixture";  // general.name of the GGUF fixtures

std::string fixture(const std::string& rel) { return std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/families/" + rel; }

bool exists(const std::string& p) { return std::ifstream(p).good(); }

std::vector<int> fixture_tokens() {
  std::ifstream in(fixture("tokens.txt"));
  std::vector<int> t;
  for (int x; in >> x;) t.push_back(x);
  return t;
}

// "tokens N vocab V" then N rows of V logits.
std::vector<double> read_logits(const std::string& path, int n, int vocab) {
  std::ifstream in(path);
  std::string w1, w2;
  int fn = 0, fv = 0;
  in >> w1 >> fn >> w2 >> fv;
  EXPECT_EQ(fn, n) << path;
  EXPECT_EQ(fv, vocab) << path;
  std::vector<double> v;
  for (double x; in >> x;) v.push_back(x);
  EXPECT_EQ(v.size(), static_cast<size_t>(n) * vocab) << path;
  return v;
}

using test::reference_logits;

using test::max_abs;
using test::max_abs_diff;

// As test_llama.cpp: a fast path sums in other orders than the FP32 reference; each order's
// forward error is a realisation of the same gamma_n bounds through the same network, so the fast
// path may be 4x the FP32 reference's measured error from the exact (binary64) logits, plus 4 u of
// the largest exact logit.
double tolerance_vs_exact(double ref32_error, double max_abs_exact) {
  return 4.0 * ref32_error + 4.0 * test::kF32U * max_abs_exact;
}

// The fast path's logits after every token: a session fed in ragged chunks (forward_all), the same
// session one token at a time, and a LlamaBatch in which the sequence decodes one token per step
// while a second sequence reads the whole prompt in the first step (its last logits appended).
struct FastLogits {
  std::vector<float> chunks, steps, batch, batch_prompt_last;
};

FastLogits fast_logits(const LlamaModel& model, const std::vector<int>& toks, int threads) {
  const int V = model.config.vocab_size, n = static_cast<int>(toks.size());
  FastLogits f;
  SessionOptions so;
  so.threads = threads;
  so.max_batch = 5;
  so.max_context = n;
  LlamaSession s(model, so);
  f.chunks.resize(static_cast<size_t>(n) * V);
  s.forward_all(toks.data(), n, f.chunks.data());
  s.reset();
  for (int t : toks) {
    const float* l = s.step(t);
    f.steps.insert(f.steps.end(), l, l + V);
  }
  BatchOptions bo;
  bo.threads = threads;
  bo.max_context = n;
  bo.pool.token_budget = 4 * n;
  LlamaBatch b(model, bo);
  const SeqId a = b.add_sequence(), w = b.add_sequence();
  for (int i = 0; i < n; ++i) {
    std::vector<BatchItem> items = {{a, &toks[static_cast<size_t>(i)], 1, true}};
    if (i == 0) items.push_back({w, toks.data(), n, true});
    b.step(items);
    f.batch.insert(f.batch.end(), b.logits(0), b.logits(0) + V);
    if (i == 0) f.batch_prompt_last.assign(b.logits(1), b.logits(1) + V);
  }
  return f;
}

// ---- Loading ---------------------------------------------------------------------------------

TEST(Families, ConfigsReadAsTheirFamilies) {
  struct Want {
    const char* name;
    const char* family;
    int head_dim, q_dim, rot;
    const char* rope;
    bool qkv_bias, qk_norm, tied;
  };
  const Want wants[] = {
      {"llama3", "llama", 16, 64, 16, "llama3", false, false, false},
      {"mistral", "mistral", 16, 64, 16, "none", false, false, false},
      {"qwen2", "qwen2", 16, 64, 16, "none", true, false, true},
      {"qwen3", "qwen3", 32, 128, 32, "none", false, true, true},
      {"smollm2", "llama", 16, 64, 16, "linear", false, false, true},
      {"smollm3", "smollm3", 16, 64, 16, "yarn", false, false, true},
      {"gemma", "gemma", 32, 128, 32, "none", false, false, true},
      {"phi3", "phi3", 16, 64, 8, "none", false, false, false},
      {"dynamic", "llama", 16, 64, 16, "dynamic", false, false, true},
      {"gemma2", "gemma2", 8, 16, 8, "none", false, false, true},
      {"gemma3", "gemma3_text", 16, 64, 16, "linear", false, true, true},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    const LlamaSource src = open_llama_source(fixture(w.name));
    const LlamaConfig& c = src.config;
    EXPECT_EQ(c.family, w.family);
    EXPECT_EQ(c.head_dim(), w.head_dim);
    EXPECT_EQ(c.q_dim(), w.q_dim);
    EXPECT_EQ(c.rot_dim(), w.rot);
    EXPECT_EQ(c.rope_scaling.type, w.rope);
    EXPECT_EQ(c.qkv_bias, w.qkv_bias);
    EXPECT_FALSE(c.o_bias);
    EXPECT_EQ(c.qk_norm, w.qk_norm);
    EXPECT_EQ(c.tied_output, w.tied);
  }
  EXPECT_EQ(open_llama_source(fixture("smollm3")).config.rope_layers, (std::vector<uint8_t>{1, 0}));
  const LlamaConfig gemma = open_llama_source(fixture("gemma")).config;
  EXPECT_EQ(gemma.embed_scale, 8.0f);
  EXPECT_EQ(gemma.ffn_act, "gelu_tanh");
  EXPECT_FALSE(gemma.post_norms);
  // Gemma 2: the window in the even layers, both soft-caps, post norms.
  const LlamaConfig g2 = open_llama_source(fixture("gemma2")).config;
  std::vector<int> even(26, 0);
  for (size_t l = 0; l < even.size(); l += 2) even[l] = 4;
  EXPECT_EQ(g2.attn_window, even);
  EXPECT_EQ(g2.attn_softcap, 1.5f);
  EXPECT_EQ(g2.final_softcap, 4.0f);
  EXPECT_EQ(g2.query_pre_attn_scalar, 8.0f);
  EXPECT_TRUE(g2.post_norms);
  EXPECT_EQ(g2.embed_scale, 4.0f);
  EXPECT_EQ(g2.rope_local_theta, 0.0f);
  // Gemma 3: every third layer global, the sliding ones with their own RoPE base; no soft-caps.
  const LlamaConfig g3 = open_llama_source(fixture("gemma3")).config;
  EXPECT_EQ(g3.attn_window, (std::vector<int>{3, 3, 0, 3}));
  EXPECT_EQ(g3.rope_local_theta, 10000.0f);
  EXPECT_EQ(g3.rope_theta, 1000000.0f);
  EXPECT_EQ(g3.attn_softcap, 0.0f);
  EXPECT_EQ(g3.final_softcap, 0.0f);
  EXPECT_EQ(g3.query_pre_attn_scalar, 24.0f);
  EXPECT_TRUE(g3.post_norms && g3.layer_local_rope(0) && !g3.layer_local_rope(2));
  // Mistral's window (longer than the fixture's context) in every layer; the context stays whole.
  const LlamaConfig mistral = open_llama_source(fixture("mistral")).config;
  EXPECT_EQ(mistral.attn_window, (std::vector<int>{4096, 4096}));
  EXPECT_EQ(mistral.seq_len, 64);
  EXPECT_TRUE(open_llama_source(fixture("qwen2")).config.attn_window.empty());  // use_sliding_window false
  // GGUF: the architecture llama.cpp's converter uses, and the same knobs.
  for (const auto& [name, arch] : std::vector<std::pair<std::string, std::string>>{
           {"llama3", "llama"}, {"mistral", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"smollm2", "llama"},
           {"gemma", "gemma"}, {"phi3", "phi3"}, {"gemma2", "gemma2"}}) {
    SCOPED_TRACE(name);
    const LlamaSource hf = open_llama_source(fixture(name)), gg = open_llama_source(fixture(name + "/model.gguf"));
    EXPECT_EQ(gguf_architecture_for(hf.config), arch);
    EXPECT_EQ(gg.config.family, arch);
    EXPECT_EQ(gg.config.q_dim(), hf.config.q_dim());
    EXPECT_EQ(gg.config.qkv_bias, hf.config.qkv_bias);
    EXPECT_EQ(gg.config.qk_norm, hf.config.qk_norm);
    EXPECT_EQ(gg.config.tied_output, hf.config.tied_output);
    EXPECT_EQ(gg.config.rot_dim(), hf.config.rot_dim());
    EXPECT_EQ(gg.config.embed_scale, hf.config.embed_scale);
    EXPECT_EQ(gg.config.ffn_act, hf.config.ffn_act);
    // (llama.cpp's llama attends globally: the mistral window, longer than the context, is left out)
    if (arch == "phi3" || arch == "gemma2") {
      EXPECT_EQ(gg.config.attn_window, hf.config.attn_window);
    }
    EXPECT_EQ(gg.config.post_norms, hf.config.post_norms);
    EXPECT_EQ(gg.config.attn_softcap, hf.config.attn_softcap);
    EXPECT_EQ(gg.config.final_softcap, hf.config.final_softcap);
    EXPECT_EQ(gg.config.attention_scale(), hf.config.attention_scale());
  }
}

// The Hugging Face folder and its GGUF form hold the same weights (q/k un-permuted from
// rotate-half in both, or interleaved in a llama GGUF; llama3 scaling as parameters or as the
// rope_freqs tensor): the FP32 reference gives bit-identical logits from either. And exporting
// the folder again writes the committed GGUF byte for byte.
TEST(Families, HuggingFaceFolderAndGgufGiveIdenticalLogits) {
  const std::vector<int> toks = fixture_tokens();
  for (const std::string name : kGgufFamilies) {
    SCOPED_TRACE(name);
    const LlamaSource hf = open_llama_source(fixture(name));
    const LlamaSource gg = open_llama_source(fixture(name + "/model.gguf"));
    EXPECT_EQ(reference_logits<float>(hf, toks), reference_logits<float>(gg, toks));
    test::TempDir dir("families");
    write_llama_gguf(hf, placeholder_vocab(hf.config.vocab_size), GgufWeightType::f32, kFixtureName,
                     dir.file("again.gguf"));
    std::ifstream a(fixture(name + "/model.gguf"), std::ios::binary), b(dir.file("again.gguf"), std::ios::binary);
    const std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
    EXPECT_TRUE(sa == sb) << "export-gguf no longer writes the committed file (" << sa.size() << " vs "
                          << sb.size() << " bytes)";
  }
}

// ---- Against independent implementations ----------------------------------------------------

// The exact (binary64) reference against NumPy's float64 forward pass in Hugging Face's layout:
// both compute the same real number but for the sums' order (~1e-15 relative) and the llama3
// factors and Gemma's 1 + w norm weights, which cibench holds in binary32 as llama.cpp's GGUF files
// do (each moves by < 2^-24 relative: far below 1e-6 of the logits). A layout or formula error
// moves logits by O(1).
TEST(Families, ExactReferenceMatchesTheNumpyForwardPass) {
  const std::vector<int> toks = fixture_tokens();
  for (const char* name : kFamilies) {
    SCOPED_TRACE(name);
    const LlamaSource src = open_llama_source(fixture(name));
    const std::vector<double> exact = reference_logits<double>(src, toks);
    const std::vector<double> numpy =
        read_logits(fixture(std::string(name) + "/logits_numpy.txt"), static_cast<int>(toks.size()), src.config.vocab_size);
    const double err = max_abs_diff(exact, numpy), tol = 1e-6 * max_abs(numpy);
    std::printf("[ %s ] |binary64 reference - NumPy| %.3g (max |logit| %.3g)\n", name, err, max_abs(numpy));
    EXPECT_LE(err, tol);
  }
}

class FamiliesAtIsa : public ::testing::TestWithParam<Isa> {};

// f32 weights: the FP32 reference and every fast path (session chunks and steps, batch, at one and
// two threads) within the FP32 error bound of the exact logits; llama.cpp's logits (a binary32
// evaluation in its own order, so within the same bound of the exact ones) within twice it.
TEST_P(FamiliesAtIsa, F32FastPathsAgreeWithTheReferenceAndLlamaCpp) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  const std::vector<int> toks = fixture_tokens();
  const int n = static_cast<int>(toks.size());
  for (const char* name : kFamilies) {
    SCOPED_TRACE(name);
    for (const std::string& spec : {fixture(name), fixture(std::string(name) + "/model.gguf")}) {
      if (!exists(spec) && spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".gguf") == 0) continue;
      SCOPED_TRACE(spec);
      const LlamaSource src = open_llama_source(spec);
      const int V = src.config.vocab_size;
      const std::vector<double> exact = reference_logits<double>(src, toks);
      const double ref32_err = max_abs_diff(reference_logits<float>(src, toks), exact);
      const double tol = tolerance_vs_exact(ref32_err, max_abs(exact));
      const LlamaModel model = build_llama(src);
      double worst = 0;
      for (int threads : {1, 2}) {
        const FastLogits f = fast_logits(model, toks, threads);
        EXPECT_LE(max_abs_diff(f.chunks, exact), tol) << "session chunks, " << threads << " thread(s)";
        EXPECT_LE(max_abs_diff(f.steps, exact), tol) << "session steps, " << threads << " thread(s)";
        EXPECT_LE(max_abs_diff(f.batch, exact), tol) << "batch decode, " << threads << " thread(s)";
        const std::vector<double> last(exact.end() - V, exact.end());
        EXPECT_LE(max_abs_diff(f.batch_prompt_last, last), tol) << "batch prompt, " << threads << " thread(s)";
        worst = std::max({worst, max_abs_diff(f.chunks, exact), max_abs_diff(f.steps, exact), max_abs_diff(f.batch, exact)});
        const std::string lc = fixture(std::string(name) + "/logits_llamacpp.txt");
        if (exists(lc) && threads == 1) {
          const std::vector<double> ll = read_logits(lc, n, V);
          // llama.cpp's CPU GELU is a binary16 table (input and output rounded to binary16): the
          // NumPy forward pass with that table gives its effect on these logits, d_gelu.
          double d_gelu = 0;
          if (exists(fixture(std::string(name) + "/logits_numpy_gelu_f16.txt")))
            d_gelu = max_abs_diff(read_logits(fixture(std::string(name) + "/logits_numpy_gelu_f16.txt"), n, V),
                                  read_logits(fixture(std::string(name) + "/logits_numpy.txt"), n, V));
          const double e_fast = std::max(max_abs_diff(f.chunks, ll), max_abs_diff(f.steps, ll));
          const double e_ref = max_abs_diff(exact, ll);
          std::printf("[ %s ] %s: |fast - llama.cpp| %.3g, |binary64 reference - llama.cpp| %.3g (tolerance %.3g, "
                      "max |logit| %.3g)\n",
                      isa_name(GetParam()), name, e_fast, e_ref, 2 * tol + d_gelu, max_abs(exact));
          EXPECT_LE(e_fast, 2 * tol + d_gelu) << "fast path against llama.cpp";
          EXPECT_LE(e_ref, tol + d_gelu) << "exact reference against llama.cpp";
        }
      }
      std::printf("[ %s ] %s (%s): FP32 reference error %.3g, fast paths' worst %.3g, tolerance %.3g\n",
                  isa_name(GetParam()), name, src.container.c_str(), ref32_err, worst, tol);
    }
  }
}

// The weights a format stores, unpacked back to f32: the projections and the head (a tied head
// becomes an untied copy of the packed embeddings); embeddings, norms and biases stay f32.
LlamaSource unpacked(const LlamaSource& src, const LlamaModel& m) {
  LlamaSource r = src;
  auto put = [&](const std::string& name, const WeightMatrix& w) {
    auto v = std::make_shared<std::vector<float>>(static_cast<size_t>(w.rows * w.cols));
    unpack_matrix(w, v->data());
    TensorSource t;
    t.rows = w.rows;
    t.cols = w.cols;
    const int64_t cols = w.cols;
    t.read = [v, cols](int64_t r0, int64_t n, float* dst) {
      std::copy(v->begin() + r0 * cols, v->begin() + (r0 + n) * cols, dst);
    };
    r.tensors[name] = t;
  };
  for (int l = 0; l < src.config.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const LlamaLayer& L = m.layers[static_cast<size_t>(l)];
    put(p + "wq", L.wq);
    put(p + "wk", L.wk);
    put(p + "wv", L.wv);
    put(p + "wo", L.wo);
    put(p + "w1", L.w1);
    put(p + "w2", L.w2);
    put(p + "w3", L.w3);
  }
  put("output", m.output);
  r.config.tied_output = false;
  return r;
}

// Other formats (biases and norms stay f32 in each): the FP32 reference on the weights as the
// format stores them differs from f32 by D_w, the weights' own rounding realised on these tokens.
// Formats with f32 activations compute exactly that network up to the sums' order; those that
// quantise activations too (bf16 at avx512_vnni, w8a8) move every product by at most the same
// relative step through its other factor. So the fast logits stay within 4 D_w of f32's, plus
// twice the order tolerance; and with f32 activations within the order tolerance of the reference
// on the stored weights.
TEST_P(FamiliesAtIsa, FormatsWithinTheirQuantisationErrorOfF32) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  const std::vector<int> toks = fixture_tokens();
  for (const char* name : kFamilies) {
    SCOPED_TRACE(name);
    const LlamaSource src = open_llama_source(fixture(name));
    const std::vector<double> ref = reference_logits<float>(src, toks);
    const double ref32_err = max_abs_diff(ref, reference_logits<double>(src, toks));
    const double tol_order = 2 * tolerance_vs_exact(ref32_err, max_abs(ref));
    SessionOptions so;
    so.max_batch = 5;
    so.max_context = static_cast<int>(toks.size());
    for (const char* fmt : {"bf16", "int8", "int4_g32", "w8a8"}) {
      SCOPED_TRACE(fmt);
      LlamaBuildOptions o;
      o.format = fmt;
      const LlamaModel m = build_llama(src, o);
      const std::vector<double> stored = reference_logits<float>(unpacked(src, m), toks);
      const double d_w = max_abs_diff(stored, ref);
      ASSERT_GT(d_w, 0.0);
      const double tol = 4.0 * d_w + tol_order;
      LlamaSession s(m, so);
      std::vector<float> got(ref.size());
      s.forward_all(toks.data(), static_cast<int>(toks.size()), got.data());
      const double e = max_abs_diff(got, ref), e_stored = max_abs_diff(got, stored);
      const ActType act = format_by_name(fmt).act_at(GetParam());
      std::printf("[ %s ] %s %s (activations %s): D_w %.3g, |fast - f32 reference| %.3g (tolerance %.3g), "
                  "|fast - reference on stored weights| %.3g\n",
                  isa_name(GetParam()), name, fmt, act_type_name(act), d_w, e, tol, e_stored);
      EXPECT_LE(e, tol);
      if (act == ActType::f32) {
        EXPECT_LE(e_stored, tol_order) << "f32 activations: the stored weights' network";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FamiliesAtIsa, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// ---- Synthetic presets of the published shapes ------------------------------------------------

TEST(Families, SyntheticPresetsOfPublishedShapes) {
  struct Want {
    const char* name;
    int dim, hidden, layers, heads, kv, head_dim, vocab, ctx;
    float theta;
    const char* rope;
    bool qkv_bias, qk_norm, tied;
    int64_t params;  // as published (embeddings counted once when tied)
  };
  const Want wants[] = {
      {"llama3.2-1b", 2048, 8192, 16, 32, 8, 64, 128256, 131072, 500000.f, "llama3", false, false, true, 1235814400},
      {"qwen2.5-0.5b", 896, 4864, 24, 14, 2, 64, 151936, 32768, 1000000.f, "none", true, false, true, 494032768},
      {"qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.f, "none", false, true, true, 596049920},
      {"smollm2-360m", 960, 2560, 32, 15, 5, 64, 49152, 8192, 100000.f, "none", false, false, true, 361821120},
      {"gemma2-2b", 2304, 9216, 26, 8, 4, 256, 256000, 8192, 10000.f, "none", false, false, true, 2614341888},
      {"gemma3-1b", 1152, 6912, 26, 4, 1, 256, 262144, 32768, 1000000.f, "none", false, true, true, 999885952},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    const LlamaSource src = synthetic_llama_source(std::string("synthetic:") + w.name);
    const LlamaConfig& c = src.config;
    EXPECT_EQ(c.dim, w.dim);
    EXPECT_EQ(c.hidden_dim, w.hidden);
    EXPECT_EQ(c.n_layers, w.layers);
    EXPECT_EQ(c.n_heads, w.heads);
    EXPECT_EQ(c.n_kv_heads, w.kv);
    EXPECT_EQ(c.head_dim(), w.head_dim);
    EXPECT_EQ(c.vocab_size, w.vocab);
    EXPECT_EQ(c.seq_len, w.ctx);
    EXPECT_EQ(c.rope_theta, w.theta);
    EXPECT_EQ(c.rope_scaling.type, w.rope);
    EXPECT_EQ(c.qkv_bias, w.qkv_bias);
    EXPECT_EQ(c.qk_norm, w.qk_norm);
    EXPECT_EQ(c.tied_output, w.tied);
    EXPECT_EQ(c.parameter_count(), w.params);
    validate_llama_source(src, false);  // every tensor the knobs need, at its shape
  }
}

// The Gemma presets' attention: Gemma 2's window in the even layers and soft-caps, Gemma 3's
// window in five layers of six with the local RoPE base.
TEST(Families, SyntheticGemmaPresets) {
  const LlamaConfig g2 = synthetic_llama_source("synthetic:gemma2-2b").config;
  EXPECT_EQ(g2.window(0), 4096);
  EXPECT_EQ(g2.window(1), 0);
  EXPECT_EQ(g2.window(24), 4096);
  EXPECT_EQ(g2.attn_softcap, 50.0f);
  EXPECT_EQ(g2.final_softcap, 30.0f);
  EXPECT_EQ(g2.query_pre_attn_scalar, 256.0f);
  EXPECT_EQ(gguf_architecture_for(g2), "gemma2");
  const LlamaConfig g3 = synthetic_llama_source("synthetic:gemma3-1b").config;
  for (int l = 0; l < g3.n_layers; ++l) EXPECT_EQ(g3.window(l), l % 6 == 5 ? 0 : 512) << l;
  EXPECT_EQ(g3.rope_local_theta, 10000.0f);
  EXPECT_EQ(g3.attn_softcap, 0.0f);
  EXPECT_EQ(synthetic_llama_source("synthetic:gemma3-1b").tensor("layers.25.post_ffn_norm").read_all(),
            std::vector<float>(1152, 1.0f));
}

// The synthetic generator's extra tensors: biases small, random and seeded; q/k norm weights 1.
TEST(Families, SyntheticPresetExtraTensors) {
  const LlamaSource a = synthetic_llama_source("synthetic:qwen2.5-0.5b@7");
  const LlamaSource b = synthetic_llama_source("synthetic:qwen2.5-0.5b@8");
  const std::vector<float> bq = a.tensor("layers.3.bq").read_all();
  ASSERT_EQ(bq.size(), 896u);
  EXPECT_GT(max_abs(bq), 0.0);
  EXPECT_LE(max_abs(bq), 0.1);
  EXPECT_EQ(bq, synthetic_llama_source("synthetic:qwen2.5-0.5b@7").tensor("layers.3.bq").read_all());
  EXPECT_NE(bq, b.tensor("layers.3.bq").read_all());
  EXPECT_EQ(a.tensor("layers.3.bv").cols, 128);
  const LlamaSource q3 = synthetic_llama_source("synthetic:qwen3-0.6b");
  EXPECT_EQ(q3.tensor("layers.27.k_norm").read_all(), std::vector<float>(128, 1.0f));
  EXPECT_EQ(q3.tensor("layers.0.wq").rows, 2048);
  EXPECT_EQ(q3.tensor("layers.0.wo").cols, 2048);
}

// ---- Errors ---------------------------------------------------------------------------------

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A copy of a fixture folder with config.json edited.
std::string edited_folder(const test::TempDir& dir, const std::string& family,
                          const std::function<void(std::string&)>& edit) {
  const std::string out = dir.file(family);
  std::filesystem::create_directories(out);
  std::filesystem::copy_file(fixture(family + "/model.safetensors"), out + "/model.safetensors");
  std::ifstream in(fixture(family + "/config.json"));
  std::string cfg((std::istreambuf_iterator<char>(in)), {});
  edit(cfg);
  std::ofstream(out + "/config.json") << cfg;
  return out;
}

void replace(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
}

TEST(Families, UnsupportedConfigsNameFileKeyAndValue) {
  test::TempDir dir("families_bad");
  struct Case {
    const char* family;
    const char* from;
    const char* to;
    std::vector<std::string> want;  // substrings of the message
  };
  const Case cases[] = {
      {"llama3", "\"rope_type\": \"llama3\"", "\"rope_type\": \"mrope\"", {"config.json", "rope_scaling.rope_type", "mrope"}},
      {"llama3", "\"low_freq_factor\": 1.0", "\"low_freq_factor\": 1.0, \"mrope_section\": [1]", {"config.json", "rope_scaling.mrope_section", "[1]"}},
      {"mistral", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", {"config.json", "hidden_act", "gelu"}},
      {"qwen2", "\"model_type\": \"qwen2\"", "\"model_type\": \"qwen2\", \"mlp_bias\": true", {"config.json", "mlp_bias", "true"}},
      {"qwen3", "\"model_type\": \"qwen3\"", "\"model_type\": \"olmo2\"", {"config.json", "olmo2", "Qwen3ForCausalLM"}},
      {"gemma3", "\"model_type\": \"gemma3_text\"", "\"model_type\": \"gemma3\"", {"config.json", "model_type", "\"gemma3\"", "Gemma3ForConditionalGeneration"}},
      {"gemma2", "\"attn_logit_softcapping\": 1.5", "\"attn_logit_softcapping\": -1.0", {"config.json", "attn_logit_softcapping", "-1"}},
      {"gemma2", "\"final_logit_softcapping\": 4.0", "\"final_logit_softcapping\": \"none\"", {"config.json", "final_logit_softcapping", "none"}},
      {"gemma3", "\"sliding_window_pattern\": 3", "\"sliding_window_pattern\": 3, \"layer_types\": [\"sliding_attention\", \"chunked_attention\", \"full_attention\", \"sliding_attention\"]", {"config.json", "layer_types[1]", "chunked_attention"}},
      {"gemma3", "\"sliding_window_pattern\": 3", "\"sliding_window_pattern\": 0", {"config.json", "sliding_window_pattern", "0"}},
      {"gemma3", "\"sliding_window\": 3", "\"sliding_window\": -3", {"config.json", "sliding_window", "-3"}},
      {"gemma3", "\"query_pre_attn_scalar\": 24", "\"query_pre_attn_scalar\": 0", {"config.json", "query_pre_attn_scalar", "0"}},
      {"smollm2", "\"factor\": 2.0", "\"factor\": \"two\"", {"config.json", "rope_scaling.factor", "two"}},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    test::TempDir sub("families_case" + std::to_string(i++));
    const std::string folder = edited_folder(sub, c.family, [&](std::string& s) {
      replace(s, c.from, c.to);
      if (std::string(c.to).find("olmo2") != std::string::npos) replace(s, "Qwen3ForCausalLM", "Olmo2ForCausalLM");
      if (std::string(c.to) == "\"model_type\": \"gemma3\"")
        replace(s, "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration");
    });
    const std::string msg = error_of([&] { open_llama_source(folder); });
    for (const std::string& w : c.want) EXPECT_NE(msg.find(w), std::string::npos) << msg;
  }
  // GGUF metadata the engine lacks: the smollm2 file's scaling type "linear" patched to "longro".
  {
    std::ifstream in(fixture("smollm2/model.gguf"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const std::string key = "llama.rope.scaling.type";
    const size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    const size_t value = bytes.find("linear", at);
    ASSERT_NE(value, std::string::npos);
    bytes.replace(value, 6, "longro");
    std::ofstream(dir.file("patched.gguf"), std::ios::binary) << bytes;
    const std::string m = error_of([&] { open_llama_source(dir.file("patched.gguf")); });
    for (const std::string& w : {dir.file("patched.gguf"), key, std::string("longro")})
      EXPECT_NE(m.find(w), std::string::npos) << m;
  }
  // A gemma2 file whose attention soft-cap is not positive: the key and the value.
  {
    std::ifstream in(fixture("gemma2/model.gguf"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const std::string key = "gemma2.attn_logit_softcapping";
    const size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    const float minus_two = -2.0f;
    bytes.replace(at + key.size() + 4, 4, reinterpret_cast<const char*>(&minus_two), 4);  // after the type
    std::ofstream(dir.file("softcap.gguf"), std::ios::binary) << bytes;
    const std::string m = error_of([&] { open_llama_source(dir.file("softcap.gguf")); });
    for (const std::string& w : {dir.file("softcap.gguf"), key, std::string("-2")})
      EXPECT_NE(m.find(w), std::string::npos) << m;
  }
  // A knob GGUF cannot hold: NoPE layers.
  const std::string msg = error_of([&] {
    const LlamaSource s = open_llama_source(fixture("smollm3"));
    write_llama_gguf(s, placeholder_vocab(s.config.vocab_size), GgufWeightType::f32, "x", dir.file("x.gguf"));
  });
  EXPECT_NE(msg.find("NoPE"), std::string::npos) << msg;
  // Gemma 3 has no GGUF form cibench writes; a gemma2 config llama.cpp's gemma2 cannot hold
  // (a query_pre_attn_scalar it would not derive) is refused too.
  const std::string g3 = error_of([&] {
    const LlamaSource s = open_llama_source(fixture("gemma3"));
    write_llama_gguf(s, placeholder_vocab(s.config.vocab_size), GgufWeightType::f32, "x", dir.file("g3.gguf"));
  });
  EXPECT_NE(g3.find("Gemma 3"), std::string::npos) << g3;
  const std::string g2 = error_of([&] {
    LlamaSource s = open_llama_source(fixture("gemma2"));
    s.config.query_pre_attn_scalar = 12.0f;
    write_llama_gguf(s, placeholder_vocab(s.config.vocab_size), GgufWeightType::f32, "x", dir.file("g2.gguf"));
  });
  EXPECT_NE(g2.find("query_pre_attn_scalar 8"), std::string::npos) << g2;
  // A negative window or soft-cap in a config built by hand.
  LlamaConfig bad = open_llama_source(fixture("gemma2")).config;
  bad.attn_window[3] = -1;
  EXPECT_NE(error_of([&] { bad.validate("cfg"); }).find("window -1"), std::string::npos);
  bad = open_llama_source(fixture("gemma2")).config;
  bad.attn_softcap = -2.0f;
  EXPECT_NE(error_of([&] { bad.validate("cfg"); }).find("soft-cap must be >= 0, got -2"), std::string::npos);
}

// A quantised model file (.cbq) keeps every family knob: the Gemma 2 and 3 fixtures quantised
// (rtn int8), written and read back run bit for bit as before.
TEST(Families, QuantizedFilesKeepTheFamilyKnobs) {
  const std::vector<int> toks = fixture_tokens();
  test::TempDir dir("families_cbq");
  for (const char* name : {"gemma2", "gemma3"}) {
    SCOPED_TRACE(name);
    const RecipeOutput out = apply_recipe(open_llama_source(fixture(name)), RecipeSpec::parse("rtn", "int8"), nullptr);
    const std::string path = dir.file(std::string(name) + ".cbq");
    write_quantized(path, out.source, quantized_meta(out, nullptr, ""));
    const QuantizedModelFile q = load_quantized(path);
    const LlamaConfig &a = out.source.config, &b = q.source.config;
    EXPECT_EQ(b.family, a.family);
    EXPECT_EQ(b.attn_window, a.attn_window);
    EXPECT_EQ(b.rope_local_theta, a.rope_local_theta);
    EXPECT_EQ(b.post_norms, a.post_norms);
    EXPECT_EQ(b.attn_softcap, a.attn_softcap);
    EXPECT_EQ(b.final_softcap, a.final_softcap);
    EXPECT_EQ(b.query_pre_attn_scalar, a.query_pre_attn_scalar);
    EXPECT_EQ(b.embed_scale, a.embed_scale);
    EXPECT_EQ(b.ffn_act, a.ffn_act);
    EXPECT_EQ(reference_logits<float>(q.source, toks), reference_logits<float>(out.source, toks));
  }
}

// ---- Sliding windows -------------------------------------------------------------------------

// Real sliding-window attention: Mistral's fixture with its window cut from 4096 to 5, over 40
// tokens (windows that start inside KV blocks of 8 and off the kernels' 8-position groups). The
// exact reference equals full attention bit for bit while the context fits the window and moves
// by O(1) after; the session (chunks and steps) and the batch (decode beside a prompt, blocks of
// 8) follow the windowed reference within the FP32 bound, far from the full-attention logits.
TEST(Families, SlidingWindowMasksAlikeInReferenceSessionAndBatch) {
  std::vector<int> toks;
  for (int i = 0; i < 40; ++i) toks.push_back((7 * i + 3) % 64);
  const int n = static_cast<int>(toks.size()), W = 5;
  test::TempDir dir("families_window");
  const LlamaSource full = open_llama_source(fixture("mistral"));
  const LlamaSource win = open_llama_source(edited_folder(dir, "mistral", [&](std::string& s) {
    replace(s, "\"sliding_window\": 4096", "\"sliding_window\": " + std::to_string(W));
  }));
  ASSERT_EQ(win.config.attn_window, (std::vector<int>{W, W}));
  const int V = win.config.vocab_size;
  const std::vector<double> exact = reference_logits<double>(win, toks), exact_full = reference_logits<double>(full, toks);
  const size_t inside = static_cast<size_t>(W) * V;
  EXPECT_TRUE(std::equal(exact.begin(), exact.begin() + inside, exact_full.begin()));
  const double moved = max_abs_diff(std::vector<double>(exact.begin() + inside, exact.end()),
                                    std::vector<double>(exact_full.begin() + inside, exact_full.end()));
  EXPECT_GT(moved, 0.05 * max_abs(exact));
  const double tol = tolerance_vs_exact(max_abs_diff(reference_logits<float>(win, toks), exact), max_abs(exact));
  ASSERT_LT(tol, moved / 10);
  const LlamaModel model = build_llama(win);
  for (Isa isa : all_isas()) {
    if (!isa_supported(isa)) continue;
    SCOPED_TRACE(isa_name(isa));
    test::IsaScope at(isa);
    SessionOptions so;
    so.max_batch = 6;
    so.max_context = n;
    LlamaSession s(model, so);
    std::vector<float> chunks(static_cast<size_t>(n) * V), steps;
    s.forward_all(toks.data(), n, chunks.data());
    s.reset();
    for (int t : toks) {
      const float* l = s.step(t);
      steps.insert(steps.end(), l, l + V);
    }
    BatchOptions bo;
    bo.max_context = n;
    bo.max_step_tokens = n + 1;
    bo.max_step_sequences = 2;
    bo.pool.block_tokens = 8;
    bo.pool.token_budget = 4 * n;
    LlamaBatch b(model, bo);
    const SeqId a = b.add_sequence(), p = b.add_sequence();
    std::vector<float> batch;
    for (int i = 0; i < n; ++i) {
      std::vector<BatchItem> items = {{a, &toks[static_cast<size_t>(i)], 1, true}};
      if (i == 0) items.push_back({p, toks.data(), n, true});
      b.step(items);
      batch.insert(batch.end(), b.logits(0), b.logits(0) + V);
      if (i == 0) {
        const std::vector<double> last(exact.end() - V, exact.end());
        EXPECT_LE(max_abs_diff(std::vector<float>(b.logits(1), b.logits(1) + V), last), tol) << "batch prompt";
      }
    }
    std::printf("[ %s ] window %d over %d tokens: windowed vs full attention %.3g; |session - reference| %.3g, "
                "|batch - reference| %.3g (tolerance %.3g)\n",
                isa_name(isa), W, n, moved, std::max(max_abs_diff(chunks, exact), max_abs_diff(steps, exact)),
                max_abs_diff(batch, exact), tol);
    EXPECT_LE(max_abs_diff(chunks, exact), tol) << "session chunks";
    EXPECT_LE(max_abs_diff(steps, exact), tol) << "session steps";
    EXPECT_LE(max_abs_diff(batch, exact), tol) << "batch decode";
    EXPECT_GT(max_abs_diff(batch, exact_full), moved / 2);
  }
}

// Gemma 3's layer pattern as an explicit layer_types list: the same list as the
// sliding_window_pattern gives the same model bit for bit; another list another model.
TEST(Families, LayerTypesListAsThePattern) {
  const std::vector<int> toks = fixture_tokens();
  test::TempDir dir("families_layer_types");
  const std::vector<double> pattern = reference_logits<float>(open_llama_source(fixture("gemma3")), toks);
  auto with = [&](const std::string& name, const std::string& types) {
    test::TempDir sub("families_layer_types_" + name);
    return reference_logits<float>(open_llama_source(edited_folder(sub, "gemma3", [&](std::string& s) {
                                     replace(s, "\"sliding_window_pattern\": 3", "\"layer_types\": " + types);
                                   })),
                                   toks);
  };
  EXPECT_EQ(with("same", "[\"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\"]"),
            pattern);
  EXPECT_GT(max_abs_diff(with("other", "[\"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\"]"),
                         pattern),
            0.01 * max_abs(pattern));
}

}  // namespace
}  // namespace cibench
