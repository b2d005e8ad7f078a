// The GGUF writer (engines/models/gguf_writer.h) and the GGUF loader's Q8_0/Q4_0 branches: a model
// written as F32 reads back bit for bit; F16/BF16 read back as the model with its 2-D weights
// rounded to that type; Q8_0/Q4_0 blocks hold ggml's bytes (checked on hand-computed blocks) and
// read back as dequantise(quantise(w)) computed here independently; metadata round trips; bad
// requests fail before anything is left on disk. None of it needs llama.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/core/splitmix.h"
#include "engines/models/ggml_quants.h"
#include "engines/models/gguf.h"
#include "engines/models/gguf_writer.h"
#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/models/llama_reference.h"
#include "engines/models/synthetic.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace cibench;

namespace {

using cibench::test::TempDir;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---- Independent roundings ---------------------------------------------------------------------
// Round to `sig` significant bits, ties to even, with the smallest normal exponent `emin`
// (below it the quantum stays 2^(emin - sig + 1)): binary16 is (11, -14), bfloat16 is (8, -126).
// Computed in double with nearbyint, not with the engine's bit manipulations.
float round_to(float x, int sig, int emin) {
  if (x == 0.0f) return x;
  int e;
  std::frexp(static_cast<double>(x), &e);  // x = m * 2^e, 0.5 <= |m| < 1
  const int exp = std::max(e - 1, emin);  // exponent of the leading bit (clamped for subnormals)
  const double quantum = std::ldexp(1.0, exp - sig + 1);
  return static_cast<float>(std::nearbyint(static_cast<double>(x) / quantum) * quantum);
}
float round_f16(float x) { return round_to(x, 11, -14); }
float round_bf16(float x) { return round_to(x, 8, -126); }

// ggml's Q8_0 / Q4_0 arithmetic on one block of 32, written from the formulas: the values
// dequantisation gives back.
void q8_0_roundtrip(const float* x, float* y) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d == 0.0f ? 0.0f : 1.0f / d;
  const float stored = round_f16(d);
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id;
    // Halves away from zero; the file holds an integer, so -0.3 comes back as +0.
    const int q = static_cast<int>(v < 0 ? -std::floor(-v + 0.5f) : std::floor(v + 0.5f));
    y[j] = static_cast<float>(q) * stored;
  }
}

void q4_0_roundtrip(const float* x, float* y) {
  float m = 0.0f;
  for (int j = 0; j < 32; ++j)
    if (std::fabs(x[j]) > std::fabs(m)) m = x[j];
  const float d = m / -8.0f;
  const float id = d == 0.0f ? 0.0f : 1.0f / d;
  const float stored = round_f16(d);
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id + 8.5f;
    const int q = std::min(15, static_cast<int>(std::floor(v)));
    y[j] = static_cast<float>(q - 8) * stored;
  }
}

// ---- Small in-memory models --------------------------------------------------------------------

LlamaConfig small_config(bool tied) {
  LlamaConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 300;
  c.seq_len = 48;
  c.norm_eps = 1e-6f;
  c.rope_theta = 500000.0f;
  c.tied_output = tied;
  c.bos_id = 1;
  c.eos_id = 2;
  return c;
}

// Every tensor held as f32 values (canonical names and shapes of llama_config.h).
using Weights = std::map<std::string, std::vector<float>>;

Weights random_weights(const LlamaConfig& c, uint64_t seed) {
  Weights w;
  auto fill = [&](const std::string& name, int64_t rows, int64_t cols, float scale, float offset) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    uint64_t s = splitmix64(seed ^ fnv1a64_name(name));
    for (float& x : v) {
      s = splitmix64(s);
      x = offset + scale * (static_cast<float>(s >> 40) / 16777216.0f * 2.0f - 1.0f);
    }
    w[name] = std::move(v);
  };
  const int64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim();
  fill("tok_embeddings", c.vocab_size, d, 1.0f, 0.0f);
  fill("norm", 1, d, 0.25f, 1.0f);
  if (!c.tied_output) fill("output", c.vocab_size, d, 0.125f, 0.0f);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    fill(p + "attention_norm", 1, d, 0.25f, 1.0f);
    fill(p + "ffn_norm", 1, d, 0.25f, 1.0f);
    fill(p + "wq", d, d, 0.125f, 0.0f);
    fill(p + "wk", kv, d, 0.125f, 0.0f);
    fill(p + "wv", kv, d, 0.125f, 0.0f);
    fill(p + "wo", d, d, 0.125f, 0.0f);
    fill(p + "w1", h, d, 0.125f, 0.0f);
    fill(p + "w2", d, h, 0.1f, 0.0f);
    fill(p + "w3", h, d, 0.125f, 0.0f);
  }
  return w;
}

