// ModernBERT classifiers: the tiny random checkpoints of tests/fixtures/modernbert (written by
// tools/modernbert_fixture/make_fixture.py with the float64 logits of an independent NumPy forward
// pass in Hugging Face's layout; see DEVELOPERS.md) read through the Hugging Face loader; the
// readable reference (binary64 and binary32) and the fast session at every ISA level, alone and in
// padded batches, against those logits; every weight format against the reference on the weights
// it stores; the tokenizer's [CLS] ... [SEP] framing; the synthetic shapes; and bad configs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/core/matrix.h"
#include "engines/core/observer.h"
#include "engines/models/bert.h"
#include "engines/models/classifier_tokenizer.h"
#include "engines/quant/bert_recipes.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;
using test::kF32U;
using test::max_abs;
using test::max_abs_diff;

const char* const kFixtures[] = {"cls", "mean"};

std::string fixture(const std::string& name) {
  return std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/modernbert/" + name;
}

// reference.json: the texts, their ids, more id sequences, and the float64 logits of every one
// (texts first).
struct Fixture {
  std::vector<std::string> texts;
  std::vector<std::vector<int>> seqs;  // the texts' ids, then the other sequences
  std::vector<std::vector<double>> logits;
};

Fixture load_fixture(const std::string& name) {
  const auto j = nlohmann::json::parse(read_file(fixture(name) + "/reference.json"));
  Fixture f;
  f.texts = j.at("texts").get<std::vector<std::string>>();
  f.seqs = j.at("text_ids").get<std::vector<std::vector<int>>>();
  for (const auto& s : j.at("sequences")) f.seqs.push_back(s.get<std::vector<int>>());
  f.logits = j.at("logits").get<std::vector<std::vector<double>>>();
  EXPECT_EQ(f.logits.size(), f.seqs.size());
  return f;
}

std::vector<double> flat(const std::vector<std::vector<double>>& v) {
  std::vector<double> out;
  for (const auto& r : v) out.insert(out.end(), r.begin(), r.end());
  return out;
}

template <typename Real>
std::vector<double> reference_logits(const BertSource& src, const std::vector<std::vector<int>>& seqs) {
  const BertReferenceT<Real> ref(src);
  std::vector<double> out;
  for (const auto& ids : seqs)
    for (Real v : ref.forward(ids)) out.push_back(static_cast<double>(v));
  return out;
}

// The session's logits of each sequence alone.
std::vector<double> session_logits(BertSession& s, const std::vector<std::vector<int>>& seqs) {
  std::vector<double> out;
  const int nl = s.model().config.num_labels;
  for (const auto& ids : seqs) {
    const float* lg = s.classify(ids.data(), static_cast<int>(ids.size()));
    out.insert(out.end(), lg, lg + nl);
  }
  return out;
}

// One padded batch of every sequence (padding id, mask 0), logits in sequence order.
std::vector<double> padded_logits(BertSession& s, const std::vector<std::vector<int>>& seqs) {
  size_t len = 0;
  for (const auto& q : seqs) len = std::max(len, q.size());
  const BertConfig& c = s.model().config;
  std::vector<int> ids(seqs.size() * len, c.pad_token_id);
  std::vector<uint8_t> mask(ids.size(), 0);
  for (size_t b = 0; b < seqs.size(); ++b) {
    std::copy(seqs[b].begin(), seqs[b].end(), ids.begin() + static_cast<std::ptrdiff_t>(b * len));
    std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(b * len), seqs[b].size(), uint8_t{1});
  }
  std::vector<float> lg(seqs.size() * static_cast<size_t>(c.num_labels));
  s.classify_batch(ids.data(), mask.data(), static_cast<int>(seqs.size()), static_cast<int>(len), lg.data());
  return std::vector<double>(lg.begin(), lg.end());
}

// The binary32 evaluations' tolerance (test_bert.cpp's argument): the fast path evaluates the
// reference's expression in binary32 in another order (blocked SIMD sums, FMAs, threads, masked
// keys) with exp/erf by polynomials of about one rounding; the forward-error bounds of its sums
// do not depend on the order, so its error against the exact logits is a realisation of the same
// bounds as the binary32 reference's own error, measured here. Four times that, plus 4 u max|exact|.
double tolerance_vs_exact(double ref32_err, double max_exact) { return 4.0 * ref32_err + 4.0 * kF32U * max_exact; }

