// Quantisation recipes and pruning on BERT encoders: GPTQ / AWQ / SmoothQuant lower a
// BERT-shaped layer's output error relative to RTN (property over seeds, the LayerNorm fold
// included), the LayerNorm / value-row / ReLU folds are exact in FP32, every recipe output packs
// losslessly, the activation observer sees every site, and calibration/evaluation sentence
// slices are disjoint (overlap refused naming both).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/models/bert.h"
#include "engines/quant/awq.h"
#include "engines/quant/bert_recipes.h"
#include "engines/quant/gptq.h"
#include "engines/quant/recipe_grid.h"
#include "engines/quant/smoothquant.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

// ---- A BERT-shaped layer: LayerNorm output (a few channels with large gamma, as trained BERTs
// have) feeding a linear layer ----------------------------------------------------------------

struct LnLayer {
  int64_t rows = 0, cols = 0;
  std::vector<float> w;            // (rows, cols)
  std::vector<float> gamma, beta;  // (cols)
};

LnLayer make_layer(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  LnLayer L;
  L.rows = rows;
  L.cols = cols;
  L.w.resize(static_cast<size_t>(rows * cols));
  for (float& v : L.w) v = 0.04f * nd(rng);
  L.gamma.resize(static_cast<size_t>(cols));
  L.beta.resize(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) {
    L.gamma[j] = 1.f + 0.1f * nd(rng);
    L.beta[j] = 0.1f * nd(rng);
  }
  for (int64_t j = 3; j < cols; j += 37) {  // outlier channels
    L.gamma[j] = 12.f;
    L.beta[j] = -3.f;
  }
  return L;
}

// n pre-LayerNorm rows with correlated channels; `dist` fixes the mixing, `seed` the rows.
std::vector<float> pre_norm_rows(int64_t n, int64_t cols, uint32_t seed, uint32_t dist) {
  std::mt19937 mix(dist), rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int64_t latent = 16;
  std::vector<float> a(static_cast<size_t>(latent * cols));
  for (float& v : a) v = nd(mix) / 4.f;
  std::vector<float> z(static_cast<size_t>(n * cols)), u(static_cast<size_t>(latent));
  for (int64_t i = 0; i < n; ++i) {
    for (float& v : u) v = nd(rng);
    for (int64_t j = 0; j < cols; ++j) {
      float s = 0.5f * nd(rng);
      for (int64_t k = 0; k < latent; ++k) s += u[k] * a[k * cols + j];
      z[i * cols + j] = s;
    }
  }
  return z;
}

// LayerNorm of each row with the given gamma/beta (the engine's formula).
std::vector<float> layer_norm(const std::vector<float>& z, int64_t cols, const std::vector<float>& g,
                              const std::vector<float>& b) {
  std::vector<float> x(z.size());
  const int64_t n = static_cast<int64_t>(z.size()) / cols;
  for (int64_t i = 0; i < n; ++i) {
    const float* r = z.data() + i * cols;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += r[j];
    mean /= cols;
    for (int64_t j = 0; j < cols; ++j) var += (r[j] - mean) * (r[j] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / cols + 1e-12));
    for (int64_t j = 0; j < cols; ++j)
      x[i * cols + j] = (r[j] - static_cast<float>(mean)) * inv * g[j] + b[j];
  }
  return x;
}

std::vector<double> gram(const std::vector<float>& x, int64_t cols) {
  const int64_t n = static_cast<int64_t>(x.size()) / cols;
  std::vector<double> h(static_cast<size_t>(cols * cols), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const float* r = x.data() + i * cols;
    for (int64_t a = 0; a < cols; ++a) {
      const double ra = r[a];
      double* ha = h.data() + a * cols;
      for (int64_t b = 0; b < cols; ++b) ha[b] += ra * r[b];
    }
  }
  return h;
}

std::vector<float> abs_stat(const std::vector<float>& x, int64_t cols, bool mean) {
  const int64_t n = static_cast<int64_t>(x.size()) / cols;
  std::vector<float> s(static_cast<size_t>(cols), 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float a = std::fabs(x[i * cols + j]);
      s[j] = mean ? s[j] + a / static_cast<float>(n) : std::max(s[j], a);
    }
  return s;
}