bool is_norm(const std::string& name) {
  return name == "norm" || name.find("_norm") != std::string::npos;
}

LlamaSource memory_source(const LlamaConfig& c, Weights w, const std::string& origin = "memory") {
  LlamaSource src;
  src.config = c;
  src.origin = origin;
  src.container = "memory";
  auto held = std::make_shared<const Weights>(std::move(w));
  for (const auto& [name, v] : *held) {
    TensorSource t;
    const bool down = name.size() > 2 && name.compare(name.size() - 2, 2, "w2") == 0;
    t.cols = down ? c.hidden_dim : c.dim;
    t.rows = static_cast<int64_t>(v.size()) / t.cols;
    const float* data = v.data();
    const int64_t cols = t.cols;
    t.read = [held, data, cols](int64_t r0, int64_t n, float* dst) {
      std::memcpy(dst, data + r0 * cols, static_cast<size_t>(n * cols) * 4);
    };
    src.tensors[name] = std::move(t);
  }
  src.keepalive = held;
  return src;
}

// The 2-D weights mapped value by value (norms untouched), or row block by block for quantisers.
Weights map_matrices(const Weights& w, const std::function<float(float)>& f) {
  Weights out = w;
  for (auto& [name, v] : out)
    if (!is_norm(name))
      for (float& x : v) x = f(x);
  return out;
}

Weights map_blocks(const Weights& w, void (*roundtrip)(const float*, float*)) {
  Weights out = w;
  for (auto& [name, v] : out)
    if (!is_norm(name))
      for (size_t b = 0; b < v.size(); b += 32) roundtrip(&w.at(name)[b], &v[b]);
  return out;
}

// Teacher-forced logits at every position, from the scalar reference and from an f32 build run
// by a session at the process's ISA level.
std::vector<float> logits(const LlamaSource& src, const std::vector<int>& toks) {
  std::vector<float> out;
  LlamaReference ref(src);
  for (size_t p = 0; p < toks.size(); ++p) {
    const auto& r = ref.forward(toks[p], static_cast<int>(p));
    out.insert(out.end(), r.begin(), r.end());
  }
  const LlamaModel model = build_llama(src);
  LlamaSession session(model, SessionOptions{});
  for (int t : toks) {
    const float* l = session.step(t);
    out.insert(out.end(), l, l + src.config.vocab_size);
  }
  return out;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(bits(a[i]), bits(b[i])) << "at " << i;
}

void expect_same_tensors(const LlamaSource& want, const LlamaSource& got) {
  ASSERT_EQ(want.tensors.size(), got.tensors.size());
  for (const auto& [name, t] : want.tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(got.tensors.count(name));
    ASSERT_EQ(got.tensors.at(name).rows, t.rows);
    ASSERT_EQ(got.tensors.at(name).cols, t.cols);
    expect_same_bits(t.read_all(), got.tensors.at(name).read_all());
  }
}

const std::vector<int> kTokens = {1, 17, 250, 3, 299, 42, 0, 128};

