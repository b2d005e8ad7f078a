// Quantisation recipes: outputs on the format grid, each recipe lowering the error it targets
// relative to round-to-nearest (property tests over seeds), GPTQ exact on an exact grid,
// calibration slices, quantised model files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/models/llama.h"
#include "engines/models/llama_reference.h"
#include "engines/quant/quantized_file.h"
#include "engines/models/tokenizer.h"
#include "engines/quant/awq.h"
#include "engines/quant/calibration.h"
#include "engines/quant/gptq.h"
#include "engines/core/prune.h"
#include "engines/quant/recipe.h"
#include "engines/quant/recipe_eval.h"
#include "engines/quant/recipe_grid.h"
#include "engines/quant/smoothquant.h"
#include "harness/lib/scenario.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

const char* kGridFormats[] = {"int8",          "w8a8",          "w8a7",          "w8a8_static",   "int4_g32",      "int4_g64",
                              "int4_g128",     "int4_g32_asym", "int4_g64_asym", "int4_g128_asym"};

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed, float scale = 0.05f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = nd(rng);
  return w;
}

// Activations with correlated channels and a few large-magnitude outlier channels, as LLM
// activations have: X = Z A + outliers.
// `dist` fixes the distribution (mixing matrix), `seed` the rows drawn from it.
std::vector<float> activations(int64_t n, int64_t cols, uint32_t seed, uint32_t dist = 0) {
  std::mt19937 mix(dist), rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int64_t latent = std::max<int64_t>(4, cols / 8);
  std::vector<float> a(static_cast<size_t>(latent * cols));
  for (float& v : a) v = nd(mix);
  std::vector<float> gain(static_cast<size_t>(cols), 1.f);
  for (int64_t j = 0; j < cols; j += 17) gain[j] = 20.f;  // outlier channels
  std::vector<float> x(static_cast<size_t>(n * cols));
  std::vector<float> z(static_cast<size_t>(latent));
  for (int64_t i = 0; i < n; ++i) {
    for (float& v : z) v = nd(rng);
    for (int64_t j = 0; j < cols; ++j) {
      float s = 0.3f * nd(rng);
      for (int64_t k = 0; k < latent; ++k) s += z[k] * a[k * cols + j] / std::sqrt(static_cast<float>(latent));
      x[i * cols + j] = s * gain[j];
    }
  }
  return x;
}

std::vector<double> gram(const std::vector<float>& x, int64_t n, int64_t cols) {
  std::vector<double> h(static_cast<size_t>(cols * cols), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < cols; ++a)
      for (int64_t b = 0; b < cols; ++b) h[a * cols + b] += static_cast<double>(x[i * cols + a]) * x[i * cols + b];
  return h;
}

struct Runner {
  ThreadPool pool{1};
  MatmulRunner mm{pool, active_isa()};  // the level the test runs at (IsaScope)
};

// Tests whose numbers go through the kernels (matmul runners, sessions) run at every ISA level:
// the recipes' claims must hold whichever kernels a host runs them with.
class RecipesAtIsa : public ::testing::TestWithParam<Isa> {};
INSTANTIATE_TEST_SUITE_P(AllIsas, RecipesAtIsa, ::testing::ValuesIn(all_isas()), test::isa_param_name);

TEST(RecipeGrid, RoundToNearestLiesOnEveryFormatGrid) {
  for (const char* f : kGridFormats) {
    for (int64_t cols : {64, 172, 100}) {  // ragged groups included
      const QuantGrid g = QuantGrid::for_format(f);
      std::vector<float> w = random_matrix(9, cols, 7 + static_cast<uint32_t>(cols));
      w[5] = 0.f;
      std::vector<float> q = w, back(w.size());
      g.round_matrix(q.data(), 9, cols);
      EXPECT_EQ(snap_to_format(g.format(), q.data(), 9, cols, back.data()), 0) << f << " cols " << cols;
      // It is the format's own round-to-nearest (int8 scales may differ by an ulp).
      std::vector<float> ref(w.size());
      snap_to_format(g.format(), w.data(), 9, cols, ref.data());
      for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(q[i], ref[i], 1e-6f * (1 + std::fabs(ref[i]))) << f;
    }
  }
}

TEST(RecipeGrid, UnsupportedFormatIsRefusedByName) {
  try {
    QuantGrid::for_format("bf16");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bf16'"), std::string::npos) << e.what();
  }
}

TEST(Gptq, WeightsAlreadyOnTheGridAreExact) {
  for (const char* f : {"int8", "int4_g32", "int4_g64_asym"}) {
    for (bool act_order : {false, true}) {
      const QuantGrid g = QuantGrid::for_format(f);
      std::vector<float> w = random_matrix(16, 128, 3);
      g.round_matrix(w.data(), 16, 128);
      const std::vector<float> x = activations(256, 128, 4);
      const std::vector<double> h = gram(x, 256, 128);
      std::vector<float> q = w;
      GptqOptions o;
      o.act_order = act_order;
      o.block = 32;
      gptq_quantize(q.data(), 16, 128, h.data(), g, o);
      for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(q[i], w[i]) << f << " act_order " << act_order << " at " << i;
    }
  }
}