struct Runner {
  ThreadPool pool{1};
  MatmulRunner mm{pool, active_isa()};
};

// Tests whose numbers go through the kernels (matmul runners, sessions) run at every ISA level:
// the recipes' claims must hold whichever kernels a host runs them with.
class BertRecipesAtIsa : public ::testing::TestWithParam<Isa> {};
INSTANTIATE_TEST_SUITE_P(AllIsas, BertRecipesAtIsa, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// BERT shapes: an attention projection (hidden x hidden) and ffn_in (4 hidden x hidden) of
// bert-mini. Errors are measured on the calibration rows and on held-out rows.
const std::pair<int64_t, int64_t> kShapes[] = {{256, 256}, {1024, 256}};

TEST_P(BertRecipesAtIsa, GptqLowersLayerOutputErrorVersusRtn) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  for (const char* f : {"int8", "int4_g32", "int4_g128"}) {
    const QuantGrid g = QuantGrid::for_format(f);
    for (auto [rows, cols] : kShapes)
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        const LnLayer L = make_layer(rows, cols, seed);
        const std::vector<float> x = layer_norm(pre_norm_rows(384, cols, 10 + seed, seed), cols, L.gamma, L.beta);
        const std::vector<float> xh = layer_norm(pre_norm_rows(384, cols, 20 + seed, seed), cols, L.gamma, L.beta);
        const std::vector<double> h = gram(x, cols);
        std::vector<float> rtn = L.w, q = L.w, back(L.w.size());
        g.round_matrix(rtn.data(), rows, cols);
        gptq_quantize(q.data(), rows, cols, h.data(), g, GptqOptions{});
        EXPECT_EQ(snap_to_format(g.format(), q.data(), rows, cols, back.data()), 0);
        const int64_t n = 384;
        EXPECT_LT(output_sq_error(L.w.data(), q.data(), rows, cols, x.data(), n, r.mm),
                  0.9 * output_sq_error(L.w.data(), rtn.data(), rows, cols, x.data(), n, r.mm))
            << f << " " << rows << "x" << cols << " seed " << seed;
        EXPECT_LT(output_sq_error(L.w.data(), q.data(), rows, cols, xh.data(), n, r.mm),
                  output_sq_error(L.w.data(), rtn.data(), rows, cols, xh.data(), n, r.mm))
            << f << " " << rows << "x" << cols << " seed " << seed << " (held out)";
      }
  }
}

// AWQ's scales, folded as the BERT recipe folds them (gamma/s, beta/s in the LayerNorm copy the
// projection reads), lower the held-out output error of int4.
TEST_P(BertRecipesAtIsa, AwqWithLayerNormFoldLowersLayerOutputErrorVersusRtn) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  for (const char* f : {"int4_g32", "int4_g128"}) {
    const QuantGrid g = QuantGrid::for_format(f);
    for (auto [rows, cols] : kShapes)
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        const LnLayer L = make_layer(rows, cols, seed);
        const std::vector<float> z = pre_norm_rows(256, cols, 30 + seed, seed);
        const std::vector<float> zh = pre_norm_rows(256, cols, 40 + seed, seed);
        const std::vector<float> x = layer_norm(z, cols, L.gamma, L.beta);
        const std::vector<float> xh = layer_norm(zh, cols, L.gamma, L.beta);
        const std::vector<float> mean = abs_stat(x, cols, true);
        const AwqResult a = awq_search({{L.w.data(), rows}}, cols, x.data(), 256, mean.data(), g,
                                       AwqOptions{}, {}, r.mm);
        EXPECT_GT(a.exponent, 0.0) << f << " seed " << seed;
        // W' = Q(W diag(s)) reading LN(z; gamma/s, beta/s), against W reading LN(z; gamma, beta).
        std::vector<float> q = L.w, rtn = L.w, g2 = L.gamma, b2 = L.beta;
        scale_columns(q.data(), rows, cols, a.scales.data());
        g.round_matrix(q.data(), rows, cols);
        for (int64_t j = 0; j < cols; ++j) {
          g2[j] /= a.scales[j];
          b2[j] /= a.scales[j];
        }
        g.round_matrix(rtn.data(), rows, cols);
        const std::vector<float> xh_folded = layer_norm(zh, cols, g2, b2);
        std::vector<float> y_ref(static_cast<size_t>(256 * rows)), y(y_ref.size()), y_rtn(y_ref.size());
        const FormatRow& f32 = format_by_name("f32");
        r.mm.reserve(256, cols);
        r.mm.matmul(pack_matrix("w", L.w.data(), rows, cols, f32), xh.data(), cols, 256, y_ref.data(), rows);
        r.mm.matmul(pack_matrix("q", q.data(), rows, cols, g.format()), xh_folded.data(), cols, 256, y.data(), rows);
        r.mm.matmul(pack_matrix("r", rtn.data(), rows, cols, g.format()), xh.data(), cols, 256, y_rtn.data(), rows);
        double e = 0, e_rtn = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          e += (y[i] - y_ref[i]) * (y[i] - y_ref[i]);
          e_rtn += (y_rtn[i] - y_ref[i]) * (y_rtn[i] - y_ref[i]);
        }
        EXPECT_LT(e, e_rtn) << f << " " << rows << "x" << cols << " seed " << seed << " (held out)";
      }
  }
}