std::string export_to(const TempDir& tmp, const LlamaSource& src, GgufWeightType type,
                      const std::string& file) {
  const std::string path = tmp.file(file);
  write_llama_gguf(src, placeholder_vocab(src.config.vocab_size), type, "small", path);
  return path;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

// ---- Block bytes ---------------------------------------------------------------------------------

TEST(GgmlBlocks, Q8_0HandComputed) {
  // amax 127: d = 1 exactly (f16 0x3C00), so q = roundf(x): halves go away from zero.
  float x[64] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, -127.0f, 3.5f};
  // Second block all zero: d = 0, every q 0.
  uint8_t out[2 * kQ8_0BlockBytes];
  quantize_q8_0(x, 64, out);
  const uint8_t want_head[] = {0x00, 0x3C, 127, 3, 0xFD, 1, 0xFF, 1, 0x81, 4};
  for (size_t i = 0; i < sizeof want_head; ++i) EXPECT_EQ(out[i], want_head[i]) << i;
  for (size_t i = sizeof want_head; i < kQ8_0BlockBytes; ++i) EXPECT_EQ(out[i], 0) << i;
  for (size_t i = kQ8_0BlockBytes; i < 2 * kQ8_0BlockBytes; ++i) EXPECT_EQ(out[i], 0) << i;

  // amax 254: d = 2 (f16 0x4000), id = 0.5: 5 -> 2.5 -> 3, -3 -> -1.5 -> -2, 1 -> 0.5 -> 1.
  float y[32] = {-254.0f, 5.0f, -3.0f, 1.0f, 0.99f};
  uint8_t o2[kQ8_0BlockBytes];
  quantize_q8_0(y, 32, o2);
  const uint8_t want2[] = {0x00, 0x40, 0x81, 3, 0xFE, 1, 0};
  for (size_t i = 0; i < sizeof want2; ++i) EXPECT_EQ(o2[i], want2[i]) << i;

  float back[32];
  dequantize_q8_0(o2, 32, back);
  EXPECT_EQ(back[0], -254.0f);
  EXPECT_EQ(back[1], 6.0f);
  EXPECT_EQ(back[2], -4.0f);
  EXPECT_EQ(back[3], 2.0f);
  EXPECT_EQ(back[4], 0.0f);
}