// Property: on correlated activations with outlier channels, GPTQ lowers ||X (W_hat - W)^T||
// relative to RTN on the calibration rows and on held-out rows of the same distribution.
TEST_P(RecipesAtIsa, GptqLowersOutputErrorVersusRtn) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  for (const char* f : {"int4_g32", "int4_g64_asym", "int8"}) {
    const QuantGrid g = QuantGrid::for_format(f);
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const int64_t rows = 24, cols = 128, n = 512;
      const std::vector<float> w = random_matrix(rows, cols, seed);
      const std::vector<float> x = activations(n, cols, 100 + seed, seed), xh = activations(n, cols, 200 + seed, seed);
      const std::vector<double> h = gram(x, n, cols);
      std::vector<float> rtn = w, gq = w, back(w.size());
      g.round_matrix(rtn.data(), rows, cols);
      for (bool act_order : {false, true}) {
        gq = w;
        GptqOptions o;
        o.act_order = act_order;
        gptq_quantize(gq.data(), rows, cols, h.data(), g, o);
        EXPECT_EQ(snap_to_format(g.format(), gq.data(), rows, cols, back.data()), 0) << f;
        const double e_rtn = output_sq_error(w.data(), rtn.data(), rows, cols, x.data(), n, r.mm);
        const double e_gq = output_sq_error(w.data(), gq.data(), rows, cols, x.data(), n, r.mm);
        const double h_rtn = output_sq_error(w.data(), rtn.data(), rows, cols, xh.data(), n, r.mm);
        const double h_gq = output_sq_error(w.data(), gq.data(), rows, cols, xh.data(), n, r.mm);
        EXPECT_LT(e_gq, e_rtn) << f << " seed " << seed << " act_order " << act_order;
        EXPECT_LT(h_gq, h_rtn) << f << " seed " << seed << " act_order " << act_order << " (held out)";
      }
    }
  }
}

TEST(Gptq, PrunedWeightsStayZero) {
  const QuantGrid g = QuantGrid::for_format("int4_g32");
  std::vector<float> w = random_matrix(8, 64, 5);
  std::vector<uint8_t> keep(w.size(), 1);
  for (size_t i = 0; i < w.size(); i += 3) {
    w[i] = 0.f;
    keep[i] = 0;
  }
  const std::vector<float> x = activations(256, 64, 6);
  const std::vector<double> h = gram(x, 256, 64);
  gptq_quantize(w.data(), 8, 64, h.data(), g, GptqOptions{}, keep.data());
  for (size_t i = 0; i < w.size(); i += 3) EXPECT_EQ(w[i], 0.f) << i;
  std::vector<float> back(w.size());
  EXPECT_EQ(snap_to_format(g.format(), w.data(), 8, 64, back.data()), 0);
}

// Property: AWQ's searched scaling never does worse than RTN on the calibration rows (a = 0 is
// RTN) and, with outlier channels, does better there and on held-out rows.
TEST_P(RecipesAtIsa, AwqLowersOutputErrorVersusRtn) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  for (const char* f : {"int4_g32", "int4_g128", "int4_g64_asym"}) {
    const QuantGrid g = QuantGrid::for_format(f);
    double held_rtn = 0, held_awq = 0;
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const int64_t rows = 32, cols = 128, n = 256;
      const std::vector<float> w = random_matrix(rows, cols, seed);
      const std::vector<float> x = activations(n, cols, 300 + seed, seed), xh = activations(n, cols, 400 + seed, seed);
      std::vector<float> mean(static_cast<size_t>(cols), 0.f);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < cols; ++j) mean[j] += std::fabs(x[i * cols + j]) / n;
      const AwqResult a = awq_search({{w.data(), rows}}, cols, x.data(), n, mean.data(), g, AwqOptions{}, {}, r.mm);
      EXPECT_LT(a.err, a.rtn_err) << f << " seed " << seed;
      EXPECT_GT(a.exponent, 0.0) << f << " seed " << seed;
      std::vector<float> q = w, rtn = w, back(w.size());
      scale_columns(q.data(), rows, cols, a.scales.data());
      g.round_matrix(q.data(), rows, cols);
      EXPECT_EQ(snap_to_format(g.format(), q.data(), rows, cols, back.data()), 0);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) q[i * cols + j] /= a.scales[j];
      g.round_matrix(rtn.data(), rows, cols);
      EXPECT_NEAR(output_sq_error(w.data(), q.data(), rows, cols, x.data(), n, r.mm), a.err, 1e-3 * a.err);
      held_rtn += output_sq_error(w.data(), rtn.data(), rows, cols, xh.data(), n, r.mm);
      held_awq += output_sq_error(w.data(), q.data(), rows, cols, xh.data(), n, r.mm);
    }
    EXPECT_LT(held_awq, held_rtn) << f << " (held out, summed over seeds)";
  }
}