// SmoothQuant through the real w8a8 kernels (per-token int8 activations): the LayerNorm copy
// with gamma/s, beta/s feeds W diag(s); the output error drops against plain w8a8.
TEST_P(BertRecipesAtIsa, SmoothQuantWithLayerNormFoldLowersW8A8ErrorVersusRtn) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  const FormatRow& w8 = format_by_name("w8a8");
  const QuantGrid g = QuantGrid::for_format("w8a8");
  for (auto [rows, cols] : kShapes)
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const LnLayer L = make_layer(rows, cols, seed);
      const std::vector<float> x = layer_norm(pre_norm_rows(256, cols, 50 + seed, seed), cols, L.gamma, L.beta);
      const std::vector<float> zh = pre_norm_rows(256, cols, 60 + seed, seed);
      const std::vector<float> xh = layer_norm(zh, cols, L.gamma, L.beta);
      const std::vector<float> absmax = abs_stat(x, cols, false);
      const std::vector<float> s = smoothquant_scales({{L.w.data(), rows}}, cols, absmax.data(), 0.5, {});
      std::vector<float> ws = L.w, wr = L.w, g2 = L.gamma, b2 = L.beta;
      scale_columns(ws.data(), rows, cols, s.data());
      g.round_matrix(ws.data(), rows, cols);
      g.round_matrix(wr.data(), rows, cols);
      for (int64_t j = 0; j < cols; ++j) {
        g2[j] /= s[j];
        b2[j] /= s[j];
      }
      const std::vector<float> xs = layer_norm(zh, cols, g2, b2);
      std::vector<float> y_ref(static_cast<size_t>(256 * rows)), y(y_ref.size()), y_rtn(y_ref.size());
      r.mm.reserve(256, cols);
      r.mm.matmul(pack_matrix("w", L.w.data(), rows, cols, format_by_name("f32")), xh.data(), cols, 256, y_ref.data(), rows);
      r.mm.matmul(pack_matrix("s", ws.data(), rows, cols, w8), xs.data(), cols, 256, y.data(), rows);
      r.mm.matmul(pack_matrix("r", wr.data(), rows, cols, w8), xh.data(), cols, 256, y_rtn.data(), rows);
      double e = 0, e_rtn = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        e += (y[i] - y_ref[i]) * (y[i] - y_ref[i]);
        e_rtn += (y_rtn[i] - y_ref[i]) * (y_rtn[i] - y_ref[i]);
      }
      EXPECT_LT(e, 0.8 * e_rtn) << rows << "x" << cols << " seed " << seed;
    }
}

// ---- Whole encoders -------------------------------------------------------------------------