TEST(GgmlBlocks, Q4_0HandComputed) {
  // Block 0: the largest magnitude is negative (-8): d = -8 / -8 = 1, q = trunc(x + 8.5).
  //   -8 -> 0, 7 -> 15, 7.4 -> 15, 0 -> 8, -0.5 -> 8 (a half goes up), 0.5 -> 9, -1.5 -> 7.
  // Block 1: all zero: d = 0 / -8 = -0 (f16 0x8000), every q = trunc(8.5) = 8.
  float x[64] = {-8.0f, 7.0f, 7.4f, 0.0f, -0.5f, 0.5f, -1.5f};
  x[16] = 3.0f;   // shares byte 0 with x[0]: q 11
  x[17] = -3.0f;  // byte 1 with x[1]: q 5
  uint8_t out[2 * kQ4_0BlockBytes];
  quantize_q4_0(x, 64, out);
  const uint8_t want[18] = {0x00, 0x3C, 0xB0, 0x5F, 0x8F, 0x88, 0x88, 0x89, 0x87,
                            0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  for (size_t i = 0; i < 18; ++i) EXPECT_EQ(out[i], want[i]) << i;
  EXPECT_EQ(out[18], 0x00);
  EXPECT_EQ(out[19], 0x80);
  for (size_t i = 20; i < 36; ++i) EXPECT_EQ(out[i], 0x88) << i;

  // Largest magnitude positive (8): d = -1 (f16 0xBC00), id = -1: 8 -> 0.5 -> 0, -8 -> 16.5 ->
  // clamped to 15. Two values of the same magnitude: the first wins (4 before -4 gives d = -0.5).
  float y[32] = {8.0f, -8.0f, 1.0f};
  uint8_t o2[kQ4_0BlockBytes];
  quantize_q4_0(y, 32, o2);
  EXPECT_EQ(o2[0], 0x00);
  EXPECT_EQ(o2[1], 0xBC);
  EXPECT_EQ(o2[2], 0x80);  // q[0] 0, q[16] 8
  EXPECT_EQ(o2[3], 0x8F);  // q[1] 15
  EXPECT_EQ(o2[4], 0x87);  // q[2] = trunc(-1 + 8.5) = 7
  float z[32] = {4.0f, -4.0f};
  quantize_q4_0(z, 32, o2);
  EXPECT_EQ(o2[0], 0x00);
  EXPECT_EQ(o2[1], 0xB8);  // -0.5
  EXPECT_EQ(o2[2], 0x80);  // 4 * -2 + 8.5 = 0.5 -> 0
  EXPECT_EQ(o2[3], 0x8F);  // -4 * -2 + 8.5 = 16.5 -> 15

  float back[32];
  dequantize_q4_0(o2, 32, back);
  EXPECT_EQ(back[0], 4.0f);    // (0 - 8) * -0.5
  EXPECT_EQ(back[1], -3.5f);   // (15 - 8) * -0.5: the clamp costs half a step
  EXPECT_EQ(back[2], -0.0f);   // (8 - 8) * -0.5
}

TEST(GgmlBlocks, RandomBlocksMatchTheIndependentArithmetic) {
  std::vector<float> x(32 * 64);
  uint64_t s = 99;
  for (size_t i = 0; i < x.size(); ++i) {
    s = splitmix64(s);
    // Several magnitudes, so scales cover f16's normal and subnormal ranges.
    const float scale = std::ldexp(1.0f, -static_cast<int>(i / 32 % 24));
    x[i] = scale * (static_cast<float>(s >> 40) / 16777216.0f * 2.0f - 1.0f);
  }
  std::vector<uint8_t> q8(x.size() / 32 * kQ8_0BlockBytes), q4(x.size() / 32 * kQ4_0BlockBytes);
  quantize_q8_0(x.data(), static_cast<int64_t>(x.size()), q8.data());
  quantize_q4_0(x.data(), static_cast<int64_t>(x.size()), q4.data());
  std::vector<float> got(x.size()), want(x.size());
  dequantize_q8_0(q8.data(), static_cast<int64_t>(x.size()), got.data());
  for (size_t b = 0; b < x.size(); b += 32) q8_0_roundtrip(&x[b], &want[b]);
  expect_same_bits(got, want);
  dequantize_q4_0(q4.data(), static_cast<int64_t>(x.size()), got.data());
  for (size_t b = 0; b < x.size(); b += 32) q4_0_roundtrip(&x[b], &want[b]);
  expect_same_bits(got, want);
}

// ---- Whole models ------------------------------------------------------------------------------

class GgufExport : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { CIBENCH_REQUIRE_ISA(GetParam()); }
};

TEST_P(GgufExport, F32ReadsBackBitForBit) {
  test::IsaScope isa(GetParam());
  TempDir tmp;
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const LlamaConfig c = small_config(tied);
    const LlamaSource src = memory_source(c, random_weights(c, 5));
    const LlamaSource back = open_llama_source(export_to(tmp, src, GgufWeightType::f32, "f32.gguf"));
    expect_same_tensors(src, back);
    expect_same_bits(logits(src, kTokens), logits(back, kTokens));
  }
}

TEST_P(GgufExport, F16AndBf16ReadBackAsTheRoundedModel) {
  test::IsaScope isa(GetParam());
  TempDir tmp;
  const LlamaConfig c = small_config(false);
  const Weights w = random_weights(c, 6);
  const LlamaSource src = memory_source(c, w);
  for (GgufWeightType t : {GgufWeightType::f16, GgufWeightType::bf16}) {
    SCOPED_TRACE(gguf_weight_type_name(t));
    const LlamaSource rounded =
        memory_source(c, map_matrices(w, t == GgufWeightType::f16 ? round_f16 : round_bf16));
    const LlamaSource back = open_llama_source(export_to(tmp, src, t, "h.gguf"));
    expect_same_tensors(rounded, back);
    expect_same_bits(logits(rounded, kTokens), logits(back, kTokens));
  }
}