// Property: with per-token int8 activations (the w8a8 kernels themselves), smoothing lowers the
// output error when activations have outlier channels.
TEST_P(RecipesAtIsa, SmoothQuantLowersW8A8OutputErrorVersusRtn) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  const FormatRow& w8 = format_by_name("w8a8");
  const QuantGrid g = QuantGrid::for_format("w8a8");
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const int64_t rows = 48, cols = 96, n = 128;
    const std::vector<float> w = random_matrix(rows, cols, seed);
    const std::vector<float> x = activations(n, cols, 500 + seed);
    std::vector<float> absmax(static_cast<size_t>(cols), 0.f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < cols; ++j) absmax[j] = std::max(absmax[j], std::fabs(x[i * cols + j]));
    auto w8a8_error = [&](const std::vector<float>& s) {
      std::vector<float> ws = w, xs = x;
      scale_columns(ws.data(), rows, cols, s.data());
      g.round_matrix(ws.data(), rows, cols);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < cols; ++j) xs[i * cols + j] /= s[j];
      const WeightMatrix m = pack_matrix("w", ws.data(), rows, cols, w8);
      std::vector<float> y(static_cast<size_t>(n * rows)), yref(y.size());
      r.mm.reserve(n, cols);
      r.mm.matmul(m, xs.data(), cols, n, y.data(), rows);
      const WeightMatrix f = pack_matrix("w", w.data(), rows, cols, format_by_name("f32"));
      r.mm.matmul(f, x.data(), cols, n, yref.data(), rows);
      double e = 0;
      for (size_t i = 0; i < y.size(); ++i) e += (y[i] - yref[i]) * (y[i] - yref[i]);
      return e;
    };
    const std::vector<float> ones(static_cast<size_t>(cols), 1.f);
    const std::vector<float> s = smoothquant_scales({{w.data(), rows}}, cols, absmax.data(), 0.5, {});
    EXPECT_LT(w8a8_error(s), w8a8_error(ones)) << "seed " << seed;
  }
}

// Static w8a8: one calibrated activation scale per matrix (max |x| over calibration rows / 127),
// values beyond it clamped. The kernels see exactly round(x / scale) clamped to +-127.
TEST_P(RecipesAtIsa, SmoothQuantStaticActivationScaleQuantisesAndClamps) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  const FormatRow& f = format_by_name("w8a8_static");
  ASSERT_NE(f.quantize_act_static, nullptr);
  const int64_t rows = 8, cols = 40;
  const std::vector<float> w = random_matrix(rows, cols, 3);
  WeightMatrix m = pack_matrix("w", w.data(), rows, cols, f);
  std::vector<float> wq(w.size());
  unpack_matrix(m, wq.data());
  std::vector<float> x = random_matrix(1, cols, 4, 1.f);
  x[5] = 50.f;  // far beyond the calibrated range: clamped to 127 * scale
  m.act_scale = 0.02f;
  std::vector<float> y(static_cast<size_t>(rows));
  r.mm.matvec(m, x.data(), y.data());
  for (int64_t i = 0; i < rows; ++i) {
    double want = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const float q = std::clamp(std::nearbyint(x[j] / 0.02f), -127.f, 127.f);
      want += static_cast<double>(wq[i * cols + j]) * q * 0.02f;
    }
    EXPECT_NEAR(y[i], want, 1e-4 * (1 + std::fabs(want))) << "row " << i;
  }
  // Uncalibrated (act_scale 0): per-token scales, exactly as w8a8.
  m.act_scale = 0.f;
  const WeightMatrix d = pack_matrix("w", w.data(), rows, cols, format_by_name("w8a8"));
  std::vector<float> yd(static_cast<size_t>(rows)), ys(yd.size());
  r.mm.matvec(m, x.data(), ys.data());
  r.mm.matvec(d, x.data(), yd.data());
  EXPECT_EQ(ys, yd);
}