TEST(ModernBert, FixtureFoldersLoadWithTheirConfigs) {
  const BertSource a = open_bert_source(fixture("cls"));
  const BertConfig& c = a.config;
  EXPECT_TRUE(is_bert_spec(fixture("cls")));
  EXPECT_EQ(c.arch, BertArch::modernbert);
  EXPECT_STREQ(bert_arch_name(c.arch), "modernbert");
  EXPECT_EQ(c.pooling, BertPooling::cls);
  EXPECT_EQ(c.hidden, 32);
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_EQ(c.intermediate, 40);
  EXPECT_EQ(c.global_every, 3);
  EXPECT_EQ(c.local_window, 16);
  EXPECT_EQ(c.rope_theta_global, 160000.0);
  EXPECT_EQ(c.rope_theta_local, 10000.0);
  EXPECT_FALSE(c.attention_bias || c.mlp_bias || c.norm_bias || c.head_dense_bias);
  EXPECT_EQ(c.activation, BertActivation::gelu);
  EXPECT_EQ(c.labels, (std::vector<std::string>{"negative", "neutral", "positive"}));
  EXPECT_EQ(c.max_length(), 128);
  EXPECT_TRUE(c.global_layer(0) && !c.global_layer(1) && !c.global_layer(2) && c.global_layer(3));
  EXPECT_EQ(a.source_names.at("layers.1.key.weight"), "model.layers.1.attn.Wqkv.weight");
  EXPECT_EQ(a.tensors.count("layers.0.attn_norm.weight"), 0u);  // the identity in layer 0
  EXPECT_EQ(a.tensors.count("layers.1.query.bias"), 0u);

  const BertSource b = open_bert_source(fixture("mean"));
  EXPECT_EQ(b.config.pooling, BertPooling::mean);
  EXPECT_TRUE(b.config.attention_bias && b.config.mlp_bias && b.config.norm_bias && b.config.head_dense_bias);
  EXPECT_EQ(b.config.rope_theta_global, 80000.0);  // from rope_parameters
  EXPECT_EQ(b.config.rope_theta_local, 5000.0);
  EXPECT_EQ(b.config.activation, BertActivation::gelu_tanh);
  EXPECT_EQ(b.config.head_activation, BertActivation::gelu_tanh);
  EXPECT_EQ(b.config.layer_norm_eps, 1e-6);
  EXPECT_EQ(b.config.num_labels, 2);

  // The parameter count is the file's: every stored value, Wqkv counted once through its blocks.
  for (const BertSource* s : {&a, &b}) {
    int64_t stored = 0;
    for (const auto& [name, t] : s->tensors) stored += t.rows * t.cols;
    EXPECT_EQ(s->config.parameter_count(), stored) << s->origin;
  }
  // The Wqkv blocks are the file's rows: key is rows [h, 2h).
  const std::vector<float> k = a.tensor("layers.2.key.weight").read_all();
  std::vector<float> part(static_cast<size_t>(3 * c.hidden));
  a.tensor("layers.2.key.weight").read(5, 3, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), k.begin() + 5 * c.hidden));
}

// The tokenizer.json frames a sentence as its TemplateProcessing says ([CLS] pieces [SEP], the
// special tokens' ids read from the file) and gives the NumPy script's ids; truncation keeps
// the final [SEP].
TEST(ModernBert, TokenizerFramesWithTheTemplateOfTheFile) {
  const Fixture f = load_fixture("cls");
  const auto tok = open_classifier_tokenizer(fixture("cls"));
  EXPECT_EQ(tok->kind(), "bpe");
  for (size_t i = 0; i < f.texts.size(); ++i) EXPECT_EQ(tok->encode(f.texts[i], 128), f.seqs[i]) << f.texts[i];
  const std::vector<int>& whole = f.seqs[f.texts.size() - 1];  // the long text's ids
  const std::vector<int> cut = tok->encode(f.texts.back(), 6);
  ASSERT_EQ(cut.size(), 6u);
  EXPECT_EQ(cut.back(), whole.back());
  EXPECT_TRUE(std::equal(cut.begin(), cut.end() - 1, whole.begin()));
  EXPECT_LE(tok->vocab_size(), open_bert_source(fixture("cls")).config.vocab_size);

  // A template that is not [special] $A [special] is refused, naming the file and the key.
  const test::TempDir dir("modernbert_tok");
  auto j = nlohmann::json::parse(read_file(fixture("cls") + "/tokenizer.json"));
  j["post_processor"]["single"].erase(2);
  std::ofstream(dir.file("tokenizer.json")) << j.dump();
  try {
    open_classifier_tokenizer(dir.file("tokenizer.json"));
    ADD_FAILURE() << "a template without the closing token was accepted";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), dir.file("tokenizer.json"));
    EXPECT_NE(std::string(e.what()).find("post_processor.single"), std::string::npos) << e.what();
  }
}