TEST_P(GgufExport, Q8_0AndQ4_0ReadBackAsDequantisedBlocks) {
  test::IsaScope isa(GetParam());
  TempDir tmp;
  const LlamaConfig c = small_config(false);
  const Weights w = random_weights(c, 7);
  const LlamaSource src = memory_source(c, w);
  for (GgufWeightType t : {GgufWeightType::q8_0, GgufWeightType::q4_0}) {
    SCOPED_TRACE(gguf_weight_type_name(t));
    const LlamaSource want =
        memory_source(c, map_blocks(w, t == GgufWeightType::q8_0 ? q8_0_roundtrip : q4_0_roundtrip));
    const std::string path = export_to(tmp, src, t, "q.gguf");
    const LlamaSource back = open_llama_source(path);
    expect_same_tensors(want, back);
    expect_same_bits(logits(want, kTokens), logits(back, kTokens));
    // The file's sizes: 34 (Q8_0) or 18 (Q4_0) bytes per 32 weights of every 2-D tensor.
    const GgufFile g(path);
    const GgufTensorInfo* q = g.find_tensor("blk.1.ffn_down.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->ggml_type, t == GgufWeightType::q8_0 ? 8u : 2u);
    EXPECT_EQ(q->nbytes, static_cast<size_t>(c.dim * c.hidden_dim / 32) *
                             (t == GgufWeightType::q8_0 ? 34 : 18));
    EXPECT_EQ(g.find_tensor("blk.1.ffn_norm.weight")->ggml_type, 0u);
    // Rows read from the middle of a tensor agree with the whole (row offsets in blocks).
    const TensorSource& w2 = back.tensor("layers.1.w2");
    std::vector<float> part(static_cast<size_t>(w2.cols) * 3);
    w2.read(5, 3, part.data());
    const std::vector<float> all = w2.read_all();
    expect_same_bits(part, std::vector<float>(all.begin() + 5 * w2.cols, all.begin() + 8 * w2.cols));
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, GgufExport, ::testing::ValuesIn(all_isas()), test::isa_param_name);

TEST(GgufExportMetadata, ConfigVocabularyAndTensorDirectory) {
  TempDir tmp;
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const LlamaConfig c = small_config(tied);
    const LlamaSource src = memory_source(c, random_weights(c, 8));
    const std::string path = tmp.file("meta.gguf");
    const GgufExportSummary s =
        write_llama_gguf(src, placeholder_vocab(c.vocab_size), GgufWeightType::q8_0, "tiny model", path);
    EXPECT_EQ(s.file_bytes, fs::file_size(path));
    EXPECT_EQ(s.tensors, 3 + 9 * c.n_layers - (tied ? 1 : 0));

    const GgufFile g(path);
    const std::string& p = g.path();
    EXPECT_EQ(g.version(), 3u);
    EXPECT_EQ(g.get("general.architecture").as_string("", p), "llama");
    EXPECT_EQ(g.get("general.name").as_string("", p), "tiny model");
    EXPECT_EQ(g.get("general.alignment").as_int("", p), 32);
    EXPECT_EQ(g.get("general.file_type").as_int("", p), 7);  // LLAMA_FTYPE_MOSTLY_Q8_0
    EXPECT_EQ(g.get("llama.context_length").as_int("", p), c.seq_len);
    EXPECT_EQ(g.get("llama.embedding_length").as_int("", p), c.dim);
    EXPECT_EQ(g.get("llama.block_count").as_int("", p), c.n_layers);
    EXPECT_EQ(g.get("llama.feed_forward_length").as_int("", p), c.hidden_dim);
    EXPECT_EQ(g.get("llama.attention.head_count").as_int("", p), c.n_heads);
    EXPECT_EQ(g.get("llama.attention.head_count_kv").as_int("", p), c.n_kv_heads);
    EXPECT_EQ(g.get("llama.rope.dimension_count").as_int("", p), c.head_dim());
    EXPECT_EQ(g.get("llama.vocab_size").as_int("", p), c.vocab_size);
    EXPECT_EQ(static_cast<float>(g.get("llama.attention.layer_norm_rms_epsilon").as_float("", p)), c.norm_eps);
    EXPECT_EQ(static_cast<float>(g.get("llama.rope.freq_base").as_float("", p)), c.rope_theta);
    EXPECT_EQ(g.get("tokenizer.ggml.model").as_string("", p), "llama");
    const GgufValue& tokens = g.get("tokenizer.ggml.tokens");
    ASSERT_EQ(tokens.array.size(), static_cast<size_t>(c.vocab_size));
    EXPECT_EQ(tokens.array[0].as_string("", p), "<unk>");
    EXPECT_EQ(tokens.array[1].as_string("", p), "<s>");
    EXPECT_EQ(tokens.array[2].as_string("", p), "</s>");
    EXPECT_EQ(tokens.array[3 + 0x41].as_string("", p), "<0x41>");
    EXPECT_EQ(tokens.array[299].as_string("", p), "\xE2\x96\x81t299");
    const GgufValue& types = g.get("tokenizer.ggml.token_type");
    EXPECT_EQ(types.array_type, GgufType::i32);
    EXPECT_EQ(types.array[0].as_int("", p), 2);
    EXPECT_EQ(types.array[1].as_int("", p), 3);
    EXPECT_EQ(types.array[3 + 255].as_int("", p), 6);
    EXPECT_EQ(types.array[259].as_int("", p), 1);
    EXPECT_EQ(g.get("tokenizer.ggml.scores").array[299].as_float("", p), -299.0);
    EXPECT_EQ(g.get("tokenizer.ggml.bos_token_id").as_int("", p), 1);
    EXPECT_EQ(g.get("tokenizer.ggml.eos_token_id").as_int("", p), 2);
    EXPECT_EQ(g.get("tokenizer.ggml.unknown_token_id").as_int("", p), 0);
    // Dims innermost first; the head exists only when untied.
    const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->dims, (std::vector<int64_t>{c.dim, c.vocab_size}));
    EXPECT_EQ(g.find_tensor("blk.0.ffn_down.weight")->dims, (std::vector<int64_t>{c.hidden_dim, c.dim}));
    EXPECT_EQ(g.find_tensor("blk.0.attn_k.weight")->dims, (std::vector<int64_t>{c.dim, c.kv_dim()}));
    EXPECT_EQ(g.find_tensor("output_norm.weight")->dims, (std::vector<int64_t>{c.dim}));
    EXPECT_EQ(g.find_tensor("output.weight") != nullptr, !tied);
    for (const GgufTensorInfo& t : g.tensors()) EXPECT_EQ(t.offset % 32, 0u) << t.name;

    const LlamaSource back = open_llama_source(path);
    const LlamaConfig& b = back.config;
    EXPECT_EQ(b.dim, c.dim);
    EXPECT_EQ(b.hidden_dim, c.hidden_dim);
    EXPECT_EQ(b.n_layers, c.n_layers);
    EXPECT_EQ(b.n_heads, c.n_heads);
    EXPECT_EQ(b.n_kv_heads, c.n_kv_heads);
    EXPECT_EQ(b.vocab_size, c.vocab_size);
    EXPECT_EQ(b.seq_len, c.seq_len);
    EXPECT_EQ(b.norm_eps, c.norm_eps);
    EXPECT_EQ(b.rope_theta, c.rope_theta);
    EXPECT_EQ(b.tied_output, tied);
    EXPECT_EQ(b.bos_id, c.bos_id);
    EXPECT_EQ(b.eos_id, c.eos_id);
    // The placeholder vocabulary is a working one: bytes fall back to <0xAB> pieces.
    const auto tok = tokenizer_from_gguf(g);
    // "A" is "▁A" (the space prefix), neither piece known: the UTF-8 bytes E2 96 81 41.
    EXPECT_EQ(tok->encode("A", true, false), (std::vector<int>{1, 3 + 0xE2, 3 + 0x96, 3 + 0x81, 3 + 0x41}));
  }
}