TEST_P(RecipesAtIsa, SmoothQuantStaticW8A8SmoothingBeatsRtnOnHeldOutRows) {
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Runner r;
  const FormatRow& f = format_by_name("w8a8_static");
  const QuantGrid g = QuantGrid::for_format("w8a8_static");
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const int64_t rows = 48, cols = 96, n = 128;
    const std::vector<float> w = random_matrix(rows, cols, seed);
    const std::vector<float> xc = activations(n, cols, 600 + seed, seed);  // calibration
    const std::vector<float> xe = activations(n, cols, 700 + seed, seed);  // held out
    std::vector<float> absmax(static_cast<size_t>(cols), 0.f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < cols; ++j) absmax[j] = std::max(absmax[j], std::fabs(xc[i * cols + j]));
    auto static_error = [&](const std::vector<float>& s) {
      std::vector<float> ws = w, xs = xe;
      scale_columns(ws.data(), rows, cols, s.data());
      g.round_matrix(ws.data(), rows, cols);
      float amax = 0.f;
      for (int64_t j = 0; j < cols; ++j) amax = std::max(amax, absmax[j] / s[j]);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < cols; ++j) xs[i * cols + j] /= s[j];
      WeightMatrix m = pack_matrix("w", ws.data(), rows, cols, f);
      std::vector<float> back(ws.size());
      unpack_matrix(m, back.data());
      EXPECT_EQ(back, ws) << "recipe output must pack losslessly";
      m.act_scale = amax / 127.f;
      std::vector<float> y(static_cast<size_t>(n * rows)), yref(y.size());
      r.mm.reserve(n, cols);
      r.mm.matmul(m, xs.data(), cols, n, y.data(), rows);
      const WeightMatrix ref = pack_matrix("w", w.data(), rows, cols, format_by_name("f32"));
      r.mm.matmul(ref, xe.data(), cols, n, yref.data(), rows);
      double e = 0;
      for (size_t i = 0; i < y.size(); ++i) e += (y[i] - yref[i]) * (y[i] - yref[i]);
      return e;
    };
    const std::vector<float> ones(static_cast<size_t>(cols), 1.f);
    const std::vector<float> s = smoothquant_scales({{w.data(), rows}}, cols, absmax.data(), 0.5, {});
    const double e_sq = static_error(s), e_rtn = static_error(ones);
    EXPECT_LT(e_sq, e_rtn) << "seed " << seed;
  }
}

TEST(SmoothQuant, TiedChannelsShareOneScale) {
  const std::vector<float> w = random_matrix(4, 8, 1);
  std::vector<float> absmax = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> tie = {0, 1, 2, 3, 0, 1, 2, 3};
  const std::vector<float> s = smoothquant_scales({{w.data(), 4}}, 8, absmax.data(), 0.5, tie);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(s[j], s[j + 4]);
}

// ---- model level -------------------------------------------------------------------------------

const char* kStories = "models/stories260K/stories260K.bin";
const char* kTok = "models/stories260K/tok512.bin";
const char* kText = "data/tinystories-validation-1000/tinystories_val_first1000.txt";

struct Fixture {
  LlamaSource src;
  std::unique_ptr<Tokenizer> tok;
  CalibrationSet calib;
  CalibrationStats stats;
};

Fixture& stories() {
  static Fixture* f = [] {
    LlamaSource src = open_llama_source(test::shared_path(kStories));
    auto tok = open_tokenizer(test::shared_path(kTok), src.config.vocab_size);
    const LoadedSlice s = load_slice(TextSlice::parse(test::shared_path(kText) + ":0-50"));
    CalibrationSet c = make_calibration(s, *tok, 16, 64, 7);
    CalibrationOptions o;
    o.sample_rows = 256;
    CalibrationStats st = collect_calibration(src, c, o);
    return new Fixture{std::move(src), std::move(tok), std::move(c), std::move(st)};
  }();
  return *f;
}

TEST_P(RecipesAtIsa, ChannelScalingFoldsExactlyIntoNormsAndRows) {
  CIBENCH_REQUIRE_SHARED(kStories);
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  Fixture& f = stories();
  const LlamaModel ref = build_llama(f.src);
  const std::vector<int> toks = f.calib.windows[0];
  for (const char* recipe : {"smoothquant", "awq"}) {
    RecipeSpec spec;
    spec.recipe = recipe;
    spec.format = "int4_g32";
    spec.scale_only = true;
    const RecipeOutput out = apply_recipe(f.src, spec, &f.stats);
    const LlamaModel m = build_llama(out.source);
    SessionOptions so;
    LlamaSession a(ref, so), b(m, so);
    const int vocab = ref.config.vocab_size;
    std::vector<float> la(toks.size() * vocab), lb(la.size());
    a.forward_all(toks.data(), static_cast<int>(toks.size()), la.data());
    b.forward_all(toks.data(), static_cast<int>(toks.size()), lb.data());
    double maxd = 0, maxa = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      maxd = std::max(maxd, static_cast<double>(std::fabs(la[i] - lb[i])));
      maxa = std::max(maxa, static_cast<double>(std::fabs(la[i])));
    }
    EXPECT_LT(maxd, 1e-4 * maxa) << recipe;
  }
}