class ModernBertAtIsa : public ::testing::TestWithParam<Isa> {};

// The binary64 reference is the NumPy forward pass up to binary64 rounding (the same bounds as
// the binary32 reference's, scaled by 2^-29); the binary32 reference gives with padding and mask
// bit for bit what it gives alone; the session alone (1 and 2 threads) and in one padded batch is
// as accurate as the binary32 reference. The sequences include ones past the local windows, whose
// logits the script shows the window moves.
TEST_P(ModernBertAtIsa, FixtureLogitsFromReferenceAndSession) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const Fixture f = load_fixture(name);
    const BertSource src = open_bert_source(fixture(name));
    const std::vector<double> exact = flat(f.logits);
    const double mx = max_abs(exact);
    const double ref32_err = max_abs_diff(reference_logits<float>(src, f.seqs), exact);
    const double ref64_err = max_abs_diff(reference_logits<double>(src, f.seqs), exact);
    const double tol64 = 4.0 * ref32_err * 0x1p-29 + 4.0 * 0x1p-53 * mx;
    EXPECT_LE(ref64_err, tol64) << "binary64 reference vs NumPy";
    EXPECT_GT(ref32_err, 0.0);

    const BertReference ref(src);
    const std::vector<float> alone = ref.forward(f.seqs.back());
    std::vector<int> ids = f.seqs.back();
    std::vector<uint8_t> mask(ids.size() + 9, 1);
    std::fill(mask.begin() + static_cast<std::ptrdiff_t>(ids.size()), mask.end(), uint8_t{0});
    ids.resize(mask.size(), src.config.pad_token_id);
    EXPECT_EQ(ref.forward(ids, mask), alone) << "padded reference";

    const BertModel model = build_bert(src);
    const double tol = tolerance_vs_exact(ref32_err, mx);
    for (int threads : {1, 2}) {
      BertSessionOptions o;
      o.threads = threads;
      o.max_batch = static_cast<int>(f.seqs.size());
      BertSession s(model, o);
      ASSERT_EQ(s.isa(), GetParam());
      const double e_alone = max_abs_diff(session_logits(s, f.seqs), exact);
      const double e_padded = max_abs_diff(padded_logits(s, f.seqs), exact);
      EXPECT_LE(e_alone, tol) << threads << " thread(s), alone";
      EXPECT_LE(e_padded, tol) << threads << " thread(s), padded";
      std::printf("[ %s %s ] %d thread(s): binary64 reference %.3g (tolerance %.3g), binary32 reference %.3g; "
                  "session alone %.3g, padded %.3g (tolerance %.3g)\n",
                  isa_name(GetParam()), name, threads, ref64_err, tol64, ref32_err, e_alone, e_padded, tol);
    }
  }
}

// The source with the projections as `m` stores them (unpacked from its packed matrices).
BertSource unpacked(const BertSource& src, const BertModel& m) {
  BertSource r = src;
  const int64_t h = m.config.hidden;
  auto put = [&](const std::string& name, const WeightMatrix& w, int64_t row0, int64_t rows) {
    std::vector<float> all(static_cast<size_t>(w.rows * w.cols));
    unpack_matrix(w, all.data());
    auto v = std::make_shared<std::vector<float>>(all.begin() + row0 * w.cols, all.begin() + (row0 + rows) * w.cols);
    TensorSource t;
    t.rows = rows;
    t.cols = w.cols;
    const int64_t cols = w.cols;
    t.read = [v, cols](int64_t r0, int64_t n, float* dst) {
      std::copy(v->begin() + r0 * cols, v->begin() + (r0 + n) * cols, dst);
    };
    r.tensors[name] = t;
  };
  for (int l = 0; l < m.config.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const BertLayer& L = m.layers[static_cast<size_t>(l)];
    put(p + "query.weight", L.wqkv, 0, h);
    put(p + "key.weight", L.wqkv, h, h);
    put(p + "value.weight", L.wqkv, 2 * h, h);
    put(p + "attn_out.weight", L.wo, 0, h);
    put(p + "ffn_in.weight", L.w_in, 0, L.w_in.rows);
    put(p + "ffn_out.weight", L.w_out, 0, h);
  }
  return r;
}