TEST(GgufExportMetadata, SyntheticPresetName) {
  const LlamaSource s = open_llama_source("synthetic:stories260k@9");
  EXPECT_EQ(gguf_default_name(s), "stories260k@9");
  const VocabPieces v = placeholder_vocab(100);
  EXPECT_EQ(v.tokens.size(), 100u);  // cut: <unk> <s> </s> and the first 97 byte pieces
  EXPECT_EQ(v.tokens[99], "<0x60>");
}

TEST(GgufExportMetadata, Stories260KWithItsTokenizer) {
  CIBENCH_REQUIRE_SHARED("models/stories260K/stories260K.bin");
  CIBENCH_REQUIRE_SHARED("models/stories260K/gguf/stories260K.gguf");
  TempDir tmp;
  const LlamaSource src = open_llama_source(test::shared_path("models/stories260K/stories260K.bin"));
  std::string origin;
  const VocabPieces v = vocab_for_export(src, "", &origin);
  EXPECT_EQ(origin, test::shared_path("models/stories260K/tok512.bin"));  // found beside the .bin
  const std::string path = tmp.file("s.gguf");
  write_llama_gguf(src, v, GgufWeightType::f32, gguf_default_name(src), path);
  const LlamaSource back = open_llama_source(path);
  expect_same_tensors(src, back);
  EXPECT_EQ(back.config.seq_len, 512);

  // The vocabulary is the one llama.cpp's converter wrote into stories260K.gguf.
  const GgufFile mine(path), theirs(test::shared_path("models/stories260K/gguf/stories260K.gguf"));
  const VocabPieces a = tokenizer_from_gguf(mine)->pieces(), b = tokenizer_from_gguf(theirs)->pieces();
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.scores, b.scores);
  EXPECT_EQ(a.types, b.types);
  const auto bin_tok = open_tokenizer(test::shared_path("models/stories260K/tok512.bin"), 512);
  const std::string text = "Once upon a time, a little girl named Lily found a shiny stone.";
  EXPECT_EQ(tokenizer_from_gguf(mine)->encode(text, true, false), bin_tok->encode(text, true, false));

  // A GGUF source exports its own vocabulary, and the same bytes for every tensor.
  const LlamaSource gsrc = open_llama_source(path);
  EXPECT_EQ(vocab_for_export(gsrc, "", &origin).tokens, a.tokens);
  EXPECT_EQ(origin, path);
  const std::string again = tmp.file("again.gguf");
  write_llama_gguf(gsrc, a, GgufWeightType::f32, gguf_default_name(src), again);
  std::ifstream f1(path, std::ios::binary), f2(again, std::ios::binary);
  const std::string b1((std::istreambuf_iterator<char>(f1)), {}), b2((std::istreambuf_iterator<char>(f2)), {});
  EXPECT_TRUE(b1 == b2) << "re-exporting the export changed its bytes";
}