TEST(Recipes, EveryRecipeOutputsExactlyPackableWeights) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  for (const char* recipe : {"rtn", "smoothquant", "awq", "gptq"}) {
    for (const char* fmt : {"int4_g32", "int4_g64_asym", "int8", "w8a8"}) {
      RecipeSpec spec;
      spec.recipe = recipe;
      spec.format = fmt;
      if (std::string(recipe) == "awq") spec.set("grid=4");
      const RecipeOutput out = apply_recipe(f.src, spec, &f.stats);
      EXPECT_EQ(out.off_grid, 0) << recipe << " " << fmt;
      // pack -> unpack of every projection reproduces the recipe's output.
      const LlamaModel m = build_llama(out.source, out.build);
      const TensorSource& t = out.source.tensor("layers.1.w2");
      const std::vector<float> v = t.read_all();
      std::vector<float> back(v.size());
      unpack_matrix(m.layers[1].w2, back.data());
      EXPECT_EQ(back, v) << recipe << " " << fmt;
      ASSERT_EQ(out.matrices.size(), 35u);
      double rel = 0, rtn = 0;
      for (const auto& r : out.matrices) {
        rel += r.rel_err;
        rtn += r.rtn_rel_err;
      }
      if (std::string(recipe) == "rtn") {
        EXPECT_NEAR(rel, rtn, 1e-6 * rtn);
      }
      if (std::string(recipe) == "gptq" || std::string(recipe) == "awq") {
        EXPECT_LT(rel, rtn) << recipe << " " << fmt << ": calibration output error vs RTN";
      }
    }
  }
}

TEST(Recipes, PruneThenQuantize) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  for (const char* recipe : {"rtn", "gptq"}) {
    RecipeSpec spec;
    spec.recipe = recipe;
    spec.format = "int8";
    spec.sparsity = 0.5;
    const RecipeOutput out = apply_recipe(f.src, spec, &f.stats);
    const std::vector<float> v = out.source.tensor("layers.0.w1").read_all();
    int64_t zeros = 0;
    for (float x : v) zeros += x == 0.f;
    EXPECT_GE(zeros, static_cast<int64_t>(v.size() / 2)) << recipe;
    EXPECT_EQ(out.off_grid, 0);
  }
}

TEST(Recipes, UnknownNamesAreRefused) {
  RecipeSpec s;
  s.recipe = "nope";
  EXPECT_THROW(s.validate(), Error);
  s.recipe = "gptq";
  s.set("alpha=0.3");
  EXPECT_THROW(s.validate(), Error);
  EXPECT_THROW(s.set("damp"), Error);
  EXPECT_THROW(s.set("damp=abc"), Error);
}

// ---- calibration --------------------------------------------------------------------------------

TEST(Calibration, SlicesParseAndOverlapIsRefused) {
  CIBENCH_REQUIRE_SHARED(kText);
  const TextSlice a = TextSlice::parse("/x/y.txt:10-20");
  EXPECT_EQ(a.path, "/x/y.txt");
  EXPECT_EQ(a.begin, 10);
  EXPECT_EQ(a.end, 20);
  EXPECT_EQ(TextSlice::parse("/x/y.txt").end, -1);
  EXPECT_THROW(TextSlice::parse("/x/y.txt:20-10"), Error);

  const std::string text = test::shared_path(kText);
  const LoadedSlice c = load_slice(TextSlice::parse(text + ":0-100"));
  const LoadedSlice e = load_slice(TextSlice::parse(text + ":900-1000"));
  const LoadedSlice o = load_slice(TextSlice::parse(text + ":90-120"));
  EXPECT_EQ(c.docs.size(), 100u);
  EXPECT_NO_THROW(check_disjoint(c, e));
  try {
    check_disjoint(c, o);
    FAIL() << "overlap not refused";
  } catch (const Error& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("overlap"), std::string::npos) << m;
    EXPECT_NE(m.find(":0-100"), std::string::npos) << m;
    EXPECT_NE(m.find(":90-120"), std::string::npos) << m;
  }
  // The same story in another file is caught by content.
  const std::string tmp = (std::filesystem::temp_directory_path() / "cibench_calib_copy.txt").string();
  {
    std::ofstream out(tmp);
    out << "A story of our own.\n<|endoftext|>\n" << e.docs[3] << "\n<|endoftext|>\n";
  }
  EXPECT_THROW(check_disjoint(load_slice(TextSlice::parse(tmp)), e), Error);
  std::filesystem::remove(tmp);
  EXPECT_THROW(load_slice(TextSlice::parse(text + ":990-1010")), FileError);
}