// Every weight format: the binary32 reference on the weights as the format stores them differs
// from f32's by D_w, the weights' own rounding realised on these sequences. Formats with f32
// activations compute exactly that network up to the sums' order, so their logits are within the
// order tolerance of it; those that quantise activations too move every product by at most a
// like relative step through its other factor, so all stay within 4 D_w of f32's plus twice the
// order tolerance.
TEST_P(ModernBertAtIsa, EveryWeightFormatWithinItsStoredWeightsError) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  const Fixture f = load_fixture("cls");
  const BertSource src = open_bert_source(fixture("cls"));
  const std::vector<double> ref = reference_logits<float>(src, f.seqs);
  const double ref32_err = max_abs_diff(ref, flat(f.logits));
  const double tol_order = 2 * tolerance_vs_exact(ref32_err, max_abs(ref));
  for (const FormatRow& row : format_table()) {
    SCOPED_TRACE(row.name);
    BertBuildOptions o;
    o.format = row.name;
    const BertModel m = build_bert(src, o);
    const std::vector<double> stored = reference_logits<float>(unpacked(src, m), f.seqs);
    const double d_w = max_abs_diff(stored, ref);
    BertSession s(m, {});
    const std::vector<double> got = session_logits(s, f.seqs);
    const double e = max_abs_diff(got, ref), e_stored = max_abs_diff(got, stored);
    const ActType act = row.act_at(GetParam());
    std::printf("[ %s ] %s (activations %s): D_w %.3g, |fast - f32 reference| %.3g (tolerance %.3g), "
                "|fast - reference on stored weights| %.3g\n",
                isa_name(GetParam()), row.name, act_type_name(act), d_w, e, 4.0 * d_w + tol_order, e_stored);
    EXPECT_LE(e, 4.0 * d_w + tol_order);
    if (act == ActType::f32) {
      EXPECT_LE(e_stored, tol_order) << "f32 activations: the stored weights' network";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ModernBertAtIsa, ::testing::ValuesIn(all_isas()), test::isa_param_name);

TEST(ModernBert, SyntheticShapesOfThePublishedModels) {
  struct Want {
    const char* name;
    int hidden, layers, heads, intermediate;
    int64_t params;  // ModernBertForSequenceClassification with two labels
  };
  for (const Want& w : {Want{"modernbert-base", 768, 22, 12, 1152, 149606402},
                        Want{"modernbert-large", 1024, 28, 16, 2624, 395833346}}) {
    SCOPED_TRACE(w.name);
    const BertSource s = open_bert_source(std::string("synthetic:") + w.name);
    const BertConfig& c = s.config;
    EXPECT_TRUE(is_bert_spec(std::string("synthetic:") + w.name + "@3"));
    EXPECT_EQ(c.arch, BertArch::modernbert);
    EXPECT_EQ(c.hidden, w.hidden);
    EXPECT_EQ(c.n_layers, w.layers);
    EXPECT_EQ(c.n_heads, w.heads);
    EXPECT_EQ(c.intermediate, w.intermediate);
    EXPECT_EQ(c.vocab_size, 50368);
    EXPECT_EQ(c.max_length(), 8192);
    EXPECT_EQ(c.global_every, 3);
    EXPECT_EQ(c.local_window, 128);
    EXPECT_EQ(c.rope_theta_global, 160000.0);
    EXPECT_EQ(c.rope_theta_local, 10000.0);
    EXPECT_EQ(c.layer_norm_eps, 1e-5);
    EXPECT_EQ(c.parameter_count(), w.params);
    int64_t generated = 0;
    for (const auto& [name, t] : s.tensors) {
      EXPECT_EQ(t.rows * t.cols, [&] {
        int64_t n = 1;
        for (int64_t d : bert_tensor_shape(c, name)) n *= d;
        return n;
      }()) << name;
      generated += t.rows * t.cols;
    }
    EXPECT_EQ(generated, w.params);
  }
}

// The small synthetic shape: a window its sequences outgrow; the session alone and padded within
// the binary32 reference's accuracy of the binary64 one.
TEST(ModernBert, SyntheticMiniSessionMatchesTheReference) {
  const BertSource src = open_bert_source("synthetic:modernbert-mini@5");
  ASSERT_EQ(src.config.local_window, 16);
  std::vector<std::vector<int>> seqs;
  for (int n : {3, 40}) {
    std::vector<int> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = 1000 + (i * 7919) % 40000;
    seqs.push_back(ids);
  }
  const std::vector<double> exact = reference_logits<double>(src, seqs);
  const double tol = tolerance_vs_exact(max_abs_diff(reference_logits<float>(src, seqs), exact), max_abs(exact));
  const BertModel m = build_bert(src);
  BertSessionOptions o;
  o.max_batch = 2;
  o.max_length = 64;
  BertSession s(m, o);
  EXPECT_LE(max_abs_diff(session_logits(s, seqs), exact), tol);
  EXPECT_LE(max_abs_diff(padded_logits(s, seqs), exact), tol);
  // Encoder recipes follow post-LayerNorm layers: refused for ModernBERT.
  EXPECT_THROW(apply_bert_recipe(src, RecipeSpec{}, nullptr, 1), Error);
}

// The calibration observer sees each projection's input (the gated values packed to rows of
// intermediate_size for the feed-forward output), and watching changes no logit.
TEST(ModernBert, ObserverSeesEveryProjectionInputAndChangesNothing) {
  struct Seen : ActivationObserver {
    std::vector<std::string> names;
    std::vector<std::pair<int64_t, int64_t>> shapes;
    void observe(const std::string& name, const float*, int64_t rows, int64_t cols) override {
      names.push_back(name);
      shapes.emplace_back(rows, cols);
    }
  };
  const Fixture f = load_fixture("mean");
  const BertSource src = open_bert_source(fixture("mean"));
  const BertConfig& c = src.config;
  const BertModel m = build_bert(src);
  BertSession plain(m, {});
  const std::vector<double> want = session_logits(plain, f.seqs);
  Seen seen;
  BertSessionOptions o;
  o.observer = &seen;
  BertSession watched(m, o);
  const std::vector<int>& ids = f.seqs.back();
  const float* lg = watched.classify(ids.data(), static_cast<int>(ids.size()));
  const std::vector<double> got(lg, lg + c.num_labels);
  EXPECT_EQ(got, std::vector<double>(want.end() - c.num_labels, want.end()));
  ASSERT_EQ(seen.names.size(), static_cast<size_t>(4 * c.n_layers));
  const int64_t n = static_cast<int64_t>(ids.size());
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const size_t i = static_cast<size_t>(4 * l);
    EXPECT_EQ(seen.names[i], p + "query");
    EXPECT_EQ(seen.names[i + 3], p + "ffn_out");
    // Mean pooling: every row goes through the last layer too.
    EXPECT_EQ(seen.shapes[i], std::make_pair(n, int64_t{c.hidden}));
    EXPECT_EQ(seen.shapes[i + 3], std::make_pair(n, int64_t{c.intermediate}));
  }
}