TEST(GgufExportMetadata, SentencePieceVocabularyAsLlamaCppConvertsIt) {
  const char* model = "models/llama2-tokenizer-32k/tokenizer.model";
  const char* vocab = "models/tokenizer-test-vectors/ggml-vocab-llama-spm.gguf";
  CIBENCH_REQUIRE_SHARED(model);
  CIBENCH_REQUIRE_SHARED(vocab);
  const VocabPieces mine = open_tokenizer(test::shared_path(model))->pieces();
  const VocabPieces theirs = tokenizer_from_gguf(GgufFile(test::shared_path(vocab)))->pieces();
  EXPECT_EQ(mine.tokens, theirs.tokens);
  EXPECT_EQ(mine.scores, theirs.scores);
  EXPECT_EQ(mine.types, theirs.types);
  EXPECT_EQ(mine.bos_id, theirs.bos_id);
  EXPECT_EQ(mine.eos_id, theirs.eos_id);
  EXPECT_EQ(mine.unk_id, theirs.unk_id);
  // The llama2.c export of the same vocabulary gives the same pieces back.
  const char* bin = "models/llama2-tokenizer-32k/tokenizer.bin";
  CIBENCH_REQUIRE_SHARED(bin);
  const VocabPieces from_bin = open_tokenizer(test::shared_path(bin), 32000)->pieces();
  EXPECT_EQ(from_bin.tokens, theirs.tokens);
  EXPECT_EQ(from_bin.scores, theirs.scores);
  EXPECT_EQ(from_bin.types, theirs.types);
}