TEST(Calibration, WindowsAreSeededAndHashed) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  const CalibrationSet a = make_calibration(f.calib.source, *f.tok, 16, 64, 7);
  const CalibrationSet b = make_calibration(f.calib.source, *f.tok, 16, 64, 8);
  EXPECT_EQ(a.windows, f.calib.windows);
  EXPECT_EQ(a.token_hash, f.calib.token_hash);
  EXPECT_NE(a.token_hash, b.token_hash);
  const SiteStats& s = f.stats.site("layers.0.w2");
  EXPECT_EQ(s.cols, 172);
  EXPECT_EQ(s.rows_seen, 16 * 64);
  EXPECT_EQ(s.sample_count(), 256);
  // X^T X diagonal = sum of squares; compare with the sample-free statistics' consistency.
  for (int64_t j = 0; j < s.cols; ++j) EXPECT_GE(s.xtx[j * s.cols + j], 0.0);
}

// ---- global magnitude pruning -------------------------------------------------------------------

TEST(PruneGlobal, OneThresholdAcrossMatricesExactCount) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  // A small-valued matrix and a large-valued one: one global threshold prunes the small one more.
  std::vector<float> a(40 * 30), b(20 * 50);
  for (float& x : a) x = 0.05f * nd(rng);
  for (float& x : b) x = nd(rng);
  const std::vector<float> a0 = a, b0 = b;
  prune_magnitude_global({{a.data(), 40, 30}, {b.data(), 20, 50}}, 0.5);
  const auto zeros = [](const std::vector<float>& v) {
    return static_cast<int64_t>(std::count(v.begin(), v.end(), 0.f));
  };
  EXPECT_EQ(zeros(a) + zeros(b), std::llround(0.5 * (1200 + 1000)));
  EXPECT_GT(zeros(a), 960);  // most of the small matrix (80 %+), little of the large one
  EXPECT_LT(zeros(b), 100);
  // Every kept magnitude is at least every pruned one.
  float max_pruned = 0, min_kept = INFINITY;
  for (size_t i = 0; i < a.size(); ++i)
    (a[i] == 0.f ? max_pruned : min_kept) =
        a[i] == 0.f ? std::max(max_pruned, std::fabs(a0[i])) : std::min(min_kept, std::fabs(a0[i]));
  for (size_t i = 0; i < b.size(); ++i)
    (b[i] == 0.f ? max_pruned : min_kept) =
        b[i] == 0.f ? std::max(max_pruned, std::fabs(b0[i])) : std::min(min_kept, std::fabs(b0[i]));
  EXPECT_LE(max_pruned, min_kept);
  // Kept weights are unchanged.
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i] != 0.f) {
      ASSERT_EQ(b[i], b0[i]);
    }
  }
}

TEST(PruneGlobal, TiesGiveTheExactCountEarliestFirst) {
  std::vector<float> a(10, 1.f), b(10, 1.f);
  prune_magnitude_global({{a.data(), 2, 5}, {b.data(), 1, 10}}, 0.75);
  EXPECT_EQ(std::count(a.begin(), a.end(), 0.f), 10);
  EXPECT_EQ(std::count(b.begin(), b.end(), 0.f), 5);
  EXPECT_EQ(b[4], 0.f);
  EXPECT_EQ(b[5], 1.f);
  EXPECT_THROW(prune_magnitude_global({{a.data(), 2, 5}}, 1.0), Error);
  EXPECT_THROW(prune_targets({{a.data(), 2, 5}}, 0.5, "diagonal"), Error);
}

TEST(PruneGlobal, RecipeParameterSelectsThePattern) {
  RecipeSpec s = RecipeSpec::parse("rtn:prune=global", "int8_sparse", 0.5);
  EXPECT_EQ(s.prune_pattern, "global");
  EXPECT_NE(s.describe().find("prune=global"), std::string::npos);
  EXPECT_THROW(RecipeSpec::parse("rtn:prune=sideways", "int8_sparse", 0.5), Error);
}

TEST(PruneGlobal, StoriesProjectionsPrunedTogether) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  const RecipeSpec spec = RecipeSpec::parse("rtn:prune=global", "int8_sparse", 0.5);
  const RecipeOutput out = apply_recipe(f.src, spec, &f.stats);
  int64_t total = 0, zero = 0;
  double min_layer = 1, max_layer = 0;
  for (const auto& [name, t] : out.source.tensors) {
    if (name.rfind("layers.", 0) != 0 || name.find("norm") != std::string::npos) continue;
    std::vector<float> v(static_cast<size_t>(t.rows * t.cols));
    t.read(0, t.rows, v.data());
    const auto z = static_cast<int64_t>(std::count(v.begin(), v.end(), 0.f));
    total += static_cast<int64_t>(v.size());
    zero += z;
    const double frac = static_cast<double>(z) / static_cast<double>(v.size());
    min_layer = std::min(min_layer, frac), max_layer = std::max(max_layer, frac);
  }
  ASSERT_GT(total, 0);
  // Half pruned (plus the few kept weights that int8 rounding sends to zero).
  const double frac = static_cast<double>(zero) / static_cast<double>(total);
  EXPECT_GE(frac, 0.5 - 1e-4);
  EXPECT_LT(frac, 0.53);
  EXPECT_GT(max_layer - min_layer, 0.05);  // matrices keep different fractions (per matrix: all 0.5)
  const LlamaModel m = build_llama(out.source, out.build);
  EXPECT_EQ(m.build.format_for("ffn"), "int8_sparse");
}

}  // namespace
}  // namespace cibench

