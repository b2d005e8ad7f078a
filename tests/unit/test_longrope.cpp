// longrope RoPE scaling (Phi-3/3.5 128k): the frequencies and attention factor as transformers
// computes them, the config keys of a Hugging Face folder and of the GGUF llama.cpp's converter
// writes, and the logits of a tiny Phi-3 with longrope against llama.cpp (short factors: its
// context is within the original one) and between the session and the reference past the
// original context (long factors).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/models/gguf_writer.h"
#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/models/llama_reference.h"
#include "engines/runtime/session.h"
#include "pair_tolerance.h"
#include "test_support.h"

namespace cibench {
namespace {

using test::max_abs;
using test::max_abs_diff;

// Per rotary pair: four for the formula test's rotary width 8, eight for the Phi-3 folder's full
// head of 16 (llama.cpp's phi3 takes factors for the whole head).
const std::vector<float> kShort4 = {1.0f, 1.25f, 1.5f, 2.0f}, kLong4 = {1.5f, 3.0f, 6.0f, 12.0f};
const std::vector<float> kShort = {1.0f, 1.0f, 1.1f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f},
                         kLong = {1.0f, 1.5f, 2.0f, 3.0f, 4.5f, 6.0f, 9.0f, 12.0f};

std::string family_fixture(const std::string& rel) {
  return std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/families/" + rel;
}

std::vector<int> fixture_tokens() {
  std::ifstream in(family_fixture("tokens.txt"));
  std::vector<int> t;
  for (int x; in >> x;) t.push_back(x);
  return t;
}

// The Phi-3 family fixture (head_dim 16; max_position_embeddings 64) with RoPE over the whole head
// (no partial_rotary_factor), longrope and the given original context, as a folder in `dir`.
std::string phi3_longrope(const test::TempDir& dir, int original, const std::string& name) {
  const std::string folder = dir.file(name);
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(family_fixture("phi3/model.safetensors"), folder + "/model.safetensors");
  std::ifstream in(family_fixture("phi3/config.json"));
  nlohmann::json j = nlohmann::json::parse(in);
  j.erase("partial_rotary_factor");
  j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", kLong}, {"short_factor", kShort}};
  j["original_max_position_embeddings"] = original;
  std::ofstream(folder + "/config.json") << j.dump(2);
  return folder;
}

using test::reference_logits;

std::vector<double> session_logits(const LlamaSource& src, const std::vector<int>& toks) {
  const LlamaModel model = build_llama(src);
  LlamaSession s(model, {});
  std::vector<double> out;
  for (int t : toks) {
    const float* l = s.step(t);
    out.insert(out.end(), l, l + src.config.vocab_size);
  }
  return out;
}

// transformers' _compute_longrope_parameters, written out: inv_freq[i] = 1 / (ext[i] *
// theta^(2i / rot)) with ext the short factors while the sequence fits the original context and
// the long ones beyond; attention factor sqrt(1 + ln(factor) / ln(original)).
TEST(Longrope, FrequenciesAndAttentionFactorAsTransformers) {
  LlamaConfig c;
  c.dim = 64, c.hidden_dim = 64, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 4, c.vocab_size = 8, c.seq_len = 64;
  c.head_size = 16, c.rotary_dim = 8;
  c.rope_scaling.type = "longrope";
  c.rope_scaling.long_factor = kLong4;
  c.rope_scaling.short_factor = kShort4;
  c.rope_scaling.original_max_position = 16;
  c.rope_scaling.factor = 4.0;
  c.validate("test");
  for (int pos : {0, 15, 16, 63}) {
    const std::vector<double> f = rope_inv_freq(c, pos);
    ASSERT_EQ(f.size(), 4u);
    for (int i = 0; i < 4; ++i) {
      const double ext = pos + 1 > 16 ? kLong4[static_cast<size_t>(i)] : kShort4[static_cast<size_t>(i)];
      EXPECT_DOUBLE_EQ(f[static_cast<size_t>(i)], 1.0 / (ext * std::pow(10000.0, 2.0 * i / 8.0))) << pos << " " << i;
    }
  }
  EXPECT_DOUBLE_EQ(rope_attention_factor(c), std::sqrt(1.0 + std::log(4.0) / std::log(16.0)));
  c.rope_scaling.attention_factor = 1.3;
  EXPECT_DOUBLE_EQ(rope_attention_factor(c), 1.3);
  c.rope_scaling.factor = 1.0, c.rope_scaling.attention_factor = 0;
  EXPECT_DOUBLE_EQ(rope_attention_factor(c), 1.0);
  c.rope_scaling.short_factor.pop_back();
  EXPECT_THROW(c.validate("test"), FileError);
}

// A Phi-3 folder with longrope: the factors and the original context from config.json, factor =
// max_position_embeddings / original; its GGUF export (rope_factors_long/short tensors,
// original_context_length, attn_factor) loads back with the same configuration and logits.
TEST(Longrope, HuggingFaceFolderAndItsGguf) {
  test::TempDir dir("longrope");
  const LlamaSource hf = open_llama_source(phi3_longrope(dir, 32, "phi3"));
  const RopeScaling& r = hf.config.rope_scaling;
  EXPECT_EQ(r.type, "longrope");
  EXPECT_EQ(r.long_factor, kLong);
  EXPECT_EQ(r.short_factor, kShort);
  EXPECT_EQ(r.original_max_position, 32);
  EXPECT_DOUBLE_EQ(r.factor, 2.0);
  EXPECT_NE(hf.config.features().find("longrope"), std::string::npos) << hf.config.features();
  write_llama_gguf(hf, placeholder_vocab(hf.config.vocab_size), GgufWeightType::f32, "tiny family fixture",
                   dir.file("phi3.gguf"));
  const LlamaSource gg = open_llama_source(dir.file("phi3.gguf"));
  EXPECT_EQ(gg.config.rope_scaling.type, "longrope");
  EXPECT_EQ(gg.config.rope_scaling.long_factor, kLong);
  EXPECT_EQ(gg.config.rope_scaling.short_factor, kShort);
  EXPECT_EQ(gg.config.rope_scaling.original_max_position, 32);
  EXPECT_FLOAT_EQ(static_cast<float>(rope_attention_factor(gg.config)), static_cast<float>(rope_attention_factor(hf.config)));
  const std::vector<int> toks = fixture_tokens();
  const std::vector<double> a = reference_logits<float>(hf, toks), b = reference_logits<float>(gg, toks);
  // The GGUF holds the attention factor in binary32: the same cos and sin tables up to that rounding.
  EXPECT_LE(max_abs_diff(a, b), 1e-5 * max_abs(a));
}

// llama.cpp c392e50 on that GGUF (logits_llamacpp_longrope.txt, dump_logits as for the family
// fixtures): its context (the tokens + 8) is within the original 32, so it takes the short
// factors, as cibench does for positions within it; both scale cos and sin by the attention
// factor. Within twice the FP32 error bound of the exact logits; without longrope the logits
// move by far more.
TEST(Longrope, LogitsAgreeWithLlamaCpp) {
  test::TempDir dir("longrope");
  const LlamaSource src = open_llama_source(phi3_longrope(dir, 32, "phi3"));
  const std::vector<int> toks = fixture_tokens();
  const std::vector<double> exact = reference_logits<double>(src, toks);
  const double tol = test::pair_tolerance_from(max_abs_diff(reference_logits<float>(src, toks), exact), max_abs(exact));
  std::ifstream in(family_fixture("phi3/logits_llamacpp_longrope.txt"));
  ASSERT_TRUE(in);
  std::string w;
  int n = 0, v = 0;
  in >> w >> n >> w >> v;
  ASSERT_EQ(n, static_cast<int>(toks.size()));
  ASSERT_EQ(v, src.config.vocab_size);
  std::vector<double> lc;
  for (double x; in >> x;) lc.push_back(x);
  ASSERT_EQ(lc.size(), exact.size());
  const double err = max_abs_diff(lc, exact);
  LlamaSource plain_src = src;  // the same network without RoPE scaling
  plain_src.config.rope_scaling = RopeScaling{};
  const std::vector<double> plain = reference_logits<double>(plain_src, toks);
  std::printf("[ longrope ] |llama.cpp - exact| %.3g (tolerance %.3g); without longrope the logits move %.3g\n", err,
              tol, max_abs_diff(plain, exact));
  EXPECT_LE(err, tol);
  EXPECT_GT(max_abs_diff(plain, exact), 100 * tol);
}

// Past the original context (4 here) the long factors apply: the session's RoPE tables switch at
// the same position as the reference's per-position frequencies.
TEST(Longrope, SessionMatchesTheReferencePastTheOriginalContext) {
  test::TempDir dir("longrope");
  const LlamaSource src = open_llama_source(phi3_longrope(dir, 4, "phi3"));
  const std::vector<int> toks = fixture_tokens();
  ASSERT_GT(toks.size(), 4u);
  const std::vector<double> exact = reference_logits<double>(src, toks);
  const double tol = test::pair_tolerance_from(max_abs_diff(reference_logits<float>(src, toks), exact), max_abs(exact));
  EXPECT_LE(max_abs_diff(session_logits(src, toks), exact), tol);
  // The same model with the attention factor and frequencies of the short regime everywhere (an
  // original context of 64 and attention_factor fixed to this one's) differs only past position 4.
  LlamaSource short_src = open_llama_source(phi3_longrope(dir, 64, "short"));
  short_src.config.rope_scaling.attention_factor = rope_attention_factor(src.config);
  const std::vector<double> all_short = reference_logits<double>(short_src, toks);
  const size_t V = static_cast<size_t>(src.config.vocab_size);
  const std::vector<double> head(exact.begin(), exact.begin() + 4 * V), head_s(all_short.begin(), all_short.begin() + 4 * V);
  EXPECT_EQ(head, head_s);
  EXPECT_GT(max_abs_diff(exact, all_short), 100 * tol);
}

TEST(Longrope, BadConfigsNameTheKey) {
  test::TempDir dir("longrope");
  const std::string folder = phi3_longrope(dir, 32, "phi3");
  auto patch = [&](const std::function<void(nlohmann::json&)>& f) {
    std::ifstream in(folder + "/config.json");
    nlohmann::json j = nlohmann::json::parse(in);
    f(j);
    std::ofstream(folder + "/config.json") << j.dump(2);
  };
  auto error_of = [&]() -> std::string {
    try {
      open_llama_source(folder);
    } catch (const FileError& e) {
      return e.what();
    }
    return "";
  };
  patch([](nlohmann::json& j) { j["rope_scaling"]["long_mscale"] = 1.2; });
  EXPECT_NE(error_of().find("rope_scaling.long_mscale"), std::string::npos) << error_of();
  patch([](nlohmann::json& j) {
    j["rope_scaling"].erase("long_mscale");
    j["rope_scaling"]["short_factor"] = {1.0, 2.0};
  });
  EXPECT_NE(error_of().find("short_factor"), std::string::npos) << error_of();
  patch([](nlohmann::json& j) {
    j["rope_scaling"]["short_factor"] = {1.0, 2.0, "x", 4.0, 1.0, 1.0, 1.0, 1.0};
  });
  EXPECT_NE(error_of().find("rope_scaling.short_factor"), std::string::npos) << error_of();
}

}  // namespace
}  // namespace cibench