// ---- Errors ------------------------------------------------------------------------------------

TEST(GgufExportErrors, ColumnsNotAMultipleOf32NameTheTensor) {
  TempDir tmp;
  const LlamaSource src = open_llama_source("synthetic:stories260k");  // hidden_dim 172
  for (GgufWeightType t : {GgufWeightType::q8_0, GgufWeightType::q4_0}) {
    const std::string msg = error_of([&] {
      write_llama_gguf(src, placeholder_vocab(512), t, "x", tmp.file("x.gguf"));
    });
    EXPECT_NE(msg.find("tensor 'blk.0.ffn_down.weight'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("172 columns are not a multiple of 32"), std::string::npos) << msg;
    EXPECT_NE(msg.find(gguf_weight_type_name(t)), std::string::npos) << msg;
  }
  EXPECT_TRUE(tmp.listing().empty());
  // f16 has no block: the same model writes.
  write_llama_gguf(src, placeholder_vocab(512), GgufWeightType::f16, "x", tmp.file("x.gguf"));
  EXPECT_EQ(tmp.listing(), std::vector<std::string>{"x.gguf"});
}

TEST(GgufExportErrors, UnwritablePathsAndFailuresLeaveNothingBehind) {
  TempDir tmp;
  const LlamaConfig c = small_config(true);
  const Weights w = random_weights(c, 9);
  const LlamaSource src = memory_source(c, w);
  const VocabPieces v = placeholder_vocab(c.vocab_size);

  // The folder does not exist / a file stands where the folder should be.
  std::string msg = error_of([&] { write_llama_gguf(src, v, GgufWeightType::f32, "x", tmp.file("no/such/dir/m.gguf")); });
  EXPECT_NE(msg.find("no/such/dir/m.gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  std::ofstream(tmp.file("plain")) << "x";
  msg = error_of([&] { write_llama_gguf(src, v, GgufWeightType::f32, "x", tmp.file("plain/m.gguf")); });
  EXPECT_NE(msg.find("plain/m.gguf"), std::string::npos) << msg;
  EXPECT_EQ(tmp.listing(), std::vector<std::string>{"plain"});

  // A failure halfway through the tensors (a NaN in the last layer) leaves an existing file as it
  // was and no temporary beside it.
  std::ofstream(tmp.file("m.gguf")) << "previous contents";
  Weights bad = w;
  bad["layers.1.w2"][70] = std::nanf("");
  const LlamaSource bad_src = memory_source(c, bad);
  msg = error_of([&] { write_llama_gguf(bad_src, v, GgufWeightType::q4_0, "x", tmp.file("m.gguf")); });
  EXPECT_NE(msg.find("tensor 'blk.1.ffn_down.weight' row 0 column 70"), std::string::npos) << msg;
  EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"m.gguf", "plain"}));
  std::ifstream in(tmp.file("m.gguf"));
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "previous contents");

  // f16 cannot hold 1e5.
  Weights big = w;
  big["layers.0.wq"][3] = 1e5f;
  msg = error_of([&] { write_llama_gguf(memory_source(c, big), v, GgufWeightType::f16, "x", tmp.file("h.gguf")); });
  EXPECT_NE(msg.find("tensor 'blk.0.attn_q.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("overflows f16"), std::string::npos) << msg;
  EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"m.gguf", "plain"}));

  // A vocabulary that does not fit the model; an unknown type name.
  msg = error_of([&] { write_llama_gguf(src, placeholder_vocab(299), GgufWeightType::f32, "x", tmp.file("v.gguf")); });
  EXPECT_NE(msg.find("the vocabulary has 299 tokens"), std::string::npos) << msg;
  msg = error_of([&] { parse_gguf_weight_type("q4_k"); });
  EXPECT_NE(msg.find("unknown GGUF weight type 'q4_k' (known: f32, f16, bf16, q8_0, q4_0)"), std::string::npos) << msg;
  EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"m.gguf", "plain"}));
}