// ---- quantised files ------------------------------------------------------------------------------

namespace cibench {
namespace {

std::string temp_file(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(QuantizedFile, RoundTripsExactly) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  for (const char* fmt : {"int4_g32", "int8", "int8_sparse"}) {
    RecipeSpec spec;
    spec.recipe = "gptq";
    spec.format = fmt;
    if (std::string(fmt) == "int8_sparse") spec.sparsity = 0.5;
    const RecipeOutput out = apply_recipe(f.src, spec, &f.stats);
    ASSERT_EQ(out.off_grid, 0);
    const std::string path = temp_file("cibench_recipes_roundtrip.cbq");
    write_quantized(path, out.source, quantized_meta(out, &f.calib, "eval:900-1000"));
    const QuantizedModelFile q = load_quantized(path, f.src.content_hash);
    EXPECT_EQ(q.meta.recipe, "gptq");
    EXPECT_EQ(q.meta.format, fmt);
    EXPECT_EQ(q.meta.params.at("damp"), 0.01);
    EXPECT_EQ(q.meta.source_hash, f.src.content_hash);
    EXPECT_EQ(q.meta.calib_hash, f.calib.token_hash);
    EXPECT_EQ(q.meta.calib_seed, 7u);
    EXPECT_EQ(q.meta.eval_slice, "eval:900-1000");
    // Every tensor identical, and the model re-packs to the stored bytes.
    EXPECT_EQ(q.source.content_hash, out.source.content_hash) << fmt;
    const LlamaModel a = build_llama(out.source, out.build);
    const LlamaModel b = build_quantized(q);
    ASSERT_EQ(a.layers.size(), b.layers.size());
    for (size_t l = 0; l < a.layers.size(); ++l) {
      ASSERT_EQ(a.layers[l].w2.bytes(), b.layers[l].w2.bytes());
      EXPECT_EQ(std::memcmp(a.layers[l].w2.data(), b.layers[l].w2.data(), a.layers[l].w2.bytes()), 0);
      EXPECT_EQ(a.layers[l].attention_norm, b.layers[l].attention_norm);
    }
    std::filesystem::remove(path);
  }
}

TEST(QuantizedFile, StaticW8A8ScalesAreCalibratedStoredAndRequired) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  // Without calibrated scales the static format is refused, naming the missing tensor.
  LlamaBuildOptions plain;
  plain.format = "w8a8_static";
  try {
    build_llama(f.src, plain);
    FAIL() << "w8a8_static without scales was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.wq.act_scale"), std::string::npos) << e.what();
  }
  RecipeSpec rtn_spec;
  rtn_spec.format = "w8a8_static";
  rtn_spec.recipe = "rtn";
  EXPECT_THROW(apply_recipe(f.src, rtn_spec, nullptr), Error);  // needs calibration
  for (const char* recipe : {"rtn", "smoothquant"}) {
    RecipeSpec spec;
    spec.recipe = recipe;
    spec.format = "w8a8_static";
    const RecipeOutput out = apply_recipe(f.src, spec, &f.stats);
    ASSERT_EQ(out.off_grid, 0);
    const LlamaModel a = build_llama(out.source, out.build);
    // The scale of each projection covers the calibration maximum of its (smoothed) input.
    const SiteStats& st = f.stats.site("layers.0.attn_in");
    const float xmax = *std::max_element(st.absmax.begin(), st.absmax.end());
    if (std::string(recipe) == "rtn") {
      EXPECT_FLOAT_EQ(a.layers[0].wq.act_scale, xmax / 127.f);
    }
    for (const LlamaLayer& L : a.layers)
      for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3})
        EXPECT_GT(w->act_scale, 0.f) << recipe << " " << w->name;
    const std::string path = temp_file("cibench_recipes_static.cbq");
    write_quantized(path, out.source, quantized_meta(out, &f.calib, ""));
    const QuantizedModelFile q = load_quantized(path, f.src.content_hash);
    const LlamaModel b = build_quantized(q);
    for (size_t l = 0; l < a.layers.size(); ++l) {
      EXPECT_EQ(a.layers[l].wq.act_scale, b.layers[l].wq.act_scale);
      EXPECT_EQ(a.layers[l].w2.act_scale, b.layers[l].w2.act_scale);
    }
    std::filesystem::remove(path);
  }
}