// Seeded random ids of random lengths ([CLS] ... [SEP]).
std::vector<std::vector<int>> random_sequences(int n, int vocab, uint32_t seed, int max_len = 24) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int>> out;
  for (int i = 0; i < n; ++i) {
    const int len = 4 + static_cast<int>(rng() % static_cast<uint32_t>(max_len - 3));
    std::vector<int> q(static_cast<size_t>(len));
    for (int& id : q) id = 1000 + static_cast<int>(rng() % static_cast<uint32_t>(vocab - 1000));
    q.front() = 101;
    q.back() = 102;
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<float> logits_of(const BertModel& m, const std::vector<std::vector<int>>& seqs) {
  std::vector<float> lg;
  bert_predict(m, seqs, 1, &lg);
  return lg;
}

// The observer sees every site with the right widths; the last layer's post-attention sites see
// only the [CLS] rows.
TEST(BertRecipes, ObserverSeesEverySite) {
  const BertSource src = open_bert_source("synthetic:bert-tiny@11");
  const auto seqs = random_sequences(6, src.config.vocab_size, 1);
  int64_t tokens = 0;
  for (const auto& q : seqs) tokens += static_cast<int64_t>(q.size());
  CalibrationOptions co;
  co.hessians = true;
  const CalibrationStats st = collect_bert_calibration(src, seqs, co, 3);
  const int64_t h = src.config.hidden, f = src.config.intermediate;
  for (int l = 0; l < src.config.n_layers; ++l) {
    const std::string p = str("layers.", l, ".");
    const bool last = l + 1 == src.config.n_layers;
    EXPECT_EQ(st.site(p + "attn_in").cols, h);
    EXPECT_EQ(st.site(p + "attn_in").rows_seen, tokens);
    EXPECT_EQ(st.site(p + "attn_out").cols, h);
    EXPECT_EQ(st.site(p + "ffn_in").cols, h);
    EXPECT_EQ(st.site(p + "ffn_out").cols, f);
    const int64_t post = last ? static_cast<int64_t>(seqs.size()) : tokens;
    EXPECT_EQ(st.site(p + "attn_out").rows_seen, post) << p;
    EXPECT_EQ(st.site(p + "ffn_out").rows_seen, post) << p;
    EXPECT_EQ(st.site(p + "attn_in").xtx.size(), static_cast<size_t>(h * h));
    // GELU output is > -0.17 everywhere; the LayerNorm output is not all zero.
    EXPECT_GT(*std::max_element(st.site(p + "attn_in").absmax.begin(), st.site(p + "attn_in").absmax.end()), 0.f);
  }
  EXPECT_EQ(st.sites().size(), static_cast<size_t>(4 * src.config.n_layers));
}

// Scales applied and folded but no quantisation: the logits of the real bert-tiny-sst2 are
// unchanged (1e-4), for smoothquant (LayerNorm copies + value rows) and awq.
TEST(BertRecipes, LayerNormFoldIsExactInFp32OnBertTiny) {
  const char* kDir = "models/bert-tiny-sst2";
  CIBENCH_REQUIRE_SHARED(std::string(kDir) + "/ref/val_token_ids.jsonl");
  const std::string dir = test::shared_path(kDir);
  std::vector<std::vector<int>> ids;
  std::istringstream in(read_file(dir + "/ref/val_token_ids.jsonl"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ids.push_back(nlohmann::json::parse(line).at("ids").get<std::vector<int>>());
  ASSERT_GE(ids.size(), 160u);
  const std::vector<std::vector<int>> calib(ids.begin(), ids.begin() + 64), eval(ids.begin() + 64, ids.begin() + 160);
  const BertSource src = open_bert_source(dir);
  const CalibrationStats st = collect_bert_calibration(src, calib, CalibrationOptions{}, 5);
  const std::vector<float> ref = logits_of(build_bert(src), eval);
  for (const char* recipe : {"smoothquant", "awq"}) {
    RecipeSpec spec;
    spec.recipe = recipe;
    spec.format = recipe == std::string("awq") ? "int4_g32" : "w8a8";
    if (spec.recipe == "smoothquant") spec.params["alpha"] = 0.8;  // large scales
    spec.scale_only = true;
    const BertRecipeOutput out = apply_bert_recipe(src, spec, &st, 1);
    EXPECT_EQ(out.build.format, "f32");
    // The folds happened: LayerNorm copies exist and differ from the LayerNorms, value rows moved.
    double moved = 0;
    for (int l = 0; l < src.config.n_layers; ++l) {
      const std::string p = str("layers.", l, ".");
      const auto a = out.source.tensor(p + "ffn_in_norm.weight").read_all();
      const auto b = src.tensor(p + "attn_norm.weight").read_all();
      for (size_t j = 0; j < a.size(); ++j) moved += std::fabs(a[j] - b[j]);
      ASSERT_TRUE(out.source.tensors.count(p + "qkv_in_norm.bias")) << p;
    }
    if (spec.recipe == "smoothquant") {
      EXPECT_GT(moved, 1.0) << recipe;
    }
    ASSERT_EQ(out.unscaled_sites.size(), static_cast<size_t>(src.config.n_layers));
    EXPECT_EQ(out.unscaled_sites[0], "layers.0.ffn_out");
    const std::vector<float> got = logits_of(build_bert(out.source, out.build), eval);
    ASSERT_EQ(got.size(), ref.size());
    double max_err = 0;
    for (size_t i = 0; i < got.size(); ++i) max_err = std::max(max_err, static_cast<double>(std::fabs(got[i] - ref[i])));
    EXPECT_LT(max_err, 1e-4) << recipe;
    // The residual stream keeps the original LayerNorm: folding into it instead is not exact.
    if (spec.recipe == "smoothquant") {
      std::map<std::string, MemTensor> t;
      for (const auto& [name, ts] : out.source.tensors) {
        if (name.find("_in_norm.") != std::string::npos) continue;
        t[name] = MemTensor{ts.rows, ts.cols, ts.read_all()};
      }
      for (int l = 0; l < src.config.n_layers; ++l) {
        const std::string p = str("layers.", l, ".");
        const std::string prev = l == 0 ? "embeddings.norm" : str("layers.", l - 1, ".ffn_norm");
        for (const char* part : {".weight", ".bias"}) {
          t[p + "attn_norm" + part].data = out.source.tensor(p + "ffn_in_norm" + part).read_all();
          t[prev + part].data = out.source.tensor(p + "qkv_in_norm" + part).read_all();
        }
      }
      auto store = std::make_shared<std::map<std::string, MemTensor>>(std::move(t));
      BertSource naive = src;
      for (auto& [name, m] : *store) {
        const MemTensor* mp = &m;
        naive.tensors[name].read = [mp](int64_t r0, int64_t n, float* dst) {
          std::copy(mp->data.begin() + r0 * mp->cols, mp->data.begin() + (r0 + n) * mp->cols, dst);
        };
      }
      naive.keepalive = store;
      const std::vector<float> bad = logits_of(build_bert(naive), eval);
      double naive_err = 0;
      for (size_t i = 0; i < bad.size(); ++i) naive_err = std::max(naive_err, static_cast<double>(std::fabs(bad[i] - ref[i])));
      EXPECT_GT(naive_err, 1e-2) << "folding into the residual LayerNorm should change the logits";
    }
  }
}

// Under ReLU the feed-forward output's scales fold into ffn_in's rows and bias (exact).
TEST(BertRecipes, ReluFeedForwardFoldIsExact) {
  BertSource src = open_bert_source("synthetic:distilbert-mini@2");
  src.config.activation = BertActivation::relu;
  const auto calib = random_sequences(24, src.config.vocab_size, 7);
  const auto eval = random_sequences(16, src.config.vocab_size, 8);
  const CalibrationStats st = collect_bert_calibration(src, calib, CalibrationOptions{}, 5);
  RecipeSpec spec;
  spec.recipe = "smoothquant";
  spec.format = "w8a8";
  spec.scale_only = true;
  const BertRecipeOutput out = apply_bert_recipe(src, spec, &st, 1);
  EXPECT_TRUE(out.unscaled_sites.empty());
  const auto a = out.source.tensor("layers.0.ffn_in.bias").read_all();
  const auto b = src.tensor("layers.0.ffn_in.bias").read_all();
  EXPECT_NE(a, b);
  const std::vector<float> ref = logits_of(build_bert(src), eval), got = logits_of(build_bert(out.source, out.build), eval);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-4) << i;
}

// Every recipe's projections lie on the format grid: packing is lossless (unpacking the built
// model returns the recipe's values bit for bit), for dense and pruned variants.
TEST(BertRecipes, EveryRecipeOutputPacksLosslessly) {
  const BertSource src = open_bert_source("synthetic:bert-tiny@21");
  const auto calib = random_sequences(24, src.config.vocab_size, 9);
  const CalibrationStats st = collect_bert_calibration(src, calib, CalibrationOptions{}, 5);
  struct V {
    const char* recipe;
    const char* format;
    double sparsity;
  };
  const V variants[] = {{"rtn", "int8", 0},         {"rtn", "w8a8", 0},          {"rtn", "int4_g32", 0},
                        {"rtn", "int4_g64", 0},     {"rtn", "int4_g128", 0},     {"gptq", "int8", 0},
                        {"gptq", "int4_g32", 0},    {"gptq", "int4_g128", 0},    {"smoothquant", "w8a8", 0},
                        {"awq", "int4_g32", 0},     {"awq", "int4_g64", 0},      {"rtn", "f32", 0.7},
                        {"rtn", "f32_sparse", 0.7}, {"rtn", "int8_sparse", 0.7}, {"rtn", "int8", 0.5},
                        {"gptq", "int8_sparse", 0.8}};
  for (const V& v : variants) {
    RecipeSpec spec;
    spec.recipe = v.recipe;
    spec.format = v.format;
    spec.sparsity = v.sparsity;
    const std::string what = spec.recipe + ":" + spec.format + " sparsity " + std::to_string(v.sparsity);
    const BertRecipeOutput out = apply_bert_recipe(src, spec, &st, 1);
    EXPECT_EQ(out.off_grid, 0) << what;
    EXPECT_EQ(out.matrices.size(), static_cast<size_t>(6 * src.config.n_layers)) << what;
    const BertModel m = build_bert(out.source, out.build);
    int64_t zeros = 0, want_zeros = 0;
    for (int l = 0; l < src.config.n_layers; ++l) {
      const std::string p = str("layers.", l, ".");
      const BertLayer& L = m.layers[l];
      auto expect_same = [&](const WeightMatrix& w, std::vector<std::string> names) {
        std::vector<float> want;
        for (const auto& n : names) {
          const auto t = out.source.tensor(p + n + ".weight").read_all();
          want.insert(want.end(), t.begin(), t.end());
        }
        std::vector<float> got(want.size());
        unpack_matrix(w, got.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << what << " " << p << names[0];
        for (float x : want) zeros += x == 0.f;
        for (const auto& n : names) {  // per row round(sparsity * cols) weights are pruned
          const TensorSource& t = out.source.tensor(p + n + ".weight");
          want_zeros += t.rows * std::llround(v.sparsity * static_cast<double>(t.cols));
        }
      };
      expect_same(L.wqkv, {"query", "key", "value"});
      expect_same(L.wo, {"attn_out"});
      expect_same(L.w_in, {"ffn_in"});
      expect_same(L.w_out, {"ffn_out"});
    }
    EXPECT_GE(zeros, want_zeros) << what;
  }
}

// GPTQ on synthetic encoders, through apply_bert_recipe: every projection's calibration output
// error is below RTN's, dense and pruned (the mask chosen first, the pruning error compensated).
TEST(BertRecipes, GptqBeatsRtnOnEveryProjectionOfAnEncoder) {
  for (const char* model : {"synthetic:bert-tiny@31", "synthetic:distilbert-mini@32"}) {
    const BertSource src = open_bert_source(model);
    const auto calib = random_sequences(48, src.config.vocab_size, 10, 32);
    const CalibrationStats st = collect_bert_calibration(src, calib, CalibrationOptions{}, 5);
    for (auto [format, sparsity] : {std::pair{"int4_g32", 0.0}, std::pair{"int8_sparse", 0.7}}) {
      RecipeSpec spec;
      spec.recipe = "gptq";
      spec.format = format;
      spec.sparsity = sparsity;
      const BertRecipeOutput out = apply_bert_recipe(src, spec, &st, 1);
      for (const RecipeMatrixReport& r : out.matrices) {
        ASSERT_GE(r.rel_err, 0) << r.name;
        EXPECT_LT(r.rel_err, r.rtn_rel_err) << model << " " << format << " " << r.name;
      }
    }
  }
}

TEST(BertRecipes, RecipesNeedCalibrationAndGridFormats) {
  const BertSource src = open_bert_source("synthetic:bert-tiny@1");
  RecipeSpec spec;
  spec.recipe = "gptq";
  spec.format = "int8";
  EXPECT_THROW(apply_bert_recipe(src, spec, nullptr), Error);
  spec.recipe = "rtn";
  spec.format = "bf16";
  try {
    apply_bert_recipe(src, spec, nullptr);
    FAIL() << "bf16 has no grid";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bf16'"), std::string::npos) << e.what();
  }
  spec.format = "f32_sparse";
  spec.recipe = "awq";
  EXPECT_THROW(apply_bert_recipe(src, spec, nullptr), Error);
}

// ---- Sentence slices ------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("cibench_bert_recipes_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p) << text;
    return p;
  }
};

TEST(BertRecipes, SentenceSlicesAreDisjointAndOverlapIsRefusedNamingBoth) {
  TempDir tmp;
  std::string tsv = "sentence\tlabel\n";
  for (int i = 0; i < 40; ++i) tsv += "sentence number " + std::to_string(i) + " .\t" + std::to_string(i % 2) + "\n";
  const std::string f = tmp.write("val.tsv", tsv);

  const LoadedSentences c = load_sentences(SentenceSlice::parse(f + ":perm=7:0-12"));
  const LoadedSentences e = load_sentences(SentenceSlice::parse(f + ":perm=7:12-40"));
  EXPECT_EQ(c.items.size(), 12u);
  EXPECT_EQ(e.items.size(), 28u);
  EXPECT_NO_THROW(check_disjoint(c, e));
  std::set<int64_t> rows(c.rows.begin(), c.rows.end());
  rows.insert(e.rows.begin(), e.rows.end());
  EXPECT_EQ(rows.size(), 40u);  // together they cover the file once
  // The permutation is seeded: same seed same rows, other seed other rows; not the file order.
  EXPECT_EQ(load_sentences(SentenceSlice::parse(f + ":perm=7:0-12")).rows, c.rows);
  EXPECT_NE(load_sentences(SentenceSlice::parse(f + ":perm=8:0-12")).rows, c.rows);
  EXPECT_NE(c.rows, load_sentences(SentenceSlice::parse(f + ":0-12")).rows);
  EXPECT_EQ(e.slice.spec(), f + ":perm=7:12-40");
  EXPECT_NE(c.describe().find("sentences=12"), std::string::npos);
  EXPECT_EQ(e.items[0].label, static_cast<int>(e.rows[0] % 2));

  auto refused = [&](const std::string& a, const std::string& b) {
    const LoadedSentences x = load_sentences(SentenceSlice::parse(a));
    const LoadedSentences y = load_sentences(SentenceSlice::parse(b));
    try {
      check_disjoint(x, y);
      ADD_FAILURE() << a << " and " << b << " overlap but were accepted";
    } catch (const Error& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find(x.slice.spec()), std::string::npos) << m;
      EXPECT_NE(m.find(y.slice.spec()), std::string::npos) << m;
    }
  };
  refused(f + ":perm=7:0-12", f + ":perm=7:10-40");  // overlapping ranges of one shuffle
  refused(f + ":0-20", f + ":perm=7:12-40");         // file order vs a shuffle
  refused(f, f + ":39-40");
  // The same sentence in another file is caught by its text.
  const std::string g = tmp.write("other.tsv", "label\tsentence\n1\tsentence number 5 .\n");
  refused(f + ":0-10", g);
  EXPECT_NO_THROW(check_disjoint(load_sentences(SentenceSlice::parse(f + ":10-40")),
                                 load_sentences(SentenceSlice::parse(g))));

  EXPECT_THROW(load_sentences(SentenceSlice::parse(f + ":30-41")), FileError);
  EXPECT_THROW(SentenceSlice::parse(f + ":5-5"), Error);
  EXPECT_THROW(SentenceSlice::parse(f + ":perm=x:0-5"), Error);
  EXPECT_THROW(read_sentence_tsv(tmp.write("bad.tsv", "foo\tbar\n1\t2\n")), FileError);
  EXPECT_THROW(read_sentence_tsv(tmp.write("bad2.tsv", "sentence\tlabel\nabc\tx\n")), FileError);
}

}  // namespace
}  // namespace cibench