// A copy of the cls fixture with config.json changed by `edit`.
struct EditedFolder {
  test::TempDir dir{"modernbert_cfg"};
  template <typename F>
  explicit EditedFolder(F&& edit) {
    auto j = nlohmann::json::parse(read_file(fixture("cls") + "/config.json"));
    edit(j);
    std::ofstream(dir.file("config.json")) << j.dump(2);
    fs::copy_file(fixture("cls") + "/model.safetensors", dir.file("model.safetensors"));
  }
};

template <typename F>
void expect_file_error(F&& f, const std::string& path, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no FileError (expected one naming " << path << " and " << needle << ")";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ModernBert, UnsupportedConfigValuesAreFileErrorsNamingKeyAndValue) {
  using json = nlohmann::json;
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* needle;
  };
  const Case cases[] = {
      {"activation", [](json& j) { j["hidden_activation"] = "silu"; }, "'hidden_activation' = \"silu\""},
      {"head activation", [](json& j) { j["classifier_activation"] = "tanh"; }, "'classifier_activation' = \"tanh\""},
      {"pooling", [](json& j) { j["classifier_pooling"] = "max"; }, "'classifier_pooling' = \"max\""},
      {"rope scaling", [](json& j) { j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}}; }, "'rope_scaling'"},
      {"rope type", [](json& j) { j["rope_parameters"] = {{"full_attention", {{"rope_type", "yarn"}, {"rope_theta", 1e4}}}}; },
       "'rope_parameters.full_attention.rope_type' = \"yarn\""},
      {"layer types", [](json& j) { j["layer_types"] = {"full_attention", "full_attention", "sliding_attention", "full_attention"}; },
       "'layer_types'[1]"},
      {"head_dim", [](json& j) { j["head_dim"] = 16; }, "'head_dim' = 16"},
      {"window", [](json& j) { j["local_attention"] = 0; }, "'local_attention' = 0"},
      {"bias flag type", [](json& j) { j["norm_bias"] = "no"; }, "'norm_bias'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const EditedFolder folder(c.edit);
    expect_file_error([&] { open_bert_source(folder.dir.str()); }, folder.dir.file("config.json"), c.needle);
  }
  // A bias the config promises but the file lacks: the weights file and the fused tensor's name.
  const EditedFolder biased([](json& j) { j["attention_bias"] = true; });
  expect_file_error([&] { open_bert_source(biased.dir.str()); }, biased.dir.file("model.safetensors"),
                    ".bias'");
  expect_file_error([&] { open_bert_source(biased.dir.str()); }, biased.dir.file("model.safetensors"),
                    "'model.layers.0.attn.W");
}

}  // namespace
}  // namespace cibench