TEST(QuantizedFile, SourceHashMismatchIsRefusedNamingBoth) {
  CIBENCH_REQUIRE_SHARED(kStories);
  Fixture& f = stories();
  const RecipeOutput out = apply_recipe(f.src, RecipeSpec{}, nullptr);
  const std::string path = temp_file("cibench_recipes_hash.cbq");
  write_quantized(path, out.source, quantized_meta(out, nullptr, ""));
  try {
    load_quantized(path, "xxh64:0123456789abcdef");
    FAIL() << "mismatch not refused";
  } catch (const FileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find(f.src.content_hash), std::string::npos) << m;
    EXPECT_NE(m.find("xxh64:0123456789abcdef"), std::string::npos) << m;
  }
  // A corrupted payload is refused too.
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(-3, std::ios::end);
    io.put('\x5a');
  }
  EXPECT_THROW(load_quantized(path, f.src.content_hash), FileError);
  std::filesystem::remove(path);
  EXPECT_THROW(load_quantized(path), FileError);
}

// ---- scenarios ----------------------------------------------------------------------------------

std::string recipe_scenario(const std::string& matrix, const std::string& extra = "") {
  return "[model]\nsource = \"synthetic:tiny\"\n[matrix]\n" + matrix + "\n" + extra;
}

TEST(RecipeScenario, MatrixCrossesRecipesAndSkipsInvalidPairsWithAReason) {
  const std::string calib = test::shared_path(kText);
  const Scenario sc = parse_scenario_text(
      recipe_scenario("format = [\"w8a8_static\", \"int4_g32\", \"f32\"]\n"
                      "recipe = [\"rtn\", \"smoothquant:alpha=0.7\", \"none\"]\nsparsity = [0.0, 0.5]",
                      "[calibration]\nslice = \"" + calib + ":0-10\"\n"),
      "r.toml");
  // w8a8_static: rtn, smoothquant; int4_g32: rtn, none; f32: none -> 5 pairs x 2 sparsities.
  const std::vector<Variant> v = sc.variants();
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[0].label(), "w8a8_static rtn t1 w1");
  EXPECT_EQ(v[3].label(), "w8a8_static smoothquant:alpha=0.7 t1 w1 sparsity=0.5");
  EXPECT_EQ(v[6].recipe, "");
  EXPECT_EQ(v[6].format_name(), "int4_g32");
  const std::vector<std::string> skipped = sc.skipped();
  ASSERT_EQ(skipped.size(), 4u);
  EXPECT_NE(skipped[0].find("none x w8a8_static: w8a8_static needs activation scales"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("smoothquant:alpha=0.7 x int4_g32: smoothquant"), std::string::npos) << skipped[1];
  EXPECT_NE(skipped[2].find("rtn x f32: recipes target"), std::string::npos) << skipped[2];
  EXPECT_EQ(sc.calibration.samples, 64);
  EXPECT_EQ(sc.calibration.seed, 1234u);
}

TEST(RecipeScenario, BadRecipesAndMissingCalibrationAreRefusedByKey) {
  auto error_of = [](const std::string& text) {
    try {
      parse_scenario_text(text, "r.toml");
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string e = error_of(recipe_scenario("format = [\"int8\"]\nrecipe = [\"gptq:alpha=1\"]"));
  EXPECT_NE(e.find("key 'matrix.recipe'"), std::string::npos) << e;
  EXPECT_NE(e.find("no parameter 'alpha'"), std::string::npos) << e;
  e = error_of(recipe_scenario("format = [\"int8\"]\nrecipe = [\"sparsegpt\"]"));
  EXPECT_NE(e.find("unknown quantisation recipe 'sparsegpt'"), std::string::npos) << e;
  e = error_of(recipe_scenario("format = [\"int8\"]\nrecipe = [\"awq\"]"));
  EXPECT_NE(e.find("key 'matrix.recipe'"), std::string::npos) << e;
  EXPECT_NE(e.find("[calibration]"), std::string::npos) << e;
  // rtn alone needs no calibration, except for the static-activation format.
  EXPECT_EQ(error_of(recipe_scenario("format = [\"int8\"]\nrecipe = [\"rtn\"]")), "accepted");
  e = error_of(recipe_scenario("format = [\"w8a8_static\"]\nrecipe = [\"rtn\"]"));
  EXPECT_NE(e.find("w8a8_static"), std::string::npos) << e;
  // A .cbq needs the FP32 model it was made from.
  const std::string path = temp_file("cibench_recipes_scenario.cbq");
  { std::ofstream(path) << "x"; }
  e = error_of("[model]\nsource = \"" + path + "\"\n");
  EXPECT_NE(e.find("key 'model.source'"), std::string::npos) << e;
  EXPECT_NE(e.find("source_model"), std::string::npos) << e;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cibench
